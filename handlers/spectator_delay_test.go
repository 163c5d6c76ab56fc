package handlers_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// A spectator of a staked Connect Four game who reads its state, its
// events or its page through the API sees a move only once it is
// SPECTATOR_DELAY (5 s) old: nobody watching can feed a player the next
// move. Its players see it at once, and a staked game of rock, paper,
// scissors (nothing to feed) is not late.
func TestSpectatorsOfAStakedConnectFourGameSeeItLate(t *testing.T) {
	a, clk := tournamentApp(t)
	p1, p2 := a.depositor(t, 1_000_000), a.depositor(t, 1_000_000)
	lobby := a.lobby(t, p1, `{"gameType": "connect4", "stakeMinor": 1000000, "settings": {"turnSeconds": 30}}`)
	a.join(t, p1, lobby)
	game := a.join(t, p2, lobby)["gameId"].(string)
	watcher := a.newPlayer(t)
	clk.advance(10 * time.Second) // the game's start is seen by everyone by now

	type state struct {
		Seq     int        `json:"seq"`
		Turn    *string    `json:"turn"`
		Board   [][]string `json:"board"`
		History []struct {
			Column int `json:"column"`
		} `json:"history"`
	}
	stateOf := func(p player) state {
		t.Helper()
		r := a.do(t, request{path: "/games/" + game + "/state", header: p.auth})
		if r.Code != http.StatusOK {
			t.Fatalf("state: %d %s", r.Code, r.Body)
		}
		var s state
		if err := json.Unmarshal(r.Body.Bytes(), &s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	moves := func(p player) int {
		t.Helper()
		r := a.do(t, request{path: "/games/" + game + "/events", header: p.auth})
		if r.Code != http.StatusOK {
			t.Fatalf("events: %d %s", r.Code, r.Body)
		}
		return strings.Count(r.Body.String(), `"game:connect4:move"`)
	}
	page := func() string {
		t.Helper()
		r := a.do(t, request{path: "/game/" + game, header: map[string]string{"Cookie": a.sessionCookie(t, watcher.wallet), "Accept": "text/html"}})
		if r.Code != http.StatusOK {
			t.Fatalf("page: %d", r.Code)
		}
		return visibleText(r.Body.String())
	}
	before := stateOf(watcher)
	mover := p1
	if before.Turn != nil && *before.Turn == p2.id {
		mover = p2
	}
	if r := a.act(t, mover, game, `{"type": "move", "move": {"column": 3}}`); r.Code != http.StatusOK {
		t.Fatalf("move: %d %s", r.Code, r.Body)
	}

	if s := stateOf(mover); len(s.History) != 1 {
		t.Errorf("the player's state shows %d moves, want 1 at once", len(s.History))
	}
	if n := moves(mover); n != 1 {
		t.Errorf("the player's events show %d moves, want 1 at once", n)
	}
	clk.advance(4 * time.Second)
	if s := stateOf(watcher); len(s.History) != 0 || s.Seq != before.Seq {
		t.Errorf("4 s after the move a spectator's state shows %d moves at seq %d, want none at seq %d", len(s.History), s.Seq, before.Seq)
	}
	if n := moves(watcher); n != 0 {
		t.Errorf("4 s after the move a spectator's events show %d moves, want none", n)
	}
	text := page()
	if !strings.Contains(text, "You see the moves 5 seconds after the players") || !strings.Contains(text, "The first player has not moved yet.") {
		t.Errorf("4 s after the move the spectator's page says: %s", text)
	}

	clk.advance(time.Second)
	if s := stateOf(watcher); len(s.History) != 1 || s.History[0].Column != 3 {
		t.Errorf("5 s after the move a spectator's state shows %+v, want the move in column 3", s.History)
	}
	if n := moves(watcher); n != 1 {
		t.Errorf("5 s after the move a spectator's events show %d moves, want 1", n)
	}
	if text := page(); strings.Contains(text, "The first player has not moved yet.") {
		t.Errorf("5 s after the move the spectator's page shows no move: %s", text)
	}

	// A staked game of rock, paper, scissors is not late.
	q1, _, rps := a.stakedGame(t, 1_000_000, `{"rounds": 3, "roundSeconds": 30}`)
	if r := a.act(t, q1, rps, `{"type": "move", "move": "rock"}`); r.Code != http.StatusOK {
		t.Fatalf("rps move: %d %s", r.Code, r.Body)
	}
	r := a.do(t, request{path: "/games/" + rps + "/events", header: watcher.auth})
	if !strings.Contains(r.Body.String(), `"game:rps:round:submitted"`) {
		t.Errorf("a spectator of a staked rps game does not see a choice being made at once: %s", r.Body)
	}
}
