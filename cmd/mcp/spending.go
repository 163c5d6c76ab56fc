package main

import (
	"fmt"
	"sync"
	"time"
)

// spendingCap bounds the money the tools may commit: at most perCall in
// one call and perHour over any rolling hour (USDC minor units). Payments
// of 402 answers that the SDK makes by itself count towards the hour too
// (paidByClient).
type spendingCap struct {
	perCall, perHour int64
	now              func() time.Time
	paidByClient     func() int64

	mu    sync.Mutex
	spent []spent
}

type spent struct {
	at     time.Time
	amount int64
}

// spendRefused is a money tool's call refused before anything moved.
type spendRefused struct{ reason string }

func (e *spendRefused) Error() string {
	return "SPENDING_CAP: " + e.reason + "; nothing was spent"
}

// reserve counts amount against the caps and returns a function that
// gives it back (when the call surely moved nothing), or a *spendRefused
// saying which cap it would break.
func (c *spendingCap) reserve(what string, amount int64) (release func(), err error) {
	if amount <= 0 {
		return func() {}, nil
	}
	if amount > c.perCall {
		return nil, &spendRefused{fmt.Sprintf("%s of %d USDC minor units is over the cap of %d per call", what, amount, c.perCall)}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	hour := c.spentLocked()
	if c.paidByClient != nil {
		hour += c.paidByClient()
	}
	if hour+amount > c.perHour {
		return nil, &spendRefused{fmt.Sprintf("%s of %d USDC minor units would exceed the cap of %d per hour (%d spent in the last hour)",
			what, amount, c.perHour, hour)}
	}
	s := spent{at: c.now(), amount: amount}
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

// lastHour returns what the tools committed in the last hour, with the
// SDK's automatic payments.
func (c *spendingCap) lastHour() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	sum := c.spentLocked()
	if c.paidByClient != nil {
		sum += c.paidByClient()
	}
	return sum
}

func (c *spendingCap) spentLocked() int64 {
	since := c.now().Add(-time.Hour)
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
