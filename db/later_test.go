package db_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/uptrace/bun"

	"wager/db"
	"wager/db/dbtest"
)

// roundTrips records the texts bun sends, one per round trip.
type roundTrips struct {
	mu   sync.Mutex
	sent []string
}

func (r *roundTrips) BeforeQuery(ctx context.Context, _ *bun.QueryEvent) context.Context { return ctx }
func (r *roundTrips) AfterQuery(_ context.Context, e *bun.QueryEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sent = append(r.sent, e.Query)
}

func (r *roundTrips) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.sent
	r.sent = nil
	return out
}

func batchDB(t *testing.T, table string) (*bun.DB, *roundTrips) {
	t.Helper()
	bdb := dbtest.DB(t)
	if _, err := bdb.ExecContext(context.Background(), "CREATE TABLE "+table+" (id int PRIMARY KEY, note text NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	trips := &roundTrips{}
	return db.WithQueryHook(bdb, trips), trips
}

func count(t *testing.T, bdb bun.IDB, table string) int {
	t.Helper()
	var n int
	if err := bdb.QueryRowContext(context.Background(), "SELECT count(*) FROM "+table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// Queued writes go in one round trip after the transaction's own
// statements and before its COMMIT: a statement of the transaction does
// not see them, the commit does.
func TestLaterSendsTheQueuedWritesTogetherBeforeTheCommit(t *testing.T) {
	bdb, trips := batchDB(t, "later_test")
	ctx := context.Background()
	var seen int
	err := db.Transact(ctx, bdb, func(ctx context.Context, tx db.Tx) error {
		for i := range 3 {
			// A value with a semicolon and a quote: formatted once, sent as it is.
			if err := tx.Later("INSERT INTO later_test VALUES (?, ?)", i, "it's; ?fine"); err != nil {
				return err
			}
		}
		return tx.QueryRowContext(ctx, "SELECT count(*) FROM later_test").Scan(&seen)
	})
	if err != nil {
		t.Fatal(err)
	}
	sent := trips.take()
	if seen != 0 || len(sent) != 4 || sent[0] != "BEGIN" || sent[3] != "COMMIT" || strings.Count(sent[2], "INSERT") != 3 {
		t.Fatalf("saw %d rows before the writes; sent %q, want BEGIN, the count, the three inserts at once, COMMIT", seen, sent)
	}
	var note string
	if err := bdb.QueryRowContext(ctx, "SELECT note FROM later_test WHERE id = 2").Scan(&note); err != nil || note != "it's; ?fine" {
		t.Fatalf("stored %q (%v)", note, err)
	}
	if err := (db.Tx{}).Later("SELECT 1"); err != db.ErrNoTransaction {
		t.Errorf("Later of the zero Tx: %v, want ErrNoTransaction", err)
	}
}

// A queued write that fails fails its transaction: nothing of it
// commits, the error is the statement's, and nothing runs after the
// commit.
func TestAFailingQueuedWriteFailsTheTransaction(t *testing.T) {
	bdb, _ := batchDB(t, "later_fail_test")
	ctx := context.Background()
	committed := false
	err := db.Transact(ctx, bdb, func(ctx context.Context, tx db.Tx) error {
		if _, err := tx.ExecContext(ctx, "INSERT INTO later_fail_test VALUES (1, 'now')"); err != nil {
			return err
		}
		if err := tx.Later("INSERT INTO later_fail_test VALUES (2, 'later')"); err != nil {
			return err
		}
		if err := tx.Later("INSERT INTO later_fail_test VALUES (1, 'again')"); err != nil {
			return err
		}
		return tx.AfterCommit(func() { committed = true })
	})
	if !db.IsUniqueViolation(err, "") {
		t.Fatalf("got %v, want the unique violation of the second insert", err)
	}
	if n := count(t, bdb, "later_fail_test"); n != 0 || committed {
		t.Fatalf("%d rows stored, after-commit ran: %v; want nothing", n, committed)
	}
}

// An attempt that fails with a retryable error leaves nothing queued for
// the next one: each write is sent once.
func TestARetriedAttemptQueuesAfresh(t *testing.T) {
	bdb, _ := batchDB(t, "later_retry_test")
	ctx := context.Background()
	attempts := 0
	err := db.Transact(ctx, bdb, func(ctx context.Context, tx db.Tx) error {
		attempts++
		st := db.Local[struct{ n int }](tx)
		st.n++
		if st.n != 1 {
			t.Errorf("attempt %d starts with the local value of an earlier one", attempts)
		}
		if err := tx.Later("INSERT INTO later_retry_test VALUES (?, 'x')", 7); err != nil {
			return err
		}
		if attempts == 1 {
			_, err := tx.ExecContext(ctx, "DO $$ BEGIN RAISE EXCEPTION 'conflict' USING ERRCODE = '40001'; END $$")
			return err
		}
		return nil
	})
	if err != nil || attempts != 2 {
		t.Fatalf("got %v after %d attempts, want success after 2", err, attempts)
	}
	if n := count(t, bdb, "later_retry_test"); n != 1 {
		t.Fatalf("%d rows, want 1", n)
	}
	if db.Local[struct{ n int }](db.Tx{}) != nil {
		t.Error("Local of the zero Tx is not nil")
	}
}

// appendScanned is a QueryAndFlush scan that appends each row's one
// column to list.
func appendScanned[T any](list *[]T) func(db.Row) error {
	return func(r db.Row) error {
		var v T
		err := r.Scan(&v)
		*list = append(*list, v)
		return err
	}
}

// A transaction's last statement carries the queued writes: one round
// trip, its rows read, and a queued write's error not lost behind them.
func TestQueryAndFlushSendsTheQueuedWritesWithTheLastStatement(t *testing.T) {
	bdb, trips := batchDB(t, "later_last_test")
	ctx := context.Background()
	var got []int
	err := db.Transact(ctx, bdb, func(ctx context.Context, tx db.Tx) error {
		if err := tx.Later("INSERT INTO later_last_test VALUES (10, 'queued')"); err != nil {
			return err
		}
		return tx.QueryAndFlush(ctx, appendScanned(&got), "INSERT INTO later_last_test VALUES (?, 'last'), (?, 'last') RETURNING id", 1, 2)
	})
	if err != nil {
		t.Fatal(err)
	}
	if sent := trips.take(); len(got) != 2 || len(sent) != 3 || count(t, bdb, "later_last_test") != 3 {
		t.Fatalf("read %v; sent %q; want the two ids, and BEGIN, one text, COMMIT", got, sent)
	}
	for _, single := range []bool{false, true} {
		err = db.Transact(ctx, bdb, func(ctx context.Context, tx db.Tx) error {
			if err := tx.Later("INSERT INTO later_last_test VALUES (10, 'twice')"); err != nil {
				return err
			}
			query := "SELECT id FROM later_last_test ORDER BY id"
			if single {
				query += " LIMIT 1"
			}
			return tx.QueryAndFlush(ctx, func(rows db.Row) error { var id int; return rows.Scan(&id) }, query)
		})
		if !db.IsUniqueViolation(err, "") {
			t.Fatalf("a queued write that fails after the last statement (one row: %v): got %v, want its unique violation", single, err)
		}
	}
}

// Queued writes are prepared statements: on a connection each text is
// parsed and planned once, whatever its values; lists and a missing value
// (a nil pointer) go as arguments, and the last statement's rows scan
// into Go values.
func TestQueuedWritesArePreparedOnce(t *testing.T) {
	bdb, trips := batchDB(t, "later_prepared_test")
	ctx := context.Background()
	const insert = "INSERT INTO later_prepared_test SELECT * FROM unnest(?::int[], ?::text[])"
	const update = "UPDATE later_prepared_test SET note = coalesce(?::text, note) WHERE id = ?"
	numbered := func(q string) string { return strings.Replace(strings.Replace(q, "?", "$1", 1), "?", "$2", 1) }
	var none *string
	other := `it's "other"`
	var notes []string
	err := db.Transact(ctx, bdb, func(ctx context.Context, tx db.Tx) error {
		for _, w := range []struct {
			ids   []int
			notes []string
			note  *string
		}{
			{[]int{1, 2}, []string{"a,b", `c"d`}, none}, {[]int{3}, []string{"e"}, &other},
		} {
			if err := tx.Later(insert, w.ids, w.notes); err != nil {
				return err
			}
			if err := tx.Later(update, w.note, w.ids[0]); err != nil {
				return err
			}
			if err := tx.Flush(ctx); err != nil {
				return err
			}
		}
		var prepared, generic int
		if err := tx.QueryRowContext(ctx, `SELECT count(*), coalesce(sum(generic_plans), 0) FROM pg_prepared_statements
			WHERE statement IN (?, ?)`, numbered(insert), numbered(update)).Scan(&prepared, &generic); err != nil {
			return err
		}
		if prepared != 2 || generic < 4 {
			t.Errorf("pg_prepared_statements: %d statements with %d runs of a generic plan, want 2 with 4", prepared, generic)
		}
		return tx.QueryAndFlush(ctx, appendScanned(&notes), "SELECT note FROM later_prepared_test WHERE id <> ? ORDER BY id", 0)
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"a,b", `c"d`, other}; !slices.Equal(notes, want) {
		t.Fatalf("read %q, want %q", notes, want)
	}
	pipeline := numbered(insert) + ";\n" + numbered(update)
	if sent := trips.take(); len(sent) != 6 || sent[1] != pipeline || sent[2] != pipeline {
		t.Fatalf("sent %q; want BEGIN, the two pipelines of two writes, the check, the read, COMMIT", sent)
	}
}

// A connection keeps its prepared writes; when PostgreSQL can no longer
// run one as prepared (its table changed under its plan, or the session's
// statements were deallocated), the transaction runs again, prepares it
// afresh, and commits.
func TestPreparedWritesRecoverWhenTheirPlanGoesStale(t *testing.T) {
	ctx := context.Background()
	bdb, err := db.Open(ctx, dbtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer bdb.Close()
	bdb.SetMaxOpenConns(1) // every transaction on the connection that prepared the writes
	if _, err := bdb.ExecContext(ctx, "CREATE TABLE later_stale_test (id int PRIMARY KEY, seq int NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	end := func(id int) error {
		return db.Transact(ctx, bdb, func(ctx context.Context, tx db.Tx) error {
			if err := tx.Later("INSERT INTO later_stale_test VALUES (?, ?)", -id, 0); err != nil {
				return err
			}
			return tx.QueryAndFlush(ctx, func(r db.Row) error { var seq int64; return r.Scan(&seq) },
				"INSERT INTO later_stale_test VALUES (?, ?) RETURNING seq", id, id)
		})
	}
	if err := end(1); err != nil {
		t.Fatal(err)
	}
	for i, change := range []string{"ALTER TABLE later_stale_test ALTER COLUMN seq TYPE bigint", "DEALLOCATE ALL"} {
		if _, err := bdb.ExecContext(ctx, change); err != nil {
			t.Fatal(err)
		}
		if err := end(i + 2); err != nil {
			t.Fatalf("after %s: %v", change, err)
		}
	}
	if n := count(t, bdb, "later_stale_test"); n != 6 {
		t.Fatalf("%d rows, want 6", n)
	}
}

// In a transaction nested in another (no connection of its own), the last
// statement and the queued writes after it are sent one by one, in that
// order, and a queued write's error is the nested transaction's.
func TestQueuedWritesOfANestedTransaction(t *testing.T) {
	bdb, _ := batchDB(t, "later_nested_test")
	ctx := context.Background()
	var ids []int
	err := db.Transact(ctx, bdb, func(ctx context.Context, tx db.Tx) error {
		if err := tx.Later("INSERT INTO later_nested_test VALUES (1, 'outer')"); err != nil {
			return err
		}
		err := db.Transact(ctx, tx, func(ctx context.Context, tx db.Tx) error {
			if err := tx.Later("INSERT INTO later_nested_test VALUES (?, 'inner')", 2); err != nil {
				return err
			}
			return tx.QueryAndFlush(ctx, appendScanned(&ids), "SELECT id FROM later_nested_test ORDER BY id")
		})
		if err != nil {
			return err
		}
		return db.Transact(ctx, tx, func(ctx context.Context, tx db.Tx) error {
			return tx.Later("INSERT INTO later_nested_test VALUES (2, 'again')")
		})
	})
	if !db.IsUniqueViolation(err, "") || len(ids) != 0 {
		t.Fatalf("got %v after reading %v, want the second nested transaction's unique violation after reading nothing (the writes follow the read)", err, ids)
	}
}

// Reads of several parts go in one statement, a locking upsert among
// them, and their values land in their destinations.
func TestReadsGatherColumnsInOneStatement(t *testing.T) {
	bdb, trips := batchDB(t, "reads_test")
	ctx := context.Background()
	if _, err := bdb.ExecContext(ctx, "INSERT INTO reads_test VALUES (1, 'one')"); err != nil {
		t.Fatal(err)
	}
	trips.take()
	var (
		note    string
		upserts []struct {
			ID   int    `json:"id"`
			Note string `json:"note"`
		}
		missing = "untouched"
		quoted  string
		none    db.Reads
	)
	err := db.Transact(ctx, bdb, func(ctx context.Context, tx db.Tx) error {
		if err := none.Run(ctx, tx); err != nil {
			return err
		}
		var r db.Reads
		r.Column(&note, "SELECT note FROM reads_test WHERE id = ?", 1)
		r.With("test_up", "INSERT INTO reads_test VALUES (?, ?), (1, 'x') ON CONFLICT (id) DO UPDATE SET note = reads_test.note RETURNING id, note", 2, "two?")
		r.Column(db.JSON(&upserts), "SELECT json_agg(u ORDER BY u.id) FROM test_up AS u")
		r.Column(db.JSON(&missing), "SELECT NULL::json")
		r.Column(&quoted, `SELECT 'why?' || ? || "?"."?" FROM (SELECT ?::text AS "?") AS "?"`, " ", "not")
		return r.Run(ctx, tx)
	})
	if err != nil {
		t.Fatal(err)
	}
	if sent := trips.take(); len(sent) != 3 || note != "one" || len(upserts) != 2 || upserts[0].Note != "one" || upserts[1].Note != "two?" ||
		missing != "untouched" || quoted != "why? not" {
		t.Fatalf("sent %q; read %q, %+v, %q, %q", sent, note, upserts, missing, quoted)
	}
}

// A part whose placeholders and arguments differ in number is refused
// before anything is sent.
func TestReadsRefuseMismatchedArguments(t *testing.T) {
	bdb, trips := batchDB(t, "reads_args_test")
	ctx := context.Background()
	for _, c := range []struct {
		expr string
		args []any
	}{{"SELECT ?::int + ?::int", []any{1}}, {"SELECT ?::int", []any{1, 2}}} {
		trips.take()
		var got int
		var r db.Reads
		r.Column(&got, c.expr, c.args...)
		if err := r.Run(ctx, bdb); err == nil || !strings.Contains(err.Error(), "placeholders") {
			t.Fatalf("%s with %v: got %v, want an error about its placeholders", c.expr, c.args, err)
		}
		if sent := trips.take(); len(sent) != 0 {
			t.Fatalf("%s with %v: sent %q", c.expr, c.args, sent)
		}
	}
}
