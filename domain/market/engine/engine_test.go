package engine

import (
	"errors"
	"reflect"
	"testing"
)

const c = Tick // one cent-like tick, to keep the tables short

func ord(id int64, owner string, side Side, outcome int, price, shares int64) Order {
	return Order{ID: id, Owner: owner, Side: side, Outcome: outcome, Price: price, Shares: shares}
}

func mustRest(t *testing.T, b *Book, os ...Order) {
	t.Helper()
	for _, o := range os {
		if err := b.Rest(o); err != nil {
			t.Fatalf("Rest(%+v): %v", o, err)
		}
	}
}

// fill builds the Fill expected against maker (as it was before the fill).
func fill(maker Order, kind Kind, shares int64) Fill {
	tp := maker.Price
	if kind != Transfer {
		tp = One - maker.Price
	}
	return Fill{Maker: maker, Kind: kind, Shares: shares, MakerPrice: maker.Price, TakerPrice: tp}
}

func TestPlace(t *testing.T) {
	for _, tt := range placeCases {
		t.Run(tt.name, func(t *testing.T) {
			b := New()
			mustRest(t, b, tt.resting...)
			r, err := b.Place(tt.taker, tt.tif)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(r.Fills, tt.fills) {
				t.Errorf("fills\n got %+v\nwant %+v", r.Fills, tt.fills)
			}
			var sum int64
			for _, f := range tt.fills {
				sum += f.Shares
			}
			if r.Filled != sum {
				t.Errorf("Filled = %d, want %d", r.Filled, sum)
			}
			if r.Rested != tt.rested {
				t.Errorf("Rested = %v, want %v", r.Rested, tt.rested)
			}
			if got := restingByID(b); !reflect.DeepEqual(got, tt.left) {
				t.Errorf("book\n got %+v\nwant %+v", got, tt.left)
			}
		})
	}
}

// placeCase is an order placed into a book and what it must do.
type placeCase struct {
	name    string
	resting []Order
	taker   Order
	tif     TIF
	fills   []Fill
	rested  bool
	left    []Order // what rests afterwards, in ID order
}

// Resting orders of the placeCases.
var (
	s0a = ord(1, "a", Sell, 0, 40*c, 5)
	s0b = ord(2, "b", Sell, 0, 42*c, 5)
	s0c = ord(3, "c", Sell, 0, 45*c, 5)
	b1a = ord(4, "a", Buy, 1, 60*c, 5) // effective ask for outcome 0 at 40
	b1b = ord(5, "b", Buy, 1, 58*c, 5) // effective ask for outcome 0 at 42
	b0a = ord(6, "a", Buy, 0, 55*c, 5)
	s1a = ord(7, "a", Sell, 1, 45*c, 5) // effective bid for outcome 0 at 55
)

// placeCases are orders placed into books, with the fills, the rest and
// the book they must leave.
var placeCases = []placeCase{
	{
		name:    "transfer at the maker's price",
		resting: []Order{s0a},
		taker:   ord(10, "t", Buy, 0, 50*c, 3),
		tif:     GTC,
		fills:   []Fill{fill(s0a, Transfer, 3)},
		left:    []Order{{ID: 1, Owner: "a", Side: Sell, Outcome: 0, Price: 40 * c, Shares: 2}},
	},
	{
		name:    "sell transfers to the highest bid at its price",
		resting: []Order{b0a, ord(8, "b", Buy, 0, 50*c, 5)},
		taker:   ord(10, "t", Sell, 0, 50*c, 7),
		tif:     GTC,
		fills:   []Fill{fill(b0a, Transfer, 5), fill(ord(8, "b", Buy, 0, 50*c, 5), Transfer, 2)},
		left:    []Order{ord(8, "b", Buy, 0, 50*c, 3)},
	},
	{
		name:    "mint: buy against a buy of the other outcome, taker pays One-p",
		resting: []Order{b1a},
		taker:   ord(10, "t", Buy, 0, 45*c, 5),
		tif:     GTC,
		fills:   []Fill{fill(b1a, Mint, 5)},
	},
	{
		name:    "mint at exactly p+q == One",
		resting: []Order{b1a},
		taker:   ord(10, "t", Buy, 0, 40*c, 2),
		tif:     IOC,
		fills:   []Fill{fill(b1a, Mint, 2)},
		left:    []Order{ord(4, "a", Buy, 1, 60*c, 3)},
	},
	{
		name:    "no mint when p+q < One",
		resting: []Order{b1a},
		taker:   ord(10, "t", Buy, 0, 39*c, 2),
		tif:     GTC,
		rested:  true,
		left:    []Order{b1a, ord(10, "t", Buy, 0, 39*c, 2)},
	},
	{
		name:    "merge: sell against a sell of the other outcome, taker gets One-p",
		resting: []Order{s1a},
		taker:   ord(10, "t", Sell, 0, 50*c, 4),
		tif:     GTC,
		fills:   []Fill{fill(s1a, Merge, 4)},
		left:    []Order{ord(7, "a", Sell, 1, 45*c, 1)},
	},
	{
		name:    "merge at exactly p+q == One",
		resting: []Order{s1a},
		taker:   ord(10, "t", Sell, 0, 55*c, 5),
		tif:     GTC,
		fills:   []Fill{fill(s1a, Merge, 5)},
	},
	{
		name:    "no merge when p+q > One",
		resting: []Order{s1a},
		taker:   ord(10, "t", Sell, 0, 56*c, 5),
		tif:     IOC,
		left:    []Order{s1a},
	},
	{
		name:    "no transfer when the bid is below the ask",
		resting: []Order{s0a},
		taker:   ord(10, "t", Buy, 0, 39*c, 5),
		tif:     GTC,
		rested:  true,
		left:    []Order{s0a, ord(10, "t", Buy, 0, 39*c, 5)},
	},
	{
		name:    "partial fills across several levels, best effective price first, rest on the book",
		resting: []Order{s0c, b1b, s0a},
		taker:   ord(10, "t", Buy, 0, 45*c, 14),
		tif:     GTC,
		fills:   []Fill{fill(s0a, Transfer, 5), fill(b1b, Mint, 5), fill(s0c, Transfer, 4)},
		left:    []Order{ord(3, "c", Sell, 0, 45*c, 1)},
	},
	{
		name:    "the limit stops the walk; GTC rests the remainder",
		resting: []Order{s0a, s0b, s0c},
		taker:   ord(10, "t", Buy, 0, 42*c, 12),
		tif:     GTC,
		fills:   []Fill{fill(s0a, Transfer, 5), fill(s0b, Transfer, 5)},
		rested:  true,
		left:    []Order{s0c, ord(10, "t", Buy, 0, 42*c, 2)},
	},
	{
		name:    "IOC leftover is not rested",
		resting: []Order{s0a, s0b, s0c},
		taker:   ord(10, "t", Buy, 0, 42*c, 12),
		tif:     IOC,
		fills:   []Fill{fill(s0a, Transfer, 5), fill(s0b, Transfer, 5)},
		left:    []Order{s0c},
	},
	{
		name:    "IOC with nothing to cross does nothing",
		resting: []Order{s0c},
		taker:   ord(10, "t", Buy, 0, 42*c, 12),
		tif:     IOC,
		left:    []Order{s0c},
	},
	{
		name: "time priority within a level: earlier ID first",
		resting: []Order{
			ord(9, "b", Sell, 0, 40*c, 2), ord(3, "a", Sell, 0, 40*c, 2), ord(5, "c", Sell, 0, 40*c, 2),
		},
		taker: ord(10, "t", Buy, 0, 40*c, 5),
		tif:   GTC,
		fills: []Fill{
			fill(ord(9, "b", Sell, 0, 40*c, 2), Transfer, 2),
			fill(ord(3, "a", Sell, 0, 40*c, 2), Transfer, 2),
			fill(ord(5, "c", Sell, 0, 40*c, 2), Transfer, 1),
		},
		left: []Order{ord(5, "c", Sell, 0, 40*c, 1)},
	},
	{
		name:    "same effective price: an earlier buy of the other outcome goes before a later sell",
		resting: []Order{ord(2, "b", Sell, 0, 40*c, 3), ord(1, "a", Buy, 1, 60*c, 3)},
		taker:   ord(10, "t", Buy, 0, 40*c, 4),
		tif:     GTC,
		fills:   []Fill{fill(ord(1, "a", Buy, 1, 60*c, 3), Mint, 3), fill(ord(2, "b", Sell, 0, 40*c, 3), Transfer, 1)},
		left:    []Order{ord(2, "b", Sell, 0, 40*c, 2)},
	},
	{
		name:    "same effective price: an earlier sell goes before a later buy of the other outcome",
		resting: []Order{ord(2, "b", Buy, 1, 60*c, 3), ord(1, "a", Sell, 0, 40*c, 3)},
		taker:   ord(10, "t", Buy, 0, 41*c, 4),
		tif:     GTC,
		fills:   []Fill{fill(ord(1, "a", Sell, 0, 40*c, 3), Transfer, 3), fill(ord(2, "b", Buy, 1, 60*c, 3), Mint, 1)},
		left:    []Order{ord(2, "b", Buy, 1, 60*c, 2)},
	},
	{
		name:    "same effective bid: an earlier sell of the other outcome goes before a later buy",
		resting: []Order{ord(2, "b", Buy, 0, 55*c, 3), ord(1, "a", Sell, 1, 45*c, 3)},
		taker:   ord(10, "t", Sell, 0, 55*c, 4),
		tif:     IOC,
		fills:   []Fill{fill(ord(1, "a", Sell, 1, 45*c, 3), Merge, 3), fill(ord(2, "b", Buy, 0, 55*c, 3), Transfer, 1)},
		left:    []Order{ord(2, "b", Buy, 0, 55*c, 2)},
	},
	{
		name:    "a better effective price beats an earlier order",
		resting: []Order{ord(1, "a", Sell, 0, 41*c, 3), ord(2, "b", Buy, 1, 60*c, 3)},
		taker:   ord(10, "t", Buy, 0, 41*c, 3),
		tif:     GTC,
		fills:   []Fill{fill(ord(2, "b", Buy, 1, 60*c, 3), Mint, 3)},
		left:    []Order{ord(1, "a", Sell, 0, 41*c, 3)},
	},
	{
		name:    "orders of the same outcome and side never cross",
		resting: []Order{ord(1, "a", Buy, 1, 5*c, 3), ord(2, "a", Sell, 1, 10*c, 3), ord(3, "a", Buy, 0, 9*c, 3)},
		taker:   ord(10, "t", Buy, 1, 90*c, 4),
		tif:     IOC,
		fills:   []Fill{fill(ord(2, "a", Sell, 1, 10*c, 3), Transfer, 3)},
		left:    []Order{ord(1, "a", Buy, 1, 5*c, 3), ord(3, "a", Buy, 0, 9*c, 3)},
	},
}

// restingByID lists every resting order in ID order (nil if none).
func restingByID(b *Book) []Order {
	var all []Order
	for o := range 2 {
		for _, s := range []Side{Buy, Sell} {
			all = append(all, b.Orders(o, s)...)
		}
	}
	for i := 1; i < len(all); i++ {
		for j := i; j > 0 && all[j].ID < all[j-1].ID; j-- {
			all[j], all[j-1] = all[j-1], all[j]
		}
	}
	return all
}

func TestValidation(t *testing.T) {
	good := ord(100, "t", Buy, 0, 50*c, 10)
	tests := []struct {
		name string
		o    Order
		tif  TIF
		want error
	}{
		{"price below min", func() Order { o := good; o.Price = 0; return o }(), GTC, ErrPrice},
		{"price above max", func() Order { o := good; o.Price = One; return o }(), GTC, ErrPrice},
		{"price off grid", func() Order { o := good; o.Price = 50*c + 1; return o }(), GTC, ErrPrice},
		{"negative price", func() Order { o := good; o.Price = -c; return o }(), GTC, ErrPrice},
		{"zero shares", func() Order { o := good; o.Shares = 0; return o }(), GTC, ErrShares},
		{"too many shares", func() Order { o := good; o.Shares = MaxShares + 1; return o }(), GTC, ErrShares},
		{"outcome 2", func() Order { o := good; o.Outcome = 2; return o }(), GTC, ErrOutcome},
		{"outcome -1", func() Order { o := good; o.Outcome = -1; return o }(), GTC, ErrOutcome},
		{"side 2", func() Order { o := good; o.Side = 2; return o }(), GTC, ErrSide},
		{"bad tif", good, TIF(7), ErrTIF},
		{"duplicate id", func() Order { o := good; o.ID = 1; return o }(), IOC, ErrDuplicateID},
		// This one would cross (and fill) if it were not rejected.
		{"duplicate id that would cross", ord(2, "t", Buy, 0, 99*c, 10), GTC, ErrDuplicateID},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := New()
			mustRest(t, b, ord(1, "a", Sell, 0, 40*c, 5), ord(2, "b", Buy, 1, 55*c, 5), ord(3, "c", Buy, 0, 30*c, 5))
			before := restingByID(b)
			r, err := b.Place(tt.o, tt.tif)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Place err = %v, want %v", err, tt.want)
			}
			if !reflect.DeepEqual(r, Result{}) {
				t.Errorf("Result = %+v, want zero", r)
			}
			if got := restingByID(b); !reflect.DeepEqual(got, before) || b.Len() != 3 {
				t.Errorf("book changed: %+v", got)
			}
			if tt.tif == GTC {
				err := b.Rest(tt.o)
				if !errors.Is(err, tt.want) {
					t.Fatalf("Rest err = %v, want %v", err, tt.want)
				}
				if got := restingByID(b); !reflect.DeepEqual(got, before) {
					t.Errorf("book changed by Rest: %+v", got)
				}
			}
		})
	}
}

func TestRestDoesNotMatch(t *testing.T) {
	b := New()
	mustRest(t, b, ord(1, "a", Sell, 0, 40*c, 5), ord(2, "b", Buy, 0, 60*c, 5))
	if b.Len() != 2 {
		t.Fatalf("Len = %d, want 2", b.Len())
	}
	if o, ok := b.Get(2); !ok || o.Shares != 5 {
		t.Fatalf("Get(2) = %+v, %v", o, ok)
	}
}

func TestCancel(t *testing.T) {
	b := New()
	mustRest(t, b, ord(1, "a", Sell, 0, 40*c, 5), ord(2, "b", Sell, 0, 40*c, 5), ord(3, "c", Sell, 0, 40*c, 5))
	if _, err := b.Place(ord(10, "t", Buy, 0, 40*c, 7), IOC); err != nil {
		t.Fatal(err)
	}
	o, ok := b.Cancel(2)
	if !ok || o != ord(2, "b", Sell, 0, 40*c, 3) {
		t.Fatalf("Cancel(2) = %+v, %v; want the order with its 3 remaining shares", o, ok)
	}
	if _, ok := b.Cancel(2); ok {
		t.Fatal("second Cancel(2) succeeded")
	}
	if _, ok := b.Cancel(1); ok {
		t.Fatal("Cancel of a filled order succeeded")
	}
	if _, ok := b.Get(2); ok {
		t.Fatal("Get finds a cancelled order")
	}
	if got := b.Levels(0, Sell); !reflect.DeepEqual(got, []Level{{40 * c, 5}}) {
		t.Fatalf("Levels = %+v", got)
	}
	// The cancelled order no longer takes part in matching; the next in line does.
	r, err := b.Place(ord(11, "t", Buy, 0, 40*c, 10), GTC)
	if err != nil {
		t.Fatal(err)
	}
	want := []Fill{fill(ord(3, "c", Sell, 0, 40*c, 5), Transfer, 5)}
	if !reflect.DeepEqual(r.Fills, want) || !r.Rested {
		t.Fatalf("Place = %+v", r)
	}
	if _, ok := b.Cancel(11); !ok || b.Len() != 0 {
		t.Fatalf("Cancel of the rested taker: ok=%v Len=%d", ok, b.Len())
	}
	if _, ok := b.Best(0, Sell); ok {
		t.Fatal("Best on an empty side says ok")
	}
	// A cancelled ID may be used again.
	mustRest(t, b, ord(2, "b", Sell, 1, 30*c, 1))
}

func TestBestAndLevels(t *testing.T) {
	b := New()
	mustRest(t, b,
		ord(1, "a", Buy, 0, 30*c, 5), ord(2, "a", Buy, 0, 45*c, 1), ord(3, "b", Buy, 0, 45*c, 2), ord(4, "a", Buy, 0, 1*c, 9),
		ord(5, "a", Sell, 0, 60*c, 5), ord(6, "a", Sell, 0, 99*c, 4), ord(7, "a", Sell, 0, 70*c, 3),
		ord(8, "c", Buy, 1, 20*c, 7),
	)
	if p, ok := b.Best(0, Buy); !ok || p != 45*c {
		t.Errorf("Best(0, Buy) = %d, %v", p, ok)
	}
	if p, ok := b.Best(0, Sell); !ok || p != 60*c {
		t.Errorf("Best(0, Sell) = %d, %v", p, ok)
	}
	if p, ok := b.Best(1, Buy); !ok || p != 20*c {
		t.Errorf("Best(1, Buy) = %d, %v", p, ok)
	}
	// Own orders only: the buy of outcome 1 at 20 is not an ask of outcome 0 at 80.
	if _, ok := b.Best(1, Sell); ok {
		t.Error("Best(1, Sell) ok on an empty side")
	}
	if _, ok := b.Best(2, Sell); ok {
		t.Error("Best(2, Sell) ok")
	}
	if got, want := b.Levels(0, Buy), []Level{{45 * c, 3}, {30 * c, 5}, {1 * c, 9}}; !reflect.DeepEqual(got, want) {
		t.Errorf("Levels(0, Buy) = %+v, want %+v", got, want)
	}
	if got, want := b.Levels(0, Sell), []Level{{60 * c, 5}, {70 * c, 3}, {99 * c, 4}}; !reflect.DeepEqual(got, want) {
		t.Errorf("Levels(0, Sell) = %+v, want %+v", got, want)
	}
	if got := b.Levels(1, Sell); got != nil {
		t.Errorf("Levels(1, Sell) = %+v, want nil", got)
	}
	// Levels returns a copy: changing it does not change the book.
	l := b.Levels(0, Buy)
	l[0].Shares = 1000
	if got := b.Levels(0, Buy)[0].Shares; got != 3 {
		t.Errorf("Levels aliases the book: %d", got)
	}
}

func TestFillsDoNotAlias(t *testing.T) {
	b := New()
	mustRest(t, b, ord(1, "a", Sell, 0, 40*c, 5))
	r1, err := b.Place(ord(2, "t", Buy, 0, 40*c, 2), GTC)
	if err != nil {
		t.Fatal(err)
	}
	saved := append([]Fill(nil), r1.Fills...)
	if _, err := b.Place(ord(3, "t", Buy, 0, 40*c, 3), GTC); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(r1.Fills, saved) {
		t.Fatalf("an earlier Result changed: %+v", r1.Fills)
	}
	if saved[0].Maker.Shares != 5 {
		t.Fatalf("Maker should be the order before the fill, got %+v", saved[0].Maker)
	}
}

func TestPlaceIntoReusesBuffer(t *testing.T) {
	b := New()
	mustRest(t, b, ord(1, "a", Sell, 0, 40*c, 5), ord(2, "a", Sell, 0, 41*c, 5))
	buf := make([]Fill, 0, 8)
	r, err := b.PlaceInto(ord(3, "t", Buy, 0, 41*c, 7), IOC, buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Fills) != 2 || &r.Fills[0] != &buf[:1][0] {
		t.Fatalf("PlaceInto did not fill buf: %+v", r)
	}
	allocs := testing.AllocsPerRun(100, func() {
		_, _ = b.PlaceInto(ord(4, "t", Buy, 0, 10*c, 7), IOC, buf)
	})
	if allocs != 0 {
		t.Errorf("PlaceInto IOC without a cross allocates %v times", allocs)
	}
}

// TestCrossConditions tries every pair of prices for every pair of a resting
// order and an incoming one, so the boundaries (p+q == One, equal prices)
// are covered everywhere rather than at one sample point.
func TestCrossConditions(t *testing.T) {
	b := New()
	for _, rs := range []Side{Buy, Sell} {
		for _, ro := range []int{0, 1} {
			for _, ts := range []Side{Buy, Sell} {
				for pt := int64(1); pt <= 99; pt++ {
					for qt := int64(1); qt <= 99; qt++ {
						p, q := pt*Tick, qt*Tick
						var want bool
						var kind Kind
						switch {
						case ro == 0 && rs == Sell && ts == Buy:
							want, kind = p <= q, Transfer
						case ro == 0 && rs == Buy && ts == Sell:
							want, kind = p >= q, Transfer
						case ro == 1 && rs == Buy && ts == Buy:
							want, kind = p+q >= One, Mint
						case ro == 1 && rs == Sell && ts == Sell:
							want, kind = p+q <= One, Merge
						}
						maker := ord(1, "m", rs, ro, p, 3)
						mustRest(t, b, maker)
						r, err := b.Place(ord(2, "t", ts, 0, q, 2), IOC)
						if err != nil {
							t.Fatal(err)
						}
						if _, ok := b.Cancel(1); !ok || b.Len() != 0 {
							t.Fatal("the maker is gone or the taker rested")
						}
						if got := r.Filled == 2; got != want {
							t.Fatalf("resting %v of %d at %d, incoming %v of 0 at %d: filled %d, want cross %v", rs, ro, p, ts, q, r.Filled, want)
						}
						if want && !reflect.DeepEqual(r.Fills, []Fill{fill(maker, kind, 2)}) {
							t.Fatalf("fills %+v", r.Fills)
						}
					}
				}
			}
		}
	}
}
