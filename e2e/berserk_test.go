package e2e

import (
	"testing"
	"time"

	"wager/e2e/testserver"
)

// Berserk in a real arena, in two browsers: Ann goes berserk on her game
// page before her first choice; both pages show her round halved (10 s of
// the round's 20, with her own clock running down), and once she wins two
// rounds the arena's standings, on both arena pages, give her 3 points and
// say she went berserk once.
func TestBerserkInARealArena(t *testing.T) {
	clk := &testserver.Clock{}
	s := testserver.StartClocked(t, nil, clk.Now)
	ann, bob := newArenaPerson(t, s), newArenaPerson(t, s)
	var arena arenaDetail
	if err := ann.api.Do(t.Context(), "POST", "/tournaments", map[string]any{"name": "Berserk arena", "gameType": "rps",
		"settings": map[string]int{"rounds": 3, "roundSeconds": 20},
		"startsAt": clk.Now().Add(time.Minute).Format(time.RFC3339), "durationMinutes": 5}, &arena); err != nil {
		t.Fatal(err)
	}
	for _, p := range []arenaPerson{ann, bob} {
		if err := p.api.Do(t.Context(), "POST", "/tournaments/"+arena.ID+"/join", nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	onArenaPage(t, arena.ID, ann, bob)
	clk.AdvanceTo(arena.StartsAt.Add(time.Second))
	game := currentGame(t, s, arena.ID, ann.id)
	goTo(t, ann.page, "/game/"+game)
	goTo(t, bob.page, "/game/"+game)
	// The socket's ping, in words for a player (locally: good).
	wantMatch(t, ann.page.GetByTestId("connection-quality"), `^Connection: good · \d+ ms$`, "the connection's quality")
	if err := expect.Locator(bob.page.GetByTestId("berserk")).ToBeVisible(); err != nil {
		t.Fatalf("Bob is not offered berserk before his first move: %v", err)
	}
	click(t, ann.page, "berserk")

	for _, page := range []struct {
		who string
		p   arenaPerson
	}{{"Ann", ann}, {"Bob", bob}} {
		row := page.p.page.Locator(`[data-testid="player-score"][data-user-id="` + ann.id + `"]`)
		wantText(t, row.GetByTestId("player-berserk"), "berserk: 10 s a round", page.who+"'s page: Ann's halved round")
		// Her own clock ends 10 s before the round's (the server's clock
		// is this test's, so the two ends are compared, not the seconds left).
		wantMatch(t, row.GetByTestId("player-berserk-clock"), `^\d+s$`, page.who+"'s page: Ann's own clock")
		own, err := row.GetByTestId("player-berserk-clock").GetAttribute("data-deadline")
		if err != nil {
			t.Fatal(err)
		}
		round, err := page.p.page.GetByTestId("timer").GetAttribute("data-deadline")
		if err != nil {
			t.Fatal(err)
		}
		if d := mustTime(t, round).Sub(mustTime(t, own)); d != 10*time.Second {
			t.Errorf("%s's page: Ann's clock ends %s before the round's, want 10s", page.who, d)
		}
	}
	if err := expect.Locator(ann.page.GetByTestId("berserk")).ToHaveCount(0); err != nil {
		t.Errorf("Ann is offered berserk twice: %v", err)
	}

	// Ann wins two rounds (the game of three is hers): 2 points and 1 for berserk.
	for range 2 {
		click(t, ann.page, "move-paper")
		if err := bob.api.Do(t.Context(), "POST", "/games/"+game+"/actions", map[string]any{"type": "move", "move": "rock"}, nil); err != nil {
			t.Fatal(err)
		}
	}
	wantText(t, ann.page.GetByTestId("result-heading"), ann.name+" wins", "the end of the berserk game")
	for _, p := range []arenaPerson{ann, bob} {
		goTo(t, p.page, "/arenas/"+arena.ID)
		wantText(t, line(p.page, ann.id).GetByTestId("arena-score"), "3", "Ann's score with the berserk bonus")
		wantText(t, line(p.page, ann.id).GetByTestId("arena-berserks"), "berserk once", "Ann's berserks")
	}
}

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	at, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatal(err)
	}
	return at
}
