package x402

import (
	"context"
	"database/sql"
	"log/slog"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/uptrace/bun"
)

// stallingDB's statements wait for their context and end a second (of
// the bubble's clock) after it is done, like a query the database is still
// cancelling.
type stallingDB struct {
	bun.IDB
	busy atomic.Int32 // statements going on
}

func (d *stallingDB) ExecContext(ctx context.Context, _ string, _ ...any) (sql.Result, error) {
	d.busy.Add(1)
	defer d.busy.Add(-1)
	<-ctx.Done()
	time.Sleep(time.Second)
	return nil, ctx.Err()
}

// RunResolvers returns only once the pruning of abuse counters it runs
// beside the resolving ended.
func TestRunResolversReturnsOnceItsPruningEnded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		defer time.Sleep(time.Minute) // a pruning left going on ends before the bubble
		idb := &stallingDB{}
		s := New(nil, nil, nil, NewLimiter(idb, time.Now, 10, time.Minute, nil), time.Now, slog.New(slog.DiscardHandler), Config{})
		ctx, cancel := context.WithCancel(t.Context())
		ran := make(chan struct{})
		go func() { s.RunResolvers(ctx, time.Hour); close(ran) }()
		time.Sleep(time.Minute + time.Second)
		synctest.Wait()
		if n := idb.busy.Load(); n != 1 {
			t.Fatalf("%d statements going on a minute after the start, want the pruning's 1", n)
		}
		cancel()
		<-ran
		if n := idb.busy.Load(); n != 0 {
			t.Errorf("RunResolvers returned while the pruning still ran")
		}
	})
}
