package eventlog

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"wager/db/dbtest"
	"wager/domain"
)

func stateOf(n int) json.RawMessage { return json.RawMessage(fmt.Sprintf(`{"n":%d}`, n)) }

func TestAStepIsStoredOnlyIfTheGameIsStillAtItsSeq(t *testing.T) {
	ctx := context.Background()
	sink := &recorder{}
	l := New(dbtest.DB(t), sink)
	gameID := newGame(t)
	deadline := time.Now().Add(time.Minute).UTC().Truncate(time.Microsecond)

	rows, err := l.AppendStep(ctx, Step{GameID: gameID, Seq: 0, Now: time.Now(), State: stateOf(1), Deadline: &deadline,
		Events: events("move", 2)})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := seqNames(rows), []seqName{{1, "move-1"}, {2, "move-2"}}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("stored: got %v, want %v", got, want)
	}
	var state string
	var stored time.Time
	if err := dbtest.DB(t).QueryRowContext(ctx, "SELECT state::text, deadline FROM games WHERE id = ?", gameID).Scan(&state, &stored); err != nil {
		t.Fatal(err)
	}
	if state != `{"n": 1}` || !stored.Equal(deadline) {
		t.Fatalf("game row: state %s deadline %v, want {\"n\": 1} and %v", state, stored, deadline)
	}
	if pubs := sink.publications(); len(pubs) != 1 || fmt.Sprint(seqNames(pubs[0].Events)) != fmt.Sprint(seqNames(rows)) {
		t.Fatalf("published: %+v, want the stored events once", pubs)
	}

	// Computed from seq 0 again: the game has moved on, nothing changes.
	rows, err = l.AppendStep(ctx, Step{GameID: gameID, Seq: 0, Now: time.Now(), State: stateOf(9), Events: events("late", 1)})
	if err != nil || rows != nil {
		t.Fatalf("a step from an old seq: got %v, %v; want nothing stored", rows, err)
	}
	if gameSeq(t, gameID) != 2 || len(sink.publications()) != 1 {
		t.Fatalf("a refused step changed the game (seq %d) or published", gameSeq(t, gameID))
	}
	// A game that does not exist.
	rows, err = l.AppendStep(ctx, Step{GameID: "00000000-0000-4000-8000-000000000000", Seq: 0, Now: time.Now(),
		State: stateOf(1), Events: events("x", 1)})
	if err != nil || rows != nil {
		t.Fatalf("a step of no game: got %v, %v; want nothing stored", rows, err)
	}
}

func TestAStepThatFailsDoesNotFailTheOthersOfItsBatch(t *testing.T) {
	ctx := context.Background()
	sink := &recorder{}
	l := New(dbtest.DB(t), sink)
	good1, bad, good2 := newGame(t), newGame(t), newGame(t)
	batch := []Step{
		{GameID: good1, Now: time.Now(), State: stateOf(1), Events: events("a", 1)},
		{GameID: bad, Now: time.Now(), State: json.RawMessage(`{"n":`), Events: events("b", 1)},
		{GameID: good2, Now: time.Now(), State: stateOf(1), Events: events("c", 2)},
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
	if gameSeq(t, good1) != 1 || gameSeq(t, bad) != 0 || gameSeq(t, good2) != 2 {
		t.Fatalf("seqs after the batch: %d %d %d, want 1 0 2", gameSeq(t, good1), gameSeq(t, bad), gameSeq(t, good2))
	}
}

// Many players stepping in few games at once, each from the seq it last
// saw, as actions do: every game ends with gapless seqs, each stored step's
// events under the seqs it was answered with, and nothing of a refused one.
func TestConcurrentStepsOfManyGames(t *testing.T) {
	ctx := context.Background()
	sink := &recorder{}
	l := New(dbtest.DB(t), sink)
	const nGames, players, attempts = 6, 4, 15
	ids := make([]string, nGames)
	for i := range ids {
		ids[i] = newGame(t)
	}
	type answer struct {
		gameID string
		rows   []Event
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
				seq := gameSeq(t, gameID)
				rows, err := l.AppendStep(ctx, Step{GameID: gameID, Seq: seq, Now: time.Now(), State: stateOf(seq),
					Events: events(fmt.Sprintf("p%d.%d", p, a), 1+rand.IntN(3))})
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
		got, err := l.Events(ctx, domain.GameStreamOf(id), 0, 10_000)
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
		if len(got) != len(answered[id]) || gameSeq(t, id) != len(got) {
			t.Fatalf("game %s: %d events stored, %d answered, seq %d", id, len(got), len(answered[id]), gameSeq(t, id))
		}
		total += len(got)
	}
	if published != total {
		t.Fatalf("published %d events, stored %d", published, total)
	}
}

func TestAGameHeldByATransactionDoesNotHoldUpTheBatch(t *testing.T) {
	ctx := context.Background()
	l := New(dbtest.DB(t), &recorder{})
	held, free := newGame(t), newGame(t)
	tx, err := dbtest.DB(t).BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, "SELECT 1 FROM games WHERE id = ? FOR UPDATE", held); err != nil {
		t.Fatal(err)
	}
	results := l.storeSteps(ctx, []Step{
		{GameID: held, Now: time.Now(), State: stateOf(1), Events: events("a", 1)},
		{GameID: free, Now: time.Now(), State: stateOf(1), Events: events("b", 1)},
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
	if gameSeq(t, held) != 0 || gameSeq(t, free) != 1 {
		t.Fatalf("seqs: held %d, free %d; want 0 and 1", gameSeq(t, held), gameSeq(t, free))
	}
}

// BenchmarkSteps stores moves of many games from 32 goroutines at once,
// each game's moves one after another: "batched" through AppendStep (the
// moves that arrive while a statement runs share the next one), "alone"
// with a statement of its own per move, as before batching.
func BenchmarkSteps(b *testing.B) {
	ctx := context.Background()
	for _, mode := range []string{"batched", "alone"} {
		b.Run(mode, func(b *testing.B) {
			l := New(dbtest.DB(b), &recorder{})
			const games = 256
			ids := make([]string, games)
			for i := range ids {
				ids[i] = newGame(b)
			}
			var next, stored atomic.Int64
			b.SetParallelism(16) // 32 goroutines on 2 cores
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				gameID := ids[next.Add(1)%games]
				seq := gameSeq(b, gameID)
				for pb.Next() {
					st := Step{GameID: gameID, Seq: seq, Now: time.Now(), State: stateOf(seq), Events: events("move", 1)}
					var rows []Event
					var err error
					if mode == "batched" {
						rows, err = l.AppendStep(ctx, st)
					} else {
						var out [][]Event
						out, err = l.writeSteps(ctx, []Step{st})
						rows = out[0]
					}
					if err != nil {
						b.Error(err)
						return
					}
					if rows == nil { // another goroutine moved this game
						seq = gameSeq(b, gameID)
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
