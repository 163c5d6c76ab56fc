package handlers_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// me reads GET /users/me.
func (a *testApp) me(t *testing.T, p player) map[string]any {
	t.Helper()
	r := a.do(t, request{path: "/users/me", header: p.auth})
	if r.Code != http.StatusOK {
		t.Fatalf("GET /users/me: %d %s", r.Code, r.Body)
	}
	return r.json(t)
}

// The previous sign-in is the one before the latest: none at the first,
// then the time of the one before.
func TestMyProfileNamesThePreviousSignIn(t *testing.T) {
	a, clk := tournamentApp(t)
	p := a.newPlayer(t)
	if got := a.me(t, p)["previousSignInAt"]; got != nil {
		t.Fatalf("after the first sign-in, previousSignInAt = %v, want null", got)
	}
	first := clk.now()
	clk.advance(3 * time.Hour)
	a.relogin(t, &p)
	got, _ := a.me(t, p)["previousSignInAt"].(string)
	if at, err := time.Parse(time.RFC3339Nano, got); err != nil || !at.Equal(first) {
		t.Fatalf("after the second sign-in, previousSignInAt = %q, want %s", got, first.Format(time.RFC3339Nano))
	}
}

// A program that declares its account a bot is kept out of an arena for
// people, also when it declares itself after entering and comes back from
// a pause; arenas that allow agents take it, and profiles say it is a bot.
func TestABotAccountCannotEnterAnArenaForPeople(t *testing.T) {
	a, clk := tournamentApp(t)
	host, person, agent, sleeper := a.newPlayer(t), a.newPlayer(t), a.newPlayer(t), a.newPlayer(t)
	closed := newArena(t, a, clk, host, map[string]any{"agentsAllowed": false})
	open := newArena(t, a, clk, host, nil)
	if d := closed.get(t); d.AgentsAllowed {
		t.Fatal("an arena created with agentsAllowed false says it allows them")
	}
	if d := open.get(t); !d.AgentsAllowed {
		t.Fatal("agentsAllowed does not default to true")
	}

	r := a.do(t, request{method: http.MethodPost, path: "/users/me/bot", header: agent.auth})
	if r.Code != http.StatusOK || r.json(t)["bot"] != true {
		t.Fatalf("declare a bot: %d %s", r.Code, r.Body)
	}
	if a.me(t, agent)["bot"] != true || a.me(t, person)["bot"] != false {
		t.Fatal("GET /users/me does not tell a bot account from a person's")
	}
	if p := a.do(t, request{path: "/users/" + agent.id}).json(t); p["bot"] != true {
		t.Fatalf("the public profile of a bot account: %v", p)
	}

	closed.join(t, agent).wantError(t, http.StatusForbidden, "AGENTS_NOT_ALLOWED")
	closed.mustJoin(t, person, sleeper)
	open.mustJoin(t, agent)

	// What people read: the arena's terms, the bot's line, its profile.
	page := func(path string) string {
		t.Helper()
		r := a.do(t, request{path: path, header: map[string]string{"Accept": "text/html"}})
		if r.Code != http.StatusOK {
			t.Fatalf("GET %s: %d", path, r.Code)
		}
		return visibleText(r.Body.String())
	}
	if text := page("/arenas/" + closed.id); !strings.Contains(text, "For people only: bot accounts may not enter") {
		t.Errorf("the arena for people does not say so: %s", text)
	}
	agentName := a.me(t, agent)["username"].(string)
	if text := page("/arenas/" + open.id); !strings.Contains(text, "Bots and AI agents may enter") || !strings.Contains(text, agentName+" bot") {
		t.Errorf("the open arena does not show the bot as one: %s", text)
	}
	if text := page("/u/" + agentName); !strings.Contains(text, "A bot account: a program plays here, not a person.") {
		t.Errorf("the bot's profile does not say it is one: %s", text)
	}

	// The sleeper enters as a person, withdraws after the start, declares
	// itself a bot, and tries to come back.
	closed.start(t)
	if r := closed.withdraw(t, sleeper); r.Code != http.StatusOK {
		t.Fatalf("withdraw: %d %s", r.Code, r.Body)
	}
	a.do(t, request{method: http.MethodPost, path: "/users/me/bot", header: sleeper.auth})
	closed.join(t, sleeper).wantError(t, http.StatusForbidden, "AGENTS_NOT_ALLOWED")
	if closed.get(t).line(t, sleeper).Paused != true {
		t.Fatal("a refused return unpaused the bot")
	}

	// An entrant that declares itself a bot while waiting is not paired.
	ann, ben := a.newPlayer(t), a.newPlayer(t)
	people := newArena(t, a, clk, host, map[string]any{"agentsAllowed": false})
	people.mustJoin(t, ann, ben)
	a.do(t, request{method: http.MethodPost, path: "/users/me/bot", header: ben.auth})
	people.start(t)
	if g := people.get(t).games(); len(g) != 0 {
		t.Fatalf("a bot account was paired in an arena for people: %v", g)
	}
}

// around=me answers the caller's line and the five above and below it.
func TestStandingsAroundMe(t *testing.T) {
	a, clk := tournamentApp(t)
	ps := make([]player, 14)
	for i := range ps {
		ps[i] = a.newPlayer(t)
	}
	ar := newArena(t, a, clk, ps[0], map[string]any{"maxPlayers": 20})
	ar.mustJoin(t, ps...)
	ar.start(t)
	players := byID(ps...)
	for _, g := range ar.get(t).games() {
		ar.win(t, players[g[0]], players)
	}
	full := ar.get(t).Standings
	var page struct {
		PlayerCount int `json:"playerCount"`
		Standings   []struct {
			UserID string `json:"userId"`
			Rank   int    `json:"rank"`
		} `json:"standings"`
	}
	for _, i := range []int{0, 6, 13} {
		me := players[full[i].UserID]
		r := a.do(t, request{path: "/tournaments/" + ar.id + "/standings?around=me", header: me.auth})
		if r.Code != http.StatusOK {
			t.Fatalf("around=me: %d %s", r.Code, r.Body)
		}
		if err := json.Unmarshal(r.Body.Bytes(), &page); err != nil {
			t.Fatal(err)
		}
		lo, hi := max(0, i-5), min(len(full), i+6)
		got := make([]string, len(page.Standings))
		for k, s := range page.Standings {
			got[k] = s.UserID
		}
		want := make([]string, 0, hi-lo)
		for _, s := range full[lo:hi] {
			want = append(want, s.UserID)
		}
		if page.PlayerCount != 14 || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("place %d: %d lines of %d %v, want %v", i+1, len(got), page.PlayerCount, got, want)
		}
	}
	outsider := a.newPlayer(t)
	a.do(t, request{path: "/tournaments/" + ar.id + "/standings?around=me", header: outsider.auth}).
		wantError(t, http.StatusConflict, "CONFLICT")
	a.do(t, request{path: "/tournaments/" + ar.id + "/standings?around=me"}).wantError(t, http.StatusUnauthorized, "UNAUTHORIZED")
	a.do(t, request{path: "/tournaments/" + ar.id + "/standings?around=you"}).wantError(t, http.StatusBadRequest, "VALIDATION_ERROR")
	if r := a.do(t, request{path: "/tournaments/" + ar.id + "/standings"}); r.Code != http.StatusOK {
		t.Fatalf("all standings: %d", r.Code)
	}
}
