package main

import (
	"slices"
	"sync"
	"testing"
	"time"
)

func msList(vs ...int) []time.Duration {
	out := make([]time.Duration, len(vs))
	for i, v := range vs {
		out[i] = time.Duration(v) * time.Millisecond
	}
	return out
}

func TestPercentileNearestRank(t *testing.T) {
	var ds []time.Duration
	for i := 1; i <= 100; i++ {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	for _, c := range []struct {
		p    float64
		want time.Duration
	}{{50, 50 * time.Millisecond}, {90, 90 * time.Millisecond}, {99, 99 * time.Millisecond},
		{100, 100 * time.Millisecond}, {0.1, time.Millisecond}} {
		if got := Percentile(ds, c.p); got != c.want {
			t.Errorf("p%v of 1..100 ms: got %v, want %v", c.p, got, c.want)
		}
	}
	if got := Percentile(msList(7), 99); got != 7*time.Millisecond {
		t.Errorf("p99 of one value: got %v", got)
	}
	if got := Percentile(nil, 50); got != 0 {
		t.Errorf("p50 of nothing: got %v", got)
	}
	// 10 values: p50 is the 5th, p90 the 9th, p99 the 10th.
	ten := msList(1, 2, 3, 4, 5, 6, 7, 8, 9, 10)
	if Percentile(ten, 50) != 5*time.Millisecond || Percentile(ten, 90) != 9*time.Millisecond || Percentile(ten, 99) != 10*time.Millisecond {
		t.Errorf("p50/p90/p99 of 1..10: %v %v %v", Percentile(ten, 50), Percentile(ten, 90), Percentile(ten, 99))
	}
}

func TestSummarizeSortsAndAverages(t *testing.T) {
	l := Summarize(msList(30, 10, 20, 40))
	want := Latency{Count: 4, MeanMs: 25, P50Ms: 20, P90Ms: 40, P99Ms: 40, MaxMs: 40}
	if l != want {
		t.Errorf("got %+v, want %+v", l, want)
	}
	if (Summarize(nil) != Latency{}) {
		t.Errorf("empty set: got %+v", Summarize(nil))
	}
}

func TestRecorderConcurrentAdds(t *testing.T) {
	var r Recorder
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 1000 {
				r.Add(time.Duration(g*1000+i) * time.Microsecond)
			}
		})
	}
	wg.Wait()
	if s := r.Summary(); s.Count != 8000 || s.MaxMs != 7.999 {
		t.Errorf("got %+v", s)
	}
}

func TestErrorsByWindowAndKind(t *testing.T) {
	var e Errors
	e.addAt(1*time.Second, "HTTP 409 ALREADY_MOVED")
	e.addAt(2*time.Second, "timeout")
	e.addAt(3*time.Second, "timeout")
	e.addAt(5*time.Second, "HTTP 500 INTERNAL")
	all := e.All()
	want := []ErrorCount{{"timeout", 2}, {"HTTP 409 ALREADY_MOVED", 1}, {"HTTP 500 INTERNAL", 1}}
	if len(all) != len(want) {
		t.Fatalf("got %v, want %v", all, want)
	}
	for i := range want {
		if all[i] != want[i] {
			t.Errorf("row %d: got %v, want %v", i, all[i], want[i])
		}
	}
	mid := e.Between(window{From: 2 * time.Second, To: 5 * time.Second})
	if len(mid) != 1 || mid[0] != (ErrorCount{"timeout", 2}) || totalErrors(mid) != 2 {
		t.Errorf("window [2s, 5s): got %v", mid)
	}
	if open := e.Between(window{From: 4 * time.Second}); totalErrors(open) != 1 {
		t.Errorf("window [4s, end): got %v", open)
	}
}

func TestPercent(t *testing.T) {
	if percent(1, 4) != 25 || percent(3, 0) != 0 {
		t.Errorf("percent: %v %v", percent(1, 4), percent(3, 0))
	}
}

// TestAnalyzeMatchesFramesToActions checks delivery figures on a
// hand-made game. Seqs: 3 first move (submitted), 4 a spectator count,
// 5-6 second move (submitted, reveal), 7-9 resign. The spectator joined at
// seq 2 and missed 6 and 8.
func TestAnalyzeMatchesFramesToActions(t *testing.T) {
	g := newGameLog("g1")
	// Recorded out of seq order, as answers to concurrent moves may be.
	g.add(actionRecord{sent: 110 * time.Millisecond, seq: 6})
	g.add(actionRecord{sent: 100 * time.Millisecond, seq: 3})
	g.add(actionRecord{sent: 200 * time.Millisecond, seq: 9})
	g.setLastSeq(9)

	s := &spectator{games: map[string]*membership{}}
	m := &membership{game: g, joinSeq: 2, contig: 2, joinedCh: make(chan struct{})}
	s.games[g.id], s.order = m, []*membership{m}
	m.frames = []frameRecord{
		{at: 104 * time.Millisecond, seq: 3, move: true},  // 4 ms after the first move
		{at: 105 * time.Millisecond, seq: 4, move: false}, // a room event: no latency
		{at: 115 * time.Millisecond, seq: 5, move: true},  // 5 ms after the second move
		{at: 115 * time.Millisecond, seq: 5, move: true},  // the same again, replayed after a rejoin
		{at: 220 * time.Millisecond, seq: 7, move: true},  // 20 ms after the resign
		{at: 230 * time.Millisecond, seq: 9, move: true},  // 30 ms after the resign
	}
	// A second membership, refused.
	s.order = append(s.order, &membership{game: newGameLog("g2"), joinSeq: -1, refused: "GAME_NOT_ACTIVE"})

	d := analyze([]*spectator{s}, everything)
	if d.Expected != 7 || d.Received != 5 {
		t.Errorf("expected/received: got %d/%d, want 7/5", d.Expected, d.Received)
	}
	if d.Latency.Count != 4 || d.Latency.MaxMs != 30 || d.Latency.P50Ms != 5 {
		t.Errorf("latency: got %+v, want 4 samples 4, 5, 20, 30 ms", d.Latency)
	}
	if d.Joins != 1 || d.Refused != 1 || d.Unattributed != 0 {
		t.Errorf("joins/refused/unattributed: got %d/%d/%d", d.Joins, d.Refused, d.Unattributed)
	}
	// Only actions sent in the window give latencies.
	if late := analyze([]*spectator{s}, window{From: 150 * time.Millisecond}); late.Latency.Count != 2 {
		t.Errorf("window from 150 ms: got %d samples, want 2", late.Latency.Count)
	}
}

// Latencies are also kept by the second their action was sent in,
// counted from the window's start, so that a slow moment stands out.
func TestAnalyzeGroupsLatenciesBySecond(t *testing.T) {
	g := newGameLog("g1")
	g.add(actionRecord{sent: 500 * time.Millisecond, seq: 1})
	g.add(actionRecord{sent: 2300 * time.Millisecond, seq: 2})
	g.add(actionRecord{sent: 2600 * time.Millisecond, seq: 3})
	g.setLastSeq(3)
	s := &spectator{games: map[string]*membership{}}
	m := &membership{game: g, joinSeq: 0, joinedCh: make(chan struct{})}
	s.games[g.id], s.order = m, []*membership{m}
	m.frames = []frameRecord{
		{at: 510 * time.Millisecond, seq: 1, move: true},  // 10 ms
		{at: 2700 * time.Millisecond, seq: 2, move: true}, // 400 ms
		{at: 2700 * time.Millisecond, seq: 3, move: true}, // 100 ms
	}
	d := analyze([]*spectator{s}, window{From: 200 * time.Millisecond})
	want := []SecondLatency{
		{Second: 0, Latency: Latency{Count: 1, MeanMs: 10, P50Ms: 10, P90Ms: 10, P99Ms: 10, MaxMs: 10}},
		{Second: 2, Latency: Latency{Count: 2, MeanMs: 250, P50Ms: 100, P90Ms: 400, P99Ms: 400, MaxMs: 400}},
	}
	if !slices.Equal(d.BySecond, want) {
		t.Errorf("by second: got %+v, want %+v", d.BySecond, want)
	}
	if s, ok := slowest(d.BySecond); !ok || s.Second != 2 {
		t.Errorf("slowest second: got %+v, %v; want second 2", s, ok)
	}
}
