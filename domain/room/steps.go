package room

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

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

// A waiting step and where its caller waits for the outcome.
type pendingStep struct {
	step Step
	done chan stepResult
}

type stepResult struct {
	rows []Event // nil: not stored, the game moved on (or is gone)
	err  error
}

// steps is the instance's queue of steps waiting to be stored; running
// is how many goroutines are storing them.
type steps struct {
	mu       sync.Mutex
	queue    []*pendingStep
	running  int
	inFlight map[string]bool // games with a step in a running statement
}

// AppendStep stores a step as one statement outside any transaction: the
// game's state, deadline and seq, and its events numbered after Seq, only
// if the game's last event is still Seq. It publishes the events at once
// and returns them, or nil when the game moved on (or does not exist).
//
// Steps of different games that reach the instance while maxWriters
// statements run are stored together by the next one: each commit is paid
// once for all of them, which is what keeps a busy instance's moves cheap
// for the database (one commit, round trip and plan per batch instead of
// per move). A game has at most one step in the statements running; a
// second one waits for a later batch, where its seq no longer matches if
// the first was stored.
func (l *Log) AppendStep(ctx context.Context, st Step) ([]Event, error) {
	if len(st.Events) == 0 {
		return nil, nil
	}
	p := &pendingStep{step: st, done: make(chan stepResult, 1)}
	l.steps.mu.Lock()
	l.steps.queue = append(l.steps.queue, p)
	lead := l.steps.running < maxWriters
	if lead {
		l.steps.running++
	}
	l.steps.mu.Unlock()
	if lead {
		l.drainSteps(context.WithoutCancel(ctx), true)
	}
	select {
	case r := <-p.done:
		return r.rows, r.err
	case <-ctx.Done(): // the step may still be stored: the caller is gone
		return nil, ctx.Err()
	}
}

// drainSteps stores the queue a batch at a time. The caller that started
// it (handOff) stores one batch, usually the one that holds its own step,
// and leaves the rest to a goroutine, so it is not kept answering others.
func (l *Log) drainSteps(ctx context.Context, handOff bool) {
	for {
		batch := l.takeSteps()
		if batch == nil {
			return
		}
		results := l.storeSteps(ctx, batch)
		l.landed(batch)
		for i, p := range batch {
			if results[i].rows != nil {
				l.sink.Published(Published{Events: results[i].rows})
			}
			p.done <- results[i]
		}
		if handOff {
			go l.drainSteps(ctx, false)
			return
		}
	}
}

// takeSteps removes the next batch from the queue: up to maxSteps steps in
// arrival order, one per game and none of a game with a step in flight
// (those stay queued, in order, for the writer storing that game to take
// next). It returns nil, and counts its caller out of the running
// writers, when it finds nothing to take.
func (l *Log) takeSteps() []*pendingStep {
	l.steps.mu.Lock()
	defer l.steps.mu.Unlock()
	if l.steps.inFlight == nil {
		l.steps.inFlight = map[string]bool{}
	}
	var batch []*pendingStep
	rest := l.steps.queue[:0]
	for _, p := range l.steps.queue {
		if len(batch) == maxSteps || l.steps.inFlight[p.step.GameID] {
			rest = append(rest, p)
			continue
		}
		l.steps.inFlight[p.step.GameID] = true
		batch = append(batch, p)
	}
	clear(l.steps.queue[len(rest):])
	l.steps.queue = rest
	if len(batch) == 0 {
		l.steps.running--
		return nil
	}
	return batch
}

// landed marks a batch's games as no longer in flight.
func (l *Log) landed(batch []*pendingStep) {
	l.steps.mu.Lock()
	defer l.steps.mu.Unlock()
	for _, p := range batch {
		delete(l.steps.inFlight, p.step.GameID)
	}
}

// storeSteps stores a batch in one statement and returns each step's
// result. When that statement fails and the batch has more than one step,
// each is stored alone, so that whatever failed fails only its own step.
func (l *Log) storeSteps(ctx context.Context, batch []*pendingStep) (results []stepResult) {
	// A bug that panics fails this batch, not every later step of the
	// instance (whose queue would never run again) or the process.
	defer func() {
		if p := recover(); p != nil {
			err := fmt.Errorf("store the steps of %d games: panic: %v", len(batch), p)
			results = make([]stepResult, len(batch))
			for i := range results {
				results[i].err = err
			}
		}
	}()
	ctx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	results = make([]stepResult, len(batch))
	all := make([]Step, len(batch))
	for i, p := range batch {
		all[i] = p.step
	}
	stored, err := l.writeSteps(ctx, all)
	if err != nil && len(batch) > 1 {
		for i, p := range batch {
			results[i] = l.storeSteps(ctx, []*pendingStep{p})[0]
		}
		return results
	}
	for i := range results {
		results[i] = stepResult{rows: stored[i], err: err}
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
