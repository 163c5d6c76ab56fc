package protection

import (
	"testing"
	"time"
)

func TestFormatTimeRoundsUpToTheMinute(t *testing.T) {
	for in, want := range map[string]string{
		"2026-11-26T14:05:00Z":        "26 Nov 2026, 14:05 UTC",
		"2026-11-26T14:05:00.000001Z": "26 Nov 2026, 14:06 UTC",
		"2026-11-26T23:59:30+00:00":   "27 Nov 2026, 00:00 UTC",
		"2026-11-26T15:05:00+01:00":   "26 Nov 2026, 14:05 UTC",
	} {
		at, err := time.Parse(time.RFC3339Nano, in)
		if err != nil {
			t.Fatal(err)
		}
		if got := FormatTime(at); got != want {
			t.Errorf("FormatTime(%s) = %q, want %q", in, got, want)
		}
	}
}

// A window frees when enough of what is in it has left it: a loss leaves
// w after it happened, a gain leaving raises the sum, and flows of one
// moment leave together.
func TestFreesAt(t *testing.T) {
	t0 := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	at := func(h int) time.Time { return t0.Add(time.Duration(h) * time.Hour) }
	flows := []flow{{at(0), 300}, {at(2), -200}, {at(5), 400}, {at(5), 100}}
	now := at(10)
	below := func(limit int64) func(int64) bool { return func(s int64) bool { return s < limit } }
	for _, c := range []struct {
		limit int64
		want  *time.Time
	}{
		{600, ptr(at(24))}, // 600 -> 300 when the first leaves
		{300, ptr(at(29))}, // 300 is not below 300, then 500 once the gain left: below only when the 5-hour ones leave
		{1, ptr(at(29))},   // everything gone: 0
		{0, nil},           // never below 0
	} {
		got := freesAt(flows, now, Day, below(c.limit))
		if (got == nil) != (c.want == nil) || (got != nil && !got.Equal(*c.want)) {
			t.Errorf("limit %d: frees at %v, want %v", c.limit, got, c.want)
		}
	}
	if s := windowSum(flows, now, Day); s != 600 {
		t.Errorf("windowSum: %d, want 600", s)
	}
	if s := windowSum(flows, at(26), Day); s != 500 {
		t.Errorf("windowSum once the gain left: %d, want 500", s)
	}
}

func ptr(t time.Time) *time.Time { return &t }

// When several windows refuse, the refusal names the one that frees last.
func TestTheRefusalNamesTheWindowThatFreesLast(t *testing.T) {
	t0 := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	day, week := int64(100), int64(150)
	s := &state{LossDay: &day, LossWeek: &week, losses: []flow{{t0.Add(-3 * Day), 100}, {t0.Add(-time.Hour), 100}}}
	e := lossRule(s, s.limits(t0), t0, moneyIn{what: WhatBet, losses: true})
	if e == nil || e.Extra["limit"] != LossWeek {
		t.Fatalf("refusal %v, want lossMinor.week", e)
	}
	if got := e.Extra["resetsAt"].(time.Time); !got.Equal(t0.Add(-3 * Day).Add(Week)) {
		t.Errorf("resetsAt %s, want when the older loss leaves the week", got)
	}
}
