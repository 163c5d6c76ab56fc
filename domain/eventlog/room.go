// Package eventlog is the live record of what happens in games: every
// game's room has an event log (one row per event with a per-game seq, written in
// the transaction that causes it, replayable by seq), and every user has a
// channel of personal notices. What a transaction publishes is handed to a
// Sink right after it commits, never inside it: PostgreSQL serializes the
// commits of transactions that NOTIFY, so events leave the database
// through the Announcer, batched per instance, after the commit.
//
// Game, chat, pot and every later feature of a game's room append through
// one Log, so a room's events keep one order.
package eventlog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"

	"wager/db"
	"wager/domain"
)

// Event is one stored event of a game's room.
type Event struct {
	bun.BaseModel `bun:"table:game_events"`

	GameID    string           `bun:"game_id,pk,type:uuid" json:"gameId"`
	Seq       int              `bun:"seq,pk" json:"seq"`
	Name      domain.EventName `bun:"name" json:"event"`
	Data      json.RawMessage  `bun:"data,type:jsonb" json:"data" doc:"the event's payload; its shape depends on the event name"`
	CreatedAt time.Time        `bun:"created_at" json:"createdAt"`
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
// game, in seq order, or notices.
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
	db    *bun.DB
	sink  Sink
	steps *db.Batcher[string, Step, []Event]
}

// New returns a Log that publishes to sink.
func New(bdb *bun.DB, sink Sink) *Log {
	l := &Log{db: bdb, sink: sink}
	l.steps = newSteps(l)
	return l
}

// ErrNoGame is Append's error when the game does not exist.
var ErrNoGame = errors.New("room: no such game")

// Append stores events after the game's last one, in the caller's
// transaction (one started by db.Transact, whose commit publishes them),
// and returns them with their seqs. Bumping the game's seq takes the game's
// row lock, so the events of one room are numbered in commit order. It
// returns ErrNoGame when there is no such game.
func (l *Log) Append(ctx context.Context, tx db.Tx, gameID string, now time.Time, events ...domain.Event) ([]Event, error) {
	return l.AppendUpdating(ctx, tx, gameID, now, Update{}, events...)
}

// Update is more of the game's row to set in the statement that appends
// events: set is SQL assignments with ? placeholders ("state = ?"), args
// their values.
type Update struct {
	Set  string
	Args []any
}

// AppendUpdating is Append that also updates the game's row with u, in the
// same statement: a move stores its state and its events in one round trip.
func (l *Log) AppendUpdating(ctx context.Context, tx db.Tx, gameID string, now time.Time, u Update, events ...domain.Event) ([]Event, error) {
	return l.appendUpdating(ctx, tx, gameID, now, u, events, false)
}

// AppendLast is AppendUpdating as the last statement of its transaction:
// the writes the transaction queued with db.Tx.Later go in the same round
// trip, after it (see db.Tx.QueryAndFlush), and an error of theirs is its.
func (l *Log) AppendLast(ctx context.Context, tx db.Tx, gameID string, now time.Time, u Update, events ...domain.Event) ([]Event, error) {
	return l.appendUpdating(ctx, tx, gameID, now, u, events, true)
}

func (l *Log) appendUpdating(ctx context.Context, tx db.Tx, gameID string, now time.Time, u Update, events []domain.Event, last bool) ([]Event, error) {
	rows, err := appendEvents(ctx, tx, gameID, now, u, events, last)
	if err != nil || len(rows) == 0 {
		return nil, err
	}
	if err := tx.AfterCommit(func() { l.sink.Published(Published{Events: rows}) }); err != nil {
		return nil, err
	}
	return rows, nil
}

// appendEvents runs the statement that bumps the game's seq (with u) and
// inserts the events numbered after it (with the transaction's queued
// writes when last). ErrNoGame when there is no such game.
func appendEvents(ctx context.Context, tx db.Tx, gameID string, now time.Time, u Update, events []domain.Event, last bool) ([]Event, error) {
	if len(events) == 0 {
		if last {
			return nil, tx.Flush(ctx)
		}
		return nil, nil
	}
	set := "seq = seq + ?"
	args := []any{len(events)}
	if u.Set != "" {
		set += ", " + u.Set
		args = append(args, u.Args...)
	}
	args = append(args, gameID, gameID, len(events), now)
	values := make([]string, len(events))
	rows := make([]Event, len(events))
	for i, e := range events {
		data, err := json.Marshal(e.Data)
		if err != nil {
			return nil, fmt.Errorf("encode event %s of game %s: %w", e.Name, gameID, err)
		}
		values[i] = "(?::int, ?::text, ?::jsonb)"
		args = append(args, i+1, string(e.Name), string(data))
		rows[i] = Event{GameID: gameID, Name: e.Name, Data: data, CreatedAt: now}
	}
	// One statement: bump the seq and insert the rows numbered after it.
	query := `WITH g AS (UPDATE games SET ` + set + ` WHERE id = ? RETURNING seq)
		INSERT INTO game_events (game_id, seq, name, data, created_at)
		SELECT ?, g.seq - ? + v.ord, v.name, v.data, ? FROM g, (VALUES ` + strings.Join(values, ", ") + `) AS v (ord, name, data)
		RETURNING seq`
	var seqs []int
	var err error
	if last {
		err = tx.QueryAndFlush(ctx, func(r db.Row) error {
			var seq int
			err := r.Scan(&seq)
			seqs = append(seqs, seq)
			return err
		}, query, args...)
	} else {
		err = tx.NewRaw(query, args...).Scan(ctx, &seqs)
	}
	if err != nil {
		return nil, fmt.Errorf("append events to game %s: %w", gameID, err)
	}
	if len(seqs) == 0 {
		return nil, ErrNoGame
	}
	slices.Sort(seqs)
	for i := range rows {
		rows[i].Seq = seqs[i]
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
		o.Rows[i] = Event{GameID: gameID, Seq: i + 1, Name: e.Name, Data: data, CreatedAt: now}
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

// Events returns a game's events with seq greater than after, in order, at
// most limit of them.
func (l *Log) Events(ctx context.Context, gameID string, after, limit int) ([]Event, error) {
	out := []Event{}
	err := l.db.NewSelect().Model(&out).Where("game_id = ? AND seq > ?", gameID, after).
		Order("seq").Limit(int64(limit)).Scan(ctx)
	if err != nil {
		return nil, fmt.Errorf("read events of game %s: %w", gameID, err)
	}
	return out, nil
}

// LastSeqs returns the seq of the last event of each of the games.
func (l *Log) LastSeqs(ctx context.Context, gameIDs []string) (map[string]int, error) {
	out := make(map[string]int, len(gameIDs))
	if len(gameIDs) == 0 {
		return out, nil
	}
	var rows []struct {
		ID  string `bun:"id"`
		Seq int    `bun:"seq"`
	}
	if err := l.db.NewSelect().Table("games").Column("id", "seq").Where("id = ANY(?::uuid[])", pgdialect.Array(gameIDs)).Scan(ctx, &rows); err != nil {
		return nil, fmt.Errorf("read the last seqs of %d games: %w", len(gameIDs), err)
	}
	for _, r := range rows {
		out[r.ID] = r.Seq
	}
	return out, nil
}
