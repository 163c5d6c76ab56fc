package live

import (
	"encoding/json"

	"wager/domain"
)

// EventFrame is what an API socket receives for a game event.
type EventFrame struct {
	Type   string           `json:"type" const:"event"`
	Event  domain.EventName `json:"event"`
	GameID string           `json:"gameId"`
	Seq    int              `json:"seq" minimum:"1" doc:"the event's number in its game: 1, 2, 3, ... without gaps"`
	Data   json.RawMessage  `json:"data" type:"object"`
}

// CrowdData is the data of game:spectators: spectator sockets on every
// instance.
type CrowdData struct {
	Count int `json:"count" minimum:"0"`
}

// CrowdFrame carries a spectator count. It is presence, not one of the
// game's events: it has no seq (the seqs number the stored events, each
// once), it may repeat a count, and it is never replayed.
type CrowdFrame struct {
	Type   string           `json:"type" const:"event"`
	Event  domain.EventName `json:"event" const:"game:spectators"`
	GameID string           `json:"gameId"`
	Data   CrowdData        `json:"data"`
}

// JoinedFrame is the first frame of a room: the state everyone may see,
// as of the event numbered seq. Only events after seq follow it.
type JoinedFrame struct {
	Type   string          `json:"type" const:"joined"`
	GameID string          `json:"gameId"`
	Seq    int             `json:"seq" minimum:"0" doc:"the seq of the last event the state reflects: the events that follow have higher seqs"`
	Role   string          `json:"role" enum:"player,spectator" doc:"player or spectator"`
	State  json.RawMessage `json:"state" schema:"GameState" doc:"the same as GET /games/:id/state"`
}

// ResumedFrame answers a join-game whose lastSeq the room can continue
// from: exactly the events after seq follow, in order, and then the live
// ones.
type ResumedFrame struct {
	Type   string `json:"type" const:"resumed"`
	GameID string `json:"gameId"`
	Seq    int    `json:"seq" minimum:"1" doc:"the lastSeq of the join: the next event is seq + 1"`
}

// ErrorFrame answers a client message that failed.
type ErrorFrame struct {
	Type    string `json:"type" const:"error"`
	Code    string `json:"code"`
	GameID  string `json:"gameId,omitempty"`
	Message string `json:"message,omitempty"`

	TournamentID string `json:"tournamentId,omitempty" doc:"the tournament of a join-tournament that failed"`
}

// ResyncFrame tells a socket that fell behind in a room that it left the
// room: it rejoins with the last seq it has and misses nothing.
type ResyncFrame struct {
	Type   string `json:"type" const:"resync"`
	GameID string `json:"gameId"`
}

// LeftFrame answers leave-game.
type LeftFrame struct {
	Type   string `json:"type" const:"left"`
	GameID string `json:"gameId"`
}

// TournamentEventFrame is what an API socket receives for a tournament's
// event.
type TournamentEventFrame struct {
	Type         string           `json:"type" const:"event"`
	Event        domain.EventName `json:"event"`
	TournamentID string           `json:"tournamentId"`
	Seq          int              `json:"seq" minimum:"1" doc:"the event's number in its tournament: 1, 2, 3, ... without gaps"`
	Data         json.RawMessage  `json:"data" type:"object"`
}

// JoinedTournamentFrame answers join-tournament: the tournament as of the
// event numbered seq; only events after seq follow.
type JoinedTournamentFrame struct {
	Type         string          `json:"type" const:"joined-tournament"`
	TournamentID string          `json:"tournamentId"`
	Seq          int             `json:"seq" minimum:"0" doc:"the seq of the last event the tournament reflects: the events that follow have higher seqs"`
	Tournament   json.RawMessage `json:"tournament" schema:"TournamentDetail" doc:"the same as GET /tournaments/:id"`
}

// ResumedTournamentFrame answers a join-tournament whose lastSeq the room
// can continue from: exactly the events after seq follow.
type ResumedTournamentFrame struct {
	Type         string `json:"type" const:"resumed-tournament"`
	TournamentID string `json:"tournamentId"`
	Seq          int    `json:"seq" minimum:"1" doc:"the lastSeq of the join: the next event is seq + 1"`
}

// TournamentResyncFrame tells a socket that fell behind in a tournament's
// room that it left it: it joins again with the last seq it has.
type TournamentResyncFrame struct {
	Type         string `json:"type" const:"resync-tournament"`
	TournamentID string `json:"tournamentId"`
}

// LeftTournamentFrame answers leave-tournament.
type LeftTournamentFrame struct {
	Type         string `json:"type" const:"left-tournament"`
	TournamentID string `json:"tournamentId"`
}

// PongFrame answers ping.
type PongFrame struct {
	Type string `json:"type" const:"pong"`
}

// NoticeFrame carries a personal notice.
type NoticeFrame struct {
	Type   string            `json:"type" const:"notice"`
	Notice domain.NoticeKind `json:"notice"`
	Data   json.RawMessage   `json:"data"`
}

// ClientMessage is what a socket client sends.
type ClientMessage struct {
	Type    string `json:"type" enum:"join-game,leave-game,join-tournament,leave-tournament,ping" doc:"join-game, leave-game, join-tournament, leave-tournament or ping"`
	GameID  string `json:"gameId,omitempty" doc:"join-game and leave-game: the game"`
	LastSeq int    `json:"lastSeq,omitempty" minimum:"0" doc:"join-game and join-tournament: the last seq you have, to receive every event after it (resumed) instead of the state (joined)"`

	TournamentID string `json:"tournamentId,omitempty" doc:"join-tournament and leave-tournament: the tournament"`
}

// wire is the frames of one kind of room on the wire: the hub's rooms
// are the same for every kind, their frames name the game or the
// tournament as the live protocol has always named them.
type wire struct {
	event   func(e Event) any
	joined  func(id string, j Joined) any
	resumed func(id string, seq int) any
	resync  func(id string) any
	left    func(id string) any
	errorIn func(f ErrorFrame, id string) ErrorFrame
	crowd   bool // the room counts its spectators and sends the count
}

// wires are the frames of each kind of room.
var wires = map[domain.StreamKind]*wire{
	domain.GameStream: {
		event: func(e Event) any {
			return EventFrame{Type: "event", Event: e.Name, GameID: e.Stream.ID, Seq: e.Seq, Data: e.Data}
		},
		joined: func(id string, j Joined) any {
			role := "spectator"
			if j.Player {
				role = "player"
			}
			return JoinedFrame{Type: "joined", GameID: id, Seq: j.Seq, Role: role, State: j.State}
		},
		resumed: func(id string, seq int) any { return ResumedFrame{Type: "resumed", GameID: id, Seq: seq} },
		resync:  func(id string) any { return ResyncFrame{Type: "resync", GameID: id} },
		left:    func(id string) any { return LeftFrame{Type: "left", GameID: id} },
		errorIn: func(f ErrorFrame, id string) ErrorFrame { f.GameID = id; return f },
		crowd:   true,
	},
	domain.TournamentStream: {
		event: func(e Event) any {
			return TournamentEventFrame{Type: "event", Event: e.Name, TournamentID: e.Stream.ID, Seq: e.Seq, Data: e.Data}
		},
		joined: func(id string, j Joined) any {
			return JoinedTournamentFrame{Type: "joined-tournament", TournamentID: id, Seq: j.Seq, Tournament: j.State}
		},
		resumed: func(id string, seq int) any {
			return ResumedTournamentFrame{Type: "resumed-tournament", TournamentID: id, Seq: seq}
		},
		resync:  func(id string) any { return TournamentResyncFrame{Type: "resync-tournament", TournamentID: id} },
		left:    func(id string) any { return LeftTournamentFrame{Type: "left-tournament", TournamentID: id} },
		errorIn: func(f ErrorFrame, id string) ErrorFrame { f.TournamentID = id; return f },
	},
}

// wireOf returns the frames of a kind of room.
func wireOf(k domain.StreamKind) *wire { return wires[k] }

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic("live: frame does not encode: " + err.Error()) // every frame type is a plain struct
	}
	return b
}
