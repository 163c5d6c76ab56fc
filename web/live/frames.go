package live

import "encoding/json"

// EventFrame is what an API socket receives for a game event.
type EventFrame struct {
	Type   string          `json:"type" doc:"event"`
	Event  string          `json:"event"`
	GameID string          `json:"gameId"`
	Seq    int             `json:"seq"`
	Data   json.RawMessage `json:"data"`
}

// CrowdData is the data of game:spectators: spectator sockets on every
// instance. It is presence, not a stored event: its seq is that of the
// last event the socket has, and it is never replayed.
type CrowdData struct {
	Count int `json:"count"`
}

// JoinedFrame is the first frame of a room: the state everyone may see.
type JoinedFrame struct {
	Type   string          `json:"type" doc:"joined"`
	GameID string          `json:"gameId"`
	Role   string          `json:"role" doc:"player or spectator"`
	State  json.RawMessage `json:"state" doc:"the same as GET /games/:id/state"`
}

// ErrorFrame answers a client message that failed.
type ErrorFrame struct {
	Type    string `json:"type" doc:"error"`
	Code    string `json:"code"`
	GameID  string `json:"gameId,omitempty"`
	Message string `json:"message,omitempty"`
}

// ResyncFrame tells a socket that fell behind in a room that it left the
// room: it rejoins with the last seq it has and misses nothing.
type ResyncFrame struct {
	Type   string `json:"type" doc:"resync"`
	GameID string `json:"gameId"`
}

// LeftFrame answers leave-game.
type LeftFrame struct {
	Type   string `json:"type" doc:"left"`
	GameID string `json:"gameId"`
}

// PongFrame answers ping.
type PongFrame struct {
	Type string `json:"type" doc:"pong"`
}

// NoticeFrame carries a personal notice.
type NoticeFrame struct {
	Type   string          `json:"type" doc:"notice"`
	Notice string          `json:"notice"`
	Data   json.RawMessage `json:"data"`
}

// ClientMessage is what a socket client sends.
type ClientMessage struct {
	Type    string `json:"type" doc:"join-game, leave-game or ping"`
	GameID  string `json:"gameId"`
	LastSeq int    `json:"lastSeq" doc:"join-game: the last seq you have, to receive every event after it"`
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic("live: frame does not encode: " + err.Error()) // every frame type is a plain struct
	}
	return b
}
