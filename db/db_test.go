package db_test

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"wager/db"
	"wager/db/dbtest"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

func TestMigrateIsIdempotentAndConcurrent(t *testing.T) {
	bdb := dbtest.DB(t)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); errs <- db.Migrate(context.Background(), bdb) }()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("re-running migrations: %v", err)
		}
	}
}

// Two transactions that lock the same two rows in opposite orders
// deadlock; PostgreSQL aborts one (40P01) and Transact runs it again, so
// both increments land.
func TestTransactRetriesDeadlocks(t *testing.T) {
	bdb := dbtest.DB(t)
	ctx := context.Background()
	if _, err := bdb.ExecContext(ctx, "CREATE TABLE deadlock_test (id int PRIMARY KEY, n int NOT NULL); INSERT INTO deadlock_test VALUES (1, 0), (2, 0)"); err != nil {
		t.Fatal(err)
	}
	var attempts atomic.Int32
	bothLockedFirst := make(chan struct{}, 2)
	increment := func(first, second int) error {
		return db.Transact(ctx, bdb, func(ctx context.Context, tx db.Tx) error {
			n := attempts.Add(1)
			if _, err := tx.ExecContext(ctx, "UPDATE deadlock_test SET n = n + 1 WHERE id = ?", first); err != nil {
				return err
			}
			if n <= 2 { // the first attempts wait for each other: a sure deadlock
				bothLockedFirst <- struct{}{}
				for len(bothLockedFirst) < 2 {
					time.Sleep(time.Millisecond)
				}
			}
			_, err := tx.ExecContext(ctx, "UPDATE deadlock_test SET n = n + 1 WHERE id = ?", second)
			return err
		})
	}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, order := range [][2]int{{1, 2}, {2, 1}} {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = increment(order[0], order[1]) }()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatalf("increment: %v", err)
		}
	}
	var sum int
	if err := bdb.QueryRowContext(ctx, "SELECT sum(n) FROM deadlock_test").Scan(&sum); err != nil {
		t.Fatal(err)
	}
	if sum != 4 || attempts.Load() < 3 {
		t.Fatalf("sum %d after %d attempts, want 4 after at least 3 (one retried)", sum, attempts.Load())
	}
}

func TestTransactReturnsDomainErrorsWithoutRetry(t *testing.T) {
	calls := 0
	want := errors.New("refused")
	err := db.Transact(context.Background(), dbtest.DB(t), func(context.Context, db.Tx) error {
		calls++
		return want
	})
	if !errors.Is(err, want) || calls != 1 {
		t.Fatalf("got %v after %d calls, want %v after 1", err, calls, want)
	}
}

func TestAfterCommitRunsOnlyAfterACommit(t *testing.T) {
	ctx := context.Background()
	bdb := dbtest.DB(t)
	var ran []string
	err := db.Transact(ctx, bdb, func(ctx context.Context, tx db.Tx) error {
		if err := tx.AfterCommit(func() { ran = append(ran, "first") }); err != nil {
			return err
		}
		if len(ran) != 0 {
			t.Error("a hook ran before the commit")
		}
		return tx.AfterCommit(func() { ran = append(ran, "second") })
	})
	if err != nil || len(ran) != 2 || ran[0] != "first" || ran[1] != "second" {
		t.Fatalf("after a commit: err %v, hooks ran %v, want [first second]", err, ran)
	}
	ran = nil
	_ = db.Transact(ctx, bdb, func(ctx context.Context, tx db.Tx) error {
		_ = tx.AfterCommit(func() { ran = append(ran, "rolled back") })
		return errors.New("roll back")
	})
	if len(ran) != 0 {
		t.Fatalf("a rolled-back transaction ran its hooks: %v", ran)
	}
	if err := (db.Tx{}).AfterCommit(func() {}); !errors.Is(err, db.ErrNoTransaction) {
		t.Fatalf("AfterCommit of the zero Tx: %v, want ErrNoTransaction", err)
	}
}

func TestListenerDeliversNotificationsCommittedAfterReady(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	l := db.NewListener(dbtest.URL(t), slog.New(slog.DiscardHandler))
	got := make(chan string, 10)
	l.Handle("test_channel", func(p string) { got <- p })
	go l.Run(ctx)
	<-l.Ready()

	bdb := dbtest.DB(t)
	// A notification inside a rolled-back transaction is never delivered.
	_ = bdb.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if err := db.Notify(ctx, tx, "test_channel", "rolled-back"); err != nil {
			return err
		}
		return errors.New("roll back")
	})
	if err := db.Notify(ctx, bdb, "test_channel", "committed"); err != nil {
		t.Fatal(err)
	}
	select {
	case p := <-got:
		if p != "committed" {
			t.Fatalf("got notification %q, want only \"committed\"", p)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("notification not delivered")
	}
}
