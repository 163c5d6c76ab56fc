package db_test

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"testing"

	"wager/db"
	"wager/db/dbtest"
)

// A prepared statement scans like bun's (a struct takes the first row, a
// slice all, no row is sql.ErrNoRows), runs in the transaction it is
// given, and the hooks added through db see it as one round trip.
func TestPreparedStatementsScanLikeBunAndHooksSeeThem(t *testing.T) {
	bdb, trips := batchDB(t, "prepared_test")
	ctx := context.Background()
	const insert = `INSERT INTO prepared_test SELECT * FROM unnest($1::int[], $2::text[]) RETURNING id, note`
	type row struct {
		ID   int    `bun:"id"`
		Note string `bun:"note"`
	}
	var got []row
	if err := db.ScanPrepared(ctx, bdb, &got, insert, []int{1, 2}, []string{"a", "b"}); err != nil || len(got) != 2 || got[1] != (row{2, "b"}) {
		t.Fatalf("insert two rows: got %+v, %v", got, err)
	}
	// Again on the same text, with another number of rows: the same statement.
	if err := db.ScanPrepared(ctx, bdb, &got, insert, []int{3}, []string{"c"}); err != nil || len(got) != 1 {
		t.Fatalf("insert one row: got %+v, %v", got, err)
	}
	const one = `SELECT id, note FROM prepared_test WHERE id = $1`
	var r row
	if err := db.ScanPrepared(ctx, bdb, &r, one, 3); err != nil || r != (row{3, "c"}) {
		t.Errorf("read row 3: got %+v, %v", r, err)
	}
	if err := db.ScanPrepared(ctx, bdb, &r, one, 4); !errors.Is(err, sql.ErrNoRows) {
		t.Errorf("read a missing row: got %v, want sql.ErrNoRows", err)
	}
	if sent := trips.take(); len(sent) != 4 || sent[0] != insert || sent[2] != one {
		t.Errorf("the hooks saw %q, want the four statements' texts", sent)
	}

	// In a transaction rolled back, nothing stays.
	rollback := errors.New("roll back")
	err := db.Transact(ctx, bdb, func(ctx context.Context, tx db.Tx) error {
		if err := db.ScanPrepared(ctx, tx, &got, insert, []int{5}, []string{"e"}); err != nil {
			return err
		}
		if n := count(t, tx, "prepared_test"); n != 4 {
			t.Errorf("inside the transaction: %d rows, want 4", n)
		}
		// On this connection the statement is prepared, and planned once
		// for any arguments (what it is prepared for).
		if err := db.ScanPrepared(ctx, tx, &got, insert, []int{6}, []string{"f"}); err != nil {
			return err
		}
		var runs, generic int
		if err := tx.QueryRowContext(ctx, "SELECT count(*), coalesce(sum(generic_plans), 0) FROM pg_prepared_statements WHERE statement = ?",
			insert).Scan(&runs, &generic); err != nil {
			return err
		}
		if runs != 1 || generic < 2 {
			t.Errorf("pg_prepared_statements: %d statements with %d runs of a generic plan, want 1 with at least 2", runs, generic)
		}
		return rollback
	})
	if !errors.Is(err, rollback) {
		t.Fatal(err)
	}
	if n := count(t, bdb, "prepared_test"); n != 3 {
		t.Errorf("after the rollback: %d rows, want 3", n)
	}
}

// Lists of strings reach PostgreSQL as they were, whatever characters
// they hold and whatever array type the statement reads them as; a nil
// list is NULL, an empty one an empty array.
func TestPreparedStatementsTakeListsOfStringsAsTheyAre(t *testing.T) {
	bdb := dbtest.DB(t)
	ctx := context.Background()
	texts := []string{"", "plain", `a "quoted" word`, `back\slash\`, "{braces}, and a comma", "NULL", "  spaces  ", "é ✓"}
	var got []string
	if err := db.ScanPrepared(ctx, bdb, &got, `SELECT x FROM unnest($1::text[]) WITH ORDINALITY AS v (x, n) ORDER BY n`, texts); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, texts) {
		t.Errorf("text[]: got %q, want %q", got, texts)
	}

	ids := []string{"6ba7b810-9dad-11d1-80b4-00c04fd430c8", "00000000-0000-0000-0000-000000000001"}
	got = nil
	if err := db.ScanPrepared(ctx, bdb, &got, `SELECT x::text FROM unnest($1::uuid[]) WITH ORDINALITY AS v (x, n) ORDER BY n`, ids); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, ids) {
		t.Errorf("uuid[]: got %q, want %q", got, ids)
	}

	docs := []string{`{"say": "he said \"hi\"", "path": "C:\\x"}`, `[1, 2]`}
	var same []bool
	if err := db.ScanPrepared(ctx, bdb, &same, `SELECT x = ($2::jsonb[])[n] FROM unnest($1::jsonb[]) WITH ORDINALITY AS v (x, n) ORDER BY n`,
		docs, []string{`{"path": "C:\\x", "say": "he said \"hi\""}`, `[1,2]`}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(same, []bool{true, true}) {
		t.Errorf("jsonb[]: equal to the documents sent: %v, want both", same)
	}

	var r struct {
		IsNull  bool `bun:"is_null"`
		IsEmpty bool `bun:"is_empty"`
	}
	if err := db.ScanPrepared(ctx, bdb, &r, `SELECT $1::text[] IS NULL AS is_null, cardinality($2::uuid[]) = 0 AS is_empty`,
		[]string(nil), []string{}); err != nil || !r.IsNull || !r.IsEmpty {
		t.Errorf("a nil list is NULL: %v, an empty one empty: %v (%v)", r.IsNull, r.IsEmpty, err)
	}
}
