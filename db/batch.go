package db

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Batching says how a Batcher takes items together.
type Batching struct {
	// What a batch does, for the errors of a batch that fails as a whole
	// ("store the steps of games").
	What string
	// Size is the most items one batch holds.
	Size int
	// Writers is the most batches running at once.
	Writers int
	// Timeout bounds each batch. No caller's cancellation ends a batch,
	// which carries other callers' items, so this is what does.
	Timeout time.Duration
	// OneKey: a batch holds items of one key only, in arrival order (the
	// orders of one market, matched one after another in one
	// transaction). Otherwise a batch holds items of distinct keys, one
	// of each (steps of different games, stored by one statement).
	OneKey bool
}

// Result is what a batch did with one of its items: the item's value, or
// the error that refused or failed it.
type Result[R any] struct {
	Value R
	Err   error
}

// Batcher writes items in batches: the items that callers hand it (Do)
// while Writers batches run are taken together by the next one, so that a
// commit, a round trip and a plan serve many callers instead of one.
// Items have keys (a game, a market): a key has at most one batch in
// flight, and its later items wait, in arrival order, for a later batch,
// so a batch sees what its key's earlier items wrote.
//
// The batch function (write, given to NewBatcher) is what a batch does
// with its items; it returns one Result per item, in the items' order. It
// runs with the context values of the caller that started its writer but
// none of its cancellation, under Batching.Timeout. A panic in it fails
// its own batch's items and leaves the Batcher running.
type Batcher[K comparable, T, R any] struct {
	cfg   Batching
	write func(ctx context.Context, items []T) []Result[R]

	mu       sync.Mutex
	queue    []*waiting[K, T, R] // in arrival order
	running  int                 // batches being written
	inFlight map[K]struct{}      // keys with an item in a running batch
}

// A waiting item and where its caller waits for its result.
type waiting[K comparable, T, R any] struct {
	key  K
	item T
	done chan Result[R] // buffered: a caller who left is not waited for
}

// NewBatcher returns a Batcher that writes its batches with write. It
// panics when cfg has no Timeout (a batch nobody can cancel must end).
func NewBatcher[K comparable, T, R any](cfg Batching, write func(ctx context.Context, items []T) []Result[R]) *Batcher[K, T, R] {
	if cfg.Timeout <= 0 {
		panic("db.NewBatcher: Batching.Timeout must be positive")
	}
	cfg.Size, cfg.Writers = max(cfg.Size, 1), max(cfg.Writers, 1)
	return &Batcher[K, T, R]{cfg: cfg, write: write, inFlight: map[K]struct{}{}}
}

// Do hands item, of key, to the next batch that may take it and returns
// its result. When ctx ends first, Do returns ctx.Err() at once, and the
// item may still be written: it is in a batch, or waits for one, that
// carries other callers' items too.
func (b *Batcher[K, T, R]) Do(ctx context.Context, key K, item T) (R, error) {
	w := &waiting[K, T, R]{key: key, item: item, done: make(chan Result[R], 1)}
	b.mu.Lock()
	b.queue = append(b.queue, w)
	var batch []*waiting[K, T, R]
	if b.running < b.cfg.Writers {
		if batch = b.take(); batch != nil {
			b.running++
		}
	}
	b.mu.Unlock()
	if batch != nil {
		// A writer of its own, so that this caller may leave like any
		// other; it outlives the caller's cancellation.
		go b.drain(context.WithoutCancel(ctx), batch)
	}
	select {
	case r := <-w.done:
		return r.Value, r.Err
	case <-ctx.Done():
		var zero R
		return zero, ctx.Err()
	}
}

// drain writes batch, answers its callers, and goes on with the next batch
// it may take until there is none (then it counts itself out of the
// running writers).
func (b *Batcher[K, T, R]) drain(ctx context.Context, batch []*waiting[K, T, R]) {
	for batch != nil {
		results := b.run(ctx, batch)
		b.mu.Lock()
		for _, w := range batch {
			delete(b.inFlight, w.key)
		}
		done := batch
		if batch = b.take(); batch == nil {
			b.running--
		}
		b.mu.Unlock()
		for i, w := range done {
			w.done <- results[i]
		}
	}
}

// run calls the batch function on batch's items under the time limit and
// returns one result per item; a panic, or a wrong number of results,
// fails every item of the batch.
func (b *Batcher[K, T, R]) run(ctx context.Context, batch []*waiting[K, T, R]) (results []Result[R]) {
	defer func() {
		if p := recover(); p != nil {
			results = failed[R](len(batch), fmt.Errorf("%s (a batch of %d): panic: %v", b.cfg.What, len(batch), p))
		}
	}()
	ctx, cancel := context.WithTimeout(ctx, b.cfg.Timeout)
	defer cancel()
	items := make([]T, len(batch))
	for i, w := range batch {
		items[i] = w.item
	}
	results = b.write(ctx, items)
	if len(results) != len(batch) {
		return failed[R](len(batch), fmt.Errorf("%s: a batch of %d items gave %d results", b.cfg.What, len(batch), len(results)))
	}
	return results
}

func failed[R any](n int, err error) []Result[R] {
	out := make([]Result[R], n)
	for i := range out {
		out[i].Err = err
	}
	return out
}

// take removes the next batch from the queue and marks its keys in
// flight: up to Size items in arrival order, none of a key in flight, and
// either one key's items (OneKey) or one item of each key. What it passes
// over stays queued in order. It returns nil when it finds nothing to
// take. The caller holds mu.
func (b *Batcher[K, T, R]) take() []*waiting[K, T, R] {
	var batch []*waiting[K, T, R]
	rest := b.queue[:0]
	for _, w := range b.queue {
		if len(batch) < b.cfg.Size && b.fits(batch, w.key) {
			batch = append(batch, w)
			b.inFlight[w.key] = struct{}{}
			continue
		}
		rest = append(rest, w)
	}
	clear(b.queue[len(rest):])
	b.queue = rest
	return batch
}

// fits reports whether an item of key may join batch.
func (b *Batcher[K, T, R]) fits(batch []*waiting[K, T, R], key K) bool {
	if b.cfg.OneKey && len(batch) > 0 {
		return key == batch[0].key
	}
	_, busy := b.inFlight[key]
	return !busy
}
