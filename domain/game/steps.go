package game

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"wager/db"
	"wager/domain"
	"wager/domain/eventlog"
)

// stepRow is a change of one game computed from the game as it was at
// Seq: its new state and deadline, and the events it causes. It is stored
// only if nothing happened in the game since Seq.
type stepRow struct {
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
func newSteps(s *Service) *db.Batcher[string, stepRow, []eventlog.Event] {
	return db.NewBatcher[string](db.Batching{What: "store the steps of games", Size: maxSteps, Writers: maxWriters,
		Timeout: stepTimeout}, s.storeSteps)
}

// appendStep stores a step as one statement outside any transaction: the
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
func (s *Service) appendStep(ctx context.Context, st stepRow) ([]eventlog.Event, error) {
	if len(st.Events) == 0 {
		return nil, nil
	}
	return s.steps.Do(ctx, st.GameID, st)
}

// storeSteps stores a batch of steps of distinct games, publishes the
// events of those stored and returns each step's result (nil events: not
// stored). When the statement fails and the batch has more than one step,
// each is stored alone, so that whatever failed fails only its own step.
func (s *Service) storeSteps(ctx context.Context, batch []stepRow) []db.Result[[]eventlog.Event] {
	results := make([]db.Result[[]eventlog.Event], len(batch))
	stored, err := s.writeSteps(ctx, batch)
	switch {
	case err != nil && len(batch) > 1:
		for i := range batch {
			results[i] = s.storeSteps(ctx, batch[i:i+1])[0]
		}
		return results // published one by one
	case err != nil:
		results[0].Err = err
		return results
	}
	for i, rows := range stored {
		results[i].Value = rows
		if rows != nil {
			s.events.Publish(eventlog.Published{Events: rows})
		}
	}
	return results
}

// storeStepsSQL stores steps given as arrays, one element per game and
// one per event, so that its text is the same whatever the batch: it is
// parsed and planned once per connection (see db.QueryPrepared).
const storeStepsSQL = `WITH s AS (SELECT * FROM unnest($1::uuid[], $2::int[], $3::int[], $4::jsonb[], $5::timestamptz[])
		AS s (id, seq, n, state, deadline)),
	l AS (SELECT games.id FROM games JOIN s ON games.id = s.id AND games.seq = s.seq FOR NO KEY UPDATE OF games SKIP LOCKED),
	g AS (UPDATE games SET seq = games.seq + s.n, state = s.state, deadline = s.deadline
		FROM s WHERE games.id = s.id AND games.id IN (SELECT id FROM l) RETURNING games.id, games.seq, s.n),
	e AS (SELECT * FROM unnest($6::uuid[], $7::int[], $8::text[], $9::jsonb[], $10::timestamptz[])
		AS e (id, ord, name, data, created_at))
	INSERT INTO game_events (game_id, seq, name, data, created_at)
	SELECT g.id, g.seq - g.n + e.ord, e.name, e.data, e.created_at FROM g JOIN e ON e.id = g.id
	RETURNING game_id::text, seq`

// stepGames and stepEvents are a batch's columns, as storeStepsSQL takes them.
type (
	stepGames struct {
		ids       []string
		seqs      []int
		counts    []int
		states    []string
		deadlines []*time.Time
	}
	stepEvents struct {
		ids   []string
		ords  []int
		names []string
		data  []string
		times []time.Time
	}
)

// writeSteps runs the statement that stores steps (of distinct games):
// each game's row is updated where its seq is still the step's, and its
// events are inserted numbered after it. It returns each step's events
// with their seqs, nil for a step that was not stored. A game whose row a
// transaction holds (its end being settled, a chat message) is passed
// over rather than waited for, so one busy game does not hold up the
// batch: its step is not stored and its caller takes the locked path.
func (s *Service) writeSteps(ctx context.Context, batch []stepRow) ([][]eventlog.Event, error) {
	var g stepGames
	var e stepEvents
	out := make([][]eventlog.Event, len(batch))
	for i, st := range batch {
		g.ids = append(g.ids, st.GameID)
		g.seqs = append(g.seqs, st.Seq)
		g.counts = append(g.counts, len(st.Events))
		g.states = append(g.states, string(st.State))
		g.deadlines = append(g.deadlines, st.Deadline)
		out[i] = make([]eventlog.Event, len(st.Events))
		for j, ev := range st.Events {
			data, err := json.Marshal(ev.Data)
			if err != nil {
				return nil, fmt.Errorf("encode event %s of game %s: %w", ev.Name, st.GameID, err)
			}
			e.ids = append(e.ids, st.GameID)
			e.ords = append(e.ords, j+1)
			e.names = append(e.names, string(ev.Name))
			e.data = append(e.data, string(data))
			e.times = append(e.times, st.Now)
			out[i][j] = eventlog.Event{Stream: domain.GameStreamOf(st.GameID), Name: ev.Name, Data: data, CreatedAt: st.Now}
		}
	}
	rows, err := db.QueryPrepared(ctx, s.db, storeStepsSQL,
		g.ids, g.seqs, g.counts, g.states, g.deadlines, e.ids, e.ords, e.names, e.data, e.times)
	if err != nil {
		return nil, fmt.Errorf("store the steps of %d games: %w", len(batch), err)
	}
	defer rows.Close()
	seqs := make(map[string][]int, len(batch))
	for rows.Next() {
		var id string
		var seq int
		if err := rows.Scan(&id, &seq); err != nil {
			return nil, fmt.Errorf("read the stored steps: %w", err)
		}
		seqs[id] = append(seqs[id], seq)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store the steps of %d games: %w", len(batch), err)
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
