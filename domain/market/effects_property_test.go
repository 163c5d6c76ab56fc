package market

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"wager/domain/market/engine"
	"wager/domain/money"
)

// marketSim runs orders through engine.Book and effects the way
// Service.place and Service.Cancel do, over an in-memory ledger, so that the
// market's money invariants can be checked after every step without a
// database.
type marketSim struct {
	t        *testing.T
	game     string
	users    []string
	book     *engine.Book
	ledger   map[string]int64 // account -> balance
	holdings map[slot]*holding
	pairs    int64 // pairs minted less pairs merged, counted from the fills alone
	nextID   int64
	start    int64            // every user's starting balance, summed
	initials map[string]int64 // each user's starting balance
	steps    int
	stats    map[string]int
}

func newMarketSim(t *testing.T, r *rand.Rand, users int) *marketSim {
	s := &marketSim{t: t, game: "game-1", book: engine.New(), ledger: map[string]int64{},
		holdings: map[slot]*holding{}, initials: map[string]int64{}, stats: map[string]int{}}
	for i := range users {
		u := fmt.Sprintf("user-%d", i)
		s.users = append(s.users, u)
		// From nothing to 50 USDC, so that some buys are refused.
		b := (10 + r.Int64N(41)) * 1_000_000
		if i == 0 {
			b = 0
		}
		s.ledger[money.Available(u)] = b
		s.initials[u] = b
		s.start += b
	}
	return s
}

func (s *marketSim) holding(user string, outcome int) holding {
	if h := s.holdings[slot{user, outcome}]; h != nil {
		return *h
	}
	return holding{}
}

// post applies postings to the ledger, failing on one that does not sum to
// zero, and reports false (applying nothing) when an account would go
// negative, as the ledger's overdraft rule refuses it.
func (s *marketSim) post(ps []money.Posting) bool {
	next := maps.Clone(s.ledger)
	for _, p := range ps {
		var sum int64
		for _, e := range p.Entries {
			sum += e.Amount
			next[e.Account] += e.Amount
		}
		if sum != 0 {
			s.t.Fatalf("step %d: posting %s %s sums to %d: %+v", s.steps, p.Kind, p.Reference, sum, p.Entries)
		}
		if len(p.Entries) < 2 {
			s.t.Fatalf("step %d: posting %s with %d entries", s.steps, p.Kind, len(p.Entries))
		}
	}
	for _, b := range next {
		if b < 0 {
			return false
		}
	}
	s.ledger = next
	return true
}

func holdingValues(hs map[slot]*holding) map[slot]holding {
	out := make(map[slot]holding, len(hs))
	for k, h := range hs {
		out[k] = *h
	}
	return out
}

func cloneHoldings(hs map[slot]*holding) map[slot]*holding {
	out := make(map[slot]*holding, len(hs))
	for k, h := range hs {
		c := *h
		out[k] = &c
	}
	return out
}

// place mirrors Service.place: lock, match, a fill per trade in order, the
// release of what an IOC order leaves; all or nothing.
func (s *marketSim) place(o engine.Order, tif engine.TIF) {
	s.nextID++
	o.ID = s.nextID
	orderID := fmt.Sprint(o.ID)
	fx := newEffects(s.game, orderID, cloneHoldings(s.holdings))
	before := s.holding(o.Owner, o.Outcome)
	if !fx.lock(o) {
		if o.Side == engine.Buy || before.Shares-before.Locked >= o.Shares {
			s.t.Fatalf("step %d: lock refused %+v holding %+v", s.steps, o, before)
		}
		s.stats["sell refused"]++
		return
	}
	if o.Side == engine.Sell && before.Shares-before.Locked < o.Shares {
		s.t.Fatalf("step %d: lock took %d shares from a holding %+v", s.steps, o.Shares, before)
	}
	// The lock posting alone decides whether the balance covers the buy;
	// the book is only touched once it is taken.
	if o.Side == engine.Buy {
		if !s.post(fx.postings) {
			if s.ledger[money.Available(o.Owner)] >= o.Price*o.Shares {
				s.t.Fatalf("step %d: a buy of %d refused with %d available", s.steps, o.Price*o.Shares, s.ledger[money.Available(o.Owner)])
			}
			s.stats["buy refused"]++
			return
		}
		fx.postings = nil
	}
	res, err := s.book.Place(o, tif)
	if err != nil {
		s.t.Fatalf("step %d: place %+v: %v", s.steps, o, err)
	}
	for i, f := range res.Fills {
		if o.Side == engine.Buy && f.TakerPrice > o.Price || o.Side == engine.Sell && f.TakerPrice < o.Price {
			s.t.Fatalf("step %d: %+v traded at %d, beyond its limit", s.steps, o, f.TakerPrice)
		}
		fx.fill(o, f, i)
		switch f.Kind {
		case engine.Mint:
			s.pairs += f.Shares
		case engine.Merge:
			s.pairs -= f.Shares
		}
		s.stats[f.Kind.String()]++
	}
	if res.Filled < o.Shares && !res.Rested {
		fx.release(o, o.Shares-res.Filled, "market-release:"+orderID)
	}
	if !fx.valid() {
		s.t.Fatalf("step %d: order %+v leaves a holding invalid: %v", s.steps, o, holdingValues(fx.holdings))
	}
	if !s.post(fx.postings) {
		s.t.Fatalf("step %d: the trades of %+v overdraw an account: %+v", s.steps, o, fx.postings)
	}
	s.holdings = fx.holdings
	s.stats["placed"]++
}

// cancel mirrors Service.Cancel.
func (s *marketSim) cancel(id int64) {
	o, ok := s.book.Cancel(id)
	if !ok {
		s.t.Fatalf("step %d: order %d is not on the book", s.steps, id)
	}
	fx := newEffects(s.game, fmt.Sprint(id), cloneHoldings(s.holdings))
	fx.release(o, o.Shares, "market-cancel:"+fmt.Sprint(id))
	if !fx.valid() {
		s.t.Fatalf("step %d: cancel of %+v leaves a holding invalid", s.steps, o)
	}
	if !s.post(fx.postings) {
		s.t.Fatalf("step %d: cancel of %+v overdraws an account: %+v", s.steps, o, fx.postings)
	}
	s.holdings = fx.holdings
	s.stats["cancelled"]++
}

func (s *marketSim) resting() []engine.Order {
	var out []engine.Order
	for outcome := range 2 {
		for _, side := range []engine.Side{engine.Buy, engine.Sell} {
			out = append(out, s.book.Orders(outcome, side)...)
		}
	}
	return out
}

// check verifies the invariants that hold between orders.
func (s *marketSim) check() {
	s.t.Helper()
	var openBuys int64
	lockedBuys := map[string]int64{}
	lockedSells := map[slot]int64{}
	for _, o := range s.resting() {
		if o.Side == engine.Buy {
			openBuys += o.Price * o.Shares
			lockedBuys[o.Owner] += o.Price * o.Shares
		} else {
			lockedSells[slot{o.Owner, o.Outcome}] += o.Shares
		}
	}
	if got, want := s.ledger[money.Market(s.game)], engine.One*s.pairs+openBuys; got != want {
		s.t.Fatalf("step %d: market account %d, want %d pairs + %d locked by open buys = %d", s.steps, got, s.pairs, openBuys, want)
	}
	var shares [2]int64
	var cost int64
	for k, h := range s.holdings {
		if h.Shares < 0 || h.Locked < 0 || h.Locked > h.Shares {
			s.t.Fatalf("step %d: holding %v: %+v", s.steps, k, *h)
		}
		if h.Locked != lockedSells[k] {
			s.t.Fatalf("step %d: holding %v locks %d shares, its open sells %d", s.steps, k, h.Locked, lockedSells[k])
		}
		shares[k.Outcome] += h.Shares
		cost += h.Cost
	}
	if shares[0] != s.pairs || shares[1] != s.pairs {
		s.t.Fatalf("step %d: %d pairs outstanding, shares of the outcomes %v", s.steps, s.pairs, shares)
	}
	if cost != engine.One*s.pairs {
		s.t.Fatalf("step %d: holdings cost %d in all, want %d for %d pairs", s.steps, cost, engine.One*s.pairs, s.pairs)
	}
	for acc, b := range s.ledger {
		if b < 0 {
			s.t.Fatalf("step %d: account %s at %d", s.steps, acc, b)
		}
	}
	// What a user no longer has (spent on shares, not locked in open buys)
	// is what its holdings cost.
	for _, u := range s.users {
		c := s.holding(u, 0).Cost + s.holding(u, 1).Cost
		if spent := s.initials[u] - s.ledger[money.Available(u)] - lockedBuys[u]; spent != c {
			s.t.Fatalf("step %d: %s spent %d on shares, its holdings cost %d", s.steps, u, spent, c)
		}
	}
}

// resolve mirrors Service.Resolve and then every user's Redeem.
func (s *marketSim) resolve(payout [2]int64) {
	for _, o := range s.resting() {
		s.cancel(o.ID)
	}
	for _, h := range s.holdings {
		if h.Locked != 0 {
			s.t.Fatalf("shares still locked after every order was cancelled: %+v", *h)
		}
	}
	s.check()
	for _, u := range s.users {
		paid := s.holding(u, 0).Shares*payout[0] + s.holding(u, 1).Shares*payout[1]
		if paid == 0 {
			continue
		}
		if !s.post([]money.Posting{{Kind: "market_redeem", Entries: []money.Entry{{Account: money.Market(s.game), Amount: -paid},
			{Account: money.Available(u), Amount: paid}}}}) {
			s.t.Fatalf("redeeming %d for %s overdraws the market account (%d)", paid, u, s.ledger[money.Market(s.game)])
		}
		delete(s.holdings, slot{u, 0})
		delete(s.holdings, slot{u, 1})
	}
	if got := s.ledger[money.Market(s.game)]; got != 0 {
		s.t.Fatalf("the market account holds %d after every holder redeemed %v", got, payout)
	}
	var total int64
	for _, u := range s.users {
		total += s.ledger[money.Available(u)]
	}
	if total != s.start {
		s.t.Fatalf("users hold %d after redeeming, started with %d", total, s.start)
	}
}

// randomOrder draws an order: prices mostly near the middle so that about
// half of them cross, sells mostly of shares the user holds.
func (s *marketSim) randomOrder(r *rand.Rand) (engine.Order, engine.TIF) {
	o := engine.Order{Owner: s.users[r.IntN(len(s.users))], Outcome: r.IntN(2)}
	if r.IntN(5) == 0 {
		o.Price = engine.MinPrice + r.Int64N(99)*engine.Tick
	} else {
		o.Price = 400_000 + r.Int64N(21)*engine.Tick
	}
	o.Shares = 1 + r.Int64N(20)
	if r.IntN(50) == 0 {
		o.Shares = 1 + r.Int64N(engine.MaxShares)
	}
	h := s.holding(o.Owner, o.Outcome)
	if free := h.Shares - h.Locked; free > 0 && r.IntN(2) == 0 {
		o.Side = engine.Sell
		if r.IntN(10) > 0 {
			o.Shares = 1 + r.Int64N(free)
		}
	} else if r.IntN(8) == 0 {
		o.Side = engine.Sell // often more than it holds: refused
	}
	tif := engine.GTC
	if r.IntN(4) == 0 {
		tif = engine.IOC
	}
	return o, tif
}

// Random order sequences through the engine and effects: after every order
// or cancel the market's account holds 1 USDC per outstanding pair plus the
// money open buys lock, both outcomes have as many shares as there are
// pairs, no holding or balance is negative; after resolution (either winner
// or a draw) and redemption the market's account is empty and the users
// hold what they started with.
func TestEffectsKeepTheMarketCollateralised(t *testing.T) {
	payouts := map[string][2]int64{
		"outcome 0 wins": {engine.One, 0},
		"outcome 1 wins": {0, engine.One},
		"draw":           {engine.One / 2, engine.One / 2},
	}
	for seed := range uint64(12) {
		name := slices.Sorted(maps.Keys(payouts))[seed%3]
		t.Run(fmt.Sprintf("seed %d %s", seed, name), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 0x6d61726b6574))
			s := newMarketSim(t, r, 5)
			for s.steps = 1; s.steps <= 5000; s.steps++ {
				if open := s.resting(); len(open) > 0 && r.IntN(6) == 0 {
					s.cancel(open[r.IntN(len(open))].ID)
				} else {
					s.place(s.randomOrder(r))
				}
				s.check()
			}
			if s.stats["mint"] == 0 || s.stats["merge"] == 0 || s.stats["transfer"] == 0 || s.stats["buy refused"] == 0 ||
				s.stats["sell refused"] == 0 || s.stats["cancelled"] == 0 {
				t.Fatalf("the sequence missed a case: %v", s.stats)
			}
			s.resolve(payouts[name])
			t.Logf("%v, %d pairs before resolution", s.stats, s.pairs)
		})
	}
}
