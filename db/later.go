package db

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/uptrace/bun"
)

// Tx is a transaction of Transact: its bun.Tx, for the statements it runs
// itself, and what it carries besides: the writes queued to be sent before
// its COMMIT (Later), the work to run after it (AfterCommit) and each
// package's values of the transaction (Local). It is a value: the
// functions that take part in a transaction are handed it, and nothing of
// the transaction travels in a context.Context. The zero Tx belongs to no
// transaction of Transact: its Later and AfterCommit return
// ErrNoTransaction.
type Tx struct {
	bun.Tx
	st *txState
}

// txState is what a transaction of Transact keeps besides its bun.Tx: its
// connection, the functions to run after its commit, the writes queued to
// be sent before it, and each package's values of the transaction (Local).
type txState struct {
	conn   *sql.Conn // nil in a transaction nested in another
	after  []func()
	writes []statement
	locals map[reflect.Type]any
}

// statement is a statement to send prepared: its text, with $1, $2...
// placeholders, and their arguments.
type statement struct {
	text string
	args []any
}

// Later queues query, a write whose result nobody reads, with its args (?
// placeholders, as Reads takes them), in tx: the writes queued in a transaction are sent together, in the
// order queued, in one round trip (a pipeline of the extended protocol),
// after the transaction's last statement of its own and before its COMMIT
// (or with the statement of QueryAndFlush). Each is a prepared statement,
// parsed and planned once per connection, as QueryPrepared's are: its
// text must not change with its values (a list is an array argument, or
// its length one of a few). An error of a queued write fails the
// transaction as the error of any statement would.
//
// A queued write runs after every statement the transaction sends of its
// own: nothing in the transaction may need to read what it writes (ids
// and counts it would return are read beforehand instead, see Reads),
// and it takes its row locks late (the locks that order transactions are
// taken by the reads before it, see doc.go). It returns ErrNoTransaction
// outside a transaction of Transact.
func (tx Tx) Later(query string, args ...any) error {
	st := tx.st
	if st == nil {
		return ErrNoTransaction
	}
	text, sent, err := part{query, args}.numbered(nil, nil)
	if err != nil {
		return fmt.Errorf("queue a write: %w", err)
	}
	makeSendable(sent)
	st.writes = append(st.writes, statement{string(text), sent})
	return nil
}

// Flush sends the writes queued in tx (see Later) now, in one round trip,
// for a statement that must read what they write. It sends nothing when
// none are queued.
func (tx Tx) Flush(ctx context.Context) error {
	st := tx.st
	if st == nil || len(st.writes) == 0 {
		return nil
	}
	writes := st.writes
	st.writes = nil
	if err := st.pipeline(ctx, tx.Tx, writes, nil); err != nil {
		return fmt.Errorf("store the transaction's queued writes: %w", err)
	}
	return nil
}

// QueryAndFlush runs query (with args, ? placeholders, as Later takes
// them) and, in the same round trip, the writes queued in tx after it; scan is called for each of query's rows. A
// transaction's last statement sends its queued writes this way instead
// of on their own before the COMMIT. Errors of the queued writes are
// returned as query's would be.
func (tx Tx) QueryAndFlush(ctx context.Context, scan func(Row) error, query string, args ...any) error {
	text, sent, err := part{query, args}.numbered(nil, nil)
	if err != nil {
		return fmt.Errorf("run a transaction's last statement: %w", err)
	}
	makeSendable(sent)
	st := tx.st
	if st == nil {
		return ErrNoTransaction
	}
	stmts := append([]statement{{string(text), sent}}, st.writes...)
	st.writes = nil
	return st.pipeline(ctx, tx.Tx, stmts, scan)
}

// Row is one row of a result, read with Scan as database/sql reads one.
type Row interface {
	Scan(dest ...any) error
}

// pipeline sends stmts in the transaction tx, prepared, and calls scan
// (unless nil) for each row of the first one's result. On the
// transaction's own connection they go in one round trip: each is
// prepared once per connection (a round trip the first time), then all
// are bound and executed in one pipeline of the extended protocol, which
// PostgreSQL runs in order and stops at the first error. In a
// transaction nested in another (no connection of its own), each is sent
// as QueryPrepared sends it, one round trip each. The query hooks see
// the pipeline as one round trip, its texts joined by semicolons.
func (st *txState) pipeline(ctx context.Context, tx bun.Tx, stmts []statement, scan func(Row) error) error {
	if st.conn == nil {
		for i, s := range stmts {
			if err := runPrepared(ctx, tx, s, i == 0, scan); err != nil {
				return err
			}
		}
		return nil
	}
	texts := make([]string, len(stmts))
	for i, s := range stmts {
		texts[i] = s.text
	}
	return hooked(ctx, tx.NewRaw("").DB(), strings.Join(texts, ";\n"), nil, func(ctx context.Context) error {
		return st.conn.Raw(func(driverConn any) error {
			c, ok := driverConn.(*stdlib.Conn)
			if !ok {
				return fmt.Errorf("send a pipeline on a %T", driverConn)
			}
			return sendPipeline(ctx, c.Conn(), stmts, scan)
		})
	})
}

// runPrepared runs s as QueryPrepared does, calling scan for its rows when
// first.
func runPrepared(ctx context.Context, tx bun.Tx, s statement, first bool, scan func(Row) error) (err error) {
	rows, err := QueryPrepared(ctx, tx, s.text, s.args...)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := rows.Close(); err == nil {
			err = cerr
		}
	}()
	for rows.Next() {
		if first && scan != nil {
			if err := scan(rows); err != nil {
				return err
			}
		}
	}
	return rows.Err()
}

// sendPipeline prepares what of stmts the connection has not prepared yet,
// then binds and executes all of them in one round trip. When that fails,
// the connection forgets the statements (as pgx's statement cache forgets
// one that failed), so that the next run prepares them afresh: one that
// PostgreSQL could no longer run as prepared, because a table changed
// under its plan or the session's statements were deallocated, fails its
// transaction with an error of Retry, and Transact's next attempt
// succeeds.
func sendPipeline(ctx context.Context, c *pgx.Conn, stmts []statement, scan func(Row) error) error {
	err := runPipeline(ctx, c, stmts, scan)
	if err == nil {
		return nil
	}
	for _, s := range stmts {
		_ = c.Deallocate(ctx, s.text) // a broken connection is replaced, and its statements with it
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && (pgErr.Code == "0A000" && pgErr.Message == "cached plan must not change result type" ||
		pgErr.Code == "26000") { // invalid_sql_statement_name
		return Retry(err)
	}
	return err
}

// runPipeline is sendPipeline's round trip (after the prepares it needs).
func runPipeline(ctx context.Context, c *pgx.Conn, stmts []statement, scan func(Row) error) error {
	var batch pgconn.Batch
	for _, s := range stmts {
		sd, err := c.Prepare(ctx, s.text, s.text) // named by its text: kept by the connection
		if err != nil {
			return err
		}
		var params pgx.ExtendedQueryBuilder
		if err := params.Build(c.TypeMap(), sd, s.args); err != nil {
			return fmt.Errorf("encode the arguments of %q: %w", s.text, err)
		}
		batch.ExecStatement(sd, params.ParamValues, params.ParamFormats, params.ResultFormats)
	}
	results := c.PgConn().ExecBatch(ctx, &batch)
	var scanErr error
	for i := 0; results.NextResult(); i++ {
		r := results.ResultReader()
		for r.NextRow() {
			if i == 0 && scan != nil && scanErr == nil {
				scanErr = scan(pipelineRow{c.TypeMap(), r.FieldDescriptions(), r.Values()})
			}
		}
		if _, err := r.Close(); err != nil {
			_ = results.Close()
			return err
		}
	}
	if err := results.Close(); err != nil {
		return err
	}
	return scanErr
}

// pipelineRow is a row of a pipeline's result.
type pipelineRow struct {
	types  *pgtype.Map
	fields []pgconn.FieldDescription
	values [][]byte
}

func (r pipelineRow) Scan(dest ...any) error {
	if len(dest) != len(r.values) {
		return fmt.Errorf("scan %d columns into %d destinations", len(r.values), len(dest))
	}
	for i, d := range dest {
		f := r.fields[i]
		if err := r.types.Scan(f.DataTypeOID, f.Format, r.values[i], d); err != nil {
			return fmt.Errorf("scan column %s: %w", f.Name, err)
		}
	}
	return nil
}

// Local returns tx's value of type T, a zero T the first time it is asked
// for, for a package to keep what it knows of the transaction (what it
// queued, say). It returns nil for the zero Tx. Each attempt of Transact
// starts with new values.
func Local[T any](tx Tx) *T {
	st := tx.st
	if st == nil {
		return nil
	}
	key := reflect.TypeFor[T]()
	if v, ok := st.locals[key]; ok {
		return v.(*T)
	}
	if st.locals == nil {
		st.locals = map[reflect.Type]any{}
	}
	v := new(T)
	st.locals[key] = v
	return v
}

// Reads gathers what several services read for one operation into one
// statement, so that reading costs one round trip however many of them
// take part: each adds columns (and, for a locking read such as an
// upsert that returns the rows it locked, common table expressions the
// columns read), runs nothing itself, and finds its values in its
// destinations once Run has run. The statement reads from one snapshot:
// a service whose read depends on a lock reads in a later statement than
// the one that took it (see doc.go).
//
// The parts are written with ? placeholders, numbered $1, $2... in the
// order of the statement, and their arguments are sent apart from its
// text: the statement is prepared and planned once per connection for
// each combination of parts (see QueryPrepared). So an argument is a
// value pgx encodes (a list is a slice, written = ANY(?::uuid[])), and
// one whose type the statement does not fix is cast (?::integer).
type Reads struct {
	with  []part
	cols  []part
	dests []any
}

type part struct {
	text string
	args []any
}

// With adds the common table expression name AS (query), which the
// columns may read; names are prefixed with their package's name, as
// they share the statement.
func (r *Reads) With(name, query string, args ...any) {
	r.with = append(r.with, part{name + " AS (" + query + ")", args})
}

// Column adds the value of expr, a scalar SQL expression (with ?
// placeholders for args), to be scanned into dest as database/sql scans
// (see JSON for a value as JSON).
func (r *Reads) Column(dest any, expr string, args ...any) {
	r.cols = append(r.cols, part{"(" + expr + ")", args})
	r.dests = append(r.dests, dest)
}

// Run sends the reads as one prepared statement in idb and scans their
// values; it sends nothing when none were added. It returns the
// statement's error.
func (r *Reads) Run(ctx context.Context, idb bun.IDB) error {
	if len(r.cols) == 0 {
		return nil
	}
	var b []byte
	var args []any
	var err error
	for i, w := range r.with {
		if i == 0 {
			b = append(b, "WITH "...)
		} else {
			b = append(b, ",\n"...)
		}
		if b, args, err = w.numbered(b, args); err != nil {
			return err
		}
	}
	b = append(b, "\nSELECT "...)
	for i, c := range r.cols {
		if i > 0 {
			b = append(b, ",\n\t"...)
		}
		if b, args, err = c.numbered(b, args); err != nil {
			return err
		}
	}
	rows, err := QueryPrepared(ctx, idb, string(b), args...)
	if err == nil {
		err = firstRow(rows, func() error { return rows.Scan(r.dests...) })
	}
	if err != nil {
		return fmt.Errorf("read: %w", err)
	}
	r.with, r.cols, r.dests = nil, nil, nil
	return nil
}

// numbered appends p's text to b with its ? placeholders numbered after
// the len(args) arguments before it, and its arguments to args. A ? in a
// quoted literal or identifier is text, not a placeholder.
func (p part) numbered(b []byte, args []any) ([]byte, []any, error) {
	n := 0
	var quote byte
	for i := 0; i < len(p.text); i++ {
		c := p.text[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '?':
			if n == len(p.args) {
				return nil, nil, fmt.Errorf("read %q: more placeholders than its %d arguments", p.text, len(p.args))
			}
			n++
			b = append(b, '$')
			b = strconv.AppendInt(b, int64(len(args)+n), 10)
			continue
		}
		b = append(b, c)
	}
	if n != len(p.args) {
		return nil, nil, fmt.Errorf("read %q: %d placeholders for %d arguments", p.text, n, len(p.args))
	}
	return b, append(args, p.args...), nil
}

// JSON returns a destination for Reads.Column that decodes a json or
// jsonb value into dest (left as it is for NULL).
func JSON(dest any) sql.Scanner { return jsonDest{dest} }

type jsonDest struct{ dest any }

func (j jsonDest) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		return nil
	case []byte:
		return json.Unmarshal(v, j.dest)
	case string:
		return json.Unmarshal([]byte(v), j.dest)
	}
	return fmt.Errorf("scan %T as JSON", src)
}
