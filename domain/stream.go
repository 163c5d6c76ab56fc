package domain

import (
	"encoding/json"
	"time"
)

// StreamKind is a kind of room with an event stream of its own: games and
// tournaments (arenas). Each room's events are numbered 1, 2, 3, ...
// without gaps, stored with the transaction that causes them, and sent
// live to the room's sockets by the same mechanism whatever the kind.
type StreamKind uint8

// The kinds of rooms.
const (
	GameStream StreamKind = iota + 1
	TournamentStream
)

// String names the kind in log lines and errors.
func (k StreamKind) String() string {
	switch k {
	case GameStream:
		return "game"
	case TournamentStream:
		return "tournament"
	}
	return "unknown stream kind"
}

// Stream names one room's event stream: its kind and the id of the game
// or tournament it follows.
type Stream struct {
	Kind StreamKind
	ID   string
}

// GameStreamOf is a game's event stream.
func GameStreamOf(id string) Stream { return Stream{Kind: GameStream, ID: id} }

// TournamentStreamOf is a tournament's event stream.
func TournamentStreamOf(id string) Stream { return Stream{Kind: TournamentStream, ID: id} }

// String is "kind id", for log lines and errors.
func (s Stream) String() string { return s.Kind.String() + " " + s.ID }

// StreamEvent is one stored event of a room's stream: the same value from
// the transaction that appends it to the sockets that receive it.
type StreamEvent struct {
	Stream    Stream
	Seq       int
	Name      EventName
	Data      json.RawMessage
	CreatedAt time.Time
}

// RoomMember is a user with a socket in a live room: a game's or a
// tournament's, by its id.
type RoomMember struct {
	RoomID string
	UserID string
}

// Due returns the first events of evs (in seq order) that are at least
// delay old at now: what a spectator who sees a game delay late may see.
func Due(evs []StreamEvent, now time.Time, delay time.Duration) []StreamEvent {
	cutoff := now.Add(-delay)
	for i, e := range evs {
		if e.CreatedAt.After(cutoff) {
			return evs[:i]
		}
	}
	return evs
}
