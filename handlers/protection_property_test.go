package handlers_test

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"wager/domain/settlement"
)

// The rules of the limits, written again for the test: a model that
// follows a player's deposits and net losses by the test's clock and says
// what the server must answer.
type limitModel struct {
	stored   map[string]*int64
	pending  map[string]modelPending
	deposits []modelFlow
	losses   []modelFlow
}

type modelPending struct {
	value *int64
	at    time.Time
}

type modelFlow struct {
	at    time.Time
	minor int64
}

var modelNames = []string{"depositMinor.day", "depositMinor.week", "depositMinor.month",
	"lossMinor.day", "lossMinor.week", "lossMinor.month", "stakeMaxMinor"}

func modelWindow(name string) time.Duration {
	switch name[len(name)-3:] {
	case "day":
		return 24 * time.Hour
	case "eek":
		return 7 * 24 * time.Hour
	case "nth":
		return 30 * 24 * time.Hour
	}
	return 0
}

func newLimitModel() *limitModel {
	return &limitModel{stored: map[string]*int64{}, pending: map[string]modelPending{}}
}

// effective are the limits in force at now.
func (m *limitModel) effective(now time.Time) map[string]*int64 {
	out := map[string]*int64{}
	for _, n := range modelNames {
		out[n] = m.stored[n]
		if p, ok := m.pending[n]; ok && !now.Before(p.at) {
			out[n] = p.value
		}
	}
	return out
}

// set asks for a limit: tighter (or the same) at once, replacing a
// waiting change; looser after 24 hours.
func (m *limitModel) set(name string, v *int64, now time.Time) {
	cur := m.effective(now)
	for n, p := range m.pending {
		if !now.Before(p.at) {
			m.stored[n] = p.value
			delete(m.pending, n)
		}
	}
	c := cur[name]
	if (v != nil && (c == nil || *v <= *c)) || (v == nil && c == nil) {
		m.stored[name] = v
		delete(m.pending, name)
		return
	}
	m.pending[name] = modelPending{value: v, at: now.Add(24 * time.Hour)}
}

func sumIn(flows []modelFlow, now time.Time, w time.Duration) int64 {
	var s int64
	for _, f := range flows {
		if f.at.After(now.Add(-w)) {
			s += f.minor
		}
	}
	return s
}

// freedAt is when, with nothing new, the flows left in the window make ok
// true (nil: never).
func freedAt(flows []modelFlow, now time.Time, w time.Duration, ok func(int64) bool) *time.Time {
	var in []modelFlow
	for _, f := range flows {
		if f.at.After(now.Add(-w)) {
			in = append(in, f)
		}
	}
	sort.SliceStable(in, func(i, j int) bool { return in[i].at.Before(in[j].at) })
	sum := sumIn(in, now, w)
	for i := 0; i < len(in); {
		at := in[i].at
		for ; i < len(in) && in[i].at.Equal(at); i++ {
			sum -= in[i].minor
		}
		if ok(sum) {
			t := at.Add(w)
			return &t
		}
	}
	return nil
}

// depositRoom is how much may be deposited now under the tightest
// deposit limit (-1 without one).
func (m *limitModel) depositRoom(now time.Time) int64 {
	room := int64(-1)
	for _, n := range []string{"depositMinor.day", "depositMinor.week", "depositMinor.month"} {
		if lim := m.effective(now)[n]; lim != nil {
			if r := *lim - sumIn(m.deposits, now, modelWindow(n)); room < 0 || r < room {
				room = r
			}
		}
	}
	return room
}

// refusal is what the model answers: "" when allowed, else the limit's
// name and when it resets.
type refusal struct {
	limit    string
	resetsAt *time.Time
}

func laterThan(a, b *time.Time) bool {
	if b == nil {
		return false
	}
	return a == nil || a.After(*b)
}

// judge says whether a request putting money in is allowed at now: a
// deposit of deposit, a stake of stake, and what play (stakes, bets, buys)
// puts at risk, weighed whole against the loss limits.
func (m *limitModel) judge(now time.Time, deposit, stake, atRisk int64) refusal {
	l := m.effective(now)
	if max := l["stakeMaxMinor"]; stake > 0 && max != nil && stake > *max {
		return refusal{limit: "stakeMaxMinor"}
	}
	var worst refusal
	found := false
	consider := func(name string, at *time.Time) {
		if !found || laterThan(at, worst.resetsAt) {
			worst, found = refusal{limit: name, resetsAt: at}, true
		}
	}
	if atRisk > 0 {
		for _, n := range []string{"lossMinor.day", "lossMinor.week", "lossMinor.month"} {
			lim := l[n]
			if lim == nil {
				continue
			}
			fits := func(lost int64) bool { return lost < *lim && lost+atRisk <= *lim }
			if !fits(sumIn(m.losses, now, modelWindow(n))) {
				var at *time.Time
				if atRisk <= *lim {
					at = freedAt(m.losses, now, modelWindow(n), fits)
				}
				consider(n, at)
			}
		}
		if found {
			return worst
		}
	}
	if deposit > 0 {
		for _, n := range []string{"depositMinor.day", "depositMinor.week", "depositMinor.month"} {
			if lim := l[n]; lim != nil && sumIn(m.deposits, now, modelWindow(n))+deposit > *lim {
				var at *time.Time
				if deposit <= *lim {
					at = freedAt(m.deposits, now, modelWindow(n), func(s int64) bool { return s+deposit <= *lim })
				}
				consider(n, at)
			}
		}
	}
	return worst
}

// compare checks the server's answer to a request that puts money in
// against the model's, and reports whether it was allowed.
func compareAnswer(t *testing.T, step string, r response, want refusal, okStatus int) bool {
	t.Helper()
	if want.limit == "" {
		if r.Code != okStatus {
			t.Fatalf("%s: the model allows it, the server answers %d %s", step, r.Code, r.Body)
		}
		return true
	}
	if r.Code != http.StatusConflict {
		t.Fatalf("%s: the model refuses it (%s), the server answers %d %s", step, want.limit, r.Code, r.Body)
	}
	e := r.json(t)
	if e["code"] != "LIMIT_EXCEEDED" || e["limit"] != want.limit {
		t.Fatalf("%s: the model refuses it by %s, the server by %v", step, want.limit, r.Body)
	}
	got, _ := e["resetsAt"].(string)
	switch {
	case want.resetsAt == nil && e["resetsAt"] != nil:
		t.Fatalf("%s: resetsAt %v, the model says never", step, e["resetsAt"])
	case want.resetsAt != nil:
		at, err := time.Parse(time.RFC3339Nano, got)
		if err != nil || !at.Equal(*want.resetsAt) {
			t.Fatalf("%s: resetsAt %v, the model says %s", step, e["resetsAt"], want.resetsAt.Format(time.RFC3339))
		}
	}
	return false
}

// compareLimits checks GET /users/me/limits against the model: the limits
// in force, the changes waiting, and what is used.
func (m *limitModel) compareLimits(t *testing.T, step string, got limitsView, now time.Time) {
	t.Helper()
	eff := m.effective(now)
	have := map[string]*int64{"depositMinor.day": got.DepositMinor.Day, "depositMinor.week": got.DepositMinor.Week,
		"depositMinor.month": got.DepositMinor.Month, "lossMinor.day": got.LossMinor.Day, "lossMinor.week": got.LossMinor.Week,
		"lossMinor.month": got.LossMinor.Month, "stakeMaxMinor": got.StakeMaxMinor}
	for _, n := range modelNames {
		if fmt.Sprint(deref(have[n])) != fmt.Sprint(deref(eff[n])) {
			t.Fatalf("%s: %s is %v, the model says %v", step, n, deref(have[n]), deref(eff[n]))
		}
	}
	var wantPending []string
	for n, p := range m.pending {
		if now.Before(p.at) {
			wantPending = append(wantPending, fmt.Sprint(n, "=", deref(p.value), "@", p.at.Unix()))
		}
	}
	var gotPending []string
	for _, p := range got.Pending {
		gotPending = append(gotPending, fmt.Sprint(p.Name, "=", deref(p.Value), "@", p.EffectiveAt.Unix()))
	}
	slices.Sort(wantPending)
	slices.Sort(gotPending)
	if !slices.Equal(wantPending, gotPending) {
		t.Fatalf("%s: pending %v, the model says %v", step, gotPending, wantPending)
	}
	floor := func(n int64) int64 { return max(n, 0) }
	day, week, month := 24*time.Hour, 7*24*time.Hour, 30*24*time.Hour
	wantUsed := [6]int64{sumIn(m.deposits, now, day), sumIn(m.deposits, now, week), sumIn(m.deposits, now, month),
		floor(sumIn(m.losses, now, day)), floor(sumIn(m.losses, now, week)), floor(sumIn(m.losses, now, month))}
	u := got.Used
	if gotUsed := [6]int64{u.DepositMinor.Day, u.DepositMinor.Week, u.DepositMinor.Month, u.LossMinor.Day, u.LossMinor.Week,
		u.LossMinor.Month}; gotUsed != wantUsed {
		t.Fatalf("%s: used %v, the model says %v", step, gotUsed, wantUsed)
	}
}

func deref(v *int64) any {
	if v == nil {
		return nil
	}
	return *v
}

// Over random sequences of deposits, staked games won and lost, bets,
// market trades, limit changes and a clock moving by minutes to days,
// the server accepts exactly what the model of the limits allows, refuses
// the rest with the limit and the time the model names, and reports the
// same limits, waiting changes and use.
func TestLimitsHoldOverRandomPlay(t *testing.T) {
	seen := map[string]int{}
	for _, seed := range []uint64{1, 2, 3, 4} {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) { limitsHoldOverRandomPlay(t, seed, 60, seen) })
	}
	t.Logf("over all seeds: %v", seen)
	// Both answers of every path were compared, or the test proves less
	// than it says.
	for _, what := range []string{"deposit", "stake", "bet", "buy"} {
		if seen[what] == 0 || seen[what+" refused"] == 0 {
			t.Errorf("%s: %d accepted and %d refused over all seeds; both must happen", what, seen[what], seen[what+" refused"])
		}
	}
}

func limitsHoldOverRandomPlay(t *testing.T, seed uint64, steps int, stats map[string]int) {
	pl := newLimitsPlay(t, seed, stats)
	for i := range steps {
		now := pl.clk.now()
		step := fmt.Sprintf("seed %d step %d", seed, i)
		switch op := pl.rng.IntN(10); {
		case op == 0:
			pl.moveClock(t)
		case op <= 2:
			pl.setLimits(t, step, now)
		case op == 3:
			pl.deposit(t, step, now)
		case op <= 5:
			if !pl.stakedGame(t, step, now) {
				continue
			}
		case op <= 7:
			pl.bet(t, step, now)
		default:
			pl.trade(t, step, now)
		}
		pl.model.compareLimits(t, step, pl.a.limits(t, pl.p), pl.clk.now())
	}
}

// limitsPlay is one random sequence of play by p against the model of
// the limits.
type limitsPlay struct {
	a     *testApp
	rng   *rand.Rand
	clk   *testClock
	model *limitModel
	stats map[string]int
	// p is the player whose limits are checked; the others are opponents,
	// the players of the games watched, a second bettor and the market's
	// other traders, with money enough.
	p, opp, o1, o2, bettor, maker, taker player
	signedIn                             time.Time
}

func newLimitsPlay(t *testing.T, seed uint64, stats map[string]int) *limitsPlay {
	clk := newTestClock()
	a := newTestAppAt(t, noWorkers, clk.now)
	pl := &limitsPlay{a: a, rng: rand.New(rand.NewPCG(seed, 7)), clk: clk, model: newLimitModel(), stats: stats}
	pl.p = a.spectatorWith(t, 1_000_000_000) // 1000 USDC in the wallet
	pl.opp, pl.o1, pl.o2 = a.depositor(t, 100_000_000), a.depositor(t, 100_000_000), a.depositor(t, 100_000_000)
	pl.bettor = a.spectatorWith(t, 100_000_000)
	pl.maker, pl.taker = a.depositor(t, 100_000_000), a.depositor(t, 100_000_000)
	pl.signedIn = clk.now()

	// An opening deposit (no limits yet) gives the platform balance that
	// stakes and buys spend.
	a.depositNow(t, pl.p, 30_000_000)
	pl.model.deposits = append(pl.model.deposits, modelFlow{clk.now(), 30_000_000})
	return pl
}

// watched starts a staked game between o1 and o2.
func (pl *limitsPlay) watched(t *testing.T) string {
	lobby := pl.a.lobby(t, pl.o1, `{"gameType": "rps", "stakeMinor": 1000000, "settings": {"rounds": 1}}`)
	pl.a.join(t, pl.o1, lobby)
	return pl.a.join(t, pl.o2, lobby)["gameId"].(string)
}

// finish ends a game of two players; true when first wins.
func (pl *limitsPlay) finish(t *testing.T, first, second player, game string, firstWins bool) {
	if firstWins {
		pl.a.playTo(t, first, second, game, 1)
	} else {
		pl.a.playTo(t, second, first, game, 1)
	}
}

// amount is a random amount from lo to hi, in whole cents.
func (pl *limitsPlay) amount(lo, hi int64) int64 {
	return (lo + pl.rng.Int64N(hi-lo+1)) / 10_000 * 10_000
}

// moveClock moves the clock by minutes, hours or days.
func (pl *limitsPlay) moveClock(t *testing.T) {
	rng := pl.rng
	d := []time.Duration{time.Duration(1+rng.IntN(90)) * time.Minute, time.Duration(1+rng.IntN(20)) * time.Hour,
		time.Duration(22+rng.IntN(60)) * time.Hour, time.Duration(5+rng.IntN(10)) * 24 * time.Hour}[rng.IntN(4)]
	pl.clk.advance(d)
	if pl.clk.now().Sub(pl.signedIn) > 20*time.Hour {
		for _, who := range []*player{&pl.p, &pl.opp, &pl.o1, &pl.o2, &pl.bettor, &pl.maker, &pl.taker} {
			pl.a.relogin(t, who)
		}
		pl.signedIn = pl.clk.now()
	}
	pl.stats["clock"]++
}

// setLimits changes some of the limits.
func (pl *limitsPlay) setLimits(t *testing.T, step string, now time.Time) {
	body := map[string]any{}
	for _, n := range modelNames {
		if pl.rng.IntN(3) != 0 {
			continue
		}
		var v *int64
		if pl.rng.IntN(5) != 0 {
			x := pl.amount(0, 8_000_000)
			switch n[:4] {
			case "depo":
				x = pl.amount(0, 40_000_000)
			case "stak":
				x = pl.amount(100_000, 3_000_000)
			case "loss":
				if pl.rng.IntN(3) == 0 { // exactly what is lost: reached
					x = max(sumIn(pl.model.losses, now, modelWindow(n)), 0)
				}
			}
			v = &x
		}
		pl.model.set(n, v, now)
		if w, ok := map[string]string{"day": "day", "eek": "week", "nth": "month"}[n[len(n)-3:]]; ok && n != "stakeMaxMinor" {
			group := n[:len(n)-len(w)-1]
			g, _ := body[group].(map[string]any)
			if g == nil {
				g = map[string]any{}
				body[group] = g
			}
			g[w] = v
		} else {
			body[n] = v
		}
	}
	pl.model.compareLimits(t, step+" (limits set)", pl.a.putLimits(t, pl.p, jsonBody(body)), now)
	pl.stats["limits"]++
}

// deposit deposits from p's wallet.
func (pl *limitsPlay) deposit(t *testing.T, step string, now time.Time) {
	a, p := pl.a, pl.p
	x := pl.amount(10_000, 5_000_000)
	if room := pl.model.depositRoom(now); pl.rng.IntN(3) == 0 && room >= 10_000 && room <= 50_000_000 {
		x = room // exactly up to a limit
	}
	if r := a.prepareDeposit(t, p, x); compareAnswer(t, step+" deposit", r, pl.model.judge(now, x, 0, 0), 200) {
		prep := r.json(t)
		if s := a.submit(t, p.auth, prep["intentId"].(string), signPrepared(t, p.wallet, prep["transaction"].(string), nil)); s.Code != 200 {
			t.Fatalf("%s: deposit: %d %s", step, s.Code, s.Body)
		}
		pl.model.deposits = append(pl.model.deposits, modelFlow{now, x})
		pl.stats["deposit"]++
	} else {
		pl.stats["deposit refused"]++
	}
}

// stakedGame plays a staked game, won or lost; false when the lobby was
// refused.
func (pl *limitsPlay) stakedGame(t *testing.T, step string, now time.Time) bool {
	a, p := pl.a, pl.p
	stake := pl.amount(100_000, 2_000_000)
	r := a.do(t, request{method: http.MethodPost, path: "/lobbies", header: p.auth,
		body: jsonBody(map[string]any{"gameType": "rps", "stakeMinor": stake, "settings": map[string]int{"rounds": 1}})})
	if !compareAnswer(t, step+" staked lobby", r, pl.model.judge(now, 0, stake, stake), http.StatusCreated) {
		pl.stats["stake refused"]++
		return false
	}
	lobby := r.json(t)["id"].(string)
	a.join(t, p, lobby)
	game := a.join(t, pl.opp, lobby)["gameId"].(string)
	pl.model.losses = append(pl.model.losses, modelFlow{now, stake})
	won := pl.rng.IntN(2) == 0
	pl.finish(t, p, pl.opp, game, won)
	if won {
		pl.model.losses = append(pl.model.losses, modelFlow{now, -(2*stake - 2*stake/100)})
	}
	pl.stats["stake"]++
	return true
}

// bet bets on a watched game against another bettor.
func (pl *limitsPlay) bet(t *testing.T, step string, now time.Time) {
	a, p, o1, o2 := pl.a, pl.p, pl.o1, pl.o2
	game := pl.watched(t)
	x, y := pl.amount(10_000, 1_500_000), pl.amount(10_000, 1_500_000)
	r, body := a.prepareBet(t, p, game, o1.id, x)
	// A bet comes from the wallet and is paid back to the balance:
	// a deposit too.
	placed := compareAnswer(t, step+" bet", r, pl.model.judge(now, x, 0, x), 200)
	if placed {
		if s := a.submitBet(t, p, game, body); s.Code != 200 || s.json(t)["refunded"] != false {
			t.Fatalf("%s: the bet: %d %s", step, s.Code, s.Body)
		}
		pl.model.losses = append(pl.model.losses, modelFlow{now, x})
		pl.model.deposits = append(pl.model.deposits, modelFlow{now, x})
		pl.stats["bet"]++
	} else {
		pl.stats["bet refused"]++
	}
	a.bet(t, pl.bettor, game, o2.id, y)
	o1Wins := pl.rng.IntN(2) == 0
	pl.finish(t, o1, o2, game, o1Wins)
	if placed {
		payouts, _, _ := settlement.BetPayouts([]int64{x, y}, []bool{o1Wins, !o1Wins})
		if payouts[0] > 0 {
			pl.model.losses = append(pl.model.losses, modelFlow{now, -payouts[0]})
		}
	}
}

// trade buys market shares (a mint) of a watched game, sells some and
// redeems the rest.
func (pl *limitsPlay) trade(t *testing.T, step string, now time.Time) {
	a, p, o1, o2 := pl.a, pl.p, pl.o1, pl.o2
	game := pl.watched(t)
	price, shares := pl.amount(100_000, 900_000), int64(1+pl.rng.IntN(4))
	a.placed(t, pl.maker, game, "buy", o2.id, 1_000_000-price, shares, "")
	r := a.order(t, p, game, "buy", o1.id, price, shares, "")
	bought := compareAnswer(t, step+" market buy", r, pl.model.judge(now, 0, 0, price*shares), http.StatusCreated)
	held := int64(0)
	if bought {
		pl.model.losses = append(pl.model.losses, modelFlow{now, price * shares})
		held = shares
		if sell := int64(pl.rng.IntN(int(shares) + 1)); sell > 0 {
			bid := pl.amount(10_000, 990_000)
			a.placed(t, pl.taker, game, "buy", o1.id, bid, sell, "")
			if got := a.placed(t, p, game, "sell", o1.id, bid, sell, ""); got.Order.FilledShares != sell {
				t.Fatalf("%s: the sell: %+v", step, got)
			}
			pl.model.losses = append(pl.model.losses, modelFlow{now, -bid * sell})
			held -= sell
		}
		pl.stats["buy"]++
	} else {
		pl.stats["buy refused"]++
	}
	o1Wins := pl.rng.IntN(2) == 0
	pl.finish(t, o1, o2, game, o1Wins)
	if held > 0 {
		r := a.redeem(t, p, game)
		want := int64(0)
		if o1Wins {
			want = held * 1_000_000
		}
		if r.Code != 200 || r.json(t)["redeemedMinor"] != float64(want) {
			t.Fatalf("%s: redeem: %d %s, want %d", step, r.Code, r.Body, want)
		}
		if want > 0 {
			pl.model.losses = append(pl.model.losses, modelFlow{now, -want})
		}
	}
}

// Over random interleavings of a time-out with every way a player's money
// goes in (a staked queue join, a challenge accepted, paid arena entries,
// market buys, and a deposit, donation, tip and bets prepared earlier and
// sent then), a move that closes betting, and sometimes the player's lock
// held while they queue: nothing of the player's goes in after the
// time-out started (by the services' clock, read under the player's lock,
// which ticks at every read), whatever answered first; whatever was sent
// after the time-out answered is refused; and no refund of money refused
// as it arrived raises the platform balance (a deposit past the limit).
func TestNoMoneyGoesInAfterAnExclusionOverRandomInterleavings(t *testing.T) {
	seen := map[string]int{}
	for _, seed := range []uint64{1, 2, 3, 4, 5, 6} {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) { noMoneyInAfterAnExclusion(t, seed, seen) })
	}
	t.Logf("over all seeds: %v", seen)
	for _, what := range []string{"went in", "refused"} {
		if seen[what] == 0 {
			t.Errorf("no request %s over all seeds: the interleavings prove less than they say", what)
		}
	}
}

func noMoneyInAfterAnExclusion(t *testing.T, seed uint64, seen map[string]int) {
	rng := rand.New(rand.NewPCG(seed, 11))
	clk := newTestClock()
	a := newTestAppAt(t, noWorkers, func() time.Time { return time.Unix(0, clk.ns.Add(int64(time.Microsecond))).UTC() })
	race := a.moneyInRace(t, clk, 2)
	x, p1, p2, game, ops := race.x, race.p1, race.p2, race.game, race.ops
	start := a.balances(t, x.auth)
	var startLedger int64
	if err := a.DB.NewRaw("SELECT coalesce(max(id), 0) FROM ledger_transactions").Scan(t.Context(), &startLedger); err != nil {
		t.Fatal(err)
	}

	var hold *bun.Tx
	if rng.IntN(2) == 0 { // the player's lock held while the first requests queue for it
		tx, err := a.DB.BeginTx(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		hold = &tx
		defer tx.Rollback()
		if _, err := hold.ExecContext(t.Context(), "SELECT pg_advisory_xact_lock(hashtext('player_protection'), hashtext(?))", x.id); err != nil {
			t.Fatal(err)
		}
	}
	type answer struct {
		r          response
		sent, done time.Time // by the test's wall clock: only their order is read
	}
	var (
		mu       sync.Mutex
		answers  = map[string]answer{}
		excluded answer
		wg       sync.WaitGroup
	)
	names := slices.Sorted(maps.Keys(ops))
	names = append(names, "time-out", "betting closes")
	rng.Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
	for i, name := range names {
		delay := time.Duration(rng.IntN(4)*i) * 5 * time.Millisecond
		wg.Go(func() {
			time.Sleep(delay)
			sent := time.Now()
			switch name {
			case "time-out":
				r := a.exclude(t, x, `{"kind": "timeout", "hours": 24}`)
				excluded = answer{r: r, sent: sent, done: time.Now()}
			case "betting closes":
				a.act(t, p1, game, `{"type": "move", "move": "rock"}`)
				a.act(t, p2, game, `{"type": "move", "move": "paper"}`)
			default:
				r := ops[name]()
				mu.Lock()
				answers[name] = answer{r: r, sent: sent, done: time.Now()}
				mu.Unlock()
			}
		})
	}
	if hold != nil {
		time.Sleep(50 * time.Millisecond)
		if err := hold.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	if excluded.r.Code != http.StatusCreated {
		t.Fatalf("seed %d: the time-out: %d %s", seed, excluded.r.Code, excluded.r.Body)
	}
	startsAt, err := time.Parse(time.RFC3339Nano, excluded.r.json(t)["startsAt"].(string))
	if err != nil {
		t.Fatal(err)
	}

	for name, ans := range answers {
		in := ans.r.Code/100 == 2 && !strings.Contains(ans.r.Body.String(), `"refunded":true`)
		if in {
			seen["went in"]++
		} else {
			seen["refused"]++
		}
		if in && ans.sent.After(excluded.done) {
			t.Errorf("seed %d: %s, sent after the time-out answered, went in: %d %s", seed, name, ans.r.Code, ans.r.Body)
		}
	}
	// Nothing of the player's went in by the clock after the time-out began.
	var late []string
	if err := a.DB.NewRaw(`SELECT t.kind || ' at ' || t.created_at FROM ledger_transactions AS t
			JOIN ledger_entries AS e ON e.transaction_id = t.id
			WHERE e.account_id = ? AND e.amount < 0 AND t.id > ? AND t.created_at >= ?
		UNION ALL SELECT i.kind || ' sent at ' || i.sent_at FROM intents AS i WHERE i.user_id = ? AND i.sent_at >= ?`,
		"user:"+x.id+":available", startLedger, startsAt, x.id, startsAt).Scan(t.Context(), &late); err != nil {
		t.Fatal(err)
	}
	if len(late) > 0 {
		t.Errorf("seed %d: the player's money went in after the time-out started at %s: %v", seed, startsAt.Format(time.RFC3339Nano), late)
	}
	// The platform balance rose only by the deposit and by the buys the
	// time-out cancelled: never by a refund.
	var credits []string
	if err := a.DB.NewRaw(`SELECT t.kind FROM ledger_transactions AS t JOIN ledger_entries AS e ON e.transaction_id = t.id
		WHERE e.account_id = ? AND e.amount > 0 AND t.id > ? AND t.kind NOT IN ('deposit', 'market_release')`,
		"user:"+x.id+":available", startLedger).Scan(t.Context(), &credits); err != nil {
		t.Fatal(err)
	}
	if len(credits) > 0 {
		t.Errorf("seed %d: the platform balance was credited by %v", seed, credits)
	}
	if end := a.balances(t, x.auth); end.available+end.locked > start.available+start.locked+1_000_000 {
		t.Errorf("seed %d: the platform balance went from %+v to %+v: more than the deposit came in", seed, start, end)
	}
}
