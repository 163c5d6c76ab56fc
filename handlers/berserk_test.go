package handlers_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"wager/domain/tournament"
)

func (ar *arena) post(t *testing.T, p player, action string) response {
	t.Helper()
	return ar.a.do(t, request{method: http.MethodPost, path: "/tournaments/" + ar.id + "/" + action, header: p.auth})
}

// gameOf is p's current game in the arena ("" when none).
func (ar *arena) gameOf(t *testing.T, p player) string {
	t.Helper()
	if g := ar.get(t).line(t, p).CurrentGameID; g != nil {
		return *g
	}
	return ""
}

func move(t *testing.T, a *testApp, p player, game, choice string) {
	t.Helper()
	if r := a.act(t, p, game, `{"type": "move", "move": "`+choice+`"}`); r.Code != http.StatusOK {
		t.Fatalf("move %s: %d %s", choice, r.Code, r.Body)
	}
}

// Berserk in a real arena: before the first move of a paired game the
// player's round halves (the game's view says so), a second berserk or
// one after moving is refused, and a berserk win of two rounds scores 3;
// a berserk win by a resignation at once scores 2, and both count in
// the standings' berserks.
func TestBerserkInAnArena(t *testing.T) {
	a, clk := tournamentApp(t)
	ann, bob, eve := a.newPlayer(t), a.newPlayer(t), a.newPlayer(t)
	ar := newArena(t, a, clk, ann, map[string]any{"settings": map[string]any{"rounds": 3, "roundSeconds": 20}})
	ar.mustJoin(t, ann, bob)
	ar.post(t, ann, "berserk").wantError(t, http.StatusConflict, "CONFLICT") // not started: no game
	ar.start(t)
	g := ar.gameOf(t, ann)
	if g == "" || ar.gameOf(t, bob) != g {
		t.Fatal("ann and bob were not paired")
	}
	ar.post(t, eve, "berserk").wantError(t, http.StatusConflict, "CONFLICT")
	r := ar.post(t, ann, "berserk")
	if r.Code != http.StatusOK || r.json(t)["gameId"] != g {
		t.Fatalf("berserk: %d %s", r.Code, r.Body)
	}
	state := a.do(t, request{path: "/games/" + g + "/state", header: bob.auth}).json(t)
	if b, _ := state["berserk"].(map[string]any); b[ann.id] != float64(10) || b[bob.id] != nil {
		t.Fatalf("the game's view after ann's berserk: %v", state["berserk"])
	}
	ar.post(t, ann, "berserk").wantError(t, http.StatusConflict, "CONFLICT")
	move(t, a, bob, g, "rock")
	ar.post(t, bob, "berserk").wantError(t, http.StatusConflict, "CONFLICT")
	// Ann's choice 11 s into the round is past her half of it.
	clk.advance(11 * time.Second)
	if r := a.act(t, ann, g, `{"type": "move", "move": "paper"}`); r.Code != http.StatusBadRequest {
		t.Fatalf("a choice after the halved round's end: %d %s", r.Code, r.Body)
	}
	clk.advance(-11 * time.Second) // the clock only this test reads: back into the round
	move(t, a, ann, g, "paper")
	move(t, a, ann, g, "paper")
	move(t, a, bob, g, "rock")
	ar.work(t)
	if got := ar.get(t).line(t, ann); got.Score != tournament.WinPoints+tournament.BerserkBonus || got.Berserks != 1 || got.Wins != 1 {
		t.Fatalf("ann after a berserk win of two rounds: %+v", got)
	}
	if got := ar.get(t).line(t, bob); got.Score != 0 || got.Berserks != 0 {
		t.Fatalf("bob: %+v", got)
	}

	// Paired again: a berserk won by a resignation at once earns no bonus.
	g2 := ar.gameOf(t, ann)
	if g2 == "" || g2 == g {
		t.Fatalf("not paired again: %q", g2)
	}
	if r := ar.post(t, ann, "berserk"); r.Code != http.StatusOK {
		t.Fatalf("berserk in the second game: %d %s", r.Code, r.Body)
	}
	if r := a.act(t, bob, g2, `{"type": "resign"}`); r.Code != http.StatusOK {
		t.Fatal(r.Body)
	}
	if got := ar.get(t).line(t, ann); got.Score != 2*tournament.WinPoints+tournament.BerserkBonus || got.Berserks != 2 {
		t.Fatalf("ann after a berserk win by resignation: %+v", got)
	}
}

// Pausing during a paired game never loses it: the game goes on and its
// result counts; the paused player is not paired again until resuming.
// Two games in a row lost on time pause a player, saying why.
func TestPauseKeepsThePairedGameAndTwoTimeLossesPause(t *testing.T) {
	a, clk := tournamentApp(t)
	ann, bob := a.newPlayer(t), a.newPlayer(t)
	ar := newArena(t, a, clk, ann, map[string]any{"settings": map[string]any{"rounds": 1, "roundSeconds": 5}})
	ar.mustJoin(t, ann, bob)
	ar.start(t)
	g := ar.gameOf(t, ann)
	if r := ar.post(t, ann, "pause"); r.Code != http.StatusOK || r.json(t)["status"] != "paused" {
		t.Fatalf("pause: %d %s", r.Code, r.Body)
	}
	if m := a.do(t, request{path: "/games/" + g}).json(t); m["status"] != "active" {
		t.Fatalf("the paired game after the pause: %v", m["status"])
	}
	move(t, a, ann, g, "paper")
	move(t, a, bob, g, "rock")
	ar.work(t)
	line := ar.get(t).line(t, ann)
	if line.Wins != 1 || !line.Paused || line.CurrentGameID != nil || line.PausedReason == nil || *line.PausedReason != tournament.PausedByPlayer {
		t.Fatalf("ann after winning the game she paused in: %+v", line)
	}
	ar.post(t, a.newPlayer(t), "pause").wantError(t, http.StatusConflict, "CONFLICT")
	if r := ar.post(t, ann, "resume"); r.Code != http.StatusOK || r.json(t)["status"] != "joined" {
		t.Fatalf("resume: %d %s", r.Code, r.Body)
	}
	ar.work(t)
	if ar.gameOf(t, ann) == "" {
		t.Fatal("ann was not paired after resuming")
	}

	// Bob lets two games run out: paused, and told why.
	for i := range 2 {
		g := ar.gameOf(t, ann)
		if g == "" || ar.gameOf(t, bob) != g {
			t.Fatalf("game %d: ann and bob are not paired", i+1)
		}
		move(t, a, ann, g, "rock")
		clk.advance(6 * time.Second)
		if _, err := a.Games.ExpireDue(context.Background()); err != nil {
			t.Fatal(err)
		}
		ar.work(t)
	}
	line = ar.get(t).line(t, bob)
	if !line.Paused || line.PausedReason == nil || *line.PausedReason != tournament.PausedTimeLosses || line.Losses != 3 {
		t.Fatalf("bob after two games lost on time: %+v", line)
	}
	if ar.gameOf(t, ann) != "" {
		t.Fatal("ann was paired with a paused player")
	}
}
