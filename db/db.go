package db

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"
)

//go:embed migrations/*.sql
var migrations embed.FS

// PoolSize is the most connections one instance opens. Transactions hold
// a connection only while they run (nothing waits on the network inside
// one), so a few per core of the database server keep it busy.
const PoolSize = 20

// Open connects to the database at url and checks it answers. It returns an
// error naming the cause when the URL is malformed or the server is down.
func Open(ctx context.Context, url string) (*bun.DB, error) {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("parse database url: %w", err)
	}
	// bun writes every argument into the SQL text, so no two statements
	// look alike to pgx's statement cache: preparing them would cost a
	// round trip (and a deallocation) each and never be reused. The simple
	// protocol sends each statement in one message; QueryPrepared asks for
	// the statement cache for the few statements whose text never changes.
	cfg.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	// The statements that are prepared (QueryPrepared) are the hot ones,
	// whose text never changes: a plan made once for any arguments is what
	// they are prepared for. The setting touches nothing else, as only
	// prepared statements have plans to keep.
	cfg.RuntimeParams["plan_cache_mode"] = "force_generic_plan"
	sqldb := stdlib.OpenDB(*cfg)
	sqldb.SetMaxOpenConns(PoolSize)
	sqldb.SetMaxIdleConns(PoolSize)
	sqldb.SetConnMaxIdleTime(5 * time.Minute)
	bdb := bun.NewDB(sqldb, pgdialect.New())
	pingCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := bdb.PingContext(pingCtx); err != nil {
		bdb.Close()
		return nil, fmt.Errorf("connect to database: %w", err)
	}
	return bdb, nil
}

// migrationLock is the advisory lock key that serialises migrations when
// several instances start at once.
const migrationLock = 7_364_201

// Migrate applies, in file-name order, every embedded migration that has not
// been applied yet, each in its own transaction. Concurrent callers wait for
// each other. It returns the first failing migration's error.
func Migrate(ctx context.Context, bdb *bun.DB) error {
	conn, err := bdb.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "SELECT pg_advisory_lock(?)", migrationLock); err != nil {
		return fmt.Errorf("lock migrations: %w", err)
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock(?)", migrationLock)

	if _, err := conn.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version text PRIMARY KEY,
		applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return fmt.Errorf("create schema_migrations: %w", err)
	}
	applied := map[string]bool{}
	rows, err := conn.QueryContext(ctx, "SELECT version FROM schema_migrations")
	if err != nil {
		return err
	}
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			rows.Close()
			return err
		}
		applied[v] = true
	}
	rows.Close()

	names, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil {
		return err
	}
	sort.Strings(names)
	for _, name := range names {
		version := strings.TrimSuffix(strings.TrimPrefix(name, "migrations/"), ".sql")
		if applied[version] {
			continue
		}
		body, err := migrations.ReadFile(name)
		if err != nil {
			return err
		}
		err = conn.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			if _, err := tx.ExecContext(ctx, string(body)); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, "INSERT INTO schema_migrations (version) VALUES (?)", version)
			return err
		})
		if err != nil {
			return fmt.Errorf("migration %s: %w", version, err)
		}
	}
	return nil
}

// Transact runs fn in a READ COMMITTED transaction (the isolation policy
// is in doc.go), retrying the whole function when PostgreSQL reports a
// deadlock (40P01) or a serialization failure (40001). fn must have no
// side effects outside the transaction, since it may run several times:
// work that must follow the commit is registered with AfterCommit. The
// writes fn queues with Later are sent after fn returns, before the
// COMMIT, in one round trip. It returns fn's error (or a queued write's),
// or the last retryable error when every attempt failed.
func Transact(ctx context.Context, bdb bun.IDB, fn func(ctx context.Context, tx Tx) error) error {
	var err error
	backoff := 2 * time.Millisecond
	for attempt := 0; attempt < maxAttempts; attempt++ {
		st := &txState{}
		err = st.run(ctx, bdb, func(ctx context.Context, btx bun.Tx) error {
			tx := Tx{btx, st}
			if err := fn(ctx, tx); err != nil {
				return err
			}
			return tx.Flush(ctx)
		})
		if err == nil {
			for _, hook := range st.after {
				hook()
			}
			return nil
		}
		if !IsRetryable(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(backoff):
		}
		if backoff < 200*time.Millisecond {
			backoff *= 2
		}
	}
	return err
}

const maxAttempts = 12

// run runs fn in a READ COMMITTED transaction of idb. A transaction of
// the database or of a connection takes the connection for itself, which
// st keeps for the queued writes (Later).
func (st *txState) run(ctx context.Context, idb bun.IDB, fn func(ctx context.Context, tx bun.Tx) error) error {
	opts := &sql.TxOptions{Isolation: sql.LevelReadCommitted}
	switch c := idb.(type) {
	case *bun.DB:
		conn, err := c.Conn(ctx)
		if err != nil {
			return fmt.Errorf("take a connection for a transaction: %w", err)
		}
		defer conn.Close()
		st.conn = conn.Conn
		return conn.RunInTx(ctx, opts, fn)
	case bun.Conn:
		st.conn = c.Conn
		return c.RunInTx(ctx, opts, fn)
	}
	return idb.RunInTx(ctx, opts, fn)
}

// ErrNoTransaction is the error of AfterCommit and Later of a Tx outside a
// transaction of Transact.
var ErrNoTransaction = errors.New("db: AfterCommit and Later need a transaction started by db.Transact")

// AfterCommit registers fn to run once tx has committed, on the
// committing goroutine, in the order of registration. A rolled-back or
// retried attempt never runs it. It returns ErrNoTransaction for the zero
// Tx.
func (tx Tx) AfterCommit(fn func()) error {
	st := tx.st
	if st == nil {
		return ErrNoTransaction
	}
	st.after = append(st.after, fn)
	return nil
}

// IsRetryable reports whether err is a serialization failure or deadlock,
// or an error of Retry.
func IsRetryable(err error) bool {
	var pgErr *pgconn.PgError
	var retry retryError
	return errors.As(err, &retry) || errors.As(err, &pgErr) && (pgErr.Code == "40001" || pgErr.Code == "40P01")
}

// Retry returns err marked so that Transact runs its function again, as
// after a deadlock: for a transaction that learns from a constraint that
// it raced another (a row committed after its reads, which they could not
// see) and will see it on its next attempt.
func Retry(err error) error { return retryError{err} }

type retryError struct{ err error }

func (e retryError) Error() string { return e.err.Error() }
func (e retryError) Unwrap() error { return e.err }

// IsForeignKeyViolation reports whether err is a foreign-key violation,
// optionally of the named constraint.
func IsForeignKeyViolation(err error, constraint string) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23503" &&
		(constraint == "" || pgErr.ConstraintName == constraint)
}

// IsUniqueViolation reports whether err is a unique-constraint violation,
// optionally of the named constraint.
func IsUniqueViolation(err error, constraint string) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23505" &&
		(constraint == "" || pgErr.ConstraintName == constraint)
}
