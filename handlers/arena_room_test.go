package handlers_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"
)

// An arena pairs only entrants with a socket in its room: through the
// hub's real sockets and the presence it shares every second, Ann and Bob,
// whose sockets are in the room, are paired at the start, and Carl and
// Dan, who entered through the API alone, are not until they open one.
func TestArenaPairsOnlyPlayersWithASocket(t *testing.T) {
	a, clk := tournamentApp(t)
	srv := httptest.NewServer(a.Handler())
	t.Cleanup(srv.Close)
	ann, bob, carl, dan := a.newPlayer(t), a.newPlayer(t), a.newPlayer(t), a.newPlayer(t)
	ar := newArena(t, a, clk, ann, map[string]any{})
	for _, p := range []player{ann, bob, carl, dan} {
		r := a.do(t, request{method: http.MethodPost, path: "/tournaments/" + ar.id + "/join", header: p.auth})
		if r.Code != http.StatusOK {
			t.Fatalf("join: %d %s", r.Code, r.Body)
		}
	}
	enter := func(p player) {
		ws := dialWS(t, srv, tokenOf(p))
		ws.send(map[string]any{"type": "join-tournament", "tournamentId": ar.id})
		ws.next("joined-tournament")
	}
	enter(ann)
	enter(bob)
	clk.advance(2 * time.Minute)

	// games runs the worker, as an instance does every 250 ms, until the
	// arena has n games (the sockets reach the database within a second).
	games := func(n int) map[string][]string {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for {
			if err := a.Tournaments.WorkOn(context.Background(), ar.id); err != nil {
				t.Fatal(err)
			}
			g := ar.get(t).games()
			if len(g) >= n || time.Now().After(deadline) {
				return g
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	first := games(1)
	if len(first) != 1 {
		t.Fatalf("the arena has %d games, want Ann's and Bob's: %v", len(first), first)
	}
	for _, ps := range first {
		slices.Sort(ps)
		want := []string{ann.id, bob.id}
		slices.Sort(want)
		if !slices.Equal(ps, want) {
			t.Fatalf("the first game is between %v, want Ann and Bob (Carl and Dan have no socket in the room)", ps)
		}
	}
	for _, p := range []player{carl, dan} {
		if g := ar.get(t).line(t, p).CurrentGameID; g != nil {
			t.Errorf("a player without a socket in the arena's room was paired: %s", *g)
		}
	}

	enter(carl)
	enter(dan)
	if g := games(2); len(g) != 2 {
		t.Fatalf("Carl and Dan, in the room now, are not paired: %v", g)
	}
}
