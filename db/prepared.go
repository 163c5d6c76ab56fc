package db

import (
	"context"
	"database/sql"
	"fmt"
	"reflect"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/uptrace/bun"
)

// QueryPrepared runs query, written with $1, $2... placeholders, on idb
// (the database, a connection or a transaction) with args sent apart from
// its text (the extended protocol): the statement is prepared once per
// connection and kept (pgx's statement cache), and Open makes PostgreSQL
// plan it once too (a generic plan), so each run costs its execution
// only. It is for the few statements run so often that parsing and
// planning them would be most of their cost (a move, a join, a game's
// start): their text must not change from run to run (a batch passes
// arrays, not a list of values of its length). So are the writes a
// transaction queues (Later) and its last statement (QueryAndFlush);
// every other statement goes through bun, which writes its arguments into
// the text.
//
// In a transaction of Transact, the statement runs at once, before the
// writes queued with Later, like any statement of the transaction's own.
func QueryPrepared(ctx context.Context, idb bun.IDB, query string, args ...any) (*sql.Rows, error) {
	var bdb *bun.DB
	var run func(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	if tx, ok := idb.(Tx); ok {
		idb = tx.Tx
	}
	switch c := idb.(type) {
	case *bun.DB:
		bdb, run = c, c.DB.QueryContext
	case bun.Tx:
		bdb, run = c.NewRaw("").DB(), c.Tx.QueryContext
	case bun.Conn:
		bdb, run = c.NewRaw("").DB(), c.Conn.QueryContext
	default:
		return nil, fmt.Errorf("run a prepared statement on a %T", idb)
	}
	sent := append([]any{pgx.QueryExecModeCacheStatement}, args...)
	makeSendable(sent[1:])
	var rows *sql.Rows
	err := hooked(ctx, bdb, query, args, func(ctx context.Context) error {
		var err error
		rows, err = run(ctx, query, sent...)
		return err
	})
	return rows, err
}

// hooked runs send, the round trip of query, between the query hooks of
// bdb added through AddQueryHook or WithQueryHook.
func hooked(ctx context.Context, bdb *bun.DB, query string, args []any, send func(ctx context.Context) error) error {
	hooks := hooksOf(bdb)
	event := &bun.QueryEvent{DB: bdb, Query: query, QueryTemplate: query, QueryArgs: args}
	if len(hooks) > 0 {
		event.StartTime = time.Now()
		for _, h := range hooks {
			ctx = h.BeforeQuery(ctx, event)
		}
	}
	err := send(ctx)
	event.Err = err
	for i := len(hooks) - 1; i >= 0; i-- {
		hooks[i].AfterQuery(ctx, event)
	}
	return err
}

// makeSendable readies args, a list the caller owns, for pgx to encode:
// a list of strings becomes the text of an array (see arrayText).
func makeSendable(args []any) {
	for i, a := range args {
		if list, ok := a.([]string); ok && list != nil {
			args[i] = arrayText(list)
		}
	}
}

// arrayText writes list as the text of a PostgreSQL array, each element
// quoted. pgx sends an argument in the binary format unless it is a
// string, and a []string has none for uuid[] (the usual list of keys):
// pgx would find that out on every call, formatting an error message of
// the whole list, before sending it as text. As the text of an array it
// goes as text at once, and PostgreSQL reads it as the array type the
// statement names (uuid[], text[], jsonb[]).
func arrayText(list []string) string {
	n := 2
	for _, s := range list {
		n += len(s) + 3
	}
	b := make([]byte, 0, n)
	b = append(b, '{')
	for i, s := range list {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		for j := 0; j < len(s); j++ {
			if s[j] == '"' || s[j] == '\\' {
				b = append(b, '\\')
			}
			b = append(b, s[j])
		}
		b = append(b, '"')
	}
	return string(append(b, '}'))
}

// bun's query hooks see the statements bun sends; those of QueryPrepared
// bypass bun, so the hooks that must see them too (tests counting a
// handle's round trips, or acting before one of them) are added with
// AddQueryHook or WithQueryHook, which give them to both.
var (
	hooksMu sync.RWMutex
	hooks   = map[*bun.DB][]bun.QueryHook{}
)

func hooksOf(bdb *bun.DB) []bun.QueryHook {
	hooksMu.RLock()
	defer hooksMu.RUnlock()
	return hooks[bdb]
}

// AddQueryHook adds h to bdb's query hooks, for the statements bun sends
// and those of QueryPrepared alike.
func AddQueryHook(bdb *bun.DB, h bun.QueryHook) {
	//lint:ignore SA1019 the hook must see this handle's own statements, which WithQueryHook would copy
	bdb.AddQueryHook(h)
	hooksMu.Lock()
	defer hooksMu.Unlock()
	hooks[bdb] = append(hooks[bdb], h)
}

// WithQueryHook returns a copy of bdb with h added to its query hooks (see
// AddQueryHook).
func WithQueryHook(bdb *bun.DB, h bun.QueryHook) *bun.DB {
	c := bdb.WithQueryHook(h)
	hooksMu.Lock()
	defer hooksMu.Unlock()
	hooks[c] = append(append([]bun.QueryHook(nil), hooks[bdb]...), h)
	return c
}

// ScanPrepared runs query as QueryPrepared does and scans its rows into
// dest as bun's Scan would: a slice takes them all, anything else the
// first row, and then no row is sql.ErrNoRows.
func ScanPrepared(ctx context.Context, idb bun.IDB, dest any, query string, args ...any) error {
	rows, err := QueryPrepared(ctx, idb, query, args...)
	if err != nil {
		return err
	}
	bdb := idb.NewRaw("").DB()
	if v := reflect.ValueOf(dest); v.Kind() == reflect.Pointer && v.Elem().Kind() == reflect.Slice {
		return bdb.ScanRows(ctx, rows, dest)
	}
	return firstRow(rows, func() error { return bdb.ScanRow(ctx, rows, dest) })
}

// firstRow calls scan for the first of rows (sql.ErrNoRows when there is
// none) and closes them.
func firstRow(rows *sql.Rows, scan func() error) error {
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return err
		}
		return sql.ErrNoRows
	}
	if err := scan(); err != nil {
		return err
	}
	return rows.Close()
}
