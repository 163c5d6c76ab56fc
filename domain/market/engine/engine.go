// Package engine is the matching engine of a binary prediction market: one
// book per game, two outcomes, price-time priority, and the crossings that
// only a two-outcome market has (two buys of opposite outcomes mint a pair of
// shares, two sells of opposite outcomes merge one). It is pure: no clock, no
// I/O, no goroutines, and a Book is not safe for concurrent use, so the caller
// serialises access to it (one goroutine per book, or a lock).
package engine

import (
	"errors"
	"fmt"
	"maps"
	"math/bits"
	"slices"
)

// Units. A share of an outcome pays One if that outcome wins, so prices are
// minor units per share in [MinPrice, MaxPrice] on a grid of Tick.
const (
	Tick      int64 = 10000
	MinPrice  int64 = 10000
	MaxPrice  int64 = 990000
	One       int64 = 1000000 // a pair of shares (one of each outcome) is worth exactly this
	MaxShares int64 = 100000
)

// oneTick is One in ticks: a price at tick t of one outcome is worth
// oneTick-t seen from the other outcome.
const oneTick = int(One / Tick)

// Side says whether an order buys or sells shares of its outcome.
type Side int8

// Sides.
const (
	Buy Side = iota
	Sell
)

// String names the side for messages and test output.
func (s Side) String() string {
	switch s {
	case Buy:
		return "buy"
	case Sell:
		return "sell"
	}
	return fmt.Sprintf("Side(%d)", int8(s))
}

// TIF is an order's time in force.
type TIF int8

// Times in force.
const (
	GTC TIF = iota // the unfilled rest stays on the book
	IOC            // the unfilled rest is cancelled and never rests
)

// Kind of a fill.
type Kind int8

// Kinds of fill.
const (
	Transfer Kind = iota // buy against sell of the same outcome: shares change hands
	Mint                 // buy against buy of the other outcome: a new pair is created
	Merge                // sell against sell of the other outcome: a pair is destroyed
)

// String names the kind for messages and test output.
func (k Kind) String() string {
	switch k {
	case Transfer:
		return "transfer"
	case Mint:
		return "mint"
	case Merge:
		return "merge"
	}
	return fmt.Sprintf("Kind(%d)", int8(k))
}

// Order is a limit order. On the book, Shares is what is still open.
type Order struct {
	ID      int64 // unique; a lower ID is earlier (time priority)
	Owner   string
	Side    Side
	Outcome int   // 0 or 1
	Price   int64 // limit price per share of Outcome
	Shares  int64 // shares still open
}

// Fill is one match between the incoming order (the taker) and a resting
// order (the maker).
type Fill struct {
	Maker      Order // the resting order as it was just before this fill
	Kind       Kind
	Shares     int64
	MakerPrice int64 // = Maker.Price: what the maker pays (buy) or gets (sell) per share
	TakerPrice int64 // what the taker pays or gets per share of its own outcome: MakerPrice for Transfer, One-MakerPrice for Mint and Merge
}

// Result is what Place did with an incoming order.
type Result struct {
	Fills  []Fill // in execution order
	Filled int64  // taker shares filled (sum of Fills' Shares)
	Rested bool   // the unfilled rest now rests on the book (GTC only); with IOC or a full fill it is false
}

// Level is the aggregate of one price level of the book.
type Level struct {
	Price  int64
	Shares int64
}

// Validation errors; Place and Rest wrap them with the offending value, so
// compare with errors.Is.
var (
	ErrPrice       = errors.New("engine: price out of range or off the tick grid")
	ErrShares      = errors.New("engine: shares out of range")
	ErrOutcome     = errors.New("engine: outcome is not 0 or 1")
	ErrSide        = errors.New("engine: side is not buy or sell")
	ErrTIF         = errors.New("engine: time in force is not GTC or IOC")
	ErrDuplicateID = errors.New("engine: an order with this ID is already on the book")
)

// node holds a resting order in Book.nodes. Queues link nodes by index rather
// than by pointer so that the slab can grow and be reused without allocating
// per order; index 0 is a sentinel meaning "none".
type node struct {
	o          Order
	prev, next int32
}

// queue is the FIFO of one (outcome, side, tick). Shares is kept so that
// Levels need not walk the queue.
type queue struct {
	head, tail int32
	shares     int64
}

// Book is the order book of one market. The zero value is not usable; call New.
type Book struct {
	nodes []node
	free  []int32
	ids   map[int64]int32
	q     [2][2][oneTick]queue
	// mask has bit t set when q[outcome][side][t] is not empty, so the best
	// level is found with one or two bit scans instead of walking 99 levels.
	mask [2][2][2]uint64
}

// New returns an empty book.
func New() *Book {
	return &Book{
		nodes: make([]node, 1, 64),
		ids:   make(map[int64]int32, 64),
	}
}

func validate(o Order) error {
	if o.Side != Buy && o.Side != Sell {
		return fmt.Errorf("%w: %d", ErrSide, o.Side)
	}
	if o.Outcome != 0 && o.Outcome != 1 {
		return fmt.Errorf("%w: %d", ErrOutcome, o.Outcome)
	}
	if o.Price < MinPrice || o.Price > MaxPrice || o.Price%Tick != 0 {
		return fmt.Errorf("%w: %d", ErrPrice, o.Price)
	}
	if o.Shares < 1 || o.Shares > MaxShares {
		return fmt.Errorf("%w: %d", ErrShares, o.Shares)
	}
	return nil
}

// Rest puts o on the book without matching it, as storage reloads orders
// that were resting before. It returns a wrapped ErrSide, ErrOutcome,
// ErrPrice, ErrShares or ErrDuplicateID and leaves the book unchanged if o is
// invalid. It does not check that o leaves the book uncrossed: the orders it
// reloads were resting together, so they cannot cross.
func (b *Book) Rest(o Order) error {
	if err := validate(o); err != nil {
		return err
	}
	if _, dup := b.ids[o.ID]; dup {
		return fmt.Errorf("%w: %d", ErrDuplicateID, o.ID)
	}
	b.push(o)
	return nil
}

// Place matches o against the book and, with GTC, rests what is left. The
// returned Fills slice is freshly allocated. On a validation error (wrapped
// ErrSide, ErrOutcome, ErrPrice, ErrShares, ErrTIF or ErrDuplicateID) the
// book is unchanged and the Result is zero.
func (b *Book) Place(o Order, tif TIF) (Result, error) {
	return b.PlaceInto(o, tif, nil)
}

// PlaceInto is Place with the fills appended to buf[:0], so a caller that
// keeps buf between calls matches without allocating. Result.Fills then
// aliases buf and is overwritten by the next PlaceInto with the same buf.
func (b *Book) PlaceInto(o Order, tif TIF, buf []Fill) (Result, error) {
	if err := validate(o); err != nil {
		return Result{}, err
	}
	if tif != GTC && tif != IOC {
		return Result{}, fmt.Errorf("%w: %d", ErrTIF, tif)
	}
	if _, dup := b.ids[o.ID]; dup {
		return Result{}, fmt.Errorf("%w: %d", ErrDuplicateID, o.ID)
	}
	fills := buf[:0]
	var filled int64
	if o.Side == Buy {
		fills, filled = b.matchBuy(o, fills)
	} else {
		fills, filled = b.matchSell(o, fills)
	}
	r := Result{Fills: fills, Filled: filled}
	if filled < o.Shares && tif == GTC {
		o.Shares -= filled
		b.push(o)
		r.Rested = true
	}
	return r, nil
}

// matchBuy walks the effective asks of outcome x from the lowest up to the
// taker's limit. At effective tick e the candidates are sells of x at e and
// buys of the other outcome at oneTick-e; the lower ID of the two queue heads
// goes first, which gives time priority across both queues.
func (b *Book) matchBuy(o Order, fills []Fill) ([]Fill, int64) {
	x, y := o.Outcome, 1-o.Outcome
	limit := int(o.Price / Tick)
	rem := o.Shares
	for rem > 0 {
		e := oneTick // beyond any limit
		st, sok := b.lowest(x, Sell)
		if sok {
			e = st
		}
		bt, bok := b.highest(y, Buy)
		if bok && oneTick-bt < e {
			e = oneTick - bt
		}
		if e > limit {
			break
		}
		useSell := sok && st == e
		if useSell && bok && oneTick-bt == e {
			sq, bq := &b.q[x][Sell][st], &b.q[y][Buy][bt]
			useSell = b.nodes[sq.head].o.ID < b.nodes[bq.head].o.ID
		}
		var f Fill
		if useSell {
			f = b.take(x, Sell, st, rem)
			f.Kind, f.TakerPrice = Transfer, f.MakerPrice
		} else {
			f = b.take(y, Buy, bt, rem)
			f.Kind, f.TakerPrice = Mint, One-f.MakerPrice
		}
		fills = append(fills, f)
		rem -= f.Shares
	}
	return fills, o.Shares - rem
}

// matchSell mirrors matchBuy: effective bids of outcome x from the highest
// down to the limit, from buys of x at e and sells of the other outcome at
// oneTick-e.
func (b *Book) matchSell(o Order, fills []Fill) ([]Fill, int64) {
	x, y := o.Outcome, 1-o.Outcome
	limit := int(o.Price / Tick)
	rem := o.Shares
	for rem > 0 {
		e := 0 // below any limit
		bt, bok := b.highest(x, Buy)
		if bok {
			e = bt
		}
		st, sok := b.lowest(y, Sell)
		if sok && oneTick-st > e {
			e = oneTick - st
		}
		if e < limit {
			break
		}
		useBuy := bok && bt == e
		if useBuy && sok && oneTick-st == e {
			bq, sq := &b.q[x][Buy][bt], &b.q[y][Sell][st]
			useBuy = b.nodes[bq.head].o.ID < b.nodes[sq.head].o.ID
		}
		var f Fill
		if useBuy {
			f = b.take(x, Buy, bt, rem)
			f.Kind, f.TakerPrice = Transfer, f.MakerPrice
		} else {
			f = b.take(y, Sell, st, rem)
			f.Kind, f.TakerPrice = Merge, One-f.MakerPrice
		}
		fills = append(fills, f)
		rem -= f.Shares
	}
	return fills, o.Shares - rem
}

// take fills up to want shares from the head of a non-empty queue and
// removes the head if that exhausts it. Kind and TakerPrice are left to the
// caller, which knows which crossing this is.
func (b *Book) take(outcome int, side Side, t int, want int64) Fill {
	q := &b.q[outcome][side][t]
	i := q.head
	n := &b.nodes[i]
	f := Fill{Maker: n.o, Shares: min(want, n.o.Shares), MakerPrice: n.o.Price}
	n.o.Shares -= f.Shares
	q.shares -= f.Shares
	if n.o.Shares == 0 {
		b.unlink(i)
		delete(b.ids, f.Maker.ID)
		b.release(i)
	}
	return f
}

// push appends an already validated order to the tail of its queue.
func (b *Book) push(o Order) {
	var i int32
	if k := len(b.free); k > 0 {
		i = b.free[k-1]
		b.free = b.free[:k-1]
	} else {
		b.nodes = append(b.nodes, node{})
		i = int32(len(b.nodes) - 1)
	}
	t := int(o.Price / Tick)
	q := &b.q[o.Outcome][o.Side][t]
	b.nodes[i] = node{o: o, prev: q.tail}
	if q.tail != 0 {
		b.nodes[q.tail].next = i
	} else {
		q.head = i
		b.mask[o.Outcome][o.Side][t>>6] |= 1 << (t & 63)
	}
	q.tail = i
	q.shares += o.Shares
	b.ids[o.ID] = i
}

// unlink takes node i out of its queue, clearing the level's mask bit when
// the queue empties. The caller adjusts q.shares.
func (b *Book) unlink(i int32) {
	n := &b.nodes[i]
	t := int(n.o.Price / Tick)
	q := &b.q[n.o.Outcome][n.o.Side][t]
	if n.prev != 0 {
		b.nodes[n.prev].next = n.next
	} else {
		q.head = n.next
	}
	if n.next != 0 {
		b.nodes[n.next].prev = n.prev
	} else {
		q.tail = n.prev
	}
	if q.head == 0 {
		b.mask[n.o.Outcome][n.o.Side][t>>6] &^= 1 << (t & 63)
	}
}

// release returns node i to the free list, dropping its Owner so that the
// slab does not keep old strings alive.
func (b *Book) release(i int32) {
	b.nodes[i] = node{}
	b.free = append(b.free, i)
}

func (b *Book) lowest(outcome int, side Side) (int, bool) {
	w := &b.mask[outcome][side]
	if w[0] != 0 {
		return bits.TrailingZeros64(w[0]), true
	}
	if w[1] != 0 {
		return 64 + bits.TrailingZeros64(w[1]), true
	}
	return 0, false
}

func (b *Book) highest(outcome int, side Side) (int, bool) {
	w := &b.mask[outcome][side]
	if w[1] != 0 {
		return 127 - bits.LeadingZeros64(w[1]), true
	}
	if w[0] != 0 {
		return 63 - bits.LeadingZeros64(w[0]), true
	}
	return 0, false
}

// Cancel removes the resting order with this ID and returns it with its
// remaining shares. It returns false if no such order rests on the book.
func (b *Book) Cancel(id int64) (Order, bool) {
	i, ok := b.ids[id]
	if !ok {
		return Order{}, false
	}
	o := b.nodes[i].o
	b.unlink(i)
	b.q[o.Outcome][o.Side][o.Price/Tick].shares -= o.Shares
	delete(b.ids, id)
	b.release(i)
	return o, true
}

// Get returns the resting order with this ID, or false if there is none.
func (b *Book) Get(id int64) (Order, bool) {
	i, ok := b.ids[id]
	if !ok {
		return Order{}, false
	}
	return b.nodes[i].o, true
}

// Best returns the best price among the outcome's own resting orders of that
// side: the highest bid or the lowest ask. Orders of the other outcome are
// not translated into this outcome's view. It returns false if there are none
// or the outcome or side is invalid.
func (b *Book) Best(outcome int, side Side) (price int64, ok bool) {
	if (outcome != 0 && outcome != 1) || (side != Buy && side != Sell) {
		return 0, false
	}
	var t int
	if side == Buy {
		t, ok = b.highest(outcome, side)
	} else {
		t, ok = b.lowest(outcome, side)
	}
	return int64(t) * Tick, ok
}

// Levels returns the aggregated own resting orders of that outcome and side,
// best first (bids highest first, asks lowest first), in a new slice. It
// returns nil if there are none or the outcome or side is invalid.
func (b *Book) Levels(outcome int, side Side) []Level {
	if (outcome != 0 && outcome != 1) || (side != Buy && side != Sell) {
		return nil
	}
	var out []Level
	qs := &b.q[outcome][side]
	for k := 1; k < oneTick; k++ {
		t := k
		if side == Buy {
			t = oneTick - k
		}
		if qs[t].head != 0 {
			out = append(out, Level{Price: int64(t) * Tick, Shares: qs[t].shares})
		}
	}
	return out
}

// Orders returns the resting orders of that outcome and side in priority
// order (best price first, then earlier first), in a new slice; persistence
// and tests use it to compare the book with what they expect. It returns nil
// if there are none or the outcome or side is invalid.
func (b *Book) Orders(outcome int, side Side) []Order {
	if (outcome != 0 && outcome != 1) || (side != Buy && side != Sell) {
		return nil
	}
	var out []Order
	qs := &b.q[outcome][side]
	for k := 1; k < oneTick; k++ {
		t := k
		if side == Buy {
			t = oneTick - k
		}
		for i := qs[t].head; i != 0; i = b.nodes[i].next {
			out = append(out, b.nodes[i].o)
		}
	}
	return out
}

// Len returns the number of resting orders.
func (b *Book) Len() int { return len(b.ids) }

// Clone returns an independent copy of the book: an order can be tried on
// the copy and the copy kept or dropped.
func (b *Book) Clone() *Book {
	c := *b
	c.nodes = slices.Clone(b.nodes)
	c.free = slices.Clone(b.free)
	c.ids = maps.Clone(b.ids)
	return &c
}
