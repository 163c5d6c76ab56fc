package db

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// The tests run in synctest bubbles: synctest.Wait returns once every
// goroutine of the test is blocked (a caller waiting for its result, a
// batch held by the test), and the bubble's clock moves only when all of
// them are, so no test waits on or asserts the wall clock.

// held is a batch function that the test holds: each batch is announced
// on started and finishes when the test releases it (then it panics if it
// holds "boom").
type held struct {
	started chan *heldBatch
}

type heldBatch struct {
	items   []string
	release chan struct{}
}

func (hb *heldBatch) String() string { return fmt.Sprint(hb.items) }

func newHeld() *held { return &held{started: make(chan *heldBatch)} }

func (h *held) write(_ context.Context, items []string) []Result[string] {
	hb := &heldBatch{items: slices.Clone(items), release: make(chan struct{})}
	h.started <- hb
	<-hb.release
	if slices.Contains(items, "boom") {
		panic("a bug")
	}
	out := make([]Result[string], len(items))
	for i, it := range items {
		out[i].Value = "wrote " + it
	}
	return out
}

// next returns the batch that started, failing when none did or it holds
// other items than want.
func (h *held) next(t *testing.T, want string) *heldBatch {
	t.Helper()
	synctest.Wait()
	select {
	case hb := <-h.started:
		if got := hb.String(); got != want {
			t.Fatalf("batch %s, want %s", got, want)
		}
		return hb
	default:
		t.Fatalf("no batch started, want %s", want)
		return nil
	}
}

// noneStarted fails when a batch started.
func (h *held) noneStarted(t *testing.T) {
	t.Helper()
	synctest.Wait()
	select {
	case hb := <-h.started:
		t.Fatalf("batch %s started", hb)
	default:
	}
}

type answer struct {
	value string
	err   error
}

// do calls b.Do for item in a goroutine, with the item's first letter as
// its key, and waits until the call is queued or written.
func do(ctx context.Context, b *Batcher[string, string, string], item string) <-chan answer {
	out := make(chan answer, 1)
	go func() {
		v, err := b.Do(ctx, item[:1], item)
		out <- answer{v, err}
	}()
	synctest.Wait()
	return out
}

func wrote(t *testing.T, ch <-chan answer, item string) {
	t.Helper()
	synctest.Wait()
	select {
	case a := <-ch:
		if a.err != nil || a.value != "wrote "+item {
			t.Fatalf("%s answered %+v, want written", item, a)
		}
	default:
		t.Fatalf("%s not answered", item)
	}
}

func batching(writers, size int, oneKey bool) Batching {
	return Batching{What: "write test items", Size: size, Writers: writers, Timeout: time.Minute, OneKey: oneKey}
}

func TestBatcherTakesTogetherTheItemsThatArriveWhileABatchRuns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHeld()
		b := NewBatcher[string](batching(1, 64, false), h.write)
		ctx := context.Background()
		a := do(ctx, b, "a1")
		first := h.next(t, "[a1]")
		later := []<-chan answer{do(ctx, b, "b1"), do(ctx, b, "c1"), do(ctx, b, "d1")}
		h.noneStarted(t) // the only writer is busy
		close(first.release)
		wrote(t, a, "a1")
		close(h.next(t, "[b1 c1 d1]").release)
		for i, item := range []string{"b1", "c1", "d1"} {
			wrote(t, later[i], item)
		}
		if b.running != 0 || len(b.queue) != 0 || len(b.inFlight) != 0 {
			t.Fatalf("after the last batch: %d running, %d queued, %d in flight", b.running, len(b.queue), len(b.inFlight))
		}
	})
}

func TestBatcherKeepsOneItemOfAKeyInFlightAndEachKeysOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHeld()
		b := NewBatcher[string](batching(2, 64, false), h.write)
		ctx := context.Background()
		a1 := do(ctx, b, "a1")
		first := h.next(t, "[a1]")
		// A writer is free, but the only item waiting is of a key in
		// flight: nothing starts.
		a2 := do(ctx, b, "a2")
		h.noneStarted(t)
		b1 := do(ctx, b, "b1") // the free writer takes it
		second := h.next(t, "[b1]")
		a3, c1 := do(ctx, b, "a3"), do(ctx, b, "c1")
		h.noneStarted(t)
		close(first.release)
		wrote(t, a1, "a1")
		// a's writer takes a2 (a's next, not a3) and c1, which waited.
		third := h.next(t, "[a2 c1]")
		close(second.release)
		wrote(t, b1, "b1")
		h.noneStarted(t) // a3 waits for a2
		close(third.release)
		wrote(t, a2, "a2")
		wrote(t, c1, "c1")
		close(h.next(t, "[a3]").release)
		wrote(t, a3, "a3")
	})
}

func TestBatcherSizeAndOneKeyBatches(t *testing.T) {
	for _, c := range []struct {
		name   string
		size   int
		oneKey bool
		queued []string
		want   []string
	}{
		{"one item of each key", 64, false, []string{"a1", "b1", "a2", "c1", "a3", "b2"}, []string{"[a1 b1 c1]", "[a2 b2]", "[a3]"}},
		{"one item of each key, two at most", 2, false, []string{"a1", "a2", "b1", "c1", "d1"}, []string{"[a1 b1]", "[a2 c1]", "[d1]"}},
		{"one key's items, two at most", 2, true, []string{"n1", "m2", "m3", "n2", "m4"}, []string{"[n1 n2]", "[m2 m3]", "[m4]"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHeld()
				b := NewBatcher[string](batching(1, c.size, c.oneKey), h.write)
				ctx := context.Background()
				m1 := do(ctx, b, "m1")
				first := h.next(t, "[m1]")
				var answers []<-chan answer
				for _, item := range c.queued {
					answers = append(answers, do(ctx, b, item))
				}
				close(first.release)
				wrote(t, m1, "m1")
				for _, want := range c.want {
					close(h.next(t, want).release)
				}
				h.noneStarted(t)
				for i, item := range c.queued {
					wrote(t, answers[i], item)
				}
			})
		})
	}
}

func TestBatcherRunsAtMostWritersBatchesAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHeld()
		b := NewBatcher[string](batching(2, 64, false), h.write)
		ctx := context.Background()
		a1 := do(ctx, b, "a1")
		first := h.next(t, "[a1]")
		b1 := do(ctx, b, "b1")
		second := h.next(t, "[b1]")
		c1, d1 := do(ctx, b, "c1"), do(ctx, b, "d1")
		h.noneStarted(t)
		if b.running != 2 || len(b.queue) != 2 {
			t.Fatalf("%d running, %d queued; want 2 and 2", b.running, len(b.queue))
		}
		close(second.release)
		wrote(t, b1, "b1")
		third := h.next(t, "[c1 d1]")
		close(first.release)
		close(third.release)
		wrote(t, a1, "a1")
		wrote(t, c1, "c1")
		wrote(t, d1, "d1")
	})
}

func TestABatchHasATimeLimitThatNoCallerEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		type seen struct {
			after time.Duration
			err   error
		}
		saw := make(chan seen, 1)
		b := NewBatcher[string](Batching{What: "write test items", Size: 64, Writers: 1, Timeout: 30 * time.Second},
			func(ctx context.Context, items []string) []Result[string] {
				start := time.Now()
				<-ctx.Done()
				saw <- seen{time.Since(start), ctx.Err()}
				return failed[string](len(items), ctx.Err())
			})
		ctx, cancel := context.WithCancel(context.Background())
		gone := do(ctx, b, "a1")
		cancel()
		synctest.Wait()
		select {
		case a := <-gone:
			if !errors.Is(a.err, context.Canceled) {
				t.Fatalf("the caller who left: %+v, want its own cancellation", a)
			}
		default:
			t.Fatal("the caller who left is kept waiting for its batch")
		}
		select {
		case s := <-saw:
			t.Fatalf("the caller's cancellation ended the batch: %+v", s)
		default:
		}
		s := <-saw // the bubble's clock runs on to the time limit
		if s.after != 30*time.Second || !errors.Is(s.err, context.DeadlineExceeded) {
			t.Fatalf("the batch ended after %v with %v; want 30s and its deadline", s.after, s.err)
		}
	})
}

func TestAnItemWhoseCallerLeftIsStillWritten(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHeld()
		b := NewBatcher[string](batching(1, 64, false), h.write)
		first := do(context.Background(), b, "a1")
		held := h.next(t, "[a1]")
		ctx, cancel := context.WithCancel(context.Background())
		left := do(ctx, b, "b1")
		cancel()
		synctest.Wait()
		select {
		case a := <-left:
			if !errors.Is(a.err, context.Canceled) || a.value != "" {
				t.Fatalf("the caller who left: %+v, want its own cancellation", a)
			}
		default:
			t.Fatal("the caller who left is kept waiting")
		}
		close(held.release)
		wrote(t, first, "a1")
		close(h.next(t, "[b1]").release) // written all the same
		// Its result went nowhere, and the batcher goes on.
		after := do(context.Background(), b, "b2")
		close(h.next(t, "[b2]").release)
		wrote(t, after, "b2")
	})
}

func TestAPanicFailsItsOwnBatchOnly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHeld()
		b := NewBatcher[string](batching(1, 64, false), h.write)
		ctx := context.Background()
		first := do(ctx, b, "a1")
		held := h.next(t, "[a1]")
		boom, beside := do(ctx, b, "boom"), do(ctx, b, "c1")
		close(held.release)
		wrote(t, first, "a1")
		close(h.next(t, "[boom c1]").release) // it panics
		synctest.Wait()
		for _, ch := range []<-chan answer{boom, beside} {
			if a := <-ch; a.err == nil || !strings.Contains(a.err.Error(), "write test items (a batch of 2): panic: a bug") {
				t.Fatalf("an item of the batch that panicked: %+v", a)
			}
		}
		after := do(ctx, b, "b1")
		close(h.next(t, "[b1]").release)
		wrote(t, after, "b1")
		if b.running != 0 || len(b.inFlight) != 0 {
			t.Fatalf("after the panic: %d running, %d in flight", b.running, len(b.inFlight))
		}
	})
}

// Many callers at once, several per key, each waiting for its answer
// before its next item: every item is written once and answered with its
// own result, no batch holds a key twice or a key in flight elsewhere, at
// most Writers batches run, and each caller's items are written in order.
func TestBatcherUnderConcurrency(t *testing.T) {
	const callers, items, keys, writers, size = 16, 50, 4, 3, 5
	var (
		mu      sync.Mutex
		flying  = map[string]bool{}
		running int
		byKey   = map[string][]string{}
	)
	fail := make(chan string, 1)
	report := func(format string, args ...any) {
		select {
		case fail <- fmt.Sprintf(format, args...):
		default:
		}
	}
	b := NewBatcher[string](Batching{What: "write test items", Size: size, Writers: writers, Timeout: time.Minute},
		func(_ context.Context, batch []string) []Result[string] {
			mu.Lock()
			if running++; running > writers {
				report("%d batches ran at once", running)
			}
			if len(batch) > size {
				report("a batch of %d", len(batch))
			}
			for _, it := range batch {
				k := it[:1]
				if flying[k] {
					report("key %s twice in flight (%v)", k, batch)
				}
				flying[k] = true
				byKey[k] = append(byKey[k], it)
			}
			mu.Unlock()
			runtime.Gosched() // let other writers overlap this batch, if they may
			out := make([]Result[string], len(batch))
			mu.Lock()
			for i, it := range batch {
				delete(flying, it[:1])
				out[i].Value = "wrote " + it
			}
			running--
			mu.Unlock()
			return out
		})
	var wg sync.WaitGroup
	for c := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := string(rune('a' + c%keys))
			for i := range items {
				item := fmt.Sprintf("%s.%02d.%03d", key, c, i)
				v, err := b.Do(context.Background(), key, item)
				if err != nil || v != "wrote "+item {
					report("%s answered %q, %v", item, v, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	select {
	case msg := <-fail:
		t.Fatal(msg)
	default:
	}
	total := 0
	for k, written := range byKey {
		total += len(written)
		last := map[string]string{}
		for _, it := range written {
			caller := it[:5]
			if it <= last[caller] {
				t.Fatalf("key %s: %s written after %s", k, it, last[caller])
			}
			last[caller] = it
		}
	}
	if total != callers*items {
		t.Fatalf("%d items written, want %d", total, callers*items)
	}
}
