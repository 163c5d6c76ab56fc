package wager

import (
	"fmt"
	"sync"
	"time"
)

// SpendingCap bounds spending in USDC minor units (1 USDC = 1000000): at
// most PerCall at once and PerHour over any rolling hour. It is safe for
// concurrent use, so one cap can bound both a client's automatic 402
// payments (WithSpendingCap) and what its caller spends through it.
type SpendingCap struct {
	PerCall, PerHour int64
	now              func() time.Time

	mu    sync.Mutex
	spent []spending
}

// spending is one reservation against a cap.
type spending struct {
	at     time.Time
	amount int64
}

// NewSpendingCap returns a cap of perCall at once and perHour an hour,
// reading the clock now (time.Now when nil).
func NewSpendingCap(perCall, perHour int64, now func() time.Time) *SpendingCap {
	return &SpendingCap{PerCall: perCall, PerHour: perHour, now: now}
}

// CapError is a spending the cap refused; Reason says which limit.
type CapError struct{ Reason string }

func (e *CapError) Error() string { return "wager: " + e.Reason }

// Reserve counts amount against the cap and returns a function that gives
// it back (call it only when the spending surely did not happen), or a
// *CapError saying which limit amount would break. An amount of 0 or less
// is an error: counting it would give the cap room it never had.
func (c *SpendingCap) Reserve(amount int64) (release func(), err error) {
	if amount <= 0 {
		return nil, fmt.Errorf("wager: a spending reservation must be positive, not %d", amount)
	}
	if amount > c.PerCall {
		return nil, &CapError{fmt.Sprintf("%d is over the cap of %d per call", amount, c.PerCall)}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if spent := c.spentLocked(); spent+amount > c.PerHour {
		return nil, &CapError{fmt.Sprintf("%d more would exceed the cap of %d per hour (%d spent in the last hour)", amount, c.PerHour, spent)}
	}
	s := spending{at: c.clock(), amount: amount}
	c.spent = append(c.spent, s)
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		for i, have := range c.spent {
			if have == s {
				c.spent = append(c.spent[:i], c.spent[i+1:]...)
				return
			}
		}
	}, nil
}

// SpentLastHour returns what was reserved in the last hour and not given
// back.
func (c *SpendingCap) SpentLastHour() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.spentLocked()
}

func (c *SpendingCap) clock() time.Time {
	if c.now == nil {
		return time.Now()
	}
	return c.now()
}

func (c *SpendingCap) spentLocked() int64 {
	since := c.clock().Add(-time.Hour)
	var sum int64
	kept := c.spent[:0]
	for _, s := range c.spent {
		if s.at.After(since) {
			kept = append(kept, s)
			sum += s.amount
		}
	}
	c.spent = kept
	return sum
}
