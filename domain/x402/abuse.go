package x402

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/uptrace/bun"

	"wager/domain"
)

// Limiter counts requests per caller and endpoint in a rolling window
// shared by every instance (PostgreSQL). Each window is one fixed bucket
// row; the rolling count is the current bucket plus the previous bucket
// weighted by how much of it the rolling window still covers. One
// statement per request upserts the current bucket and reads the
// previous one.
type Limiter struct {
	db        bun.IDB
	now       domain.Clock
	window    time.Duration
	threshold int
	overrides map[string]int

	mu   sync.Mutex
	used map[string]bool // endpoints that asked for their threshold
}

// NewLimiter returns a Limiter that allows threshold requests per caller
// and endpoint in every rolling window, except for the endpoints ("METHOD
// /route") that overrides names.
func NewLimiter(idb bun.IDB, now domain.Clock, threshold int, window time.Duration, overrides map[string]int) *Limiter {
	return &Limiter{db: idb, now: now, window: window, threshold: threshold, overrides: overrides, used: map[string]bool{}}
}

// Window is the length of the rolling window.
func (l *Limiter) Window() time.Duration { return l.window }

// Threshold returns how many requests the endpoint ("METHOD /route")
// allows per window, and remembers that the endpoint exists.
func (l *Limiter) Threshold(endpoint string) int {
	l.mu.Lock()
	l.used[endpoint] = true
	l.mu.Unlock()
	if n, ok := l.overrides[endpoint]; ok {
		return n
	}
	return l.threshold
}

// UnknownOverrides returns the overridden endpoints that no route asked
// for (typing mistakes in the configuration), sorted.
func (l *Limiter) UnknownOverrides() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for e := range l.overrides {
		if !l.used[e] {
			out = append(out, e)
		}
	}
	sort.Strings(out)
	return out
}

// Rolling is the rolling-window count at elapsed time into the current
// bucket: all of cur, and the share of prev that the window still covers.
func Rolling(prev, cur int, elapsed, window time.Duration) float64 {
	if elapsed < 0 {
		elapsed = 0
	}
	if elapsed >= window {
		return float64(cur)
	}
	return float64(cur) + float64(prev)*float64(window-elapsed)/float64(window)
}

// hitSQL upserts the current bucket and reads the previous one in one
// round trip.
const hitSQL = `WITH cur AS (
	INSERT INTO abuse_counters AS c (caller, endpoint, window_start, hits) VALUES (?, ?, ?, 1)
	ON CONFLICT (caller, endpoint, window_start) DO UPDATE SET hits = c.hits + 1
	RETURNING hits)
SELECT cur.hits, coalesce((SELECT hits FROM abuse_counters
	WHERE caller = ? AND endpoint = ? AND window_start = ?), 0) FROM cur`

// Hit counts one request to endpoint for each of callers (the identities
// of one request) and returns the highest rolling count, this request
// included. When a counter cannot be updated it returns an error naming
// the endpoint and the caller that wraps the database's.
func (l *Limiter) Hit(ctx context.Context, endpoint string, callers ...string) (float64, error) {
	now := l.now()
	start := now.Truncate(l.window)
	highest := 0.0
	for _, caller := range callers {
		var cur, prev int
		err := l.db.QueryRowContext(ctx, hitSQL, caller, endpoint, start, caller, endpoint, start.Add(-l.window)).Scan(&cur, &prev)
		if err != nil {
			return 0, fmt.Errorf("count a request of %s to %s: %w", caller, endpoint, err)
		}
		highest = max(highest, Rolling(prev, cur, now.Sub(start), l.window))
	}
	return highest, nil
}

// Prune deletes the buckets that no rolling window covers any more.
func (l *Limiter) Prune(ctx context.Context) error {
	if _, err := l.db.ExecContext(ctx, "DELETE FROM abuse_counters WHERE window_start < ?", l.now().Add(-2*l.window)); err != nil {
		return fmt.Errorf("prune the abuse counters: %w", err)
	}
	return nil
}
