package engine

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

// refBook is a deliberately naive matcher written straight from the contract:
// it scans every resting order for the best crossing candidate, so that the
// engine's indexed walk can be checked against it fill by fill.
type refBook struct {
	orders []Order // in ID order
}

func (r *refBook) place(o Order, tif TIF) Result {
	var res Result
	x, y := o.Outcome, 1-o.Outcome
	for o.Shares > res.Filled {
		best := -1
		var bestEff int64
		for i, m := range r.orders {
			var eff int64
			switch {
			case o.Side == Buy && m.Side == Sell && m.Outcome == x:
				eff = m.Price
			case o.Side == Buy && m.Side == Buy && m.Outcome == y:
				eff = One - m.Price
			case o.Side == Sell && m.Side == Buy && m.Outcome == x:
				eff = m.Price
			case o.Side == Sell && m.Side == Sell && m.Outcome == y:
				eff = One - m.Price
			default:
				continue
			}
			if o.Side == Buy && eff > o.Price || o.Side == Sell && eff < o.Price {
				continue
			}
			better := best < 0 || (o.Side == Buy && eff < bestEff) || (o.Side == Sell && eff > bestEff) ||
				(eff == bestEff && m.ID < r.orders[best].ID)
			if better {
				best, bestEff = i, eff
			}
		}
		if best < 0 {
			break
		}
		m := &r.orders[best]
		n := min(m.Shares, o.Shares-res.Filled)
		f := Fill{Maker: *m, Shares: n, MakerPrice: m.Price, TakerPrice: m.Price, Kind: Transfer}
		if m.Outcome != x {
			f.TakerPrice = One - m.Price
			f.Kind = Mint
			if o.Side == Sell {
				f.Kind = Merge
			}
		}
		res.Fills = append(res.Fills, f)
		res.Filled += n
		m.Shares -= n
		if m.Shares == 0 {
			r.orders = slices.Delete(r.orders, best, best+1)
		}
	}
	if res.Filled < o.Shares && tif == GTC {
		o.Shares -= res.Filled
		r.orders = append(r.orders, o)
		slices.SortFunc(r.orders, func(a, b Order) int { return int(a.ID - b.ID) })
		res.Rested = true
	}
	return res
}

func (r *refBook) cancel(id int64) (Order, bool) {
	for i, o := range r.orders {
		if o.ID == id {
			r.orders = slices.Delete(r.orders, i, i+1)
			return o, true
		}
	}
	return Order{}, false
}

// account is one user in the accounting model. Locks are what open orders
// hold: a buy locks Price*Shares of money, a sell locks its shares.
type account struct {
	money, lockMoney   int64
	shares, lockShares [2]int64
}

// ledger is the in-test accounting model of the service around the engine.
// Locked money sits in collateral together with One per outstanding pair.
type ledger struct {
	users      map[string]*account
	collateral int64
	pairs      int64
	total      int64
	orig       map[int64]Order // every order ever rested, as placed
	filled     map[int64]int64 // shares filled per order ID, as taker and as maker
}

func newLedger(owners []string, money int64) *ledger {
	l := &ledger{users: map[string]*account{}, orig: map[int64]Order{}, filled: map[int64]int64{}}
	for _, o := range owners {
		l.users[o] = &account{money: money}
		l.total += money
	}
	return l
}

func (l *ledger) lock(o Order) {
	u := l.users[o.Owner]
	if o.Side == Buy {
		u.money -= o.Price * o.Shares
		u.lockMoney += o.Price * o.Shares
		l.collateral += o.Price * o.Shares
	} else {
		u.shares[o.Outcome] -= o.Shares
		u.lockShares[o.Outcome] += o.Shares
	}
}

// unlock releases what n shares of an open order o still hold.
func (l *ledger) unlock(o Order, n int64) {
	u := l.users[o.Owner]
	if o.Side == Buy {
		u.money += o.Price * n
		u.lockMoney -= o.Price * n
		l.collateral -= o.Price * n
	} else {
		u.shares[o.Outcome] += n
		u.lockShares[o.Outcome] -= n
	}
}

// apply books one fill between taker (locked at its own limit) and the maker.
func (l *ledger) apply(taker Order, f Fill) {
	t, m, n := l.users[taker.Owner], l.users[f.Maker.Owner], f.Shares
	l.filled[f.Maker.ID] += n
	switch f.Kind {
	case Transfer:
		if taker.Side == Buy {
			// The taker locked q per share and pays the maker's price; the
			// difference comes back to it.
			t.lockMoney -= taker.Price * n
			l.collateral -= taker.Price * n
			t.money += (taker.Price - f.MakerPrice) * n
			t.shares[taker.Outcome] += n
			m.lockShares[taker.Outcome] -= n
			m.money += f.MakerPrice * n
		} else {
			m.lockMoney -= f.MakerPrice * n
			l.collateral -= f.MakerPrice * n
			t.money += f.MakerPrice * n
			m.shares[taker.Outcome] += n
			t.lockShares[taker.Outcome] -= n
		}
	case Mint:
		// Both buyers' money stays in collateral as One per new pair; the
		// taker gets back what it locked above One-p.
		m.lockMoney -= f.MakerPrice * n
		m.shares[f.Maker.Outcome] += n
		t.lockMoney -= taker.Price * n
		t.money += (taker.Price - f.TakerPrice) * n
		t.shares[taker.Outcome] += n
		l.collateral += (One - f.MakerPrice - taker.Price) * n
		l.pairs += n
	case Merge:
		m.lockShares[f.Maker.Outcome] -= n
		m.money += f.MakerPrice * n
		t.lockShares[taker.Outcome] -= n
		t.money += f.TakerPrice * n
		l.collateral -= One * n
		l.pairs -= n
	}
}

// check verifies the ledger's own invariants and that its locks match b.
func (l *ledger) check(b *Book) error {
	var held [2]int64
	var sumMoney, sumLock int64
	wantLockMoney := map[string]int64{}
	wantLockShares := map[string][2]int64{}
	for o := range 2 {
		for _, s := range []Side{Buy, Sell} {
			for _, r := range b.Orders(o, s) {
				if s == Buy {
					wantLockMoney[r.Owner] += r.Price * r.Shares
				} else {
					ls := wantLockShares[r.Owner]
					ls[o] += r.Shares
					wantLockShares[r.Owner] = ls
				}
				orig, ok := l.orig[r.ID]
				if !ok {
					return fmt.Errorf("order %d rests but was never placed", r.ID)
				}
				if r.Shares != orig.Shares-l.filled[r.ID] {
					return fmt.Errorf("order %d has %d shares, placed %d minus filled %d", r.ID, r.Shares, orig.Shares, l.filled[r.ID])
				}
			}
		}
	}
	for name, u := range l.users {
		if u.money < 0 || u.lockMoney < 0 || u.shares[0] < 0 || u.shares[1] < 0 || u.lockShares[0] < 0 || u.lockShares[1] < 0 {
			return fmt.Errorf("%s has a negative balance: %+v", name, *u)
		}
		if u.lockMoney != wantLockMoney[name] || u.lockShares != wantLockShares[name] {
			return fmt.Errorf("%s locks %d money %v shares, its open orders hold %d and %v",
				name, u.lockMoney, u.lockShares, wantLockMoney[name], wantLockShares[name])
		}
		sumMoney += u.money
		sumLock += u.lockMoney
		for o := range 2 {
			held[o] += u.shares[o] + u.lockShares[o]
		}
	}
	if l.collateral != One*l.pairs+sumLock {
		return fmt.Errorf("collateral %d != One*%d pairs + %d locked", l.collateral, l.pairs, sumLock)
	}
	if held[0] != l.pairs || held[1] != l.pairs {
		return fmt.Errorf("shares held %v, pairs %d", held, l.pairs)
	}
	if sumMoney+l.collateral != l.total {
		return fmt.Errorf("money %d + collateral %d != %d", sumMoney, l.collateral, l.total)
	}
	return nil
}

// checkUncrossed verifies that nothing on b could match anything else on b,
// in the own view and in the complementary view.
func checkUncrossed(b *Book) error {
	bid := [2]int64{}
	ask := [2]int64{One, One}
	for o := range 2 {
		if p, ok := b.Best(o, Buy); ok {
			bid[o] = p
		}
		if p, ok := b.Best(o, Sell); ok {
			ask[o] = p
		}
		if bid[o] >= ask[o] {
			return fmt.Errorf("outcome %d crossed: bid %d ask %d", o, bid[o], ask[o])
		}
	}
	if bid[0] > 0 && bid[1] > 0 && bid[0]+bid[1] >= One {
		return fmt.Errorf("bids %v cross (mint possible)", bid)
	}
	if ask[0] < One && ask[1] < One && ask[0]+ask[1] <= One {
		return fmt.Errorf("asks %v cross (merge possible)", ask)
	}
	return nil
}

// checkLevels verifies Levels and Len against the orders themselves.
func checkLevels(b *Book) error {
	n := 0
	for o := range 2 {
		for _, s := range []Side{Buy, Sell} {
			var want []Level
			for _, r := range b.Orders(o, s) {
				n++
				if g, ok := b.Get(r.ID); !ok || g != r {
					return fmt.Errorf("Get(%d) = %+v, %v; want %+v", r.ID, g, ok, r)
				}
				if k := len(want); k > 0 && want[k-1].Price == r.Price {
					want[k-1].Shares += r.Shares
				} else {
					want = append(want, Level{r.Price, r.Shares})
				}
			}
			if got := b.Levels(o, s); !reflect.DeepEqual(got, want) {
				return fmt.Errorf("Levels(%d, %v) = %v, want %v", o, s, got, want)
			}
			if p, ok := b.Best(o, s); ok != (len(want) > 0) || ok && p != want[0].Price {
				return fmt.Errorf("Best(%d, %v) = %d, %v; levels %v", o, s, p, ok, want)
			}
		}
	}
	if n != b.Len() {
		return fmt.Errorf("Len = %d, %d orders", b.Len(), n)
	}
	return nil
}

// checkFills verifies each fill against the taker: maker's price, never worse
// than the taker's limit, the kind that the sides and outcomes imply.
func checkFills(o Order, r Result) error {
	var sum int64
	for _, f := range r.Fills {
		sum += f.Shares
		if f.Shares <= 0 || f.Shares > f.Maker.Shares {
			return fmt.Errorf("fill of %d shares against a maker with %d", f.Shares, f.Maker.Shares)
		}
		if f.MakerPrice != f.Maker.Price {
			return fmt.Errorf("fill at %d, maker's price %d", f.MakerPrice, f.Maker.Price)
		}
		want := Transfer
		if f.Maker.Outcome != o.Outcome {
			want = Mint
			if o.Side == Sell {
				want = Merge
			}
			if f.Maker.Side != o.Side || f.TakerPrice != One-f.MakerPrice {
				return fmt.Errorf("bad cross-outcome fill %+v", f)
			}
		} else if f.Maker.Side == o.Side || f.TakerPrice != f.MakerPrice {
			return fmt.Errorf("bad same-outcome fill %+v", f)
		}
		if f.Kind != want {
			return fmt.Errorf("fill kind %v, want %v", f.Kind, want)
		}
		if o.Side == Buy && f.TakerPrice > o.Price || o.Side == Sell && f.TakerPrice < o.Price {
			return fmt.Errorf("taker %v at %d filled at %d", o.Side, o.Price, f.TakerPrice)
		}
	}
	if sum != r.Filled || r.Filled > o.Shares {
		return fmt.Errorf("Filled %d, fills sum %d, order %d", r.Filled, sum, o.Shares)
	}
	return nil
}

func TestRandomSequences(t *testing.T) {
	for seed := range uint64(8) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			s := newRandomSequence(seed)
			for step := range 4000 {
				fail := func(format string, args ...any) {
					t.Helper()
					t.Fatalf("step %d: %s", step, fmt.Sprintf(format, args...))
				}
				switch r := s.rng.IntN(100); {
				case r < 18 && len(s.ref.orders) > 0:
					s.cancel(fail)
				case r < 20: // cancel an unknown ID
					if _, ok := s.b.Cancel(s.nextID + 1000); ok {
						fail("Cancel of an unknown ID succeeded")
					}
				case r < 22:
					s.placeInvalid(fail)
				case r < 23:
					s.reload(fail)
				default:
					s.place(step, fail)
				}
				s.check(fail)
			}
			// Guard against a generator that stopped exercising the engine.
			if s.fills < 1000 || s.mints < 100 || s.merges < 100 || s.cancels < 100 || s.rests == 0 {
				t.Fatalf("too few events: %d fills, %d mints, %d merges, %d cancels, %d reloads", s.fills, s.mints, s.merges, s.cancels, s.rests)
			}
			t.Logf("%d fills (%d mints, %d merges), %d cancels, %d reloads, %d resting, %d pairs", s.fills, s.mints, s.merges, s.cancels,
				s.rests, s.b.Len(), s.led.pairs)
		})
	}
}

// randomSequence is a book under random orders, cancels and reloads, with
// the reference book and the owners' ledger it must agree with.
type randomSequence struct {
	owners []string
	rng    *rand.Rand
	b      *Book
	ref    *refBook
	led    *ledger
	nextID int64

	fills, mints, merges, cancels, rests int
}

func newRandomSequence(seed uint64) *randomSequence {
	owners := []string{"ann", "bob", "cat", "dan", "eve"}
	return &randomSequence{owners: owners, rng: rand.New(rand.NewPCG(seed, 0x5eed)), b: New(), ref: &refBook{},
		led: newLedger(owners, 1e15)}
}

// cancel cancels a resting order.
func (s *randomSequence) cancel(fail func(string, ...any)) {
	id := s.ref.orders[s.rng.IntN(len(s.ref.orders))].ID
	got, ok := s.b.Cancel(id)
	want, _ := s.ref.cancel(id)
	if !ok || got != want {
		fail("Cancel(%d) = %+v, %v; want %+v", id, got, ok, want)
	}
	s.led.unlock(got, got.Shares)
	s.cancels++
}

// placeInvalid places an invalid order, which leaves everything unchanged.
func (s *randomSequence) placeInvalid(fail func(string, ...any)) {
	before := restingByID(s.b)
	bad := ord(s.nextID+1, s.owners[0], Buy, 0, 50*c+1, 1)
	if s.rng.IntN(2) == 0 && len(s.ref.orders) > 0 {
		bad = s.ref.orders[0]
		bad.Side = 1 - bad.Side
		bad.Price = 50 * c
	}
	if _, err := s.b.Place(bad, GTC); err == nil || !(errors.Is(err, ErrPrice) || errors.Is(err, ErrDuplicateID)) {
		fail("invalid order accepted: %v", err)
	}
	if got := restingByID(s.b); !reflect.DeepEqual(got, before) {
		fail("invalid order changed the book")
	}
}

// reload reloads the book from storage order by order.
func (s *randomSequence) reload(fail func(string, ...any)) {
	nb := New()
	for _, o := range restingByID(s.b) {
		if err := nb.Rest(o); err != nil {
			fail("Rest: %v", err)
		}
	}
	s.b = nb
	s.rests++
}

// order returns a random order and its time in force.
func (s *randomSequence) order(step int) (Order, TIF) {
	rng := s.rng
	s.nextID++
	o := Order{ID: s.nextID, Owner: s.owners[rng.IntN(len(s.owners))], Outcome: rng.IntN(2)}
	o.Side = Side(rng.IntN(2))
	// Prices cluster round a mid that drifts, so both
	// outcomes' books cross each other often.
	mid := 50 + int64(step/200%5-2)*5
	if o.Outcome == 1 {
		mid = 100 - mid
	}
	spread := int64(rng.IntN(9) - 2)
	if o.Side == Buy {
		o.Price = (mid - spread) * c
	} else {
		o.Price = (mid + spread) * c
	}
	if rng.IntN(20) == 0 {
		o.Price = int64(1+rng.IntN(99)) * c
	}
	o.Shares = int64(1 + rng.IntN(50))
	if rng.IntN(50) == 0 {
		o.Shares = MaxShares
	}
	u := s.led.users[o.Owner]
	if o.Side == Sell {
		// The service only lets a user sell shares it holds unlocked.
		if u.shares[o.Outcome] == 0 {
			o.Side = Buy
			o.Price = One - o.Price
		} else {
			o.Shares = min(o.Shares, u.shares[o.Outcome])
		}
	}
	tif := GTC
	if rng.IntN(4) == 0 {
		tif = IOC
	}
	return o, tif
}

// place places a random order, as the reference does, and books its
// fills in the ledger.
func (s *randomSequence) place(step int, fail func(string, ...any)) {
	o, tif := s.order(step)
	s.led.lock(o)
	s.led.orig[o.ID] = o
	res, err := s.b.Place(o, tif)
	if err != nil {
		fail("Place(%+v): %v", o, err)
	}
	want := s.ref.place(o, tif)
	if !reflect.DeepEqual(res, want) {
		fail("Place(%+v, %v)\n got %+v\nwant %+v", o, tif, res, want)
	}
	if err := checkFills(o, res); err != nil {
		fail("%v", err)
	}
	for _, f := range res.Fills {
		s.led.apply(o, f)
		s.fills++
		switch f.Kind {
		case Mint:
			s.mints++
		case Merge:
			s.merges++
		}
	}
	s.led.filled[o.ID] += res.Filled
	rest := o.Shares - res.Filled
	if res.Rested != (tif == GTC && rest > 0) {
		fail("Rested = %v with %d left, %v", res.Rested, rest, tif)
	}
	if !res.Rested {
		s.led.unlock(o, rest)
	}
}

// check checks the book against the reference and the ledger, and that it
// is uncrossed and its levels whole.
func (s *randomSequence) check(fail func(string, ...any)) {
	if got, want := restingByID(s.b), s.ref.orders; !(len(got) == 0 && len(want) == 0) && !reflect.DeepEqual(got, want) {
		fail("book differs from the reference\n got %+v\nwant %+v", got, want)
	}
	if err := s.led.check(s.b); err != nil {
		fail("%v", err)
	}
	if err := checkUncrossed(s.b); err != nil {
		fail("%v", err)
	}
	if err := checkLevels(s.b); err != nil {
		fail("%v", err)
	}
}
