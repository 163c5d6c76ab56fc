package domain

import (
	"context"
	"log/slog"
	"time"
)

// Clock returns the current time. Services take one so that tests control
// time; production uses SystemClock.
type Clock func() time.Time

// SystemClock is the wall clock in UTC.
func SystemClock() time.Time { return time.Now().UTC() }

// Every runs fn every interval until ctx is done, logging its errors with
// what it was doing. Background work (deadlines, settlement transfers,
// resolvers) runs on it.
func Every(ctx context.Context, interval time.Duration, log *slog.Logger, what string, fn func(context.Context) error) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := fn(ctx); err != nil && ctx.Err() == nil {
				log.Error(what, "err", err)
			}
		}
	}
}

// Sleep waits d, or less when ctx ends first; it reports whether d passed
// (a d of zero or less passes at once unless ctx has ended).
func Sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
