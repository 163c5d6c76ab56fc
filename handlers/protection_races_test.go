package handlers_test

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"
)

// Deposits prepared at once cannot pass a deposit limit together: each
// is weighed against the ones prepared before it, which count until they
// expire or land.
func TestDepositsPreparedAtOnceCannotPassADepositLimitTogether(t *testing.T) {
	a := newTestApp(t, noWorkers)
	p := a.spectatorWith(t, 10_000_000)
	a.putLimits(t, p, `{"depositMinor": {"day": 1000000}}`)

	const n = 8
	codes := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { codes[i] = a.prepareDeposit(t, p, 600_000).Code })
	}
	wg.Wait()
	wantOneThrough(t, codes, http.StatusOK, fmt.Sprintf("%d deposits of 0.60 USDC prepared at once under a 1 USDC daily limit", n))
	if used := a.limits(t, p).Used.DepositMinor.Day; used != 600_000 {
		t.Errorf("the day's deposits used: %d, want the one prepared, 600000", used)
	}
}

// Market buys that arrive together, and so are matched in one
// transaction, cannot pass a loss limit together: each is weighed with
// what the buys before it in the batch put in.
func TestBuysMatchedTogetherCannotPassALossLimitTogether(t *testing.T) {
	a := newTestApp(t, noWorkers)
	p1, _, game := a.stakedGame(t, 1_000_000, `{"rounds": 3}`)
	x := a.depositor(t, 10_000_000)
	a.putLimits(t, x, `{"lossMinor": {"day": 1000000}}`)

	// The game's row held, another trader's buy waits for it, and the
	// player's buys queue behind that one: they are taken in one batch.
	hold, err := a.DB.BeginTx(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Rollback()
	if _, err := hold.ExecContext(t.Context(), "SELECT 1 FROM games WHERE id = ? FOR NO KEY UPDATE", game); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	trader := a.depositor(t, 1_000_000)
	wg.Go(func() { a.order(t, trader, game, "buy", p1.id, 100_000, 1, "") })
	for a.lockWaits(t) == 0 {
		time.Sleep(10 * time.Millisecond)
	}
	const n = 6
	codes := make([]int, n)
	for i := range n {
		// 2 shares at 0.50 USDC: each buy alone reaches the 1 USDC limit.
		wg.Go(func() { codes[i] = a.order(t, x, game, "buy", p1.id, 500_000, 2, "").Code })
	}
	time.Sleep(300 * time.Millisecond) // lets the buys reach the queue; one later than that is matched alone
	if err := hold.Commit(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	wantOneThrough(t, codes, http.StatusCreated, fmt.Sprintf("%d buys of 1 USDC at once under a 1 USDC daily loss limit", n))
	if lost := a.limits(t, x).Used.LossMinor.Day; lost != 1_000_000 {
		t.Errorf("the day's loss: %d, want the one buy, 1000000", lost)
	}
	a.wantAvailable(t, x, 9_000_000, "after one buy")
}

// Money prepared before a time-out is not sent during it: a deposit, a
// donation, a tip and a bet signed before it started and sent after are
// refused before anything moves.
func TestMoneyPreparedBeforeATimeOutIsNotSentDuringIt(t *testing.T) {
	a := newTestApp(t, noWorkers)
	p1, _, game := a.stakedGame(t, 1_000_000, `{"rounds": 3}`)
	x, friend := a.spectatorWith(t, 5_000_000), a.spectatorWith(t, 1_000_000)

	type send struct{ prepare, body, submit string }
	sends := map[string]send{
		"a deposit": {"/wallets/transfer/prepare", jsonBody(map[string]any{"toAddress": a.Money.DepositAddress().String(), "amountMinor": 1_000_000}),
			"/wallets/transfer/submit"},
		"a donation": {"/games/" + game + "/donations/prepare", `{"amountMinor": 100000}`, "/games/" + game + "/donations/submit"},
		"a tip":      {"/tips/prepare", jsonBody(map[string]any{"toUserId": friend.id, "amountMinor": 100_000}), "/tips/broadcast"},
		"a bet": {"/games/" + game + "/bets/prepare", jsonBody(map[string]any{"onUserId": p1.id, "amountMinor": 100_000}),
			"/games/" + game + "/bets/submit"},
	}
	signed := map[string]string{}
	for what, s := range sends {
		r := a.do(t, request{method: http.MethodPost, path: s.prepare, header: x.auth, body: s.body})
		if r.Code != http.StatusOK {
			t.Fatalf("prepare %s: %d %s", what, r.Code, r.Body)
		}
		prep := r.json(t)
		signed[what] = jsonBody(map[string]string{"intentId": prep["intentId"].(string),
			"signedTransaction": signPrepared(t, x.wallet, prep["transaction"].(string), nil)})
	}

	r := a.exclude(t, x, `{"kind": "timeout", "hours": 24}`)
	if r.Code != http.StatusCreated {
		t.Fatalf("time-out: %d %s", r.Code, r.Body)
	}
	until := r.json(t)["until"]
	for what, s := range sends {
		t.Run(what, func(t *testing.T) {
			e := a.do(t, request{method: http.MethodPost, path: s.submit, header: x.auth, body: signed[what]}).
				wantError(t, http.StatusForbidden, "SELF_EXCLUDED")
			if e["until"] != until {
				t.Errorf("sent during the time-out: until %v, want %v", e["until"], until)
			}
		})
	}
	if got := a.onChain(t, x.key.PublicKey()); got != 5_000_000 {
		t.Errorf("the wallet after the refused sends: %d, want the 5 USDC it held", got)
	}
	if got := a.onChain(t, friend.key.PublicKey()); got != 1_000_000 {
		t.Errorf("the tip's recipient: %d, want the 1 USDC they held", got)
	}
	a.wantAvailable(t, x, 0, "the balance after a refused deposit")
	if got := a.do(t, request{path: "/games/" + game + "/pot"}).json(t)["spectatorPotMinor"]; got != float64(0) {
		t.Errorf("the game's spectator pot after a refused donation: %v, want 0", got)
	}
}

// Stakes and tournament entries that go in at once cannot pass a loss
// limit together: each is weighed after the ones that went in before it,
// so once one reaches the limit the others are refused.
func TestStakesAndEntriesAtOnceCannotPassALossLimitTogether(t *testing.T) {
	a, clk := tournamentApp(t)
	x, host, waiter := a.depositor(t, 5_000_000), a.depositor(t, 1_000_000), a.depositor(t, 1_000_000)
	const arenas = 5
	var joins []func() response
	for range arenas {
		ar := newArena(t, a, clk, host, map[string]any{"entryFeeMinor": 100_000})
		joins = append(joins, func() response { return ar.join(t, x) })
	}
	lobby := a.lobby(t, waiter, `{"gameType": "rps", "stakeMinor": 100000}`)
	a.join(t, waiter, lobby)
	joins = append(joins, func() response {
		return a.do(t, request{method: http.MethodPost, path: "/lobbies/" + lobby + "/join-queue", header: x.auth})
	})
	a.putLimits(t, x, `{"lossMinor": {"day": 100000}}`)

	codes := make([]int, len(joins))
	var wg sync.WaitGroup
	for i, join := range joins {
		wg.Go(func() { codes[i] = join().Code })
	}
	wg.Wait()
	wantOneThrough(t, codes, http.StatusOK, fmt.Sprintf("%d entries and a stake of 0.10 USDC at once under a 0.10 USDC daily loss limit", arenas))
	if lost := a.limits(t, x).Used.LossMinor.Day; lost != 100_000 {
		t.Errorf("the day's loss: %d, want the one that went in, 100000", lost)
	}
}

// A time-out starts after the money of the player's that was already
// going in, never between its check and its move: a tournament entry
// checked before the time-out goes in before it starts, and every entry
// after it is refused.
func TestATimeOutWaitsForMoneyAlreadyGoingIn(t *testing.T) {
	a, clk := tournamentApp(t)
	x, host := a.depositor(t, 5_000_000), a.depositor(t, 1_000_000)
	first := newArena(t, a, clk, host, map[string]any{"entryFeeMinor": 100_000})
	second := newArena(t, a, clk, host, map[string]any{"entryFeeMinor": 100_000})

	// The player's balance held: the entry is checked, then waits to move
	// the fee.
	hold, err := a.DB.BeginTx(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Rollback()
	if _, err := hold.ExecContext(t.Context(), "SELECT 1 FROM ledger_accounts WHERE id = ? FOR UPDATE", "user:"+x.id+":available"); err != nil {
		t.Fatal(err)
	}
	var entry, timeout response
	var wg sync.WaitGroup
	wg.Go(func() { entry = first.join(t, x) })
	for a.lockWaits(t) == 0 {
		time.Sleep(10 * time.Millisecond)
	}
	started := make(chan struct{})
	wg.Go(func() {
		defer close(started)
		timeout = a.exclude(t, x, `{"kind": "timeout", "hours": 24}`)
	})
	for a.lockWaits(t) < 2 {
		select {
		case <-started:
			t.Fatalf("a time-out started (%d %s) while an entry checked before it was still going in", timeout.Code, timeout.Body)
		case <-time.After(10 * time.Millisecond):
		}
	}
	if err := hold.Commit(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if entry.Code != http.StatusOK || timeout.Code != http.StatusCreated {
		t.Fatalf("the entry: %d %s; the time-out: %d %s", entry.Code, entry.Body, timeout.Code, timeout.Body)
	}
	second.join(t, x).wantError(t, http.StatusForbidden, "SELF_EXCLUDED")
	if b := a.balances(t, x.auth); b.locked != 100_000 {
		t.Errorf("locked after the time-out: %d, want the one entry's fee, 100000", b.locked)
	}
}

// moneyInRace is a player with money on the platform and in the wallet,
// and a request ready for every way their money goes in: a staked queue
// join (an opponent waits), a challenge to accept, n paid arena entries
// and n market buys, and a deposit, a donation, a tip and n bets prepared
// and signed, to send.
type moneyInRace struct {
	x, friend, p1, p2 player
	game              string
	arenas            []*arena
	ops               map[string]func() response
}

func (a *testApp) moneyInRace(t *testing.T, clk *testClock, n int) moneyInRace {
	t.Helper()
	var r moneyInRace
	var host, challenger player
	r.x, host, challenger, r.friend = a.depositor(t, 20_000_000), a.depositor(t, 2_000_000), a.depositor(t, 2_000_000), a.newPlayer(t)
	a.fund(t, r.x, 10_000_000) // on chain, for what goes from the wallet
	lobby := a.lobby(t, host, `{"gameType": "rps", "stakeMinor": 500000}`)
	a.join(t, host, lobby)
	c := a.do(t, request{method: http.MethodPost, path: "/challenges", header: challenger.auth,
		body: jsonBody(map[string]any{"toUserId": r.x.id, "gameType": "rps", "stakeMinor": 500_000})})
	if c.Code != http.StatusCreated {
		t.Fatalf("challenge: %d %s", c.Code, c.Body)
	}
	r.p1, r.p2, r.game = a.stakedGame(t, 1_000_000, `{"rounds": 3}`)
	post := func(path, body string) func() response {
		return func() response {
			return a.do(t, request{method: http.MethodPost, path: path, header: r.x.auth, body: body})
		}
	}
	signed := func(prepare, body string) string {
		p := a.do(t, request{method: http.MethodPost, path: prepare, header: r.x.auth, body: body})
		if p.Code != http.StatusOK {
			t.Fatalf("prepare %s: %d %s", prepare, p.Code, p.Body)
		}
		prep := p.json(t)
		return jsonBody(map[string]string{"intentId": prep["intentId"].(string),
			"signedTransaction": signPrepared(t, r.x.wallet, prep["transaction"].(string), nil)})
	}
	r.ops = map[string]func() response{
		"queue join":       post("/lobbies/"+lobby+"/join-queue", ""),
		"challenge accept": post("/challenges/"+c.json(t)["id"].(string)+"/accept", ""),
		"deposit": post("/wallets/transfer/submit",
			signed("/wallets/transfer/prepare", jsonBody(map[string]any{"toAddress": a.Money.DepositAddress().String(), "amountMinor": 1_000_000}))),
		"donation": post("/games/"+r.game+"/donations/submit", signed("/games/"+r.game+"/donations/prepare", `{"amountMinor": 100000}`)),
		"tip":      post("/tips/broadcast", signed("/tips/prepare", jsonBody(map[string]any{"toUserId": r.friend.id, "amountMinor": 100_000}))),
	}
	for i := range n {
		ar := newArena(t, a, clk, a.newPlayer(t), map[string]any{"entryFeeMinor": 100_000})
		r.arenas = append(r.arenas, ar)
		r.ops[fmt.Sprint("entry ", i)] = func() response { return ar.join(t, r.x) }
		_, bet := a.prepareBet(t, r.x, r.game, []string{r.p1.id, r.p2.id}[i%2], 100_000)
		r.ops[fmt.Sprint("bet ", i)] = post("/games/"+r.game+"/bets/submit", bet)
		r.ops[fmt.Sprint("buy ", i)] = func() response { return a.order(t, r.x, r.game, "buy", r.p1.id, int64(100_000*(i+1)), 1, "") }
	}
	return r
}

// wantOneThrough fails t unless exactly one of the answers codes is ok and
// every other a refusal (409): what says what was sent at once.
func wantOneThrough(t *testing.T, codes []int, ok int, what string) {
	t.Helper()
	through, refused := 0, 0
	for _, c := range codes {
		switch c {
		case ok:
			through++
		case http.StatusConflict:
			refused++
		}
	}
	if through != 1 || refused != len(codes)-1 {
		t.Errorf("%s: %d went through, %d refused (%v); want 1 and %d", what, through, refused, codes, len(codes)-1)
	}
}

// lockWaits is how many of the test database's connections wait for a lock.
func (a *testApp) lockWaits(t testing.TB) int {
	t.Helper()
	var n int
	if err := a.DB.NewRaw("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'").
		Scan(t.Context(), &n); err != nil {
		t.Fatal(err)
	}
	return n
}

// An exclusion stops every request answered after it started, whatever
// that request waited for: requests that put the player's money in and
// queued behind the player's protection lock, as a time-out took it, are
// refused once it commits, even when the clock moved on while they
// waited.
func TestAnExclusionStopsEveryRequestThatWaitedForIt(t *testing.T) {
	clk := newTestClock()
	a := newTestAppAt(t, noWorkers, clk.now)
	r := a.moneyInRace(t, clk, 1)
	x, friend, ar := r.x, r.friend, r.arenas[0]
	before := a.balances(t, x.auth)
	paths := r.ops

	// The player's protection lock held, the time-out queues for it first,
	// then every request that puts the player's money in.
	hold, err := a.DB.BeginTx(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Rollback()
	if _, err := hold.ExecContext(t.Context(), "SELECT pg_advisory_xact_lock(hashtext('player_protection'), hashtext(?))", x.id); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var timeout response
	wg.Go(func() { timeout = a.exclude(t, x, `{"kind": "timeout", "hours": 24}`) })
	for a.lockWaits(t) == 0 {
		time.Sleep(10 * time.Millisecond)
	}
	answers := make(map[string]response, len(paths))
	var mu sync.Mutex
	for what, send := range paths {
		wg.Go(func() {
			r := send()
			mu.Lock()
			answers[what] = r
			mu.Unlock()
		})
	}
	// Each request either waits for a lock or has answered already.
	for {
		mu.Lock()
		answered := len(answers)
		mu.Unlock()
		if a.lockWaits(t)+answered >= 1+len(paths) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	clk.advance(time.Second) // the time-out starts a second after the requests arrived
	if err := hold.Commit(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if timeout.Code != http.StatusCreated {
		t.Fatalf("the time-out: %d %s", timeout.Code, timeout.Body)
	}
	for what, r := range answers {
		t.Run(what, func(t *testing.T) { r.wantError(t, http.StatusForbidden, "SELF_EXCLUDED") })
	}
	if after := a.balances(t, x.auth); after != before {
		t.Errorf("the player's balances after the time-out: %+v, want them as before it, %+v", after, before)
	}
	if got := a.onChain(t, friend.key.PublicKey()); got != 0 {
		t.Errorf("the tip's recipient holds %d on chain, want nothing", got)
	}
	if d := ar.get(t); d.PlayerCount != 0 {
		t.Errorf("the arena has %d players, want none", d.PlayerCount)
	}
}

// The paths that put one player's money in and take it back take their
// locks in one order (db/doc.go): arena entries, withdrawals from arenas
// before their start (a refund), market buys and, at the end, a time-out
// that cancels the buys, sent together by the same player, wait for each
// other and never deadlock.
func TestOnePlayersMoneyPathsTakeLocksInOneOrder(t *testing.T) {
	a, clk := tournamentApp(t)
	x := a.depositor(t, 50_000_000)
	p1, _, game := a.stakedGame(t, 1_000_000, `{"rounds": 3}`)
	const rounds = 12
	arenas := make([]*arena, rounds)
	for i := range arenas { // each by its own host: a player creates a few a day
		arenas[i] = newArena(t, a, clk, a.newPlayer(t), map[string]any{"entryFeeMinor": 100_000})
	}
	deadlocks := func() int64 {
		var n int64
		if err := a.DB.NewRaw("SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()").Scan(t.Context(), &n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := deadlocks()
	for i, ar := range arenas {
		var wg sync.WaitGroup
		answers := make([]response, 3)
		wg.Go(func() { answers[0] = ar.join(t, x) })
		wg.Go(func() { answers[1] = a.order(t, x, game, "buy", p1.id, 100_000, 1, "") })
		if i > 0 {
			wg.Go(func() { answers[2] = arenas[i-1].withdraw(t, x) })
		}
		if i == rounds-1 {
			wg.Go(func() {
				if r := a.exclude(t, x, `{"kind": "timeout", "hours": 24}`); r.Code != http.StatusCreated {
					t.Errorf("the time-out: %d %s", r.Code, r.Body)
				}
			})
		}
		wg.Wait()
		for j, r := range answers[:min(3, i+2)] {
			if r.Code >= 500 {
				t.Fatalf("round %d, request %d: %d %s", i, j, r.Code, r.Body)
			}
		}
	}
	// The statistics reach pg_stat_database when a backend reports them.
	time.Sleep(600 * time.Millisecond)
	if n := deadlocks() - before; n != 0 {
		t.Errorf("%d deadlocks among one player's entries, withdrawals, buys and time-out, want none", n)
	}
	// Only the last arena's entry may stand (or none, if the time-out came
	// first), and every buy was cancelled by the time-out.
	if b := a.balances(t, x.auth); b.locked > 100_000 || b.available+b.locked != 50_000_000 {
		t.Errorf("after the time-out: %+v, want every withdrawn entry refunded and every buy released", b)
	}
}

// A donation sent before its donor took a time-out but landing after it
// does not go into the game's pot: it is weighed again as it lands, like a
// bet, and goes back on chain to the wallet that paid it, once, even when
// the game then ends abandoned (which refunds the donations in its pot).
func TestADonationLandingDuringATimeOutGoesBackToTheWallet(t *testing.T) {
	a := newTestApp(t, noWorkers)
	if _, err := a.Settlement.ProcessTransfers(t.Context()); err != nil { // other tests' leftovers
		t.Fatal(err)
	}
	_, _, game := a.stakedGame(t, 1_000_000, `{"rounds": 1, "roundSeconds": 3}`)
	x := a.spectatorWith(t, 1_000_000)
	r := a.do(t, request{method: http.MethodPost, path: "/games/" + game + "/donations/prepare", header: x.auth, body: `{"amountMinor": 200000}`})
	if r.Code != http.StatusOK {
		t.Fatalf("prepare: %d %s", r.Code, r.Body)
	}
	a.sentUnconfirmed(t, x.wallet, r.json(t), true)
	if r := a.exclude(t, x, `{"kind": "timeout", "hours": 24}`); r.Code != http.StatusCreated {
		t.Fatalf("time-out: %d %s", r.Code, r.Body)
	}
	if err := resolveIntents(a); err != nil {
		t.Fatal(err)
	}
	if got := a.do(t, request{path: "/games/" + game + "/pot"}).json(t)["spectatorPotMinor"]; got != float64(0) {
		t.Errorf("the game's spectator pot: %v, want nothing from a donor in a time-out", got)
	}
	// Nobody moves: the round times out for both and the game is abandoned.
	waitFor(t, func() bool {
		if _, err := a.Games.ExpireDue(t.Context()); err != nil {
			t.Fatal(err)
		}
		return a.do(t, request{path: "/games/" + game}).json(t)["status"] == "cancelled"
	})
	if _, err := a.Settlement.ProcessTransfers(t.Context()); err != nil {
		t.Fatal(err)
	}
	if ts, _ := a.Settlement.Transfers(t.Context(), game); len(ts) != 1 || ts[0].Status != "confirmed" {
		t.Errorf("the game's transfers: %s, want the donation's one refund, confirmed", transferList(ts))
	}
	if b := a.balances(t, x.auth); b.onChain != 1_000_000 || b.available != 0 {
		t.Errorf("the donor after the refund: %+v, want the 1 USDC back in the wallet and nothing on the platform", b)
	}
}
