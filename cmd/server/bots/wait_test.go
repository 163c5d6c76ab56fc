package bots

import (
	"errors"
	"log/slog"
	"testing"
	"time"

	wager "wager.example.com/sdk"
)

// A 429 or 503 pauses the bots for its Retry-After (a second at least)
// without an error; a 426 is an error, once a minute; others are errors
// at once.
func TestWaitPausesOnBusyAnswers(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	b := New(nil, nil, nil, func() time.Time { return at }, slog.New(slog.DiscardHandler), 2)
	for _, c := range []struct {
		err   error
		fails bool
		pause time.Duration
	}{
		{&wager.APIError{Status: 429, RetryAfter: 3 * time.Second}, false, 3 * time.Second},
		{&wager.APIError{Status: 503}, false, time.Second},
		{&wager.UpgradeRequiredError{MinSDKVersion: "9.0.0", Err: &wager.APIError{Status: 426}}, true, time.Minute},
		{&wager.APIError{Status: 500}, true, 0},
		{errors.New("connection refused"), true, 0},
	} {
		b.resumeAt = time.Time{}
		err := b.wait(c.err)
		if (err != nil) != c.fails {
			t.Errorf("wait(%v) = %v, want an error: %v", c.err, err, c.fails)
		}
		if got := b.resumeAt.Sub(at); c.pause != 0 && got != c.pause || c.pause == 0 && !b.resumeAt.IsZero() {
			t.Errorf("wait(%v) pauses until %v, want %v after now", c.err, b.resumeAt, c.pause)
		}
	}
}

// A refusal of player protection is settled: the bot leaves that game
// alone instead of asking again at every tick.
func TestProtectionRefusalsAreNotRetried(t *testing.T) {
	b := New(nil, nil, nil, time.Now, slog.New(slog.DiscardHandler), 2)
	for _, err := range []error{
		&wager.LimitExceededError{Limit: "stakeMaxMinor", Err: &wager.APIError{Status: 409}},
		&wager.SelfExcludedError{Err: &wager.APIError{Status: 403}},
		&wager.AgeUnconfirmedError{Err: &wager.APIError{Status: 403}},
		&wager.RegionRestrictedError{Country: "US", Err: &wager.APIError{Status: 403}},
	} {
		if !b.settled(err, "accept a challenge") {
			t.Errorf("%v is not settled: the bot would ask again and again", err)
		}
	}
	if b.settled(&wager.APIError{Status: 403, Code: "FORBIDDEN"}, "accept a challenge") {
		t.Error("any 403 is settled")
	}
}
