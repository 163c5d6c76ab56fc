package eventlog

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"wager/db"
	"wager/domain"
)

// Step is a change of one game computed from the game as it was at Seq:
// its new state and deadline, and the events it causes. It is stored only
// if nothing happened in the game since Seq.
type Step struct {
	GameID   string
	Seq      int
	Now      time.Time
	State    json.RawMessage
	Deadline *time.Time
	Events   []domain.Event
}

// maxSteps is the most steps one statement stores, and maxWriters the
// most such statements an instance runs at once: a few, so that moves keep
// their share of a busy database's connections (a single writer would
// wait behind the transactions that start and end games) while still
// taking together the ones that arrive meanwhile.
const (
	maxSteps   = 64
	maxWriters = 4
)

// stepTimeout bounds one statement of steps, which no caller's
// cancellation ends (it carries other callers' steps).
const stepTimeout = 30 * time.Second

// newSteps returns the instance's batcher of steps (db.Batcher): one item
// per game in a statement, and none of a game with a step in flight.
func newSteps(l *Log) *db.Batcher[string, Step, []Event] {
	return db.NewBatcher[string](db.Batching{What: "store the steps of games", Size: maxSteps, Writers: maxWriters,
		Timeout: stepTimeout}, l.storeSteps)
}

// AppendStep stores a step as one statement outside any transaction: the
// game's state, deadline and seq, and its events numbered after Seq, only
// if the game's last event is still Seq. It publishes the events at once
// and returns them, or nil when the game moved on (or does not exist).
// When ctx ends first it returns ctx.Err(), and the step may still be
// stored.
//
// Steps of different games that reach the instance while maxWriters
// statements run are stored together by the next one (see db.Batcher):
// each commit is paid once for all of them, which is what keeps a busy
// instance's moves cheap for the database (one commit, round trip and
// plan per batch instead of per move). A game has at most one step in
// the statements running; a second one waits for a later batch, where its
// seq no longer matches if the first was stored.
func (l *Log) AppendStep(ctx context.Context, st Step) ([]Event, error) {
	if len(st.Events) == 0 {
		return nil, nil
	}
	return l.steps.Do(ctx, st.GameID, st)
}

// storeSteps stores a batch of steps of distinct games, publishes the
// events of those stored and returns each step's result (nil events: not
// stored). When the statement fails and the batch has more than one step,
// each is stored alone, so that whatever failed fails only its own step.
func (l *Log) storeSteps(ctx context.Context, batch []Step) []db.Result[[]Event] {
	results := make([]db.Result[[]Event], len(batch))
	stored, err := l.writeSteps(ctx, batch)
	switch {
	case err != nil && len(batch) > 1:
		for i := range batch {
			results[i] = l.storeSteps(ctx, batch[i:i+1])[0]
		}
		return results // published one by one
	case err != nil:
		results[0].Err = err
		return results
	}
	for i, rows := range stored {
		results[i].Value = rows
		if rows != nil {
			l.sink.Published(Published{Events: rows})
		}
	}
	return results
}

// writeSteps runs the statement that stores steps (of distinct games):
// each game's row is updated where its seq is still the step's, and its
// events are inserted numbered after it. It returns each step's events
// with their seqs, nil for a step that was not stored. A game whose row a
// transaction holds (its end being settled, a chat message) is passed
// over rather than waited for, so one busy game does not hold up the
// batch: its step is not stored and its caller takes the locked path.
func (l *Log) writeSteps(ctx context.Context, batch []Step) ([][]Event, error) {
	var games, events []string
	var args []any
	for _, st := range batch {
		games = append(games, "(?::uuid, ?::int, ?::int, ?::jsonb, ?::timestamptz)")
		args = append(args, st.GameID, st.Seq, len(st.Events), string(st.State), st.Deadline)
	}
	out := make([][]Event, len(batch))
	for i, st := range batch {
		out[i] = make([]Event, len(st.Events))
		for j, e := range st.Events {
			data, err := json.Marshal(e.Data)
			if err != nil {
				return nil, fmt.Errorf("encode event %s of game %s: %w", e.Name, st.GameID, err)
			}
			events = append(events, "(?::uuid, ?::int, ?::text, ?::jsonb, ?::timestamptz)")
			args = append(args, st.GameID, j+1, e.Name, string(data), st.Now)
			out[i][j] = Event{GameID: st.GameID, Name: e.Name, Data: data, CreatedAt: st.Now}
		}
	}
	var rows []struct {
		GameID string `bun:"game_id"`
		Seq    int    `bun:"seq"`
	}
	err := l.db.NewRaw(`WITH s (id, seq, n, state, deadline) AS (VALUES `+strings.Join(games, ", ")+`),
		l AS (SELECT games.id FROM games JOIN s ON games.id = s.id AND games.seq = s.seq FOR NO KEY UPDATE OF games SKIP LOCKED),
		g AS (UPDATE games SET seq = games.seq + s.n, state = s.state, deadline = s.deadline
			FROM s WHERE games.id = s.id AND games.id IN (SELECT id FROM l) RETURNING games.id, games.seq, s.n),
		e (id, ord, name, data, created_at) AS (VALUES `+strings.Join(events, ", ")+`)
		INSERT INTO game_events (game_id, seq, name, data, created_at)
		SELECT g.id, g.seq - g.n + e.ord, e.name, e.data, e.created_at FROM g JOIN e ON e.id = g.id
		RETURNING game_id, seq`, args...).Scan(ctx, &rows)
	if err != nil {
		return nil, fmt.Errorf("store the steps of %d games: %w", len(batch), err)
	}
	seqs := make(map[string][]int, len(batch))
	for _, r := range rows {
		seqs[r.GameID] = append(seqs[r.GameID], r.Seq)
	}
	for i, st := range batch {
		got := seqs[st.GameID]
		if len(got) != len(st.Events) {
			out[i] = nil // the game moved on since the step's seq
			continue
		}
		slices.Sort(got)
		for j := range out[i] {
			out[i][j].Seq = got[j]
		}
	}
	return out, nil
}
