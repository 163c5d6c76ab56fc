package live

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"time"

	"wager/domain"
)

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

// ErrorFrame answers a client message that failed.
type ErrorFrame struct {
	Type    string `json:"type" const:"error"`
	Code    string `json:"code"`
	GameID  string `json:"gameId,omitempty"`
	Message string `json:"message,omitempty"`

	TournamentID string `json:"tournamentId,omitempty" doc:"the tournament of a join-tournament that failed"`
}

// PongFrame answers ping, to every kind of socket: a page measures its
// connection's latency with it.
type PongFrame struct {
	Type string    `json:"type" const:"pong"`
	At   time.Time `json:"at" doc:"the server's time when it answered"`
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

// roomNames are how the live protocol names one kind of room: the field
// that carries its id, the state a join answers with, and its frames'
// types with their published schema names. A kind's frame types are
// built from its names (newWire), so that a kind of room is described
// once instead of declaring again the frames of another kind.
type roomNames struct {
	noun  string // in the seqs' descriptions: the event's number in its game
	id    field  // the room's id, in every frame
	state field  // what joined carries
	role  bool   // joined says whether the socket plays
	crowd bool   // the room counts its spectators and sends the count

	joined, resumed, resync, left frameName
}

// field is a frame's field: its Go and JSON names, and for the documents
// the named schema it refers to and its description.
type field struct{ goName, json, schema, doc string }

// frameName is a frame's type on the wire and its schema's name in the
// documents.
type frameName struct{ typ, schema string }

// names are the names of each kind of room; the schema names are the
// published ones, which generated clients name their types after.
var names = map[domain.StreamKind]roomNames{
	domain.GameStream: {noun: "game", id: field{goName: "GameID", json: "gameId"},
		state: field{"State", "state", "GameState", "the same as GET /games/:id/state"}, role: true, crowd: true,
		joined: frameName{"joined", "LiveJoinedFrame"}, resumed: frameName{"resumed", "LiveResumedFrame"},
		resync: frameName{"resync", "LiveResyncFrame"}, left: frameName{"left", "LiveLeftFrame"}},
	domain.TournamentStream: {noun: "tournament", id: field{goName: "TournamentID", json: "tournamentId"},
		state:  field{"Tournament", "tournament", "TournamentDetail", "the same as GET /tournaments/:id"},
		joined: frameName{"joined-tournament", "LiveJoinedTournamentFrame"}, resumed: frameName{"resumed-tournament", "LiveResumedTournamentFrame"},
		resync: frameName{"resync-tournament", "LiveTournamentResyncFrame"}, left: frameName{"left-tournament", "LiveLeftTournamentFrame"}},
}

// wire is the frames of one kind of room: Go struct types built from its
// names, whose JSON encodings are the frames.
type wire struct {
	roomNames
	eventType, joinedType, resumedType, resyncType, leftType reflect.Type
}

var (
	stringType    = reflect.TypeFor[string]()
	intType       = reflect.TypeFor[int]()
	boolType      = reflect.TypeFor[bool]()
	rawType       = reflect.TypeFor[json.RawMessage]()
	eventNameType = reflect.TypeFor[domain.EventName]()
)

// structField is a frame's field; rules are the documents' tags
// (const, doc, minimum, ...).
func structField(goName, jsonName string, t reflect.Type, rules string) reflect.StructField {
	return reflect.StructField{Name: goName, Type: t, Tag: reflect.StructTag(strings.TrimSpace(`json:"` + jsonName + `" ` + rules))}
}

// newWire builds the frame types of a kind of room from its names.
func newWire(n roomNames) *wire {
	typ := func(t string) reflect.StructField { return structField("Type", "type", stringType, `const:"`+t+`"`) }
	id := structField(n.id.goName, n.id.json, stringType, "")
	seq := func(minimum int, doc string) reflect.StructField {
		return structField("Seq", "seq", intType, fmt.Sprintf(`minimum:"%d" doc:%q`, minimum, doc))
	}
	joined := []reflect.StructField{typ(n.joined.typ), id,
		seq(0, "the seq of the last event the "+n.state.json+" reflects: the events that follow have higher seqs")}
	if n.role {
		joined = append(joined, structField("Role", "role", stringType, `enum:"player,spectator" doc:"player or spectator"`))
	}
	joined = append(joined, structField(n.state.goName, n.state.json, rawType, fmt.Sprintf(`schema:%q doc:%q`, n.state.schema, n.state.doc)))
	event := []reflect.StructField{typ("event"), structField("Event", "event", eventNameType, ""), id,
		seq(1, "the event's number in its "+n.noun+": 1, 2, 3, ... without gaps"), structField("Data", "data", rawType, `type:"object"`)}
	if n.role {
		event = append(event, structField("Ahead", "ahead,omitempty", boolType, `doc:"true on a chat message, donation or pot sent to a spectator of a game seen late (SPECTATOR_DELAY) as it happens, ahead of the events before it: it does not move the last seq you have, and it comes again in its place in seq order"`))
	}
	return &wire{roomNames: n,
		eventType:   reflect.StructOf(event),
		joinedType:  reflect.StructOf(joined),
		resumedType: reflect.StructOf([]reflect.StructField{typ(n.resumed.typ), id, seq(1, "the lastSeq of the join: the next event is seq + 1")}),
		resyncType:  reflect.StructOf([]reflect.StructField{typ(n.resync.typ), id}),
		leftType:    reflect.StructOf([]reflect.StructField{typ(n.left.typ), id}),
	}
}

// wires are the frames of each kind of room.
var wires = func() map[domain.StreamKind]*wire {
	out := make(map[domain.StreamKind]*wire, len(names))
	for k, n := range names {
		out[k] = newWire(n)
	}
	return out
}()

// wireOf returns the frames of a kind of room.
func wireOf(k domain.StreamKind) *wire { return wires[k] }

// encode is the frame of type t whose fields, in order, are values
// (the first, the frame's type, is the type's own).
func encode(t reflect.Type, values ...any) json.RawMessage {
	v := reflect.New(t).Elem()
	v.Field(0).SetString(t.Field(0).Tag.Get("const"))
	for i, x := range values {
		v.Field(i + 1).Set(reflect.ValueOf(x))
	}
	return mustJSON(v.Interface())
}

// eventFrame is an event's frame; ahead marks one sent to a late
// spectator ahead of its turn (game rooms only: see Joined.Delay).
func (w *wire) eventFrame(e Event, ahead bool) json.RawMessage {
	if !w.role {
		return encode(w.eventType, e.Name, e.Stream.ID, e.Seq, e.Data)
	}
	return encode(w.eventType, e.Name, e.Stream.ID, e.Seq, e.Data, ahead)
}

func (w *wire) joinedFrame(id string, j Joined) json.RawMessage {
	if !w.role {
		return encode(w.joinedType, id, j.Seq, j.State)
	}
	role := "spectator"
	if j.Player {
		role = "player"
	}
	return encode(w.joinedType, id, j.Seq, role, j.State)
}

func (w *wire) resumedFrame(id string, seq int) json.RawMessage {
	return encode(w.resumedType, id, seq)
}
func (w *wire) resyncFrame(id string) json.RawMessage { return encode(w.resyncType, id) }
func (w *wire) leftFrame(id string) json.RawMessage   { return encode(w.leftType, id) }

// errorIn names the room of an error frame: ErrorFrame has a field for
// each kind's id.
func (w *wire) errorIn(f ErrorFrame, id string) ErrorFrame {
	reflect.ValueOf(&f).Elem().FieldByName(w.id.goName).SetString(id)
	return f
}

// Frame is one frame of a kind of room as the documents describe it: its
// type on the wire, its schema's name and a zero value of its Go type.
type Frame struct {
	Type, Schema string
	Payload      any
}

// RoomFrames are the frames of a kind of room, for the documents: the
// envelope of its events and the answers to its joins and leaves.
type RoomFrames struct {
	Event                         any
	Joined, Resumed, Resync, Left Frame
}

// FramesOf returns the frames of a kind of room.
func FramesOf(k domain.StreamKind) RoomFrames {
	w := wireOf(k)
	frame := func(n frameName, t reflect.Type) Frame {
		return Frame{Type: n.typ, Schema: n.schema, Payload: reflect.New(t).Elem().Interface()}
	}
	return RoomFrames{Event: reflect.New(w.eventType).Elem().Interface(),
		Joined: frame(w.joined, w.joinedType), Resumed: frame(w.resumed, w.resumedType),
		Resync: frame(w.resync, w.resyncType), Left: frame(w.left, w.leftType)}
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic("live: frame does not encode: " + err.Error()) // every frame type is a plain struct
	}
	return b
}
