package handlers_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"wager/cmd/server/bots"
	"wager/db/dbtest"
)

// createArena asks to schedule a free arena as p, starting in 2 minutes.
func createArena(t *testing.T, a *testApp, clk *testClock, p player) response {
	t.Helper()
	return a.do(t, request{method: http.MethodPost, path: "/tournaments", header: p.auth, body: jsonBody(map[string]any{
		"name": "Junk arena", "gameType": "rps", "entryFeeMinor": 0, "durationMinutes": 10,
		"startsAt": clk.now().Add(2 * time.Minute).Format(time.RFC3339)})})
}

// arenasCreatedBy counts the arenas p created.
func arenasCreatedBy(t *testing.T, a *testApp, p player) int {
	t.Helper()
	var n int
	if err := a.DB.QueryRowContext(context.Background(), "SELECT count(*) FROM tournaments WHERE created_by = ?", p.id).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// The attack: one account created 60 arenas in 169 ms, enough junk to
// starve the pairing worker. A player creates at most 5 a day: the 6th is
// 429 RATE_LIMITED, with Retry-After when the oldest of the day's leaves
// the rolling 24 hours; then one more fits. Others are not bound by it.
func TestArenaCreationIsBoundedPerPlayerPerDay(t *testing.T) {
	a, clk := tournamentApp(t)
	p, other := a.newPlayer(t), a.newPlayer(t)
	if r := createArena(t, a, clk, p); r.Code != http.StatusCreated {
		t.Fatalf("the first arena: %d %s", r.Code, r.Body)
	}
	clk.advance(time.Hour)
	a.relogin(t, &p)
	for i := 2; i <= 5; i++ {
		if r := createArena(t, a, clk, p); r.Code != http.StatusCreated {
			t.Fatalf("arena %d of the day: %d %s", i, r.Code, r.Body)
		}
	}
	r := createArena(t, a, clk, p)
	r.wantError(t, http.StatusTooManyRequests, "RATE_LIMITED")
	if got := r.Header().Get("Retry-After"); got != "82800" {
		t.Errorf("Retry-After of the 6th arena: %q, want 82800 (the first leaves the 24 hours in 23 hours)", got)
	}
	if n := arenasCreatedBy(t, a, p); n != 5 {
		t.Errorf("%d arenas created, want 5", n)
	}
	if r := createArena(t, a, clk, other); r.Code != http.StatusCreated {
		t.Errorf("another player's arena: %d %s", r.Code, r.Body)
	}
	clk.advance(23 * time.Hour)
	a.relogin(t, &p)
	if r := createArena(t, a, clk, p); r.Code != http.StatusCreated {
		t.Errorf("once the first left the 24 hours: %d %s", r.Code, r.Body)
	}
	createArena(t, a, clk, p).wantError(t, http.StatusTooManyRequests, "RATE_LIMITED")

	// The document says so.
	var doc struct {
		Paths map[string]map[string]struct {
			Responses map[string]json.RawMessage `json:"responses"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(a.do(t, request{path: "/openapi.json"}).Body.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if _, ok := doc.Paths["/tournaments"]["post"].Responses["429"]; !ok {
		t.Errorf("POST /tournaments does not document 429: %v", doc.Paths["/tournaments"]["post"].Responses)
	}
}

// 20 creations by one player at once create exactly 5 arenas.
func TestConcurrentArenaCreationsStopAtTheLimit(t *testing.T) {
	a, clk := tournamentApp(t)
	p := a.newPlayer(t)
	codes := make([]int, 20)
	var wg sync.WaitGroup
	for i := range codes {
		wg.Go(func() { codes[i] = createArena(t, a, clk, p).Code })
	}
	wg.Wait()
	created, limited := 0, 0
	for _, c := range codes {
		switch c {
		case http.StatusCreated:
			created++
		case http.StatusTooManyRequests:
			limited++
		}
	}
	if created != 5 || limited != 15 {
		t.Errorf("20 concurrent creations: %d created, %d refused with 429 (codes %v); want 5 and 15", created, limited, codes)
	}
	if n := arenasCreatedBy(t, a, p); n != 5 {
		t.Errorf("%d arenas in the database, want 5", n)
	}
}

// Past TOURNAMENTS_SCHEDULED_MAX arenas scheduled or running, nobody
// creates another (429 with Retry-After) until one is over.
func TestArenaCreationIsBoundedInAll(t *testing.T) {
	clk := newTestClock()
	adminWallet := newWallet(t)
	env := map[string]string{"WORKERS": "false", "JWT_SECRET": testSecret, "DATABASE_URL": dbtest.Fresh(t), "TOURNAMENTS_SCHEDULED_MAX": "3",
		"ADMIN_WALLETS": adminWallet.address()}
	a := newTestAppAt(t, env, clk.now)
	var first *arena
	for i := range 3 {
		ar := newArena(t, a, clk, a.newPlayer(t), nil)
		if i == 0 {
			first = ar
		}
	}
	r := createArena(t, a, clk, a.newPlayer(t))
	r.wantError(t, http.StatusTooManyRequests, "RATE_LIMITED")
	if got := r.Header().Get("Retry-After"); got != "720" {
		t.Errorf("Retry-After %q, want 720: when the first arena scheduled ends, in 12 minutes", got)
	}

	// The first starts with nobody in it and is cancelled: room for one.
	first.start(t)
	if s := first.get(t).Status; s != "cancelled" {
		t.Fatalf("the empty arena: %s", s)
	}
	if r := createArena(t, a, clk, a.newPlayer(t)); r.Code != http.StatusCreated {
		t.Errorf("with one arena over: %d %s", r.Code, r.Body)
	}
	// Players filling the arenas scheduled cannot keep staff out.
	if r := createArena(t, a, clk, a.admin(t, adminWallet)); r.Code != http.StatusCreated {
		t.Errorf("an admin's arena past the bound: %d %s", r.Code, r.Body)
	}
}

// The demo bots keep a free arena scheduled around the clock, through the
// API: the per-player limit does not stop them.
func TestDemoBotsAreNotBoundByTheArenaLimit(t *testing.T) {
	clk := newTestClock()
	a := newTestAppAt(t, map[string]string{"WORKERS": "false", "JWT_SECRET": testSecret, "DATABASE_URL": dbtest.Fresh(t), "DEMO_BOTS": "1",
		"TOURNAMENTS_SCHEDULED_MAX": "3"}, clk.now)
	w := wallet{bots.Wallet(a.Keys, 0)}
	token, id := a.login(t, w, "agent-1")
	bot := player{wallet: w, id: id, auth: bearer(token, "agent-1")}
	for i := range 8 {
		if r := createArena(t, a, clk, bot); r.Code != http.StatusCreated {
			t.Fatalf("the bot's arena %d: %d %s", i+1, r.Code, r.Body)
		}
	}
}

// The attack: a linked pair (one referred the other) entered the same paid
// arena, one resigned every game to the other, and the pair took the third
// entrant's money. A paid arena now refuses an entrant linked to another
// (409 LINKED_ACCOUNT, naming whom and why, on the API and the page), and
// the refused entry locks nothing.
func TestAPaidArenaRefusesAnEntrantLinkedToAnother(t *testing.T) {
	a, clk := tournamentApp(t)
	referrer := a.depositor(t, 2_000_000)
	referee := a.referredDepositor(t, a.referrals(t, referrer).Code, 2_000_000)
	third := a.depositor(t, 2_000_000)
	name := a.username(t, referrer.auth)
	ar := newArena(t, a, clk, third, map[string]any{"entryFeeMinor": 1_000_000})
	ar.mustJoin(t, referrer)

	m := ar.join(t, referee).wantError(t, http.StatusConflict, "LINKED_ACCOUNT")
	if msg := m["message"].(string); !strings.Contains(msg, name) || !strings.Contains(msg, "one referred the other") || m["entrantId"] != referrer.id {
		t.Errorf("the refusal does not say whom the entrant is linked to and why: %v", m)
	}
	if b := a.balances(t, referee.auth); b.available != 2_000_000 || b.locked != 0 {
		t.Errorf("the refused entrant's balance moved: %+v", b)
	}
	// On the arena page, in words.
	cookie := a.sessionCookie(t, referee.wallet)
	r := a.formPost(t, cookie, "/arenas/"+ar.id+"/join", url.Values{})
	if text := section(r.Body.String(), "arena-entry"); r.Code != http.StatusConflict || !strings.Contains(text, name) ||
		!strings.Contains(text, "one referred the other") {
		t.Errorf("the page's refusal: %d %q", r.Code, text)
	}
	if b := a.balances(t, referee.auth); b.available != 2_000_000 || b.locked != 0 {
		t.Errorf("the refused entrant's balance moved: %+v", b)
	}

	ar.mustJoin(t, third)
	if d := ar.get(t); d.PlayerCount != 2 || d.PrizePoolMinor != 2_000_000 {
		t.Errorf("the arena: %d players, pool %d; want the referrer and the third, 2 USDC", d.PlayerCount, d.PrizePoolMinor)
	}
}

// A linked pair joining a paid arena at the same moment: at most one gets
// in, and only its fee is locked.
func TestALinkedPairJoiningAtOnceGetsOneEntry(t *testing.T) {
	a, clk := tournamentApp(t)
	referrer := a.depositor(t, 5_000_000)
	referee := a.referredDepositor(t, a.referrals(t, referrer).Code, 5_000_000)
	const rounds = 4
	for i := range rounds {
		ar := newArena(t, a, clk, referrer, map[string]any{"entryFeeMinor": 1_000_000})
		var codes [2]int
		var wg sync.WaitGroup
		for j, p := range []player{referrer, referee} {
			wg.Go(func() { codes[j] = ar.join(t, p).Code })
		}
		wg.Wait()
		if n := ar.get(t).PlayerCount; n > 1 {
			t.Errorf("arena %d: both of the linked pair got in (answers %v)", i+1, codes)
		} else if codes[0]+codes[1] != http.StatusOK+http.StatusConflict {
			t.Errorf("arena %d: answers %v, want one 200 and one 409", i+1, codes)
		}
	}
	locked := a.balances(t, referrer.auth).locked + a.balances(t, referee.auth).locked
	if locked > rounds*1_000_000 {
		t.Errorf("the pair has %d locked in %d arenas; at most one entry each", locked, rounds)
	}
}

// A free arena has nothing to win: linked accounts both play in it.
func TestAFreeArenaLetsLinkedAccountsIn(t *testing.T) {
	a, clk := tournamentApp(t)
	referrer := a.newPlayer(t)
	referee := a.referredPlayer(t, a.referrals(t, referrer).Code)
	ar := newArena(t, a, clk, referrer, nil)
	ar.mustJoin(t, referrer, referee)
	if n := ar.get(t).PlayerCount; n != 2 {
		t.Errorf("%d players in the free arena, want 2", n)
	}
}
