package engine

import (
	"math/rand/v2"
	"testing"
)

// benchDepth is the number of resting orders the benchmark keeps on the book,
// in the range of a busy game's market.
const benchDepth = 2000

type benchOrder struct {
	o   Order
	tif TIF
}

// benchStream pre-draws a realistic mix so that the timed loop measures the
// engine rather than the random number generator: most orders are GTC limits
// a few ticks either side of a slowly drifting mid (some of them marketable),
// a quarter are IOC orders that usually cross, and sizes are mostly small with
// an occasional large one.
func benchStream(n int) []benchOrder {
	rng := rand.New(rand.NewPCG(1, 2))
	owners := []string{"ann", "bob", "cat", "dan", "eve", "fay", "gus", "hal"}
	out := make([]benchOrder, n)
	for i := range out {
		mid := 50 + int64(i/5000%7-3)*3
		o := Order{Owner: owners[rng.IntN(len(owners))], Outcome: rng.IntN(2), Side: Side(rng.IntN(2))}
		if o.Outcome == 1 {
			mid = 100 - mid
		}
		tif := GTC
		var away int64
		if rng.IntN(4) == 0 {
			tif = IOC
			away = -int64(rng.IntN(4)) // crosses by up to 3 ticks
		} else {
			away = int64(rng.IntN(12)) - 1 // mostly passive, sometimes marketable
		}
		if o.Side == Buy {
			o.Price = (mid - away) * Tick
		} else {
			o.Price = (mid + away) * Tick
		}
		o.Price = min(max(o.Price, MinPrice), MaxPrice)
		o.Shares = int64(1 + rng.IntN(100))
		if rng.IntN(100) == 0 {
			o.Shares = int64(1000 + rng.IntN(10000))
		}
		out[i] = benchOrder{o, tif}
	}
	return out
}

// benchRun places orders from the stream one per iteration and, to hold the
// book at benchDepth, cancels the oldest rested orders when it grows beyond
// that (stale IDs of orders filled since are skipped by Cancel returning
// false). place is Place or PlaceInto.
func benchRun(b *testing.B, place func(*Book, Order, TIF) (Result, error)) {
	stream := benchStream(1 << 16)
	book := New()
	ring := make([]int64, 1<<16) // rested IDs, oldest at head
	var head, tail int
	var id int64
	var fills int
	step := func(i int) {
		bo := stream[i&(len(stream)-1)]
		id++
		bo.o.ID = id
		r, err := place(book, bo.o, bo.tif)
		if err != nil {
			b.Fatal(err)
		}
		fills += len(r.Fills)
		if r.Rested {
			if tail-head == len(ring) { // full of stale IDs: drop the oldest
				book.Cancel(ring[head&(len(ring)-1)])
				head++
			}
			ring[tail&(len(ring)-1)] = id
			tail++
		}
		for book.Len() > benchDepth && head < tail {
			book.Cancel(ring[head&(len(ring)-1)])
			head++
		}
	}
	for i := 0; book.Len() < benchDepth || i < 1<<16; i++ {
		step(i)
	}
	fills = 0
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		step(i)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "orders/s")
	b.ReportMetric(float64(fills)/float64(b.N), "fills/op")
	b.ReportMetric(float64(book.Len()), "depth")
}

// BenchmarkPlace measures Place, which allocates a new Fills slice per call.
func BenchmarkPlace(b *testing.B) {
	benchRun(b, func(bk *Book, o Order, tif TIF) (Result, error) { return bk.Place(o, tif) })
}

// BenchmarkPlaceInto measures PlaceInto with one reused buffer, the way a
// single-goroutine market loop would call it.
func BenchmarkPlaceInto(b *testing.B) {
	buf := make([]Fill, 0, 64)
	benchRun(b, func(bk *Book, o Order, tif TIF) (Result, error) {
		r, err := bk.PlaceInto(o, tif, buf)
		buf = r.Fills
		return r, err
	})
}
