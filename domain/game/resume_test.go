package game_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"wager/db"
	"wager/db/dbtest"
	"wager/domain"
	"wager/domain/game"
	"wager/domain/game/rules"
)

// worker is one instance's deadline worker.
func (p *platform) worker(t testing.TB) (resumed, expired int) {
	t.Helper()
	resumed, expired, err := p.games.RunDeadlinesOnce(context.Background())
	if err != nil {
		t.Fatalf("run the deadline worker: %v", err)
	}
	return resumed, expired
}

// wantResumed checks that the game's last event is game:resumed with
// deadline at, and that the game and its public state (GET
// /games/:id/state) carry that deadline in round (rps) or move (connect4)
// number round.
func (p *platform) wantResumed(t testing.TB, gameID string, round int, at time.Time) {
	t.Helper()
	evs := p.events(t, gameID)
	last := evs[len(evs)-1]
	var data game.Resumed
	if err := json.Unmarshal(last.Data, &data); err != nil || last.Name != domain.EventGameResumed || !data.Deadline.Equal(at) {
		t.Errorf("last event: got %s %s, want game:resumed with deadline %v", last.Name, last.Data, at)
	}
	g := p.game(t, gameID)
	if g.Status != game.StatusActive || g.Deadline == nil || !g.Deadline.Equal(at) {
		t.Errorf("game: got status %s, deadline %v; want active until %v", g.Status, g.Deadline, at)
	}
	view, err := p.games.PublicState(context.Background(), gameID)
	if err != nil {
		t.Fatal(err)
	}
	b := view.Base()
	want := at.UTC().Format(time.RFC3339Nano)
	if b.Round.Number != round || b.Timer.Deadline == nil || *b.Timer.Deadline != want || b.Round.Deadline == nil ||
		*b.Round.Deadline != want || b.Timer.RemainingMs != at.Sub(p.clock.now()).Milliseconds() {
		t.Errorf("public state: got round %+v, timer %+v; want number %d until %s", b.Round, b.Timer, round, want)
	}
}

// The platform being down never costs a player a round or a turn: a
// deadline that passed while no deadline worker ran for more than 10 s is
// moved to the first run after it plus the round's or turn's full time
// (game:resumed), and the game goes on. A deadline that passed while the
// worker ran is enforced as before. The test has a database of its own:
// the worker's record of its runs is one for the whole database.
func TestDowntimeNeverCostsARound(t *testing.T) {
	ctx := context.Background()
	bdb, err := db.Open(ctx, dbtest.Fresh(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bdb.Close() })
	p := newPlatformOn(t, bdb, newClock())
	const rps = `{"rounds": 1, "roundSeconds": 5}`

	t.Run("a game older than the first run on a new database", func(t *testing.T) {
		gameID, a, b := p.match(t, "rps", stake, rps)
		p.play(t, a, gameID, `"rock"`)
		p.clock.advance(8 * time.Second) // past the deadline, and nothing ever ran
		if resumed, expired := p.worker(t); resumed != 1 || expired != 0 {
			t.Fatalf("first run: resumed %d, expired %d; want 1 and 0", resumed, expired)
		}
		p.wantResumed(t, gameID, 1, p.clock.now().Add(5*time.Second))
		if r := p.play(t, b, gameID, `"paper"`); r.Status != game.StatusCompleted {
			t.Fatalf("the second choice: got %+v, want the game completed", r)
		}
		wantWonByPlay(t, p, gameID, b)
	})

	t.Run("a deadline that passed while the worker ran is enforced", func(t *testing.T) {
		gameID, a, _ := p.match(t, "rps", stake, rps)
		p.play(t, a, gameID, `"rock"`)
		expired := 0
		for range 6 { // the worker runs every second, past the deadline
			p.clock.advance(time.Second)
			resumed, n := p.worker(t)
			if resumed != 0 {
				t.Fatalf("resumed %d games while the worker ran, want none", resumed)
			}
			expired += n
		}
		g := p.game(t, gameID)
		if expired != 1 || g.Status != game.StatusCompleted || g.WinnerID == nil || *g.WinnerID != a {
			t.Fatalf("expired %d, game %s won by %v; want 1, completed, won by %s on time", expired, g.Status, g.WinnerID, a)
		}
		for _, name := range p.eventNames(t, gameID) {
			if name == "game:resumed" {
				t.Errorf("events: got %s after a deadline that passed while the worker ran", name)
			}
		}
	})

	t.Run("deadlines that passed during an outage are moved", func(t *testing.T) { resumeAfterOutage(t, p, rps) })

	t.Run("deadlines that pass while the platform is closed for maintenance are moved", func(t *testing.T) {
		gameID, a, b := p.match(t, "rps", stake, rps)
		p.play(t, a, gameID, `"rock"`)
		p.worker(t)
		p.closed.Store(true) // maintenance mode: no player can move
		for range 8 {        // the worker runs every second, past the deadline
			p.clock.advance(time.Second)
			if resumed, expired := p.worker(t); resumed != 0 || expired != 0 {
				t.Fatalf("a run while the platform is closed: resumed %d, expired %d; want none", resumed, expired)
			}
		}
		p.closed.Store(false)
		back := p.clock.now()
		if resumed, expired := p.worker(t); resumed != 1 || expired != 0 {
			t.Fatalf("the first run after maintenance: resumed %d, expired %d; want 1 and 0", resumed, expired)
		}
		p.wantResumed(t, gameID, 1, back.Add(5*time.Second))
		p.clock.advance(time.Second)
		if resumed, expired := p.worker(t); resumed != 0 || expired != 0 {
			t.Fatalf("the next run: resumed %d, expired %d; want none", resumed, expired)
		}
		p.play(t, b, gameID, `"paper"`)
		wantWonByPlay(t, p, gameID, b)
	})

	t.Run("instances starting together after an outage resume each game once", func(t *testing.T) { resumeOnceAcrossInstances(t, p, bdb, rps) })
}

// resumeAfterOutage checks that deadlines that passed during an outage,
// of a round and of a turn, are moved to a full round or turn from the
// first run after it, and that the games go on.
func resumeAfterOutage(t *testing.T, p *platform, rps string) {
	rpsGame, a, b := p.match(t, "rps", stake, rps)
	c4Game, first, second := p.match(t, "connect4", stake, `{"turnSeconds": 5}`)
	p.play(t, a, rpsGame, `"rock"`)
	p.play(t, first, c4Game, `{"column": 3}`)
	p.clock.advance(2 * time.Second)
	p.worker(t)
	later, _, _ := p.match(t, "rps", stake, `{"roundSeconds": 60}`) // its deadline is after the outage

	// Down for 14 s: both deadlines pass (3 s in), nothing runs.
	p.clock.advance(14 * time.Second)
	if _, err := p.act(b, rpsGame, "move", `"paper"`); domain.ErrorCode(err) != domain.CodeInvalidMove {
		t.Fatalf("a choice after the deadline before the worker ran: %v, want INVALID_MOVE", err)
	}
	back := p.clock.now()
	if resumed, expired := p.worker(t); resumed != 2 || expired != 0 {
		t.Fatalf("the first run after the outage: resumed %d, expired %d; want 2 and 0", resumed, expired)
	}
	p.wantResumed(t, rpsGame, 1, back.Add(5*time.Second))
	p.wantResumed(t, c4Game, 2, back.Add(5*time.Second))
	if names := p.eventNames(t, later); names[len(names)-1] == string(domain.EventGameResumed) {
		t.Errorf("a game whose deadline did not pass was resumed: %q", names)
	}

	// The worker runs again; the players have the new deadline.
	p.clock.advance(4 * time.Second)
	if resumed, expired := p.worker(t); resumed != 0 || expired != 0 {
		t.Fatalf("a run before the new deadlines: resumed %d, expired %d; want none", resumed, expired)
	}
	if r := p.play(t, b, rpsGame, `"paper"`); r.Status != game.StatusCompleted {
		t.Fatalf("the second choice after the outage: got %+v, want the game completed", r)
	}
	wantWonByPlay(t, p, rpsGame, b)
	if r := p.play(t, second, c4Game, `{"column": 3}`); r.Status != game.StatusActive {
		t.Fatalf("the second player's turn after the outage: got %+v, want the game going on", r)
	}
	if g := p.game(t, c4Game); g.Deadline == nil || !g.Deadline.Equal(p.clock.now().Add(5*time.Second)) {
		t.Errorf("the next turn's deadline: got %v, want a full turn from the move", g.Deadline)
	}
	if _, err := p.act(first, c4Game, "resign", ""); err != nil {
		t.Fatal(err)
	}
}

// resumeOnceAcrossInstances checks that instances starting together after
// an outage resume each game once.
func resumeOnceAcrossInstances(t *testing.T, p *platform, bdb *bun.DB, rps string) {
	gameID, a, b := p.match(t, "rps", stake, rps)
	p.play(t, a, gameID, `"rock"`)
	p.worker(t)
	p.clock.advance(30 * time.Second)
	instances := []*platform{p, newPlatformOn(t, bdb, p.clock), newPlatformOn(t, bdb, p.clock)}
	var wg sync.WaitGroup
	resumed := make([]int, len(instances))
	for i, q := range instances {
		wg.Go(func() { resumed[i], _ = q.worker(t) })
	}
	wg.Wait()
	if total := resumed[0] + resumed[1] + resumed[2]; total != 1 {
		t.Errorf("games resumed by three instances: %v, want 1 in all", resumed)
	}
	n := 0
	for _, name := range p.eventNames(t, gameID) {
		if name == string(domain.EventGameResumed) {
			n++
		}
	}
	if n != 1 {
		t.Errorf("game:resumed events: got %d, want 1", n)
	}
	p.wantResumed(t, gameID, 1, p.clock.now().Add(5*time.Second))
	p.play(t, b, gameID, `"paper"`)
	wantWonByPlay(t, p, gameID, b)
}

// wantWonByPlay checks that the one-round rps game was won by winner with
// both choices revealed: the round was decided by the moves, not the timer.
func wantWonByPlay(t testing.TB, p *platform, gameID, winner string) {
	t.Helper()
	g := p.game(t, gameID)
	if g.Status != game.StatusCompleted || g.WinnerID == nil || *g.WinnerID != winner {
		t.Fatalf("game: got %s won by %v, want completed, won by %s", g.Status, g.WinnerID, winner)
	}
	for _, e := range p.events(t, gameID) {
		if e.Name != "game:rps:round:reveal" {
			continue
		}
		var r rules.RPSRound
		if err := json.Unmarshal(e.Data, &r); err != nil {
			t.Fatal(err)
		}
		if r.Reason != "played" || len(r.Choices) != 2 || r.Choices[winner] == nil {
			t.Errorf("reveal: got %+v, want a played round with both choices", r)
		}
	}
}
