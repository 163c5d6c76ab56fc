package domain

// Event is something that happened in a game's room, the same for everyone
// there (players and spectators alike). Data is a struct with json tags,
// one per event name; it never carries hidden information.
type Event struct {
	Name EventName
	Data any
}

// EventName names a room event on the wire (the "event" of an event
// frame): one of the Event constants, never a literal, so that a
// misspelled name does not compile.
type EventName string

// The events of a game's room, in the order of GameEvents.
const (
	EventGameStarted   EventName = "game:started"
	EventGameCompleted EventName = "game:completed"
	EventGameResumed   EventName = "game:resumed"

	EventRPSRoundStart     EventName = "game:rps:round:start"
	EventRPSRoundSubmitted EventName = "game:rps:round:submitted"
	EventRPSRoundReveal    EventName = "game:rps:round:reveal"
	EventRPSResign         EventName = "game:rps:resign"
	EventConnect4Start     EventName = "game:connect4:start"
	EventConnect4Move      EventName = "game:connect4:move"
	EventConnect4Timeout   EventName = "game:connect4:timeout"
	EventConnect4Resign    EventName = "game:connect4:resign"
	EventBerserk           EventName = "game:berserk"

	EventRematchRequested EventName = "game:rematch:requested"
	EventRematchCancelled EventName = "game:rematch:cancelled"
	EventRematchStarted   EventName = "game:rematch:started"
	EventRematchLobby     EventName = "game:rematch:lobby"

	EventChatMessage        EventName = "game:chat:message"
	EventDonation           EventName = "game:donation"
	EventPot                EventName = "game:pot"
	EventBet                EventName = "game:bet"
	EventSettlementTransfer EventName = "game:settlement:transfer"
	EventMarket             EventName = "game:market"
	EventReview             EventName = "game:review"
)

// EventSpectators carries a game's spectator count. It is presence, not
// one of the room's stored events: it has no seq and is never replayed.
const EventSpectators EventName = "game:spectators"

// The events of a tournament's room, in the order of TournamentEvents.
const (
	EventTournamentStandings EventName = "tournament:standings"
	EventTournamentPairing   EventName = "tournament:pairing"
	EventTournamentStarted   EventName = "tournament:started"
	EventTournamentCancelled EventName = "tournament:cancelled"
	EventTournamentFinished  EventName = "tournament:finished"
)

// GameEvents are the stored events of a game's room: the live protocol's
// document lists each with its data type, and nothing else.
var GameEvents = []EventName{
	EventGameStarted, EventGameCompleted, EventGameResumed,
	EventRPSRoundStart, EventRPSRoundSubmitted, EventRPSRoundReveal, EventRPSResign,
	EventConnect4Start, EventConnect4Move, EventConnect4Timeout, EventConnect4Resign, EventBerserk,
	EventRematchRequested, EventRematchCancelled, EventRematchStarted, EventRematchLobby,
	EventChatMessage, EventDonation, EventPot, EventBet, EventSettlementTransfer, EventMarket, EventReview,
}

// NeverLate reports whether the spectators of a game seen late
// (SPECTATOR_DELAY) get an event at once all the same: its chat, its
// donations and its pot, which tell nothing of the play.
func NeverLate(name EventName) bool {
	return name == EventChatMessage || name == EventDonation || name == EventPot
}

// TournamentEvents are the stored events of a tournament's room.
var TournamentEvents = []EventName{
	EventTournamentStandings, EventTournamentPairing, EventTournamentStarted,
	EventTournamentCancelled, EventTournamentFinished,
}

// NoticeKind names a personal notice on the wire (the "notice" of a
// notice frame): one of the Notice constants, never a literal.
type NoticeKind string

// The personal notices, in the order of Notices.
const (
	NoticeMatched            NoticeKind = "game:matched"
	NoticeQueueRemoved       NoticeKind = "queue:removed"
	NoticeRematchRequested   NoticeKind = "rematch:requested"
	NoticeRematchLobby       NoticeKind = "rematch:lobby"
	NoticeChallengeReceived  NoticeKind = "challenge:received"
	NoticeChallengeAccepted  NoticeKind = "challenge:accepted"
	NoticeChallengeDeclined  NoticeKind = "challenge:declined"
	NoticeChallengeCancelled NoticeKind = "challenge:cancelled"
	NoticeChallengeExpired   NoticeKind = "challenge:expired"
	NoticeDM                 NoticeKind = "chat:dm"
	NoticeBalance            NoticeKind = "balance"
	NoticeNotification       NoticeKind = "notification"
	NoticeActivity           NoticeKind = "activity"
)

// Notices are the personal notices: the live protocol's document lists
// each with its data type, and nothing else.
var Notices = []NoticeKind{
	NoticeMatched, NoticeQueueRemoved, NoticeRematchRequested, NoticeRematchLobby,
	NoticeChallengeReceived, NoticeChallengeAccepted, NoticeChallengeDeclined, NoticeChallengeCancelled, NoticeChallengeExpired,
	NoticeDM, NoticeBalance, NoticeNotification, NoticeActivity,
}
