// Package eventlog is the live record of what happens in rooms: every
// room (a game's, a tournament's: see domain.StreamKind) has an event
// stream, one row per event numbered per room, written in the transaction
// that causes it and replayable by seq, and every user has a channel of
// personal notices. What a transaction publishes is handed to a Sink right
// after it commits, never inside it: PostgreSQL serializes the commits of
// transactions that NOTIFY, so events leave the database through the
// Announcer, batched per instance, after the commit.
//
// Game, chat, pot, tournament and every later feature of a room append
// through one Log, so a room's events keep one order. A kind of room is a
// row of streamTables: a table of its rooms, whose seq column numbers
// their events, and a table of the events.
package eventlog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"

	"wager/db"
	"wager/domain"
)

// Event is one stored event of a room.
type Event = domain.StreamEvent

// streamTables are where each kind of room keeps its events: rooms is the
// table of the games or tournaments (id, and seq: the number of the last
// event), events the table of their events (keyed by column and seq).
var streamTables = map[domain.StreamKind]struct{ rooms, events, column string }{
	domain.GameStream:       {"games", "game_events", "game_id"},
	domain.TournamentStream: {"tournaments", "tournament_events", "tournament_id"},
}

// Notice is a personal message to one user's open sockets (matched,
// challenged, a direct message...), or with an empty UserID a message to
// every socket (see Broadcast).
type Notice struct {
	UserID string            `json:"userId"`
	Type   domain.NoticeKind `json:"type"`
	Data   json.RawMessage   `json:"data"`
}

// Published is what one committed transaction published: events of one
// room, in seq order, or notices.
type Published struct {
	Events  []Event
	Notices []Notice
}

// Sink receives what transactions published, right after they commit, on
// the committing goroutine: it must not block.
type Sink interface {
	Published(Published)
}

// Sinks hands every publication to each of its sinks in turn.
type Sinks []Sink

// Published implements Sink.
func (s Sinks) Published(p Published) {
	for _, sink := range s {
		sink.Published(p)
	}
}

// Log appends room events and personal notices inside transactions and
// publishes them to its sink after the commit.
type Log struct {
	db   *bun.DB
	sink Sink
}

// New returns a Log that publishes to sink.
func New(bdb *bun.DB, sink Sink) *Log {
	return &Log{db: bdb, sink: sink}
}

// ErrNoRoom is Append's error when the game or tournament does not exist.
var ErrNoRoom = errors.New("room: no such game or tournament")

// Append stores events after the room's last one, in the caller's
// transaction (one started by db.Transact, whose commit publishes them),
// and returns them with their seqs. Bumping the room's seq takes its row
// lock, so the events of one room are numbered in commit order. It
// returns ErrNoRoom when there is no such room.
func (l *Log) Append(ctx context.Context, tx db.Tx, s domain.Stream, now time.Time, events ...domain.Event) ([]Event, error) {
	if len(events) == 0 {
		return nil, nil
	}
	in, err := NewInsertion(s, now, events...) // refuses a kind without tables
	if err != nil {
		return nil, err
	}
	var seqs []int
	err = tx.NewRaw(`WITH r AS (UPDATE `+streamTables[s.Kind].rooms+` SET seq = seq + ? WHERE id = ? RETURNING seq) `+in.SQL,
		append([]any{len(events), s.ID}, in.Args(false)...)...).Scan(ctx, &seqs)
	if err != nil {
		return nil, fmt.Errorf("append events to %s: %w", s, err)
	}
	return l.Stored(tx, in, seqs)
}

// Insertion is the part of a statement that stores a room's events,
// numbered after the seq that the statement's CTE named r returns: the
// room's row, its seq moved on by the number of events. A room's owner
// whose statement changes more of its row (a game's state with a move's
// events) writes that CTE itself, then hands the seqs the statement
// returned to Stored.
type Insertion struct {
	// SQL is "INSERT ... SELECT ... FROM r ... RETURNING seq"; its
	// arguments (Args) follow the CTE's. Its text depends only on the
	// kind of room, not on the number of events, so that the statement is
	// planned once per connection when it is prepared.
	SQL   string
	rows  []Event
	names []string
	datas []string
}

// NewInsertion encodes events of a room for a statement that stores them.
func NewInsertion(s domain.Stream, now time.Time, events ...domain.Event) (Insertion, error) {
	t, ok := streamTables[s.Kind]
	if !ok {
		return Insertion{}, fmt.Errorf("store events of %s: %w", s, ErrNoRoom)
	}
	in := Insertion{SQL: `INSERT INTO ` + t.events + ` (` + t.column + `, seq, name, data, created_at)
		SELECT ?, r.seq - ? + v.ord, v.name, v.data::jsonb, ? FROM r, unnest(?::text[], ?::text[]) WITH ORDINALITY AS v (name, data, ord)
		RETURNING seq`,
		rows: make([]Event, len(events)), names: make([]string, len(events)), datas: make([]string, len(events))}
	for i, e := range events {
		data, err := json.Marshal(e.Data)
		if err != nil {
			return Insertion{}, fmt.Errorf("encode event %s of %s: %w", e.Name, s, err)
		}
		in.names[i], in.datas[i] = string(e.Name), string(data)
		in.rows[i] = Event{Stream: s, Name: e.Name, Data: data, CreatedAt: now}
	}
	return in, nil
}

// Args are the arguments of the insertion's SQL. pipelined: for a
// statement the driver sends itself (db.Tx.QueryAndFlush), which takes
// slices as arrays; otherwise bun's.
func (in Insertion) Args(pipelined bool) []any {
	var names, datas any = pgdialect.Array(in.names), pgdialect.Array(in.datas)
	if pipelined {
		names, datas = in.names, in.datas
	}
	var now time.Time
	var id string
	if len(in.rows) > 0 {
		now, id = in.rows[0].CreatedAt, in.rows[0].Stream.ID
	}
	return []any{id, len(in.rows), now, names, datas}
}

// Stored numbers the insertion's events with the seqs its statement
// returned, has them published once tx commits and returns them.
// ErrNoRoom when the statement stored none: its room's row did not match.
func (l *Log) Stored(tx db.Tx, in Insertion, seqs []int) ([]Event, error) {
	if len(in.rows) == 0 {
		return nil, nil
	}
	if len(seqs) != len(in.rows) {
		return nil, ErrNoRoom
	}
	slices.Sort(seqs)
	rows := slices.Clone(in.rows)
	for i := range rows {
		rows[i].Seq = seqs[i]
	}
	if err := tx.AfterCommit(func() { l.sink.Published(Published{Events: rows}) }); err != nil {
		return nil, err
	}
	return rows, nil
}

// Opening is a new game's first events, numbered from 1, to be stored by
// the statement that creates the game (see Insert) and published with
// Opened or Publish.
type Opening struct {
	Rows []Event
}

// OpeningOf numbers a new game's first events from 1.
func OpeningOf(gameID string, now time.Time, events ...domain.Event) (Opening, error) {
	o := Opening{Rows: make([]Event, len(events))}
	for i, e := range events {
		data, err := json.Marshal(e.Data)
		if err != nil {
			return o, fmt.Errorf("encode event %s of game %s: %w", e.Name, gameID, err)
		}
		o.Rows[i] = Event{Stream: domain.GameStreamOf(gameID), Seq: i + 1, Name: e.Name, Data: data, CreatedAt: now}
	}
	return o, nil
}

// Columns returns the events' seqs, names and data, one array each, for
// the statement that creates the game to store them in the same
// statement (when the game is not inserted, neither are they); the game's
// seq starts at the number of its events.
func (o Opening) Columns() (seqs []int, names []string, data []string) {
	for _, e := range o.Rows {
		seqs = append(seqs, e.Seq)
		names = append(names, string(e.Name))
		data = append(data, string(e.Data))
	}
	return seqs, names, data
}

// Opened publishes a new game's opening events, stored by tx, once it
// commits.
func (l *Log) Opened(tx db.Tx, o Opening) error {
	if len(o.Rows) == 0 {
		return nil
	}
	return tx.AfterCommit(func() { l.sink.Published(Published{Events: o.Rows}) })
}

// Publish hands p to the sink at once: what a statement that ran outside
// any transaction stored (and so committed), with the notices it causes.
// Call it once the statement succeeded.
func (l *Log) Publish(p Published) { l.sink.Published(p) }

// NoticeOf is the notice of type kind with data (a struct with json tags)
// to a user, for Publish.
func NoticeOf(userID string, kind domain.NoticeKind, data any) (Notice, error) {
	raw, err := json.Marshal(data)
	if err != nil {
		return Notice{}, fmt.Errorf("encode notice %s: %w", kind, err)
	}
	return Notice{UserID: userID, Type: kind, Data: raw}, nil
}

// Tell sends a notice of type kind with data (a struct with json tags) to
// a user's sockets on every instance once tx commits. Notices are not stored: a user who is not
// connected finds the same facts through the API.
func (l *Log) Tell(tx db.Tx, userID string, kind domain.NoticeKind, data any) error {
	n, err := NoticeOf(userID, kind, data)
	if err != nil {
		return err
	}
	return tx.AfterCommit(func() { l.sink.Published(Published{Notices: []Notice{n}}) })
}

// Broadcast sends a notice of type kind with data to every open socket on
// every instance once tx commits: a Notice whose
// UserID is empty is everyone's. The live layer bounds how many it pushes.
func (l *Log) Broadcast(tx db.Tx, kind domain.NoticeKind, data any) error {
	return l.Tell(tx, "", kind, data)
}

// Events returns a room's events with seq greater than after, in order,
// at most limit of them.
func (l *Log) Events(ctx context.Context, s domain.Stream, after, limit int) ([]Event, error) {
	t, ok := streamTables[s.Kind]
	if !ok {
		return nil, fmt.Errorf("read events of %s: %w", s, ErrNoRoom)
	}
	var stored []struct {
		Seq       int              `bun:"seq"`
		Name      domain.EventName `bun:"name"`
		Data      json.RawMessage  `bun:"data,type:jsonb"`
		CreatedAt time.Time        `bun:"created_at"`
	}
	err := l.db.NewSelect().TableExpr(t.events).Column("seq", "name", "data", "created_at").
		Where("? = ? AND seq > ?", bun.Ident(t.column), s.ID, after).Order("seq").Limit(int64(limit)).Scan(ctx, &stored)
	if err != nil {
		return nil, fmt.Errorf("read events of %s: %w", s, err)
	}
	out := make([]Event, len(stored))
	for i, e := range stored {
		out[i] = Event{Stream: s, Seq: e.Seq, Name: e.Name, Data: e.Data, CreatedAt: e.CreatedAt}
	}
	return out, nil
}

// eventsOfSQL reads every event of a list of rooms, room by room in seq
// order; %[1]s is the events table, %[2]s its room column.
const eventsOfSQL = `SELECT e.%[2]s::text, e.seq, e.name, e.data, e.created_at FROM %[1]s AS e WHERE e.%[2]s = ANY($1::uuid[])
	ORDER BY e.%[2]s, e.seq` // by the uuid, not its text: no collation to sort by

// eventsOfQueries are eventsOfSQL for each kind of room: a prepared
// statement's text never changes.
var eventsOfQueries = func() map[domain.StreamKind]string {
	out := make(map[domain.StreamKind]string, len(streamTables))
	for kind, t := range streamTables {
		out[kind] = fmt.Sprintf(eventsOfSQL, t.events, t.column)
	}
	return out
}()

// EventsOf returns every event of the rooms of a kind named by ids, each
// room's in seq order, read in one prepared statement on idb (a
// transaction's, to read what it sees).
func EventsOf(ctx context.Context, idb bun.IDB, kind domain.StreamKind, ids []string) (map[string][]Event, error) {
	out := make(map[string][]Event, len(ids))
	query, ok := eventsOfQueries[kind]
	if !ok {
		return nil, fmt.Errorf("read the events of %d %ss: %w", len(ids), kind, ErrNoRoom)
	}
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := db.QueryPrepared(ctx, idb, query, ids)
	if err != nil {
		return nil, fmt.Errorf("read the events of %d %ss: %w", len(ids), kind, err)
	}
	defer rows.Close()
	for rows.Next() {
		var e Event
		var data []byte
		if err := rows.Scan(&e.Stream.ID, &e.Seq, &e.Name, &data, &e.CreatedAt); err != nil {
			return nil, fmt.Errorf("read the events of %d %ss: %w", len(ids), kind, err)
		}
		e.Stream.Kind, e.Data = kind, data
		out[e.Stream.ID] = append(out[e.Stream.ID], e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read the events of %d %ss: %w", len(ids), kind, err)
	}
	return out, nil
}

// LastSeqs returns the seq of the last event of each of the rooms of a
// kind that exist.
func (l *Log) LastSeqs(ctx context.Context, kind domain.StreamKind, ids []string) (map[string]int, error) {
	out := make(map[string]int, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	t, ok := streamTables[kind]
	if !ok {
		return nil, fmt.Errorf("read the last seqs of %d %ss: %w", len(ids), kind, ErrNoRoom)
	}
	var rows []struct {
		ID  string `bun:"id"`
		Seq int    `bun:"seq"`
	}
	if err := l.db.NewSelect().TableExpr(t.rooms).Column("id", "seq").Where("id = ANY(?::uuid[])", pgdialect.Array(ids)).Scan(ctx, &rows); err != nil {
		return nil, fmt.Errorf("read the last seqs of %d %ss: %w", len(ids), kind, err)
	}
	for _, r := range rows {
		out[r.ID] = r.Seq
	}
	return out, nil
}
