package game

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"wager/db"
	"wager/db/dbtest"
	"wager/domain"
	"wager/domain/eventlog"
)

func stateOf(n int) json.RawMessage { return json.RawMessage(fmt.Sprintf(`{"n":%d}`, n)) }

// published keeps what the event log publishes.
type published struct {
	mu  sync.Mutex
	got []eventlog.Published
}

func (r *published) Published(p eventlog.Published) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, p)
}

func (r *published) publications() []eventlog.Published {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

// stepper is a Service that stores steps on a database of the test's
// own (its games' made-up states must not meet the deadline worker of the
// package's other tests), publishing to sink, and the event log it reads
// them back from.
func stepper(t testing.TB, sink eventlog.Sink) (*Service, *eventlog.Log) {
	bdb, err := db.Open(context.Background(), dbtest.Fresh(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bdb.Close() })
	l := eventlog.New(bdb, sink)
	s := &Service{db: bdb, events: l}
	s.steps = newSteps(s)
	return s, l
}

// storedGame stores an active game with no events and returns its id.
func (s *Service) storedGame(t testing.TB) string {
	t.Helper()
	id := uuid.NewString()
	if _, err := s.db.ExecContext(context.Background(), `INSERT INTO games (id, game_type, stake_minor, settings, status, state, created_at)
		VALUES (?, 'rps', 0, '{}', 'active', '{}', now())`, id); err != nil {
		t.Fatalf("create a game: %v", err)
	}
	return id
}

func (s *Service) gameSeq(t testing.TB, gameID string) int {
	t.Helper()
	var seq int
	if err := s.db.QueryRowContext(context.Background(), "SELECT seq FROM games WHERE id = ?", gameID).Scan(&seq); err != nil {
		t.Fatal(err)
	}
	return seq
}

// moves are n events named name-1, name-2, ...
func moves(name string, n int) []domain.Event {
	out := make([]domain.Event, n)
	for i := range out {
		out[i] = domain.Event{Name: domain.EventName(fmt.Sprintf("%s-%d", name, i+1)), Data: map[string]int{"n": i + 1}}
	}
	return out
}

// names are the seqs and names of events, "1:move-1".
func names(rows []eventlog.Event) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = fmt.Sprintf("%d:%s", r.Seq, r.Name)
	}
	return out
}

func TestAStepIsStoredOnlyIfTheGameIsStillAtItsSeq(t *testing.T) {
	ctx := context.Background()
	sink := &published{}
	l, _ := stepper(t, sink)
	gameID := l.storedGame(t)
	deadline := time.Now().Add(time.Minute).UTC().Truncate(time.Microsecond)

	rows, err := l.appendStep(ctx, stepRow{GameID: gameID, Seq: 0, Now: time.Now(), State: stateOf(1), Deadline: &deadline,
		Events: moves("move", 2)})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := names(rows), []string{"1:move-1", "2:move-2"}; !slices.Equal(got, want) {
		t.Fatalf("stored: got %v, want %v", got, want)
	}
	var state string
	var stored time.Time
	if err := l.db.QueryRowContext(ctx, "SELECT state::text, deadline FROM games WHERE id = ?", gameID).Scan(&state, &stored); err != nil {
		t.Fatal(err)
	}
	if state != `{"n": 1}` || !stored.Equal(deadline) {
		t.Fatalf("game row: state %s deadline %v, want {\"n\": 1} and %v", state, stored, deadline)
	}
	if pubs := sink.publications(); len(pubs) != 1 || !slices.Equal(names(pubs[0].Events), names(rows)) {
		t.Fatalf("published: %+v, want the stored events once", pubs)
	}

	// Computed from seq 0 again: the game has moved on, nothing changes.
	rows, err = l.appendStep(ctx, stepRow{GameID: gameID, Seq: 0, Now: time.Now(), State: stateOf(9), Events: moves("late", 1)})
	if err != nil || rows != nil {
		t.Fatalf("a step from an old seq: got %v, %v; want nothing stored", rows, err)
	}
	if l.gameSeq(t, gameID) != 2 || len(sink.publications()) != 1 {
		t.Fatalf("a refused step changed the game (seq %d) or published", l.gameSeq(t, gameID))
	}
	// A game that does not exist.
	rows, err = l.appendStep(ctx, stepRow{GameID: "00000000-0000-4000-8000-000000000000", Seq: 0, Now: time.Now(),
		State: stateOf(1), Events: moves("x", 1)})
	if err != nil || rows != nil {
		t.Fatalf("a step of no game: got %v, %v; want nothing stored", rows, err)
	}
}

func TestAStepThatFailsDoesNotFailTheOthersOfItsBatch(t *testing.T) {
	ctx := context.Background()
	sink := &published{}
	l, _ := stepper(t, sink)
	good1, bad, good2 := l.storedGame(t), l.storedGame(t), l.storedGame(t)
	batch := []stepRow{
		{GameID: good1, Now: time.Now(), State: stateOf(1), Events: moves("a", 1)},
		{GameID: bad, Now: time.Now(), State: json.RawMessage(`{"n":`), Events: moves("b", 1)},
		{GameID: good2, Now: time.Now(), State: stateOf(1), Events: moves("c", 2)},
	}
	results := l.storeSteps(ctx, batch)
	if results[1].Err == nil {
		t.Fatal("a step with a state PostgreSQL refuses was stored")
	}
	for _, i := range []int{0, 2} {
		if results[i].Err != nil || len(results[i].Value) != len(batch[i].Events) {
			t.Fatalf("step %d beside a failing one: %+v", i, results[i])
		}
	}
	if l.gameSeq(t, good1) != 1 || l.gameSeq(t, bad) != 0 || l.gameSeq(t, good2) != 2 {
		t.Fatalf("seqs after the batch: %d %d %d, want 1 0 2", l.gameSeq(t, good1), l.gameSeq(t, bad), l.gameSeq(t, good2))
	}
}

// Many players stepping in few games at once, each from the seq it last
// saw, as actions do: every game ends with gapless seqs, each stored step's
// events under the seqs it was answered with, and nothing of a refused one.
func TestConcurrentStepsOfManyGames(t *testing.T) {
	ctx := context.Background()
	sink := &published{}
	l, log := stepper(t, sink)
	const nGames, players, attempts = 6, 4, 15
	ids := make([]string, nGames)
	for i := range ids {
		ids[i] = l.storedGame(t)
	}
	type answer struct {
		gameID string
		rows   []eventlog.Event
	}
	var mu sync.Mutex
	var stored []answer
	var wg sync.WaitGroup
	for p := range nGames * players {
		wg.Add(1)
		go func() {
			defer wg.Done()
			gameID := ids[p%nGames]
			for a := range attempts {
				seq := l.gameSeq(t, gameID)
				rows, err := l.appendStep(ctx, stepRow{GameID: gameID, Seq: seq, Now: time.Now(), State: stateOf(seq),
					Events: moves(fmt.Sprintf("p%d.%d", p, a), 1+rand.IntN(3))})
				if err != nil {
					t.Error(err)
					return
				}
				if rows != nil {
					mu.Lock()
					stored = append(stored, answer{gameID, rows})
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	answered := map[string]map[int]domain.EventName{}
	for _, a := range stored {
		if answered[a.gameID] == nil {
			answered[a.gameID] = map[int]domain.EventName{}
		}
		for _, e := range a.rows {
			if _, dup := answered[a.gameID][e.Seq]; dup {
				t.Fatalf("game %s: seq %d answered twice", a.gameID, e.Seq)
			}
			answered[a.gameID][e.Seq] = e.Name
		}
	}
	published := 0
	for _, p := range sink.publications() {
		published += len(p.Events)
	}
	total := 0
	for _, id := range ids {
		got, err := log.Events(ctx, domain.GameStreamOf(id), 0, 10_000)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 0 {
			t.Fatalf("game %s: no step was stored", id)
		}
		for i, e := range got {
			if e.Seq != i+1 {
				t.Fatalf("game %s: event %d has seq %d (a gap or a repeat)", id, i, e.Seq)
			}
			if answered[id][e.Seq] != e.Name {
				t.Fatalf("game %s seq %d: stored %s, answered %q", id, e.Seq, e.Name, answered[id][e.Seq])
			}
		}
		if len(got) != len(answered[id]) || l.gameSeq(t, id) != len(got) {
			t.Fatalf("game %s: %d events stored, %d answered, seq %d", id, len(got), len(answered[id]), l.gameSeq(t, id))
		}
		total += len(got)
	}
	if published != total {
		t.Fatalf("published %d events, stored %d", published, total)
	}
}

func TestAGameHeldByATransactionDoesNotHoldUpTheBatch(t *testing.T) {
	ctx := context.Background()
	l, _ := stepper(t, &published{})
	held, free := l.storedGame(t), l.storedGame(t)
	tx, err := l.db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, "SELECT 1 FROM games WHERE id = ? FOR UPDATE", held); err != nil {
		t.Fatal(err)
	}
	results := l.storeSteps(ctx, []stepRow{
		{GameID: held, Now: time.Now(), State: stateOf(1), Events: moves("a", 1)},
		{GameID: free, Now: time.Now(), State: stateOf(1), Events: moves("b", 1)},
	})
	if results[0].Err != nil || results[0].Value != nil {
		t.Fatalf("the held game's step: %+v, want not stored", results[0])
	}
	if results[1].Err != nil || len(results[1].Value) != 1 {
		t.Fatalf("the free game's step: %+v, want stored", results[1])
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	if l.gameSeq(t, held) != 0 || l.gameSeq(t, free) != 1 {
		t.Fatalf("seqs: held %d, free %d; want 0 and 1", l.gameSeq(t, held), l.gameSeq(t, free))
	}
}

// BenchmarkSteps stores moves of many games from 32 goroutines at once,
// each game's moves one after another: "batched" through appendStep (the
// moves that arrive while a statement runs share the next one), "alone"
// with a statement of its own per move, as before batching.
func BenchmarkSteps(b *testing.B) {
	ctx := context.Background()
	for _, mode := range []string{"batched", "alone"} {
		b.Run(mode, func(b *testing.B) {
			l, _ := stepper(b, &published{})
			const games = 256
			ids := make([]string, games)
			for i := range ids {
				ids[i] = l.storedGame(b)
			}
			var next, stored atomic.Int64
			b.SetParallelism(16) // 32 goroutines on 2 cores
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				gameID := ids[next.Add(1)%games]
				seq := l.gameSeq(b, gameID)
				for pb.Next() {
					st := stepRow{GameID: gameID, Seq: seq, Now: time.Now(), State: stateOf(seq), Events: moves("move", 1)}
					var rows []eventlog.Event
					var err error
					if mode == "batched" {
						rows, err = l.appendStep(ctx, st)
					} else {
						var out [][]eventlog.Event
						out, err = l.writeSteps(ctx, []stepRow{st})
						rows = out[0]
					}
					if err != nil {
						b.Error(err)
						return
					}
					if rows == nil { // another goroutine moved this game
						seq = l.gameSeq(b, gameID)
						continue
					}
					seq = rows[0].Seq
					stored.Add(1)
				}
			})
			b.ReportMetric(float64(stored.Load())/b.Elapsed().Seconds(), "moves/s")
		})
	}
}
