package notify_test

import (
	"context"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"wager/db/dbtest"
	"wager/domain/eventlog"
	"wager/domain/notify"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

// BenchmarkListAmongAMillion reads one user's newest page of notifications
// and the unread count from a table of 1,000,000 notifications of 100,000
// users (a tenth of them unread), and reports the p50 and p99 of a read.
// The seeding takes a while: run it alone,
//
//	go test ./domain/notify/ -run '^$' -bench ListAmongAMillion -benchtime 2000x
func BenchmarkListAmongAMillion(b *testing.B) {
	ctx := context.Background()
	bdb := dbtest.DB(b)
	const users, per = 100_000, 10
	seedOnce.Do(func() { seedErr = seed(ctx, bdb, users, per, b) })
	if seedErr != nil {
		b.Fatal(seedErr)
	}
	var ids []string
	if err := bdb.NewSelect().Table("users").Column("id").Where("username LIKE 'bench\\_%'").Limit(5000).Scan(ctx, &ids); err != nil {
		b.Fatal(err)
	}
	s := notify.New(bdb, eventlog.New(bdb, nil), time.Now)

	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for b.Loop() {
		t0 := time.Now()
		p, err := s.List(ctx, ids[rand.IntN(len(ids))], false, 50, 0)
		if err != nil || len(p.Items) != per {
			b.Fatalf("list: %d items, %v", len(p.Items), err)
		}
		lat = append(lat, time.Since(t0))
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}

var (
	seedOnce sync.Once
	seedErr  error
)

// seed writes the benchmark's users and notifications once per process.
func seed(ctx context.Context, bdb *bun.DB, users, per int, b *testing.B) error {
	start := time.Now()
	if _, err := bdb.ExecContext(ctx, `INSERT INTO users (id, wallet_address, username)
		SELECT gen_random_uuid(), 'bench-' || i, 'bench_' || i FROM generate_series(1, ?) AS i`, users); err != nil {
		return err
	}
	if _, err := bdb.ExecContext(ctx, `INSERT INTO notifications (user_id, type, data, read, created_at)
		SELECT u.id, 'friend_request', '{"userId": "x", "username": "y"}', random() > 0.1, now() - (n || ' minutes')::interval
		FROM users AS u, generate_series(1, ?) AS n WHERE u.username LIKE 'bench\_%'`, per); err != nil {
		return err
	}
	if _, err := bdb.ExecContext(ctx, "ANALYZE notifications"); err != nil {
		return err
	}
	b.Logf("seeded %d notifications in %s", users*per, time.Since(start).Round(time.Second))
	return nil
}
