// Package dbtest gives each test package a fresh, migrated PostgreSQL
// database of its own, created in TestMain and dropped afterwards.
//
// The server is the one db/setup-postgres.sh prepares (make test runs it);
// TEST_DATABASE_URL points elsewhere. The role needs CREATEDB.
package dbtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"testing"

	"github.com/uptrace/bun"

	"wager/db"
)

// DefaultURL is the database make test prepares.
const DefaultURL = "postgres://wager:wager@127.0.0.1:5432/wager?sslmode=disable"

var (
	shared    *bun.DB
	sharedURL string
	adminURL  string
)

// Main creates the package's database, runs the tests and drops it. Use it
// as `func TestMain(m *testing.M) { dbtest.Main(m) }`.
func Main(m *testing.M) {
	code, err := run(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, "dbtest:", err)
		os.Exit(1)
	}
	os.Exit(code)
}

func run(m *testing.M) (int, error) {
	ctx := context.Background()
	admin := os.Getenv("TEST_DATABASE_URL")
	if admin == "" {
		admin = DefaultURL
	}
	adminURL = admin
	var (
		drop func()
		err  error
	)
	sharedURL, drop, err = create(ctx)
	if err != nil {
		return 0, err
	}
	defer drop()
	shared, err = db.Open(ctx, sharedURL)
	if err != nil {
		return 0, err
	}
	defer shared.Close()
	return m.Run(), nil
}

// create makes a new migrated database and returns its URL and how to
// drop it.
func create(ctx context.Context) (string, func(), error) {
	adminDB, err := db.Open(ctx, adminURL)
	if err != nil {
		return "", nil, fmt.Errorf("%w (run `make test`, or `bash db/setup-postgres.sh`, to start the test database)", err)
	}
	defer adminDB.Close()
	suffix := make([]byte, 6)
	rand.Read(suffix)
	name := "test_" + hex.EncodeToString(suffix)
	if _, err := adminDB.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		return "", nil, fmt.Errorf("create test database: %w", err)
	}
	drop := func() {
		if adminDB, err := db.Open(context.Background(), adminURL); err == nil {
			adminDB.ExecContext(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
			adminDB.Close()
		}
	}
	u, err := url.Parse(adminURL)
	if err != nil {
		drop()
		return "", nil, err
	}
	u.Path = "/" + name
	fresh, err := db.Open(ctx, u.String())
	if err != nil {
		drop()
		return "", nil, err
	}
	defer fresh.Close()
	if err := db.Migrate(ctx, fresh); err != nil {
		drop()
		return "", nil, err
	}
	return u.String(), drop, nil
}

// Fresh returns the URL of a new migrated database of the test's own,
// dropped when the test ends: for tests whose rows others would find (the
// demo bots are known by name).
func Fresh(t testing.TB) string {
	t.Helper()
	DB(t)
	u, drop, err := create(t.Context())
	if err != nil {
		t.Fatalf("dbtest.Fresh: %v", err)
	}
	t.Cleanup(drop)
	return u
}

// DB returns the package's database. Tests that change shared rows must
// restore them (t.Cleanup) or use values of their own.
func DB(t testing.TB) *bun.DB {
	t.Helper()
	if shared == nil {
		t.Fatal("dbtest.DB: TestMain must call dbtest.Main")
	}
	return shared
}

// URL returns the connection URL of the package's database.
func URL(t testing.TB) string {
	t.Helper()
	DB(t)
	return sharedURL
}
