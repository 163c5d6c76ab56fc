// Package db opens PostgreSQL through bun (pgdialect over pgx), applies the
// embedded migrations, runs transactions with retry, and listens for
// notifications.
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

// Open connects to the database at url and checks it answers. It returns an
// error naming the cause when the URL is malformed or the server is down.
func Open(ctx context.Context, url string) (*bun.DB, error) {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("parse database url: %w", err)
	}
	sqldb := stdlib.OpenDB(*cfg)
	sqldb.SetMaxOpenConns(20)
	sqldb.SetMaxIdleConns(10)
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

// Serializable runs fn in a SERIALIZABLE transaction, retrying the whole
// function when PostgreSQL reports a serialization failure (40001) or a
// deadlock (40P01). Money paths use it. fn must not have side effects outside
// the transaction, since it may run several times. It returns fn's error, or
// the last retryable error when every attempt failed.
func Serializable(ctx context.Context, bdb bun.IDB, fn func(ctx context.Context, tx bun.Tx) error) error {
	return transact(ctx, bdb, sql.LevelSerializable, fn)
}

// ReadCommitted runs fn in a READ COMMITTED transaction with the same retry
// rule as Serializable (deadlocks can happen at any level).
func ReadCommitted(ctx context.Context, bdb bun.IDB, fn func(ctx context.Context, tx bun.Tx) error) error {
	return transact(ctx, bdb, sql.LevelReadCommitted, fn)
}

const maxAttempts = 12

func transact(ctx context.Context, bdb bun.IDB, level sql.IsolationLevel, fn func(ctx context.Context, tx bun.Tx) error) error {
	var err error
	backoff := 2 * time.Millisecond
	for attempt := 0; attempt < maxAttempts; attempt++ {
		err = bdb.RunInTx(ctx, &sql.TxOptions{Isolation: level}, fn)
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

// IsRetryable reports whether err is a serialization failure or deadlock.
func IsRetryable(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "40001" || pgErr.Code == "40P01")
}

// IsUniqueViolation reports whether err is a unique-constraint violation,
// optionally of the named constraint.
func IsUniqueViolation(err error, constraint string) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23505" &&
		(constraint == "" || pgErr.ConstraintName == constraint)
}
