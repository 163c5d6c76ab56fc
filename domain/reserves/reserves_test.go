package reserves_test

import (
	"context"
	"log/slog"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"wager.example.com/sdk/sumtree"
	"wager/db/dbtest"
	"wager/domain/gamelog"
	"wager/domain/market"
	"wager/domain/money"
	"wager/domain/referrals"
	"wager/domain/reserves"
	"wager/domain/settlement"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

// A snapshot of 100,000 users owed something, read from the books as the
// server reads them (every part, in one transaction), built, signed and
// stored; the chain's holdings are given. Reported: the time a snapshot
// takes, what it allocates, and the peak of the heap in use while it runs
// (the leaves, the tree's levels and the stored leaves: bounded by the
// number of users, not by the books' history).
func BenchmarkTakeASnapshotOf100kUsers(b *testing.B) {
	ctx := context.Background()
	bdb := dbtest.DB(b)
	for _, q := range []string{
		`INSERT INTO users (wallet_address, username) SELECT 'bench-wallet-' || i, 'bench' || i FROM generate_series(1, 100000) AS i
			ON CONFLICT DO NOTHING`,
		`INSERT INTO ledger_accounts (id, kind, user_id, balance) SELECT 'user:' || id || ':available', 'user_available', id,
			1 + (hashtext(id::text) & 65535) * 100 FROM users WHERE wallet_address LIKE 'bench-wallet-%' ON CONFLICT DO NOTHING`,
	} {
		if _, err := bdb.ExecContext(ctx, q); err != nil {
			b.Fatal(err)
		}
	}
	log, err := gamelog.New(nil, nil, gamelog.Config{Origin: "bench.example/games-log", Seed: []byte("bench")})
	if err != nil {
		b.Fatal(err)
	}
	r := reserves.New(bdb, reserves.Config{Owed: []reserves.Owed{money.Owed, settlement.Owed, market.Owed, referrals.Owed},
		Liabilities: money.Liabilities, Now: time.Now, Log: slog.Default(), Sign: log.SignLine,
		Holdings: func(context.Context) (uint64, []sumtree.Asset, error) {
			return 1, []sumtree.Asset{{Address: "vault", BalanceMinor: 1 << 50}}, nil
		}})
	var peak atomic.Uint64
	done := make(chan struct{})
	go func() {
		var m runtime.MemStats
		for {
			select {
			case <-done:
				return
			case <-time.After(5 * time.Millisecond):
			}
			runtime.ReadMemStats(&m)
			if m.HeapInuse > peak.Load() {
				peak.Store(m.HeapInuse)
			}
		}
	}()
	b.ReportAllocs()
	users := 0
	for b.Loop() {
		s, err := r.Take(ctx)
		if err != nil {
			b.Fatal(err)
		}
		users = s.Users
	}
	close(done)
	if users < 100_000 {
		b.Fatalf("a snapshot of %d users, want at least 100000", users)
	}
	b.ReportMetric(float64(peak.Load())/(1<<20), "MiB-heap-peak")
}
