package main

import (
	"io"
	"testing"
	"time"
)

func TestArenaMeterMatchesEachEndToTheNextPairing(t *testing.T) {
	s := time.Second
	m := newArenaMeter(10 * s)
	// The start: a and b, then c and d, are paired for the first time.
	m.paired([]string{"a", "b"}, 10*s+100*time.Millisecond)
	m.paired([]string{"c", "d"}, 10*s+300*time.Millisecond)
	// a-b ends and its players are paired again with others: one wait
	// each; c-d ends and only c is paired before the run stops.
	m.gameEnded([]string{"a", "b"}, 20*s)
	m.gameEnded([]string{"c", "d"}, 21*s)
	m.paired([]string{"a", "c"}, 21*s+500*time.Millisecond)
	m.paired([]string{"b", "e"}, 22*s)
	// e's first pairing came late (it joined late): a first pairing, not
	// a wait.
	first, waits := Summarize(m.first), Summarize(m.waits)
	if first.Count != 5 || first.MaxMs != 12000 || first.P50Ms != 300 {
		t.Errorf("first pairings: %+v", first)
	}
	if waits.Count != 3 || waits.MaxMs != 2000 || waits.P50Ms != 1500 {
		t.Errorf("waits (want 1.5 s for a, 0.5 s for c, 2 s for b): %+v", waits)
	}
	if n := m.unpaired(30 * s); n != 1 {
		t.Errorf("ends never paired again: %d, want 1 (d)", n)
	}
	if n := m.unpaired(21 * s); n != 0 {
		t.Errorf("ends before 21 s never paired again: %d, want 0", n)
	}
}

func TestMaxInWindowAndMinGap(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	for _, c := range []struct {
		at   []time.Duration
		most int
		gap  time.Duration
	}{
		{nil, 0, 0},
		{ms(500), 1, 0},
		// Once a second: a frame exactly a second after another is in the
		// next window.
		{ms(0, 1000, 2000, 3000), 1, time.Second},
		{ms(0, 1000, 1999, 2000, 2500), 3, time.Millisecond},
		{ms(0, 10, 20, 30, 5000), 4, 10 * time.Millisecond},
	} {
		if got := maxInWindow(c.at, time.Second); got != c.most {
			t.Errorf("maxInWindow(%v) = %d, want %d", c.at, got, c.most)
		}
		if got := minGap(c.at); got != c.gap {
			t.Errorf("minGap(%v) = %v, want %v", c.at, got, c.gap)
		}
	}
	if got := within(ms(0, 1000, 2000, 3000), window{From: time.Second, To: 3 * time.Second}); len(got) != 2 {
		t.Errorf("within: %v", got)
	}
}

func TestParseFlagsArena(t *testing.T) {
	c, err := parseFlags([]string{"-scenario", "arena"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.Players != 500 || c.Think != 2*time.Second || c.Duration != 3*time.Minute || c.ArenaLead != 30*time.Second {
		t.Errorf("arena defaults: players %d think %s duration %s lead %s", c.Players, c.Think, c.Duration, c.ArenaLead)
	}
	for _, bad := range [][]string{{"-scenario", "arena", "-players", "1"}, {"-scenario", "arena", "-duration", "30s"}} {
		if _, err := parseFlags(bad, io.Discard); err == nil {
			t.Errorf("%v: no error", bad)
		}
	}
}
