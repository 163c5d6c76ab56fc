package handlers_test

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"wager/domain/protection"
)

// testClock is a clock the tests move: every service of an app made with
// newTestAppAt reads it. It starts at a whole second, as the database and
// tokens keep times.
type testClock struct{ ns atomic.Int64 }

func newTestClock() *testClock {
	c := &testClock{}
	c.ns.Store(time.Now().UTC().Truncate(time.Second).UnixNano())
	return c
}

func (c *testClock) now() time.Time          { return time.Unix(0, c.ns.Load()).UTC() }
func (c *testClock) advance(d time.Duration) { c.ns.Add(int64(d)) }

// relogin signs p in again (a moved clock expires tokens).
func (a *testApp) relogin(t testing.TB, p *player) {
	t.Helper()
	token, _ := a.login(t, p.wallet, "agent-1")
	p.auth = bearer(token, "agent-1")
}

type limitWindows struct{ Day, Week, Month *int64 }

type limitsView struct {
	DepositMinor, LossMinor limitWindows
	StakeMaxMinor           *int64
	SessionReminderMinutes  int
	Pending                 []struct {
		Name        string
		Value       *int64
		EffectiveAt time.Time
	}
	Used struct {
		DepositMinor, LossMinor struct{ Day, Week, Month int64 }
	}
}

func (a *testApp) limits(t testing.TB, p player) limitsView {
	t.Helper()
	r := a.do(t, request{path: "/users/me/limits", header: p.auth})
	if r.Code != 200 {
		t.Fatalf("GET /users/me/limits: %d %s", r.Code, r.Body)
	}
	var v limitsView
	if err := jsonDecode(r.Body.Bytes(), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func (a *testApp) putLimits(t testing.TB, p player, body string) limitsView {
	t.Helper()
	r := a.do(t, request{method: http.MethodPut, path: "/users/me/limits", header: p.auth, body: body})
	if r.Code != 200 {
		t.Fatalf("PUT /users/me/limits %s: %d %s", body, r.Code, r.Body)
	}
	var v limitsView
	if err := jsonDecode(r.Body.Bytes(), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func (a *testApp) prepareDeposit(t testing.TB, p player, amount int64) response {
	t.Helper()
	return a.do(t, request{method: http.MethodPost, path: "/wallets/transfer/prepare", header: p.auth,
		body: jsonBody(map[string]any{"toAddress": a.Money.DepositAddress().String(), "amountMinor": amount})})
}

// depositNow deposits amount from p's wallet and wants it confirmed.
func (a *testApp) depositNow(t testing.TB, p player, amount int64) {
	t.Helper()
	r := a.prepareDeposit(t, p, amount)
	if r.Code != 200 {
		t.Fatalf("prepare a deposit of %d: %d %s", amount, r.Code, r.Body)
	}
	prep := r.json(t)
	if s := a.submit(t, p.auth, prep["intentId"].(string), signPrepared(t, p.wallet, prep["transaction"].(string), nil)); s.Code != 200 {
		t.Fatalf("deposit: %d %s", s.Code, s.Body)
	}
}

func (a *testApp) exclude(t testing.TB, p player, body string) response {
	t.Helper()
	return a.do(t, request{method: http.MethodPost, path: "/users/me/exclusion", header: p.auth, body: body})
}

// wantLimit checks a LIMIT_EXCEEDED refusal: its limit and when it
// resets (zero: null).
func wantLimit(t testing.TB, r response, limit string, resetsAt time.Time) map[string]any {
	t.Helper()
	e := r.wantError(t, http.StatusConflict, "LIMIT_EXCEEDED")
	if e["limit"] != limit {
		t.Errorf("limit: got %v, want %s (%s)", e["limit"], limit, r.Body)
	}
	got, present := e["resetsAt"]
	switch {
	case !present:
		t.Errorf("the refusal has no resetsAt: %s", r.Body)
	case resetsAt.IsZero() && got != nil:
		t.Errorf("resetsAt: got %v, want null", got)
	case !resetsAt.IsZero():
		s, _ := got.(string)
		at, err := time.Parse(time.RFC3339Nano, s)
		if err != nil || !at.Equal(resetsAt) {
			t.Errorf("resetsAt: got %v, want %s", got, resetsAt.Format(time.RFC3339))
		}
	}
	return e
}

// A player on a losing streak cannot loosen a limit to keep going: a
// tighter limit holds at once, a looser one only 24 hours after it was
// asked for, and a tighter change meanwhile replaces the waiting one.
func TestLimitsTightenAtOnceAndLoosenOnlyAfter24Hours(t *testing.T) {
	clk := newTestClock()
	a := newTestAppAt(t, noWorkers, clk.now)
	p := a.spectatorWith(t, 20_000_000)

	for body, field := range map[string]string{
		`{"depositMinor": {"day": -1}}`:            "depositMinor.day",
		`{"depositMinor": {"week": 1.5}}`:          "depositMinor.week",
		`{"lossMinor": {"month": 1e6}}`:            "lossMinor.month",
		`{"stakeMaxMinor": "5000000"}`:             "stakeMaxMinor",
		`{"lossMinor": {"daily": 5}}`:              "lossMinor.daily",
		`{"depositLimit": 5}`:                      "depositLimit",
		`{"sessionReminderMinutes": -5}`:           "sessionReminderMinutes",
		`{"depositMinor": 5}`:                      "depositMinor",
		`{"stakeMaxMinor": 9223372036854775808}`:   "stakeMaxMinor",
		`{"depositMinor": {"day": 5, "week": -5}}`: "depositMinor.week",
	} {
		e := a.do(t, request{method: http.MethodPut, path: "/users/me/limits", header: p.auth, body: body}).wantError(t, 400, "VALIDATION_ERROR")
		if fields, _ := e["fields"].(map[string]any); fields[field] == nil {
			t.Errorf("%s: the refusal does not name %s: %v", body, field, e)
		}
	}
	a.do(t, request{method: http.MethodPut, path: "/users/me/limits", header: p.auth, body: `[1]`}).wantError(t, 400, "INVALID_JSON")
	if l := a.limits(t, p); l.DepositMinor.Day != nil || l.SessionReminderMinutes != 60 {
		t.Fatalf("a refused change changed the limits: %+v", l)
	}

	// Tighter at once.
	l := a.putLimits(t, p, `{"depositMinor": {"day": 5000000}}`)
	if l.DepositMinor.Day == nil || *l.DepositMinor.Day != 5_000_000 || len(l.Pending) != 0 {
		t.Fatalf("a new limit: %+v, want 5 USDC a day at once", l)
	}
	e := wantLimit(t, a.prepareDeposit(t, p, 6_000_000), "depositMinor.day", time.Time{})
	if msg := e["message"].(string); !strings.Contains(msg, "Your daily deposit limit is 5.00 USDC") || !strings.Contains(msg, "more than the limit itself") {
		t.Errorf("the refusal of a deposit above the limit: %q", msg)
	}
	first := clk.now()
	a.depositNow(t, p, 3_000_000)
	if used := a.limits(t, p).Used.DepositMinor; used.Day != 3_000_000 || used.Month != 3_000_000 {
		t.Errorf("used deposits: %+v, want 3 USDC", used)
	}
	clk.advance(time.Hour)
	e = wantLimit(t, a.prepareDeposit(t, p, 3_000_000), "depositMinor.day", first.Add(24*time.Hour))
	if msg := e["message"].(string); !strings.Contains(msg, "so 2.00 USDC is left. This deposit of 3.00 USDC would go past the limit. You can deposit up to 2.00 USDC now, or this amount from "+protection.FormatTime(first.Add(24*time.Hour))+".") {
		t.Errorf("the refusal does not say what fits: %q", msg)
	}
	// Two deposits prepared at once cannot pass the limit together.
	if r := a.prepareDeposit(t, p, 2_000_000); r.Code != 200 {
		t.Fatalf("a deposit up to the limit: %d %s", r.Code, r.Body)
	}
	wantLimit(t, a.prepareDeposit(t, p, 10_000), "depositMinor.day", first.Add(24*time.Hour))

	// Looser only after 24 hours: the limit holds meanwhile.
	asked := clk.now()
	l = a.putLimits(t, p, `{"depositMinor": {"day": 100000000}}`)
	if *l.DepositMinor.Day != 5_000_000 || len(l.Pending) != 1 || l.Pending[0].Name != "depositMinor.day" ||
		*l.Pending[0].Value != 100_000_000 || !l.Pending[0].EffectiveAt.Equal(asked.Add(24*time.Hour)) {
		t.Fatalf("a looser limit: %+v, want 5 USDC now and 100 USDC pending from %s", l, asked.Add(24*time.Hour))
	}
	wantLimit(t, a.prepareDeposit(t, p, 3_000_000), "depositMinor.day", first.Add(24*time.Hour))
	// A tighter change meanwhile replaces the waiting looser one.
	if l = a.putLimits(t, p, `{"depositMinor": {"day": 4000000}}`); *l.DepositMinor.Day != 4_000_000 || len(l.Pending) != 0 {
		t.Fatalf("a tighter change while a looser one waits: %+v", l)
	}
	// Removing a limit is looser too.
	asked = clk.now()
	if l = a.putLimits(t, p, `{"depositMinor": {"day": null}, "sessionReminderMinutes": 15}`); *l.DepositMinor.Day != 4_000_000 ||
		len(l.Pending) != 1 || l.Pending[0].Value != nil || l.SessionReminderMinutes != 15 {
		t.Fatalf("removing a limit: %+v, want 4 USDC until the removal applies (and the reminder at once)", l)
	}
	clk.advance(24*time.Hour - time.Second)
	a.relogin(t, &p)
	if l = a.limits(t, p); l.DepositMinor.Day == nil || len(l.Pending) != 1 {
		t.Fatalf("a second before the 24 hours: %+v, want the limit still on", l)
	}
	clk.advance(time.Second)
	if l = a.limits(t, p); l.DepositMinor.Day != nil || len(l.Pending) != 0 {
		t.Fatalf("24 hours after the removal was asked: %+v, want no limit", l)
	}
	if !clk.now().Equal(asked.Add(24 * time.Hour)) {
		t.Fatal("the test moved the clock wrongly")
	}
	a.depositNow(t, p, 5_000_000)
	// Writing a limit after a change matured keeps the matured one.
	if l = a.putLimits(t, p, `{"lossMinor": {"week": 0}}`); l.DepositMinor.Day != nil || l.LossMinor.Week == nil || *l.LossMinor.Week != 0 {
		t.Fatalf("after another change: %+v", l)
	}
}

// excludedSetup is a player who holds market shares, an open buy and an
// open sell, waits in a staked queue and finished a staked game whose
// other player asked for a rematch, among others to bet on, tip and
// challenge.
type excludedSetup struct {
	x, p1, p2, other, trader, friend           player
	game, finished, lobby, sellOrder, buyOrder string
}

func (a *testApp) excludedSetup(t *testing.T) excludedSetup {
	t.Helper()
	var s excludedSetup
	s.x, s.other = a.depositor(t, 10_000_000), a.depositor(t, 5_000_000)
	a.fund(t, s.x, 5_000_000) // on chain, for bets, donations and tips
	s.friend = a.newPlayer(t)
	// A staked game the player lost, whose other player asks for a
	// rematch.
	finished := a.lobby(t, s.x, `{"gameType": "rps", "stakeMinor": 1000000, "settings": {"rounds": 1}}`)
	a.join(t, s.x, finished)
	s.finished = a.join(t, s.other, finished)["gameId"].(string)
	a.playTo(t, s.other, s.x, s.finished, 1)
	if r := a.do(t, request{method: http.MethodPost, path: "/games/" + s.finished + "/rematch", header: s.other.auth}); r.Code != 200 {
		t.Fatalf("rematch asked: %d %s", r.Code, r.Body)
	}
	// A game to bet on, trade and donate to.
	s.p1, s.p2, s.game = a.stakedGame(t, 1_000_000, `{"rounds": 3}`)
	s.trader = a.depositor(t, 2_000_000)
	a.placed(t, s.x, s.game, "buy", s.p1.id, 500_000, 2, "")
	if got := a.placed(t, s.trader, s.game, "buy", s.p2.id, 500_000, 2, ""); got.Order.FilledShares != 2 {
		t.Fatalf("the mint: %+v", got)
	}
	s.sellOrder = a.placed(t, s.x, s.game, "sell", s.p1.id, 900_000, 1, "").Order.ID
	s.buyOrder = a.placed(t, s.x, s.game, "buy", s.p2.id, 100_000, 3, "").Order.ID
	// A staked queue it waits in.
	s.lobby = a.lobby(t, s.x, `{"gameType": "rps", "stakeMinor": 1000000}`)
	if got := a.join(t, s.x, s.lobby); got["status"] != "queued" {
		t.Fatalf("queue: %v", got)
	}
	return s
}

// moneyIn are the requests of every path that puts money in, for p.
func (a *testApp) moneyIn(t *testing.T, s excludedSetup, p player, anotherLobby string) map[string]func() response {
	post := func(path, body string) func() response {
		return func() response {
			return a.do(t, request{method: http.MethodPost, path: path, header: p.auth, body: body})
		}
	}
	return map[string]func() response{
		"deposit prepare":  func() response { return a.prepareDeposit(t, p, 1_000_000) },
		"staked lobby":     post("/lobbies", `{"gameType": "rps", "stakeMinor": 500000}`),
		"staked queue":     post("/lobbies/"+anotherLobby+"/join-queue", ""),
		"staked challenge": post("/challenges", jsonBody(map[string]any{"toUserId": s.friend.id, "gameType": "rps", "stakeMinor": 500_000})),
		"staked rematch":   post("/games/"+s.finished+"/rematch", ""),
		"bet prepare":      func() response { r, _ := a.prepareBet(t, p, s.game, s.p1.id, 100_000); return r },
		"market buy":       func() response { return a.order(t, p, s.game, "buy", s.p1.id, 300_000, 1, "") },
		"donation prepare": post("/games/"+s.game+"/donations/prepare", `{"amountMinor": 100000}`),
		"tip prepare":      post("/tips/prepare", jsonBody(map[string]any{"toUserId": s.friend.id, "amountMinor": 100_000})),
		// A plain transfer to another player's wallet is a tip without its
		// chat line.
		"transfer to a player": post("/wallets/transfer/prepare", jsonBody(map[string]any{"toAddress": s.friend.address(), "amountMinor": 100_000})),
	}
}

// A player who took a time-out cannot put money in anywhere until it
// ends, and can take every bit of it out: the exclusion is checked where
// the money moves, not on a page.
func TestATimeOutClosesEveryWayMoneyGoesInAndNoWayItComesOut(t *testing.T) {
	clk := newTestClock()
	a := newTestAppAt(t, noWorkers, clk.now)
	s := a.excludedSetup(t)
	host := a.depositor(t, 2_000_000)
	otherLobby := a.lobby(t, host, `{"gameType": "rps", "stakeMinor": 500000}`)
	a.join(t, host, otherLobby)
	a.wantAvailable(t, s.x, 10_000_000-1_000_000-1_000_000-300_000, "before the time-out")
	// A bet prepared before the time-out and sent after it is refused
	// before anything moves.
	prepared, signedBet := a.prepareBet(t, s.x, s.game, s.p1.id, 200_000)
	if prepared.Code != 200 {
		t.Fatalf("a bet before the time-out: %d %s", prepared.Code, prepared.Body)
	}

	r := a.exclude(t, s.x, `{"kind": "timeout", "hours": 24}`)
	if r.Code != http.StatusCreated {
		t.Fatalf("time-out: %d %s", r.Code, r.Body)
	}
	x := r.json(t)
	until := x["until"].(string)
	if at, _ := time.Parse(time.RFC3339Nano, until); !at.Equal(clk.now().Add(24*time.Hour)) || x["kind"] != "timeout" {
		t.Fatalf("the time-out: %v, want 24 hours from now", x)
	}
	if got := a.do(t, request{path: "/users/me/exclusion", header: s.x.auth}).json(t); got["until"] != until {
		t.Errorf("GET the exclusion: %v", got)
	}
	// Its start cancelled the open buy (its money is back) and left the
	// staked queue; the open sell stands.
	orders := map[string]string{}
	for _, o := range a.ordersOf(t, s.x, s.game) {
		orders[o.ID] = o.Status
	}
	if orders[s.buyOrder] != "cancelled" || orders[s.sellOrder] != "open" {
		t.Errorf("orders after the time-out: %v, want the buy cancelled and the sell open", orders)
	}
	a.wantAvailable(t, s.x, 10_000_000-1_000_000-1_000_000, "after the time-out")
	wallet := a.onChain(t, s.x.key.PublicKey())
	a.submitBet(t, s.x, s.game, signedBet).wantError(t, http.StatusForbidden, "SELF_EXCLUDED")
	if got := a.onChain(t, s.x.key.PublicKey()); got != wallet {
		t.Errorf("the wallet after a bet sent during the time-out: %d, want %d as before", got, wallet)
	}
	if got := a.join(t, a.depositor(t, 1_000_000), s.lobby); got["status"] != "queued" {
		t.Errorf("the excluded player was still waiting in the staked queue: %v", got)
	}

	for path, send := range a.moneyIn(t, s, s.x, otherLobby) {
		e := send().wantError(t, http.StatusForbidden, "SELF_EXCLUDED")
		if e["until"] != until {
			t.Errorf("%s: until %v, want %s", path, e["until"], until)
		}
		if msg := e["message"].(string); !strings.Contains(msg, "time-out until") || !strings.Contains(msg, "withdrawals") {
			t.Errorf("%s: the refusal does not say until when and what still works: %q", path, msg)
		}
	}
	a.wantAvailable(t, s.x, 8_000_000, "after the refusals")

	// Money out and free play go on: a transfer to a wallet of no player's
	// is the player's own money moving.
	if r := a.do(t, request{method: http.MethodPost, path: "/wallets/transfer/prepare", header: s.x.auth,
		body: jsonBody(map[string]any{"toAddress": newWallet(t).address(), "amountMinor": 100_000})}); r.Code != http.StatusOK {
		t.Errorf("a transfer to a wallet of no player's: %d %s", r.Code, r.Body)
	}
	if r := a.do(t, request{method: http.MethodPost, path: "/wallets/withdraw", header: s.x.auth, body: `{"amountMinor": 1000000}`}); r.Code != 200 && r.Code != 202 {
		t.Errorf("withdrawal: %d %s", r.Code, r.Body)
	}
	a.placed(t, s.x, s.game, "sell", s.p1.id, 800_000, 1, "")
	if r := a.do(t, request{method: http.MethodDelete, path: "/games/" + s.game + "/market/orders/" + s.sellOrder, header: s.x.auth}); r.Code != 200 {
		t.Errorf("cancel a sell: %d %s", r.Code, r.Body)
	}
	if r := a.say(t, s.x, "game", s.game, "good luck both"); r.Code != http.StatusCreated {
		t.Errorf("chat: %d %s", r.Code, r.Body)
	}
	if r := a.do(t, request{method: http.MethodPost, path: "/challenges", header: s.x.auth,
		body: jsonBody(map[string]any{"toUserId": s.friend.id, "gameType": "rps", "stakeMinor": 0})}); r.Code != http.StatusCreated {
		t.Errorf("a free challenge: %d %s", r.Code, r.Body)
	}
	a.playTo(t, s.p1, s.p2, s.game, 2)
	if r := a.redeem(t, s.x, s.game); r.Code != 200 || r.json(t)["redeemedMinor"] != float64(2_000_000) {
		t.Errorf("redeem: %d %s, want the two shares of the winner paid (the sell rested unfilled)", r.Code, r.Body)
	}
	free := a.lobby(t, s.x, `{"gameType": "rps", "stakeMinor": 0, "settings": {"rounds": 1}}`)
	a.join(t, s.x, free)
	game := a.join(t, s.friend, free)["gameId"].(string)
	a.playTo(t, s.x, s.friend, game, 1)

	// When it ends, money goes in again.
	clk.advance(24*time.Hour + time.Minute)
	a.relogin(t, &s.x)
	if r := a.prepareDeposit(t, s.x, 1_000_000); r.Code != 200 {
		t.Errorf("a deposit after the time-out ended: %d %s", r.Code, r.Body)
	}
	if r := a.do(t, request{path: "/users/me/exclusion", header: s.x.auth}); r.Code != http.StatusNoContent {
		t.Errorf("GET the exclusion after it ended: %d %s, want 204", r.Code, r.Body)
	}
}

// Nobody can end an exclusion early: not the player (a shorter one, or
// the same again, is refused; only a longer one replaces it), not staff
// (no route does, and the database refuses to change or delete one).
func TestAnExclusionCannotBeShortenedOrLifted(t *testing.T) {
	adminWallet := newWallet(t)
	clk := newTestClock()
	a := newTestAppAt(t, map[string]string{"WORKERS": "false", "JWT_SECRET": testSecret, "ADMIN_WALLETS": adminWallet.address()}, clk.now)
	admin := a.admin(t, adminWallet)
	p := a.newPlayer(t)

	for body, field := range map[string]string{
		`{"kind": "timeout", "hours": 23}`:                           "hours",
		`{"kind": "timeout", "hours": 1009}`:                         "hours",
		`{"kind": "timeout"}`:                                        "hours",
		`{"kind": "timeout", "hours": 24, "months": 6}`:              "months",
		`{"kind": "self-exclusion", "months": 7}`:                    "months",
		`{"kind": "self-exclusion"}`:                                 "months",
		`{"kind": "self-exclusion", "permanent": false}`:             "permanent",
		`{"kind": "self-exclusion", "hours": 48}`:                    "hours",
		`{"kind": "break", "hours": 48}`:                             "kind",
		`{"kind": "timeout", "hours": 24.5}`:                         "hours",
		`{"kind": "self-exclusion", "months": "6"}`:                  "months",
		`{"kind": "self-exclusion", "permanent": "true"}`:            "permanent",
		`{"kind": "self-exclusion", "months": 6, "permanent": true}`: "months",
	} {
		e := a.exclude(t, p, body).wantError(t, 400, "VALIDATION_ERROR")
		if fields, _ := e["fields"].(map[string]any); fields[field] == nil {
			t.Errorf("%s: the refusal does not name %s: %v", body, field, e)
		}
	}
	if r := a.do(t, request{path: "/users/me/exclusion", header: p.auth}); r.Code != http.StatusNoContent {
		t.Fatalf("a refused exclusion started one: %d %s", r.Code, r.Body)
	}

	steps := []struct {
		body   string
		status int
	}{
		{`{"kind": "timeout", "hours": 48}`, 201},
		{`{"kind": "timeout", "hours": 24}`, 409},              // shorter
		{`{"kind": "timeout", "hours": 47}`, 409},              // asked later, but ends sooner
		{`{"kind": "self-exclusion", "months": 6}`, 201},       // longer: replaces it
		{`{"kind": "timeout", "hours": 1008}`, 409},            // six weeks, inside six months
		{`{"kind": "self-exclusion", "permanent": true}`, 201}, // for good
		{`{"kind": "self-exclusion", "months": 60}`, 409},      // nothing is longer than for good
		{`{"kind": "self-exclusion", "permanent": true}`, 409}, // nor the same again
	}
	for i, s := range steps {
		clk.advance(time.Minute) // each asked a little later than the last
		r := a.exclude(t, p, s.body)
		if r.Code != s.status {
			t.Fatalf("step %d %s: %d %s, want %d", i, s.body, r.Code, r.Body, s.status)
		}
		if s.status == 409 {
			r.wantError(t, 409, "CONFLICT")
		}
	}
	if got := a.do(t, request{path: "/users/me/exclusion", header: p.auth}).json(t); got["kind"] != "self-exclusion" || got["until"] != nil {
		t.Fatalf("the running exclusion: %v, want a permanent self-exclusion", got)
	}

	// Staff read it, and nothing more.
	v := a.do(t, request{path: "/admin/users/" + p.id + "/protection", header: admin.auth}).json(t)
	if running, _ := v["running"].(map[string]any); running["kind"] != "self-exclusion" || running["until"] != nil {
		t.Errorf("staff's view of the running exclusion: %v", v)
	}
	if history, _ := v["exclusions"].([]any); len(history) != 3 {
		t.Errorf("staff's view of the exclusions: %v, want the 3 started", v["exclusions"])
	}
	a.do(t, request{path: "/admin/users/" + p.id + "/protection", header: p.auth}).wantError(t, 403, "ADMIN_ONLY")
	page := a.do(t, request{path: "/admin?player=" + a.username(t, p.auth), header: map[string]string{"Cookie": a.sessionCookie(t, adminWallet)}})
	_, section, _ := strings.Cut(page.Body.String(), `data-testid="admin-protection"`)
	section, _, _ = strings.Cut(section, "</section>")
	if text := visibleText(section); !strings.Contains(text, "Self-excluded for good since") || !strings.Contains(text, "3 asked for in all") {
		t.Errorf("the admin page's line on the player: %q", text)
	}
	if strings.Contains(section, `method="post"`) {
		t.Error("the admin page offers to change a player's protection")
	}
	for _, rt := range a.HTTP.Echo.Routes() {
		if !strings.Contains(rt.Path, "exclusion") && !strings.Contains(rt.Path, "protection") && !strings.Contains(rt.Path, "responsible-play") {
			continue
		}
		ok := rt.Method == http.MethodGet || rt.Method == http.MethodHead ||
			(rt.Method == http.MethodPost && (rt.Path == "/users/me/exclusion" || strings.HasPrefix(rt.Path, "/settings/responsible-play/")))
		if !ok {
			t.Errorf("%s %s could change an exclusion", rt.Method, rt.Path)
		}
	}
	for _, method := range []string{http.MethodDelete, http.MethodPut, http.MethodPatch} {
		for _, path := range []string{"/users/me/exclusion", "/admin/users/" + p.id + "/protection"} {
			if r := a.do(t, request{method: method, path: path, header: admin.auth, body: `{}`}); r.Code < 400 {
				t.Errorf("%s %s by an admin: %d %s", method, path, r.Code, r.Body)
			}
		}
	}
	ctx := context.Background()
	if _, err := a.DB.ExecContext(ctx, "UPDATE exclusions SET until = now() WHERE user_id = ?", p.id); err == nil {
		t.Error("the database let an exclusion be shortened")
	}
	if _, err := a.DB.ExecContext(ctx, "DELETE FROM exclusions WHERE user_id = ?", p.id); err == nil {
		t.Error("the database let an exclusion be deleted")
	}
	a.prepareDeposit(t, p, 1_000_000).wantError(t, 403, "SELF_EXCLUDED")
}

// With REQUIRE_AGE_CONFIRMATION, money goes in only from an account whose
// player gave a birth date of MIN_AGE or more; an underage one is refused
// for good, whatever it says later.
func TestTheAgeGate(t *testing.T) {
	clk := newTestClock()
	a := newTestAppAt(t, map[string]string{"WORKERS": "false", "JWT_SECRET": testSecret, "REQUIRE_AGE_CONFIRMATION": "true"}, clk.now)
	adult, minor, friend := a.spectatorWith(t, 5_000_000), a.spectatorWith(t, 5_000_000), a.newPlayer(t)
	me := func(p player) map[string]any { return a.do(t, request{path: "/users/me", header: p.auth}).json(t) }
	confirm := func(p player, date string) response {
		return a.do(t, request{method: http.MethodPost, path: "/users/me/age-confirmation", header: p.auth, body: jsonBody(map[string]string{"birthDate": date})})
	}
	refusedPaths := func(p player, code string) {
		t.Helper()
		a.prepareDeposit(t, p, 1_000_000).wantError(t, 403, code)
		a.do(t, request{method: http.MethodPost, path: "/lobbies", header: p.auth, body: `{"gameType": "rps", "stakeMinor": 100000}`}).wantError(t, 403, code)
		a.do(t, request{method: http.MethodPost, path: "/tips/prepare", header: p.auth,
			body: jsonBody(map[string]any{"toUserId": friend.id, "amountMinor": 100_000})}).wantError(t, 403, code)
	}
	today := clk.now()

	if me(adult)["ageConfirmed"] != false {
		t.Fatalf("a new account's age is confirmed: %v", me(adult))
	}
	refusedPaths(adult, "AGE_UNCONFIRMED")
	if r := a.do(t, request{method: http.MethodPost, path: "/lobbies", header: adult.auth, body: `{"gameType": "rps", "stakeMinor": 0}`}); r.Code != 201 {
		t.Errorf("a free lobby before the age is confirmed: %d %s", r.Code, r.Body)
	}
	for _, date := range []string{"2001-02-30", "31/01/2000", today.AddDate(0, 0, 1).Format(time.DateOnly), "1850-01-01", ""} {
		if e := confirm(adult, date).wantError(t, 400, "VALIDATION_ERROR"); e["fields"].(map[string]any)["birthDate"] == nil {
			t.Errorf("%q: %v", date, e)
		}
	}
	// Eighteen today is old enough.
	if r := confirm(adult, today.AddDate(-18, 0, 0).Format(time.DateOnly)); r.Code != 200 || r.json(t)["ageConfirmed"] != true {
		t.Fatalf("confirm an age of 18: %d %s", r.Code, r.Body)
	}
	if me(adult)["ageConfirmed"] != true {
		t.Errorf("after the confirmation: %v", me(adult))
	}
	a.depositNow(t, adult, 1_000_000)

	// A day short of eighteen is underage, for good.
	confirm(minor, today.AddDate(-18, 0, 1).Format(time.DateOnly)).wantError(t, 403, "UNDERAGE")
	confirm(minor, "1990-01-01").wantError(t, 403, "UNDERAGE")
	if me(minor)["ageConfirmed"] != false {
		t.Errorf("an underage account: %v", me(minor))
	}
	refusedPaths(minor, "UNDERAGE")
	// What it has stays its own: free games go on.
	if r := a.do(t, request{method: http.MethodPost, path: "/lobbies", header: minor.auth, body: `{"gameType": "rps", "stakeMinor": 0}`}); r.Code != 201 {
		t.Errorf("a free lobby of an underage account: %d %s", r.Code, r.Body)
	}
}

// The client's country is read only from the header a trusted proxy
// sets: from a restricted country money goes in nowhere, and comes out
// everywhere; the same header sent by anyone else is ignored.
func TestARestrictedRegionIsReadOnlyFromTrustedProxies(t *testing.T) {
	const proxy, stranger = "10.9.0.1:4000", "203.0.113.7:5000"
	a := newTestApp(t, map[string]string{"WORKERS": "false", "JWT_SECRET": testSecret,
		"COUNTRY_HEADER": "X-Country", "TRUSTED_PROXIES": "10.9.0.1", "RESTRICTED_COUNTRIES": "US,gb"})
	s := a.excludedSetup(t)
	host := a.depositor(t, 2_000_000)
	otherLobby := a.lobby(t, host, `{"gameType": "rps", "stakeMinor": 500000}`)
	a.join(t, host, otherLobby)
	from := func(country string, p player) player {
		h := map[string]string{"X-Country": country}
		for k, v := range p.auth {
			h[k] = v
		}
		p.auth = h
		return p
	}
	a.do(t, request{method: http.MethodDelete, path: "/lobbies/" + s.lobby + "/join-queue", header: s.x.auth})
	restricted := from("us", s.x)
	send := func(addr string, p player) func(request) response {
		return func(r request) response { r.header, r.remoteAddr = p.auth, addr; return a.do(t, r) }
	}
	viaProxy := send(proxy, restricted)

	for path, req := range map[string]request{
		"deposit prepare": {method: http.MethodPost, path: "/wallets/transfer/prepare",
			body: jsonBody(map[string]any{"toAddress": a.Money.DepositAddress().String(), "amountMinor": 1_000_000})},
		"staked lobby":     {method: http.MethodPost, path: "/lobbies", body: `{"gameType": "rps", "stakeMinor": 500000}`},
		"staked queue":     {method: http.MethodPost, path: "/lobbies/" + otherLobby + "/join-queue"},
		"staked challenge": {method: http.MethodPost, path: "/challenges", body: jsonBody(map[string]any{"toUserId": s.friend.id, "gameType": "rps", "stakeMinor": 500_000})},
		"staked rematch":   {method: http.MethodPost, path: "/games/" + s.finished + "/rematch"},
		"bet prepare":      {method: http.MethodPost, path: "/games/" + s.game + "/bets/prepare", body: jsonBody(map[string]any{"onUserId": s.p1.id, "amountMinor": 100_000})},
		"market buy":       {method: http.MethodPost, path: "/games/" + s.game + "/market/orders/buy", body: orderBody(s.p1.id, 300_000, 1, "")},
		"donation prepare": {method: http.MethodPost, path: "/games/" + s.game + "/donations/prepare", body: `{"amountMinor": 100000}`},
		"tip prepare":      {method: http.MethodPost, path: "/tips/prepare", body: jsonBody(map[string]any{"toUserId": s.friend.id, "amountMinor": 100_000})},
	} {
		if e := viaProxy(req).wantError(t, http.StatusForbidden, "REGION_RESTRICTED"); e["country"] != "US" ||
			!strings.Contains(e["message"].(string), "withdrawals") {
			t.Errorf("%s: %v", path, e)
		}
	}
	// Close-only: withdrawals, sells, cancels and redemptions.
	if r := viaProxy(request{method: http.MethodPost, path: "/wallets/withdraw", body: `{"amountMinor": 1000000}`}); r.Code != 200 && r.Code != 202 {
		t.Errorf("withdrawal: %d %s", r.Code, r.Body)
	}
	if r := viaProxy(request{method: http.MethodPost, path: "/games/" + s.game + "/market/orders/sell", body: orderBody(s.p1.id, 800_000, 1, "")}); r.Code != 201 {
		t.Errorf("sell: %d %s", r.Code, r.Body)
	}
	if r := viaProxy(request{method: http.MethodDelete, path: "/games/" + s.game + "/market/orders/" + s.buyOrder}); r.Code != 200 {
		t.Errorf("cancel: %d %s", r.Code, r.Body)
	}
	// The page says why.
	cookie := a.sessionCookie(t, s.x.wallet)
	page := a.do(t, request{path: "/wallet", remoteAddr: proxy, header: map[string]string{"Cookie": cookie, "X-Country": "US"}}).Body.String()
	if !strings.Contains(visibleText(page), "Play for money is not offered where you are (US)") {
		t.Errorf("the wallet page from a restricted country does not say why: %.2000s", visibleText(page))
	}
	// The same header from anyone but the proxy, or another country
	// through the proxy, is no restriction.
	for what, r := range map[string]response{
		"US from a stranger":           send(stranger, from("US", s.x))(request{method: http.MethodPost, path: "/lobbies", body: `{"gameType": "rps", "stakeMinor": 500000}`}),
		"FR through the proxy":         send(proxy, from("FR", s.x))(request{method: http.MethodPost, path: "/lobbies", body: `{"gameType": "rps", "stakeMinor": 500000}`}),
		"no country through the proxy": send(proxy, s.x)(request{method: http.MethodPost, path: "/lobbies", body: `{"gameType": "rps", "stakeMinor": 500000}`}),
	} {
		if r.Code != http.StatusCreated {
			t.Errorf("%s: %d %s", what, r.Code, r.Body)
		}
	}
	a.playTo(t, s.p1, s.p2, s.game, 2)
	if r := viaProxy(request{method: http.MethodPost, path: "/games/" + s.game + "/market/redeem"}); r.Code != 200 {
		t.Errorf("redeem: %d %s", r.Code, r.Body)
	}
}

// A maximum stake and a loss limit stop stakes, bets and market buys
// wherever they are made; a loss limit frees up as the losses leave its
// window, and a player waiting in a queue whom a limit now stops is not
// matched.
func TestLimitsStopStakesBetsAndBuysEverywhere(t *testing.T) {
	clk := newTestClock()
	a := newTestAppAt(t, noWorkers, clk.now)
	setUp := clk.now()
	s := a.excludedSetup(t) // the player lost a 1 USDC stake, paid 1 USDC for shares and 0.3 USDC for an open buy
	host := a.depositor(t, 2_000_000)
	bigLobby := a.lobby(t, host, `{"gameType": "rps", "stakeMinor": 1000000}`)
	a.join(t, host, bigLobby)
	a.do(t, request{method: http.MethodDelete, path: "/lobbies/" + s.lobby + "/join-queue", header: s.x.auth})

	// The largest stake, at once, wherever a stake is made.
	a.putLimits(t, s.x, `{"stakeMaxMinor": 500000}`)
	wantLimit(t, a.do(t, request{method: http.MethodPost, path: "/lobbies", header: s.x.auth, body: `{"gameType": "rps", "stakeMinor": 600000}`}), "stakeMaxMinor", time.Time{})
	wantLimit(t, a.do(t, request{method: http.MethodPost, path: "/lobbies/" + bigLobby + "/join-queue", header: s.x.auth}), "stakeMaxMinor", time.Time{})
	wantLimit(t, a.do(t, request{method: http.MethodPost, path: "/challenges", header: s.x.auth,
		body: jsonBody(map[string]any{"toUserId": s.friend.id, "gameType": "rps", "stakeMinor": 1_000_000})}), "stakeMaxMinor", time.Time{})
	if e := wantLimit(t, a.do(t, request{method: http.MethodPost, path: "/games/" + s.finished + "/rematch", header: s.x.auth}), "stakeMaxMinor", time.Time{}); !strings.Contains(e["message"].(string), "maximum stake is 0.50 USDC") {
		t.Errorf("the refusal: %v", e["message"])
	}
	if r := a.do(t, request{method: http.MethodPost, path: "/lobbies", header: s.x.auth, body: `{"gameType": "rps", "stakeMinor": 500000}`}); r.Code != 201 {
		t.Errorf("a stake at the maximum: %d %s", r.Code, r.Body)
	}

	// A loss limit reached. Stakes, bets and buys stop; donations and
	// tips are not play.
	lost := a.limits(t, s.x).Used.LossMinor.Day
	if lost != 2_300_000 {
		t.Fatalf("used loss: %d, want the stake lost and the buys, 2.3 USDC", lost)
	}
	a.putLimits(t, s.x, `{"lossMinor": {"day": 2300000}}`)
	resets := setUp.Add(24 * time.Hour)
	for what, r := range map[string]response{
		"a staked lobby": a.do(t, request{method: http.MethodPost, path: "/lobbies", header: s.x.auth, body: `{"gameType": "rps", "stakeMinor": 100000}`}),
		"a bet":          func() response { r, _ := a.prepareBet(t, s.x, s.game, s.p1.id, 100_000); return r }(),
		"a market buy":   a.order(t, s.x, s.game, "buy", s.p1.id, 300_000, 1, ""),
	} {
		e := wantLimit(t, r, "lossMinor.day", resets)
		if msg := e["message"].(string); !strings.Contains(msg, "Your daily loss limit is 2.30 USDC, and you have lost 2.30 USDC in the last 24 hours: the limit is reached") || !strings.Contains(msg, "is allowed again from "+protection.FormatTime(resets)) {
			t.Errorf("%s: %q", what, msg)
		}
	}
	if r := a.do(t, request{method: http.MethodPost, path: "/games/" + s.game + "/donations/prepare", header: s.x.auth, body: `{"amountMinor": 100000}`}); r.Code != 200 {
		t.Errorf("a donation past a loss limit: %d %s", r.Code, r.Body)
	}
	a.placed(t, s.x, s.game, "sell", s.p1.id, 800_000, 1, "") // selling is money out

	// A player waiting in a queue who lowers their maximum stake is not
	// matched at a higher one: taken out of the queue instead.
	waiter := a.depositor(t, 2_000_000)
	table := a.lobby(t, waiter, `{"gameType": "rps", "stakeMinor": 1000000}`)
	a.join(t, waiter, table)
	a.putLimits(t, waiter, `{"stakeMaxMinor": 100000}`)
	if got := a.join(t, a.depositor(t, 1_000_000), table); got["status"] != "queued" {
		t.Errorf("a player whose limit refuses the stake was matched: %v", got)
	}
	a.wantAvailable(t, waiter, 2_000_000, "the waiting player")

	// The stake leaves the day's window 24 hours after it was locked.
	a.playTo(t, s.p1, s.p2, s.game, 2)
	clk.advance(resets.Sub(clk.now()))
	a.relogin(t, &s.x)
	if r := a.do(t, request{method: http.MethodPost, path: "/lobbies", header: s.x.auth, body: `{"gameType": "rps", "stakeMinor": 100000}`}); r.Code != 201 {
		t.Errorf("a stake once the loss left the window: %d %s", r.Code, r.Body)
	}
}

// The reality check counts from sign-in: a token's issue time, a browser
// session's start.
func TestTheRealityCheckCountsFromSignIn(t *testing.T) {
	clk := newTestClock()
	a := newTestAppAt(t, noWorkers, clk.now)
	p1, p2, game := a.stakedGame(t, 1_000_000, `{"rounds": 1}`)
	a.playTo(t, p2, p1, game, 1)
	clk.advance(time.Minute)
	signedIn := clk.now()
	a.relogin(t, &p1)
	a.relogin(t, &p2)
	cookie := a.sessionCookie(t, p1.wallet)
	clk.advance(45 * time.Minute)
	for what, h := range map[string]map[string]string{"token": p1.auth, "session": {"Cookie": cookie}} {
		r := a.do(t, request{path: "/users/me/session", header: h})
		var s struct {
			StartedAt time.Time
			Minutes   int
			NetMinor  int64
		}
		if r.Code != 200 || jsonDecode(r.Body.Bytes(), &s) != nil {
			t.Fatalf("%s: %d %s", what, r.Code, r.Body)
		}
		// The game was staked and lost before this sign-in: nothing was
		// won or lost since.
		if !s.StartedAt.Equal(signedIn) || s.Minutes != 45 || s.NetMinor != 0 {
			t.Errorf("%s: %+v, want 45 minutes since %s and nothing won or lost", what, s, signedIn)
		}
	}
	// A new game after sign-in: its stake is lost since.
	lobby := a.lobby(t, p1, `{"gameType": "rps", "stakeMinor": 500000, "settings": {"rounds": 1}}`)
	a.fund(t, p1, 500_000)
	a.depositNow(t, p1, 500_000)
	a.join(t, p1, lobby)
	next := a.join(t, p2, lobby)["gameId"].(string)
	a.playTo(t, p2, p1, next, 1)
	if s := a.do(t, request{path: "/users/me/session", header: p1.auth}).json(t); s["netMinor"] != float64(-500_000) {
		t.Errorf("after a lost game: %v, want -0.5 USDC", s)
	}
	if s := a.do(t, request{path: "/users/me/session", header: p2.auth}).json(t); s["netMinor"] != float64(990_000-500_000) {
		t.Errorf("the winner: %v, want the payout less the stake", s)
	}
}

// A loss limit weighs the whole amount a stake, bet, market buy or arena
// entry puts at risk: none may take the net loss past the limit, not only
// once it is reached.
func TestALossLimitCountsTheWholeAmountAtRisk(t *testing.T) {
	clk := newTestClock()
	a := newTestAppAt(t, noWorkers, clk.now)
	x, host := a.depositor(t, 20_000_000), a.depositor(t, 1_000_000)
	a.fund(t, x, 5_000_000) // on chain, for bets
	p1, _, game := a.stakedGame(t, 1_000_000, `{"rounds": 3}`)
	arena := newArena(t, a, clk, host, map[string]any{"entryFeeMinor": 2_000_000})
	a.putLimits(t, x, `{"lossMinor": {"day": 1000000}}`)

	resets := clk.now().Add(24 * time.Hour)
	for what, send := range map[string]func() response{
		"a stake of 5 USDC": func() response {
			return a.do(t, request{method: http.MethodPost, path: "/lobbies", header: x.auth, body: `{"gameType": "rps", "stakeMinor": 5000000}`})
		},
		"a bet of 1.50 USDC":        func() response { r, _ := a.prepareBet(t, x, game, p1.id, 1_500_000); return r },
		"a buy of 3 shares at 0.50": func() response { return a.order(t, x, game, "buy", p1.id, 500_000, 3, "") },
		"an entry fee of 2 USDC":    func() response { return arena.join(t, x) },
	} {
		e := wantLimit(t, send(), "lossMinor.day", time.Time{})
		if msg := e["message"].(string); !strings.Contains(msg, "Your daily loss limit is 1.00 USDC, and you have lost nothing in the last 24 hours.") ||
			!strings.Contains(msg, "It is more than the limit itself: you can put up to 1.00 USDC at risk now.") {
			t.Errorf("%s: %q", what, msg)
		}
	}
	a.wantAvailable(t, x, 20_000_000, "after the refusals")

	// What fits goes in, and then only what still fits.
	a.placed(t, x, game, "buy", p1.id, 300_000, 2, "")
	e := wantLimit(t, a.do(t, request{method: http.MethodPost, path: "/lobbies", header: x.auth,
		body: `{"gameType": "rps", "stakeMinor": 500000}`}), "lossMinor.day", resets)
	if msg := e["message"].(string); !strings.Contains(msg, "you have lost 0.60 USDC in the last 24 hours, so 0.40 USDC is left. This stake could lose 0.50 USDC") {
		t.Errorf("a stake past what is left: %q", msg)
	}
	if r := a.do(t, request{method: http.MethodPost, path: "/lobbies", header: x.auth,
		body: `{"gameType": "rps", "stakeMinor": 400000}`}); r.Code != http.StatusCreated {
		t.Errorf("a stake of what is left: %d %s", r.Code, r.Body)
	}
}

// A deposit prepared before the player tightened a deposit limit is
// weighed again as it is sent: refused when it would now pass it.
func TestADepositPreparedBeforeATighterLimitIsRefusedAtSubmit(t *testing.T) {
	clk := newTestClock()
	a := newTestAppAt(t, noWorkers, clk.now)
	x := a.spectatorWith(t, 10_000_000)
	a.depositNow(t, x, 2_000_000)
	r := a.prepareDeposit(t, x, 3_000_000)
	if r.Code != http.StatusOK {
		t.Fatalf("prepare: %d %s", r.Code, r.Body)
	}
	prep := r.json(t)
	signed := signPrepared(t, x.wallet, prep["transaction"].(string), nil)
	a.putLimits(t, x, `{"depositMinor": {"day": 4000000}}`)

	e := wantLimit(t, a.submit(t, x.auth, prep["intentId"].(string), signed), "depositMinor.day", clk.now().Add(24*time.Hour))
	if msg := e["message"].(string); !strings.Contains(msg, "you have deposited 2.00 USDC in the last 24 hours, so 2.00 USDC is left. This deposit of 3.00 USDC would go past the limit. You can deposit up to 2.00 USDC now, or this amount from ") {
		t.Errorf("the refusal: %q", msg)
	}
	if b := a.balances(t, x.auth); b.available != 2_000_000 || b.onChain != 8_000_000 {
		t.Errorf("after the refused deposit: %+v, want 2 USDC deposited and 8 in the wallet", b)
	}
	// One within the limit still goes.
	a.depositNow(t, x, 2_000_000)
	if b := a.balances(t, x.auth); b.available != 4_000_000 {
		t.Errorf("after a deposit up to the limit: %+v", b)
	}
}

// Bets come from the wallet and what they win or get back is paid to the
// platform balance: they count as deposits, so a player whose deposit
// limit is used up cannot move wallet money onto the platform by betting
// on both players of a game, or on one that nobody else bets against.
func TestBetsFromTheWalletCountAsDeposits(t *testing.T) {
	a := newTestApp(t, noWorkers)
	x := a.spectatorWith(t, 20_000_000)
	a.depositNow(t, x, 1_000_000)
	a.putLimits(t, x, `{"depositMinor": {"day": 2000000}}`)
	p1, p2, game := a.stakedGame(t, 2_000_000, `{"rounds": 3}`)

	// Two bets prepared within the limit (the first counts for the
	// second), and one beyond it.
	r, first := a.prepareBet(t, x, game, p1.id, 500_000)
	if r.Code != http.StatusOK {
		t.Fatalf("a bet within the deposit limit: %d %s", r.Code, r.Body)
	}
	r, second := a.prepareBet(t, x, game, p1.id, 400_000)
	if r.Code != http.StatusOK {
		t.Fatalf("a second bet within the deposit limit: %d %s", r.Code, r.Body)
	}
	r, _ = a.prepareBet(t, x, game, p2.id, 5_000_000)
	e := wantLimit(t, r, "depositMinor.day", time.Time{})
	if msg := e["message"].(string); !strings.Contains(msg, "Bets from your wallet count as deposits") ||
		!strings.Contains(msg, "This bet of 5.00 USDC would go past the limit. It is more than the limit itself: you can bet up to 0.10 USDC now.") {
		t.Errorf("the refusal of a bet past the deposit limit: %q", msg)
	}
	// A tighter limit: the first bet, sent now, would pass it; the second
	// still fits once the first no longer counts.
	a.putLimits(t, x, `{"depositMinor": {"day": 1500000}}`)
	if e := a.submitBet(t, x, game, first).wantError(t, http.StatusConflict, "LIMIT_EXCEEDED"); e["limit"] != "depositMinor.day" {
		t.Errorf("the first bet sent past the tighter limit: %v", e)
	}
	if s := a.submitBet(t, x, game, second); s.Code != http.StatusOK || s.json(t)["refunded"] != false {
		t.Fatalf("the bet within the tighter limit: %d %s", s.Code, s.Body)
	}
	if used := a.limits(t, x).Used.DepositMinor.Day; used != 1_400_000 {
		t.Errorf("the day's deposits: %d, want the deposit and the bet sent, 1400000", used)
	}
	// The bet alone on the winner is paid back to the balance: never past
	// the limit.
	a.playTo(t, p1, p2, game, 2)
	if b := a.balances(t, x.auth); b.available > 1_500_000 || b.available <= 1_000_000 {
		t.Errorf("after the game: %+v, want the deposit and the bet's payout, within the 1.50 USDC limit", b)
	}
}
