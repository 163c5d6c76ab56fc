package main

import (
	"math"
	"slices"
	"sort"
	"sync"
	"time"
)

// Latency is a percentile summary of a set of durations, in milliseconds.
type Latency struct {
	Count  int     `json:"count"`
	MeanMs float64 `json:"meanMs"`
	P50Ms  float64 `json:"p50Ms"`
	P90Ms  float64 `json:"p90Ms"`
	P99Ms  float64 `json:"p99Ms"`
	MaxMs  float64 `json:"maxMs"`
}

// Summarize sorts ds in place and returns its percentiles (nearest rank).
// An empty set gives a zero Latency.
func Summarize(ds []time.Duration) Latency {
	if len(ds) == 0 {
		return Latency{}
	}
	slices.Sort(ds)
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return Latency{
		Count:  len(ds),
		MeanMs: ms(sum / time.Duration(len(ds))),
		P50Ms:  ms(Percentile(ds, 50)),
		P90Ms:  ms(Percentile(ds, 90)),
		P99Ms:  ms(Percentile(ds, 99)),
		MaxMs:  ms(ds[len(ds)-1]),
	}
}

// Percentile returns the nearest-rank p-th percentile (0 < p <= 100) of
// sorted: the smallest value that at least p percent of the set is at or
// below. It returns 0 for an empty set.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	rank = min(max(rank, 1), len(sorted))
	return sorted[rank-1]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// epoch is the run's time origin: moments are kept as offsets from it
// (monotonic, and smaller than time.Time).
var epoch = time.Now()

// now is the current moment as an offset from epoch.
func now() time.Duration { return time.Since(epoch) }

// window is a span [From, To) of the run; To <= 0 means no end.
type window struct{ From, To time.Duration }

// everything is the window of the whole run.
var everything = window{}

func (w window) contains(at time.Duration) bool {
	return at >= w.From && (w.To <= 0 || at < w.To)
}

// Recorder collects durations from many goroutines.
type Recorder struct {
	mu sync.Mutex
	ds []time.Duration
}

// Add records one duration.
func (r *Recorder) Add(d time.Duration) {
	r.mu.Lock()
	r.ds = append(r.ds, d)
	r.mu.Unlock()
}

// Summary returns the percentiles of everything recorded so far.
func (r *Recorder) Summary() Latency {
	r.mu.Lock()
	ds := slices.Clone(r.ds)
	r.mu.Unlock()
	return Summarize(ds)
}

// ErrorCount is how often one kind of error happened.
type ErrorCount struct {
	Kind  string `json:"kind"`
	Count int    `json:"count"`
}

// errorEvent is one error at a moment of the run.
type errorEvent struct {
	at   time.Duration // since epoch
	kind string
}

// Errors counts errors by kind from many goroutines, keeping when each
// happened so that a window of the run can be counted on its own.
type Errors struct {
	mu     sync.Mutex
	events []errorEvent
}

// Add records one error of a kind (see errorKind) as happening now.
func (e *Errors) Add(kind string) { e.addAt(now(), kind) }

// addN records n errors of a kind as happening now.
func (e *Errors) addN(kind string, n int) {
	for range n {
		e.Add(kind)
	}
}

func (e *Errors) addAt(at time.Duration, kind string) {
	e.mu.Lock()
	e.events = append(e.events, errorEvent{at: at, kind: kind})
	e.mu.Unlock()
}

// Between counts the errors of the window w by kind, most frequent first.
func (e *Errors) Between(w window) []ErrorCount {
	e.mu.Lock()
	counts := map[string]int{}
	for _, ev := range e.events {
		if w.contains(ev.at) {
			counts[ev.kind]++
		}
	}
	e.mu.Unlock()
	return sortCounts(counts)
}

// All counts every recorded error by kind, most frequent first.
func (e *Errors) All() []ErrorCount { return e.Between(everything) }

func sortCounts(counts map[string]int) []ErrorCount {
	out := make([]ErrorCount, 0, len(counts))
	for k, n := range counts {
		out = append(out, ErrorCount{Kind: k, Count: n})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		return out[i].Kind < out[j].Kind
	})
	return out
}

// totalErrors sums counts.
func totalErrors(cs []ErrorCount) int {
	n := 0
	for _, c := range cs {
		n += c.Count
	}
	return n
}

// percent returns 100*part/whole, or 0 when whole is 0.
func percent(part, whole int) float64 {
	if whole == 0 {
		return 0
	}
	return 100 * float64(part) / float64(whole)
}
