package wager

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/gorilla/websocket"

	"wager.example.com/sdk/api"
)

// Event names of a game's room besides EventJoined, EventSpectators and
// EventCompleted (follow.go), each with the type Event.Payload decodes
// its data into.
const (
	EventStarted            = "game:started"             // *api.GameStarted
	EventResumed            = "game:resumed"             // *api.GameResumed
	EventRPSRoundStart      = "game:rps:round:start"     // *api.RulesRPSRoundStart
	EventRPSRoundSubmitted  = "game:rps:round:submitted" // *api.RulesRPSSubmitted
	EventRPSRoundReveal     = "game:rps:round:reveal"    // *api.RulesRPSRound
	EventRPSResign          = "game:rps:resign"          // *api.RulesRPSResign
	EventConnect4Start      = "game:connect4:start"      // *api.RulesC4Start
	EventConnect4Move       = "game:connect4:move"       // *api.RulesC4Moved
	EventConnect4Timeout    = "game:connect4:timeout"    // *api.RulesC4Forfeit
	EventConnect4Resign     = "game:connect4:resign"     // *api.RulesC4Forfeit
	EventBerserk            = "game:berserk"             // *api.RulesBerserked
	EventRematchRequested   = "game:rematch:requested"   // *api.GameRematchBy
	EventRematchCancelled   = "game:rematch:cancelled"   // *api.GameRematchBy
	EventRematchStarted     = "game:rematch:started"     // *api.GameRematchStarted
	EventRematchLobby       = "game:rematch:lobby"       // *api.GameRematchLobby
	EventChatMessage        = "game:chat:message"        // *api.ChatMessage
	EventDonation           = "game:donation"            // *api.PotDonated
	EventPot                = "game:pot"                 // *api.Pot
	EventBet                = "game:bet"                 // *api.PotBetPlaced
	EventSettlementTransfer = "game:settlement:transfer" // *api.PotTransferSent
	EventMarket             = "game:market"              // *api.MarketView
	EventReview             = "game:review"              // *api.IntegrityDecided
)

// payloads are the types of the live events' and notices' data by name,
// as /asyncapi.json maps them (TestPayloadTypesFollowTheAsyncAPIDocument
// keeps the two the same).
var payloads = map[string]func() any{
	EventStarted:             func() any { return new(api.GameStarted) },
	EventCompleted:           func() any { return new(api.GameCompleted) },
	EventResumed:             func() any { return new(api.GameResumed) },
	EventRPSRoundStart:       func() any { return new(api.RulesRPSRoundStart) },
	EventRPSRoundSubmitted:   func() any { return new(api.RulesRPSSubmitted) },
	EventRPSRoundReveal:      func() any { return new(api.RulesRPSRound) },
	EventRPSResign:           func() any { return new(api.RulesRPSResign) },
	EventConnect4Start:       func() any { return new(api.RulesC4Start) },
	EventConnect4Move:        func() any { return new(api.RulesC4Moved) },
	EventConnect4Timeout:     func() any { return new(api.RulesC4Forfeit) },
	EventConnect4Resign:      func() any { return new(api.RulesC4Forfeit) },
	EventBerserk:             func() any { return new(api.RulesBerserked) },
	EventRematchRequested:    func() any { return new(api.GameRematchBy) },
	EventRematchCancelled:    func() any { return new(api.GameRematchBy) },
	EventRematchStarted:      func() any { return new(api.GameRematchStarted) },
	EventRematchLobby:        func() any { return new(api.GameRematchLobby) },
	EventChatMessage:         func() any { return new(api.ChatMessage) },
	EventDonation:            func() any { return new(api.PotDonated) },
	EventPot:                 func() any { return new(api.Pot) },
	EventBet:                 func() any { return new(api.PotBetPlaced) },
	EventSettlementTransfer:  func() any { return new(api.PotTransferSent) },
	EventMarket:              func() any { return new(api.MarketView) },
	EventReview:              func() any { return new(api.IntegrityDecided) },
	EventSpectators:          func() any { return new(Spectators) },
	EventTournamentStandings: func() any { return new(api.TournamentStandings) },
	EventTournamentPairing:   func() any { return new(api.TournamentPaired) },
	EventTournamentStarted:   func() any { return new(api.TournamentStarted) },
	EventTournamentCancelled: func() any { return new(api.TournamentCancelled) },
	EventTournamentFinished:  func() any { return new(api.TournamentFinished) },
}

// EventNames are the names of the live events whose data Event.Payload
// decodes, and NoticeKinds the kinds of notice whose data Notice.Payload
// decodes, each sorted.
func EventNames() []string  { return slices.Sorted(maps.Keys(payloads)) }
func NoticeKinds() []string { return slices.Sorted(maps.Keys(noticePayloads)) }

// noticePayloads are the notices' data types by kind.
var noticePayloads = map[string]func() any{
	NoticeMatched:            func() any { return new(api.GameMatched) },
	NoticeNotification:       func() any { return new(api.NotifyPushed) },
	NoticeBalance:            func() any { return new(api.MoneyPlatformBalance) },
	NoticeActivity:           func() any { return new(api.SocialEntry) },
	NoticeChallenge:          func() any { return new(api.GameChallenge) },
	NoticeChallengeAccepted:  func() any { return new(api.GameChallenge) },
	NoticeChallengeDeclined:  func() any { return new(api.GameChallenge) },
	NoticeChallengeCancelled: func() any { return new(api.GameChallenge) },
	NoticeChallengeExpired:   func() any { return new(api.GameChallenge) },
	NoticeDM:                 func() any { return new(api.ChatMessage) },
	NoticeQueueRemoved:       func() any { return new(api.GameQueueRemoved) },
	NoticeRematchRequested:   func() any { return new(api.GameRematchNotice) },
	NoticeRematchLobby:       func() any { return new(api.GameRematchLobbyNotice) },
}

// Spectators is the data of game:spectators.
type Spectators struct {
	Count int `json:"count"`
}

// Payload returns the event's data decoded into its type: for
// game:rps:round:reveal an *api.RulesRPSRound, for game:completed an
// *api.GameCompleted, for EventJoined the state (*api.RulesRPSView or
// *api.RulesC4View), and so on (the AsyncAPI document at /asyncapi.json
// lists them). It returns an error for a name this SDK does not know (a
// newer server's) or data that does not decode.
func (e Event) Payload() (any, error) {
	if e.Name == EventJoined {
		var head struct {
			GameType string `json:"gameType"`
		}
		json.Unmarshal(e.Data, &head)
		var v any = new(api.RulesRPSView)
		if head.GameType == "connect4" {
			v = new(api.RulesC4View)
		}
		return v, decode(e.Name, e.Data, v)
	}
	return payload(payloads, e.Name, e.Data)
}

// Notice kinds the client gives meaning to.
const (
	NoticeMatched      = "game:matched"       // two queued players were matched: *api.GameMatched
	NoticeChallenge    = "challenge:received" // someone challenged you: *api.GameChallenge
	NoticeNotification = "notification"       // a new notification: *api.NotifyPushed
	NoticeBalance      = "balance"            // your platform balance changed: *api.MoneyPlatformBalance
	NoticeActivity     = "activity"           // a public activity feed entry: *api.SocialEntry
)

// The other notice kinds, each with the type Notice.Payload decodes its
// data into.
const (
	NoticeChallengeAccepted  = "challenge:accepted"  // your challenge was accepted: *api.GameChallenge
	NoticeChallengeDeclined  = "challenge:declined"  // your challenge was declined: *api.GameChallenge
	NoticeChallengeCancelled = "challenge:cancelled" // a challenge to you was cancelled: *api.GameChallenge
	NoticeChallengeExpired   = "challenge:expired"   // a challenge expired: *api.GameChallenge
	NoticeDM                 = "chat:dm"             // a direct message: *api.ChatMessage
	NoticeQueueRemoved       = "queue:removed"       // you were taken out of a lobby's queue: *api.GameQueueRemoved
	NoticeRematchRequested   = "rematch:requested"   // your opponent asks for a rematch: *api.GameRematchNotice
	NoticeRematchLobby       = "rematch:lobby"       // your opponent opened a lobby for the rematch: *api.GameRematchLobbyNotice
)

// Notice is a personal notice pushed to the user's sockets.
type Notice struct {
	Kind string
	Data json.RawMessage
}

// Payload returns the notice's data decoded into its type (see the
// Notice constants), or an error for a kind this SDK does not know.
func (n Notice) Payload() (any, error) { return payload(noticePayloads, n.Kind, n.Data) }

func payload(types map[string]func() any, name string, data json.RawMessage) (any, error) {
	newValue, ok := types[name]
	if !ok {
		return nil, fmt.Errorf("wager: no payload type for %q", name)
	}
	v := newValue()
	return v, decode(name, data, v)
}

func decode(name string, data json.RawMessage, v any) error {
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("wager: the data of %s: %w", name, err)
	}
	return nil
}

// Notices opens a live socket and delivers the user's personal notices
// (matched, challenges, notifications, balance changes, the activity
// feed) until ctx ends, when the channel closes. After a disconnect it
// connects again; what was pushed meanwhile is lost, but stays readable
// over HTTP (GET /notifications, GET /users/me/current-game). It returns
// the API's error when the first socket is refused.
func (c *Client) Notices(ctx context.Context) (<-chan Notice, error) {
	conn, err := c.noticeSocket(ctx)
	if err != nil {
		return nil, err
	}
	out := make(chan Notice, 64)
	go func() {
		defer close(out)
		wait := 100 * time.Millisecond
		for {
			readNotices(ctx, conn, out)
			conn.Close()
			for {
				if ctx.Err() != nil {
					return
				}
				select {
				case <-ctx.Done():
					return
				case <-time.After(wait):
				}
				if conn, err = c.noticeSocket(ctx); err == nil {
					wait = 100 * time.Millisecond
					break
				}
				wait = min(2*wait, 5*time.Second)
			}
		}
	}()
	return out, nil
}

// noticeSocket opens a socket and waits until the server reads it (a
// ping's pong): from then on no notice to the user passes it by.
func (c *Client) noticeSocket(ctx context.Context) (*websocket.Conn, error) {
	token, err := c.validToken(ctx)
	if err != nil {
		return nil, err
	}
	conn, err := c.dial(ctx, token)
	if err != nil {
		return nil, err
	}
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	if err := conn.WriteJSON(map[string]string{"type": "ping"}); err != nil {
		conn.Close()
		return nil, err
	}
	for {
		var fr frame
		if err := conn.ReadJSON(&fr); err != nil {
			conn.Close()
			return nil, fmt.Errorf("wager: opening the live socket: %w", err)
		}
		if fr.Type == "pong" {
			return conn, nil
		}
	}
}

func readNotices(ctx context.Context, conn *websocket.Conn, out chan<- Notice) {
	defer watch(ctx, conn)()
	for {
		var fr struct {
			Type   string          `json:"type"`
			Notice string          `json:"notice"`
			Data   json.RawMessage `json:"data"`
		}
		if err := conn.ReadJSON(&fr); err != nil {
			return
		}
		conn.SetReadDeadline(time.Now().Add(pongWait))
		if fr.Type != "notice" {
			continue
		}
		select {
		case out <- Notice{Kind: fr.Notice, Data: fr.Data}:
		case <-ctx.Done():
			return
		}
	}
}
