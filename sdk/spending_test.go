package wager_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	wager "wager.example.com/sdk"
)

func TestSpendingCapWindow(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	c := wager.NewSpendingCap(100, 250, func() time.Time { return now })
	for _, s := range []struct {
		what    string
		advance time.Duration
		amount  int64
		refused string // part of the refusal, "" when allowed
	}{
		{"over the cap per call", 0, 101, "per call"},
		{"at the cap per call", 0, 100, ""},
		{"second", 10 * time.Minute, 100, ""},
		{"third would pass the hour", 10 * time.Minute, 100, "per hour"},
		{"what is left of the hour", 0, 50, ""},
		{"the first left the window", 41 * time.Minute, 100, ""},
	} {
		now = now.Add(s.advance)
		release, err := c.Reserve(s.amount)
		var refused *wager.CapError
		switch {
		case s.refused == "" && err != nil:
			t.Fatalf("%s: refused %v, want allowed", s.what, err)
		case s.refused != "" && (!errors.As(err, &refused) || !strings.Contains(refused.Reason, s.refused) || release != nil):
			t.Fatalf("%s: got %v, want a refusal naming %q", s.what, err, s.refused)
		}
	}
	if got := c.SpentLastHour(); got != 250 {
		t.Fatalf("last hour: %d, want 100 + 50 + 100", got)
	}
	// A spending that did not happen gives its reservation back.
	now = now.Add(time.Minute)
	if _, err := c.Reserve(1); err == nil {
		t.Fatal("a reservation over the hour's cap was taken")
	}
	now = now.Add(30 * time.Minute) // the 100 of minute 10 and the 50 of minute 20 leave
	release, err := c.Reserve(100)
	if err != nil {
		t.Fatal(err)
	}
	release()
	if got := c.SpentLastHour(); got != 100 {
		t.Fatalf("after a release: %d, want 100", got)
	}
}

// TestSpendingCapRefusesNonPositive: a reservation of 0 or less would
// give the cap room it never had.
func TestSpendingCapRefusesNonPositive(t *testing.T) {
	c := wager.NewSpendingCap(100, 100, nil)
	for _, amount := range []int64{0, -5} {
		if release, err := c.Reserve(amount); err == nil || release != nil {
			t.Errorf("Reserve(%d): no error", amount)
		}
	}
	if _, err := c.Reserve(100); err != nil {
		t.Fatalf("the whole cap after the refusals: %v", err)
	}
	if _, err := c.Reserve(1); err == nil {
		t.Fatal("a reservation past the cap was taken: a negative one raised it")
	}
	if got := c.SpentLastHour(); got != 100 {
		t.Fatalf("spent %d, want 100", got)
	}
}
