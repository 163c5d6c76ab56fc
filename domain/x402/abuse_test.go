package x402

import (
	"context"
	"fmt"
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"wager/db/dbtest"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

func TestRolling(t *testing.T) {
	w := time.Minute
	for _, tc := range []struct {
		prev, cur int
		elapsed   time.Duration
		want      float64
	}{
		{0, 5, 10 * time.Second, 5},
		{60, 0, 0, 60},                 // the window still covers all of prev
		{60, 10, 15 * time.Second, 55}, // three quarters of prev
		{60, 10, 45 * time.Second, 25},
		{60, 10, time.Minute, 10}, // prev is out of the window
		{60, 10, -time.Second, 70},
	} {
		if got := Rolling(tc.prev, tc.cur, tc.elapsed, w); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("Rolling(%d, %d, %v): got %v, want %v", tc.prev, tc.cur, tc.elapsed, got, tc.want)
		}
	}
}

// clock is a settable test clock.
type clock struct{ ns atomic.Int64 }

func (c *clock) now() time.Time          { return time.Unix(0, c.ns.Load()).UTC() }
func (c *clock) set(t time.Time)         { c.ns.Store(t.UnixNano()) }
func (c *clock) advance(d time.Duration) { c.ns.Add(int64(d)) }

func TestCountersRollAndResetAfterTheWindow(t *testing.T) {
	ctx := context.Background()
	var c clock
	c.set(time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC))
	l := NewLimiter(dbtest.DB(t), c.now, 3, time.Minute, nil)
	caller := "user:" + uuid.NewString()
	hit := func(endpoint string) float64 {
		t.Helper()
		n, err := l.Hit(ctx, endpoint, caller)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	for i := 1; i <= 4; i++ {
		if got := hit("GET /x"); got != float64(i) {
			t.Fatalf("hit %d: rolling count %v", i, got)
		}
	}
	if got := hit("GET /y"); got != 1 {
		t.Errorf("another endpoint: %v, want 1", got)
	}
	// A quarter into the next window, three quarters of the 4 earlier
	// hits still count.
	c.advance(75 * time.Second)
	if got := hit("GET /x"); got != 1+4*0.75 {
		t.Errorf("rolling over: %v, want %v", got, 1+4*0.75)
	}
	// A whole window later nothing of the burst is left.
	c.advance(2 * time.Minute)
	if got := hit("GET /x"); got != 1 {
		t.Errorf("after the window: %v, want 1 (counters reset)", got)
	}
	if err := l.Prune(ctx); err != nil {
		t.Fatal(err)
	}
	var left int
	if err := dbtest.DB(t).QueryRowContext(ctx, "SELECT count(*) FROM abuse_counters WHERE caller = ?", caller).Scan(&left); err != nil {
		t.Fatal(err)
	}
	if left != 1 {
		t.Errorf("after pruning: %d buckets left, want only the current one", left)
	}
}

func TestThresholdOverrides(t *testing.T) {
	l := NewLimiter(nil, time.Now, 600, time.Minute, map[string]int{"POST /lobbies": 30, "GET /typo": 5})
	if l.Threshold("POST /lobbies") != 30 || l.Threshold("GET /games/live") != 600 {
		t.Errorf("thresholds: %d %d", l.Threshold("POST /lobbies"), l.Threshold("GET /games/live"))
	}
	if got := l.UnknownOverrides(); len(got) != 1 || got[0] != "GET /typo" {
		t.Errorf("unknown overrides: %v", got)
	}
}

// BenchmarkHit measures the cost of counting one request: one statement
// (an upsert of the current bucket that also reads the previous one).
// "hot" is one caller hammering one endpoint (one row, lock contention
// under parallelism); "spread" is many callers.
func BenchmarkHit(b *testing.B) {
	ctx := context.Background()
	l := NewLimiter(dbtest.DB(b), time.Now, 600, time.Minute, nil)
	b.Run("hot", func(b *testing.B) {
		caller := "user:" + uuid.NewString()
		for b.Loop() {
			if _, err := l.Hit(ctx, "GET /games/live", caller); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("spread-parallel", func(b *testing.B) {
		var n atomic.Int64
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				caller := fmt.Sprintf("ip:10.0.%d.%d", n.Add(1)%200, n.Load()%250)
				if _, err := l.Hit(ctx, "GET /games/live", caller); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}
