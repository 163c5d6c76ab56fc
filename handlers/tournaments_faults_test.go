package handlers_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"wager/domain/money"
)

// The end of a paid tournament is stopped at each of its statements in
// turn, on one instance, as a crash there would stop it: each time nothing
// of it is kept (the entries stay locked, nobody is paid or told, the
// tournament still runs). Then another instance ends it, and several
// instances trying at once after that change nothing: the prizes are paid
// once, each winner told once, the winner in the feed once, one
// tournament:finished event.
func TestTournamentPrizesArePaidOnceWhereverTheEndDies(t *testing.T) {
	clk := newTestClock()
	one, two := newTestAppAt(t, noWorkers, clk.now), newTestAppAt(t, noWorkers, clk.now)
	ps := []player{one.depositor(t, 1_000_000), one.depositor(t, 1_000_000), one.depositor(t, 1_000_000)}
	players := byID(ps...)
	ar := newArena(t, one, clk, ps[0], map[string]any{"entryFeeMinor": 1_000_000, "durationMinutes": 1,
		"name": "Fault arena " + ps[0].id[:8], "prizeSplitBps": []int{7000, 3000}})
	ar.mustJoin(t, ps...)
	ar.start(t)
	for _, g := range ar.get(t).games() {
		ar.win(t, players[g[0]], players)
	}
	clk.advance(time.Minute)
	treasury := one.ledger(t, money.Treasury)

	f := &faults{t: t, a: one, game: ar.id} // GAME in a condition stands for the tournament's id
	if _, err := one.DB.ExecContext(context.Background(), `CREATE OR REPLACE FUNCTION injected_fault() RETURNS trigger
		LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'injected fault: %', TG_ARGV[0]; END $$`); err != nil {
		t.Fatal(err)
	}
	for _, step := range tournamentEndSteps {
		f.arm(step.name, step.event, step.table, step.when)
		err := one.Tournaments.WorkOn(context.Background(), ar.id)
		f.disarm(step.table)
		if err == nil || !strings.Contains(err.Error(), "injected fault") {
			t.Fatalf("dying at %s: the worker answered %v", step.name, err)
		}
		d := ar.get(t)
		if d.Status != "running" || len(d.Prizes) != 0 {
			t.Errorf("dying at %s: the tournament is %s with prizes %v", step.name, d.Status, d.Prizes)
		}
		for _, p := range ps {
			if b := one.balances(t, p.auth); b.available != 0 || b.locked != 1_000_000 {
				t.Errorf("dying at %s: a player has %+v", step.name, b)
			}
		}
		if got := one.ledger(t, money.Treasury); got != treasury {
			t.Errorf("dying at %s: the treasury moved by %d", step.name, got-treasury)
		}
	}

	// Another instance ends it; then both instances, many times at once.
	if err := two.Tournaments.WorkOn(context.Background(), ar.id); err != nil {
		t.Fatal(err)
	}
	endAtOnce(t, one, two, ar.id, 8)

	// Pool 3000000, fee 30000, net 2970000: 70% to the winner, and the
	// two tied on 0 share the second place's 30% and the third's nothing.
	d := ar.get(t)
	want := map[string]int64{}
	for _, s := range d.Standings {
		switch s.Rank {
		case 1:
			want[s.UserID] = 2_079_000
		case 2:
			want[s.UserID] = 445_500
		}
	}
	if d.Status != "finished" || len(want) != 3 || len(d.Prizes) != 3 {
		t.Fatalf("after the end: %+v prizes %+v standings %+v", d.Tournament, d.Prizes, d.Standings)
	}
	for _, p := range ps {
		if b := one.balances(t, p.auth); b.available != want[p.id] || b.locked != 0 {
			t.Errorf("player %s: %+v, want %d available", p.id, b, want[p.id])
		}
		ns, _ := one.notifications(t, p, "")
		n := 0
		for _, x := range ns {
			if x.Type == "tournament_prize" {
				n++
			}
		}
		if n != map[bool]int{true: 1, false: 0}[want[p.id] > 0] {
			t.Errorf("player %s got %d tournament_prize notifications", p.id, n)
		}
	}
	if got := one.ledger(t, money.Treasury) - treasury; got != 30_000 {
		t.Errorf("treasury +%d, want the fee 30000", got)
	}
	ctx := context.Background()
	for _, q := range []struct{ what, sql string }{
		{"prize postings", "SELECT count(*) FROM ledger_transactions WHERE reference = 'tournament:' || ? || ':prizes'"},
		{"tournament_won entries", "SELECT count(*) FROM activity WHERE type = 'tournament_won' AND data->>'tournamentId' = ?"},
		{"tournament:finished events", "SELECT count(*) FROM tournament_events WHERE tournament_id = ? AND name = 'tournament:finished'"},
	} {
		var n int
		if err := one.DB.QueryRowContext(ctx, q.sql, ar.id).Scan(&n); err != nil || n != 1 {
			t.Errorf("%s: %d (%v), want 1", q.what, n, err)
		}
	}
	lines := 0
	for _, p := range ps {
		for _, it := range one.historyItems(t, p) {
			if it["kind"] == "tournament prize" {
				lines++
			}
		}
	}
	if lines != 3 {
		t.Errorf("%d prize lines in the winners' histories, want 3", lines)
	}
	ar.join(t, one.newPlayer(t)).wantError(t, http.StatusConflict, "CONFLICT")
}

// tournamentEndSteps are the statements of a tournament's end, each as the
// write that a fault armed on it stops (GAME: the tournament's id).
var tournamentEndSteps = []struct{ name, event, table, when string }{
	{"posting the prizes", "INSERT", "ledger_transactions", "NEW.reference = 'tournament:GAME:prizes'"},
	{"the winners' history", "INSERT", "wallet_activity", "NEW.kind = 'tournament prize'"},
	{"telling the winners", "INSERT", "notifications", "NEW.type = 'tournament_prize' AND NEW.data->>'tournamentId' = 'GAME'"},
	{"the feed's tournament_won entry", "INSERT", "activity", "NEW.type = 'tournament_won' AND NEW.data->>'tournamentId' = 'GAME'"},
	{"marking it finished", "UPDATE", "tournaments", "NEW.id = 'GAME' AND NEW.status = 'finished'"},
	{"the tournament:finished event", "INSERT", "tournament_events", "NEW.tournament_id = 'GAME' AND NEW.name = 'tournament:finished'"},
}

// endAtOnce has n workers, on instances one and two in turn, end the
// tournament id at once.
func endAtOnce(t *testing.T, one, two *testApp, id string, n int) {
	t.Helper()
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			app := one
			if i%2 == 1 {
				app = two
			}
			if err := app.Tournaments.WorkOn(context.Background(), id); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
}

// Several instances working on one running tournament at once never pair
// a player twice, and never fail for it: each claims the tournament's row
// with SKIP LOCKED, so one pairs and the others pass.
func TestTournamentInstancesNeverPairAPlayerTwice(t *testing.T) {
	clk := newTestClock()
	one, two := newTestAppAt(t, noWorkers, clk.now), newTestAppAt(t, noWorkers, clk.now)
	ids := newUsers(t, one, 42)
	creator := one.newPlayer(t)
	ar := newArena(t, one, clk, creator, map[string]any{"maxPlayers": 64})
	ctx := context.Background()
	join := func(ids []string) {
		for _, id := range ids {
			if _, err := one.Tournaments.Join(ctx, id, ar.id); err != nil {
				t.Fatal(err)
			}
		}
	}
	ar.enterRoom(ids...)
	join(ids[:2])
	ar.start(t) // running, its first two players in a game
	join(ids[2:])
	ar.share(t)
	var wg sync.WaitGroup
	for i := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			app := one
			if i%2 == 1 {
				app = two
			}
			for range 3 {
				if err := app.Tournaments.WorkOn(ctx, ar.id); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	var rows []struct {
		UserID string `bun:"user_id"`
		Games  int    `bun:"n"`
	}
	if err := one.DB.NewSelect().TableExpr("game_players AS p").Join("JOIN games AS g ON g.id = p.game_id").
		ColumnExpr("p.user_id, count(*) AS n").Where("g.tournament_id = ?", ar.id).Group("p.user_id").Scan(ctx, &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 42 {
		t.Errorf("%d of 42 players paired", len(rows))
	}
	for _, r := range rows {
		if r.Games != 1 {
			t.Errorf("player %s is in %d games at once", r.UserID, r.Games)
		}
	}
}
