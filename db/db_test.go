package db_test

import (
	"context"
	"errors"
	"log/slog"
	"sync"
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

// Concurrent read-modify-write increments under SERIALIZABLE conflict with
// each other (40001); the helper retries them so no increment is lost.
func TestSerializableRetriesConflicts(t *testing.T) {
	bdb := dbtest.DB(t)
	ctx := context.Background()
	if _, err := bdb.ExecContext(ctx, "CREATE TABLE counter_test (id int PRIMARY KEY, n int NOT NULL); INSERT INTO counter_test VALUES (1, 0)"); err != nil {
		t.Fatal(err)
	}
	const workers, each = 8, 10
	var wg sync.WaitGroup
	var mu sync.Mutex
	attempts := 0
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				err := db.Serializable(ctx, bdb, func(ctx context.Context, tx bun.Tx) error {
					mu.Lock()
					attempts++
					mu.Unlock()
					var n int
					if err := tx.QueryRowContext(ctx, "SELECT n FROM counter_test WHERE id = 1").Scan(&n); err != nil {
						return err
					}
					_, err := tx.ExecContext(ctx, "UPDATE counter_test SET n = ? WHERE id = 1", n+1)
					return err
				})
				if err != nil {
					t.Errorf("increment: %v", err)
				}
			}
		}()
	}
	wg.Wait()
	var n int
	if err := bdb.QueryRowContext(ctx, "SELECT n FROM counter_test WHERE id = 1").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != workers*each {
		t.Fatalf("counter: got %d, want %d", n, workers*each)
	}
	t.Logf("%d increments took %d attempts", n, attempts)
}

func TestSerializableReturnsDomainErrorsWithoutRetry(t *testing.T) {
	calls := 0
	want := errors.New("refused")
	err := db.Serializable(context.Background(), dbtest.DB(t), func(context.Context, bun.Tx) error {
		calls++
		return want
	})
	if !errors.Is(err, want) || calls != 1 {
		t.Fatalf("got %v after %d calls, want %v after 1", err, calls, want)
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
