// Package gamelog is the public log of games: one record for every game
// whose money is final, appended to a Merkle tree (RFC 6962, as
// golang.org/x/mod/sumdb/tlog computes it) that is never changed, and
// served as signed checkpoints (golang.org/x/mod/sumdb/note, the C2SP
// tlog-checkpoint text), hash tiles and the records' exact bytes, so that
// anyone can check that the platform never rewrote a game or its payouts.
//
// A game is queued in the transaction that makes its money final (Final:
// its end, or the review that releases or voids it), so it is logged
// exactly when that transaction commits. The sequencer (Sequence) gives
// the queued games the log's next indexes, stores their records and the
// tree's new hashes and takes them off the queue, in one transaction under
// one lock: however many instances run it and wherever one crashes, each
// game is in the log once, and the indexes have no gaps.
package gamelog

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/uptrace/bun"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"wager.example.com/sdk/gamerecord"
	"wager/db"
	"wager/domain"
	"wager/domain/game"
)

// TileHeight is the height of the hash tiles served: tlog's clients ask
// for tiles of the height the log publishes.
const TileHeight = 8

// How a logged game's review ended: never held, or held and then released
// or voided.
const (
	IntegrityNone     = "none"
	IntegrityReleased = "released"
	IntegrityVoided   = "voided"
)

// batch is how many queued games one sequencing transaction logs at most.
const batch = 200

// Queue takes the games whose money became final, in the transaction
// that makes it final; the Log sequences them.
type Queue struct {
	now    domain.Clock
	wake   chan struct{}
	queued atomic.Int64 // games queued on this instance, committed
}

// NewQueue returns the queue of games to log.
func NewQueue(now domain.Clock) *Queue { return &Queue{now: now, wake: make(chan struct{}, 1)} }

// Final queues a game whose money became final in tx, to be logged once
// tx commits; integrity says how its review ended. A game already queued
// or logged is not queued again.
func (q *Queue) Final(tx db.Tx, gameID, integrity string) error {
	if err := tx.Later(`INSERT INTO games_log_queue (game_id, integrity, queued_at)
		SELECT ?, ?, ? WHERE NOT EXISTS (SELECT 1 FROM games_log WHERE game_id = ?)
		ON CONFLICT (game_id) DO NOTHING`, gameID, integrity, q.now(), gameID); err != nil {
		return fmt.Errorf("queue game %s for the games log: %w", gameID, err)
	}
	return tx.AfterCommit(func() {
		q.queued.Add(1)
		select {
		case q.wake <- struct{}{}:
		default:
		}
	})
}

// ReadEnd takes part in every game's end (game.Participant), after the
// settlement: a game whose end is not held for review is final, and
// queued; a held one is queued when its review is decided.
func (q *Queue) ReadEnd(ctx context.Context, e *game.Ending) (game.EndWrite, error) {
	return func(ctx context.Context, e *game.Ending) error {
		if e.Game.Result != nil && e.Game.Result.ReviewHeld {
			return nil
		}
		return q.Final(e.Tx, e.Game.ID, IntegrityNone)
	}, nil
}

// Payer says what a game's bets or market paid once its money is final.
type Payer interface {
	Payouts(ctx context.Context, idb bun.IDB, gameID string) ([]gamerecord.Payout, error)
}

// Config is what the log is made of.
type Config struct {
	Origin string  // the log's name: the first line of its checkpoints
	Seed   []byte  // secret bytes (derived from the master seed) from which the signing key derives
	Payers []Payer // the bets and the market: their payouts, after the players'
	// Busy reports whether the machine's cores are saturated; while they
	// are, the sequencer leaves the queue for later (at most maxLag).
	// Nil: never.
	Busy func() bool
	Now  domain.Clock
	Log  *slog.Logger
}

// Log is the public log of games.
type Log struct {
	db     *bun.DB
	queue  *Queue
	origin string
	signer note.Signer
	key    string // the verifier key, note.NewVerifier's format
	payers []Payer
	busy   func() bool
	log    *slog.Logger
	now    domain.Clock

	mu     sync.Mutex
	latest tlog.Tree // the last tree hashed: a size's hash never changes
}

// New returns the log of the games q queues, signed with an ed25519 key
// derived from c.Seed.
func New(bdb *bun.DB, q *Queue, c Config) (*Log, error) {
	sum := sha256.Sum256(append([]byte("wager games log key:"), c.Seed...))
	skey, vkey, err := note.GenerateKey(bytes.NewReader(sum[:]), c.Origin)
	if err != nil {
		return nil, fmt.Errorf("make the key of the games log %q: %w", c.Origin, err)
	}
	signer, err := note.NewSigner(skey)
	if err != nil {
		return nil, fmt.Errorf("make the signer of the games log: %w", err)
	}
	return &Log{db: bdb, queue: q, origin: c.Origin, signer: signer, key: vkey, payers: c.Payers,
		busy: c.Busy, log: c.Log, now: c.Now}, nil
}

// Origin is the log's name: the first line of its checkpoints.
func (l *Log) Origin() string { return l.origin }

// VerifierKey is the key that checks the log's checkpoints, in
// note.NewVerifier's format.
func (l *Log) VerifierKey() string { return l.key }

// gather is how long the sequencer waits, once woken by a game queued on
// this instance, for the games whose ends follow it: one transaction logs
// them all, paying its lock, queue read and tree update once. A game is
// in the log about a second after its end, unless the sequencer yields
// to a saturated machine (yields).
const gather = time.Second

// maxLag is how long the sequencer leaves the queue for later at most
// while the machine is saturated: the games are safe in the queue, put
// there by the transactions that made their money final, and the players'
// moves come first; past it, the log catches up whatever the load.
const maxLag = 2 * time.Minute

// competingRate is the rate of games queued on this instance, a second,
// from which logging them competes with the players for a saturated
// machine (at about 1 ms of CPU a game, 2 % of a core and more): below
// it the sequencer never yields.
const competingRate = 20

// Run sequences the queued games shortly after a game is queued on this
// instance (gather), and every interval for those queued elsewhere, until
// ctx ends; while the machine is saturated, it waits (yields).
func (l *Log) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	var emptied time.Time // when the queue was last found empty of ready games: not yet
	yielding := false
	count, at := l.queue.queued.Load(), l.now()
	var rate float64 // games queued a second, over the last second or more
	for {
		if c, now := l.queue.queued.Load(), l.now(); now.Sub(at) >= time.Second {
			rate, count, at = float64(c-count)/now.Sub(at).Seconds(), c, now
		}
		if y := l.yields(emptied, rate); y != yielding {
			yielding = y
			msg := "gamelog: the machine is saturated; the queued games wait, for two minutes at most"
			if !y {
				msg = "gamelog: the sequencer catches up"
			}
			l.log.Info(msg, "gamesQueuedPerSecond", rate)
		}
		for !yielding {
			n, err := l.Sequence(ctx)
			if err != nil && ctx.Err() == nil {
				l.log.Error("gamelog: sequence the queued games", "err", err)
			}
			if err != nil {
				break
			}
			if n < batch {
				emptied = l.now()
				break
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-l.queue.wake:
			if !domain.Sleep(ctx, gather) {
				return
			}
		case <-t.C:
		}
	}
}

// yields says whether the sequencer leaves the queued games for later:
// while the machine's cores are saturated and games are queued at rate a
// second, at least competingRate, for at most maxLag since the queue was
// last emptied.
func (l *Log) yields(emptied time.Time, rate float64) bool {
	return rate >= competingRate && l.busy != nil && l.busy() && l.now().Sub(emptied) < maxLag
}

// lockKey is the advisory lock of the sequencer: one transaction at a
// time appends to the log.
const lockKey = 0x67616d656c6f67 // "gamelog"

// queued is a game on the queue.
type queued struct{ GameID, Integrity string }

type logged struct {
	bun.BaseModel `bun:"table:games_log"`
	Index         int64     `bun:"idx,pk"`
	GameID        string    `bun:"game_id,type:uuid"`
	Record        []byte    `bun:"record"`
	AppendedAt    time.Time `bun:"appended_at"`
}

type storedHash struct {
	bun.BaseModel `bun:"table:games_log_hashes"`
	ID            int64  `bun:"id,pk"`
	Hash          []byte `bun:"hash"`
}

// retryHeldBack is how long a game the sequencer could not build a
// record of waits before it is tried again.
const retryHeldBack = 10 * time.Minute

// unbuildable is a queued game whose record cannot be built.
type unbuildable struct {
	gameID string
	err    error
}

func (u *unbuildable) Error() string { return u.err.Error() }

// Sequence logs up to a batch of the queued games, oldest first, and
// returns how many it logged. A game whose record cannot be built is
// held back (with the reason, logged), to be tried again after
// retryHeldBack, and the others are logged without it.
func (l *Log) Sequence(ctx context.Context) (int, error) {
	for {
		n, err := l.sequence(ctx)
		var u *unbuildable
		if !errors.As(err, &u) || ctx.Err() != nil {
			return n, err
		}
		l.log.Error("gamelog: a queued game cannot be logged; held back, the others go on", "game", u.gameID, "err", u.err)
		if _, err := l.db.ExecContext(ctx, "UPDATE games_log_queue SET held_back_at = ?, held_back_reason = ? WHERE game_id = ?",
			l.now(), u.err.Error(), u.gameID); err != nil {
			return 0, fmt.Errorf("hold back game %s from the games log: %w", u.gameID, err)
		}
	}
}

// sequence is one sequencing transaction of Sequence.
func (l *Log) sequence(ctx context.Context) (int, error) {
	n := 0
	err := db.Transact(ctx, l.db, func(ctx context.Context, tx db.Tx) error {
		n = 0
		if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock(?)", lockKey); err != nil {
			return fmt.Errorf("lock the games log: %w", err)
		}
		games, err := queuedGames(ctx, tx, l.now().Add(-retryHeldBack))
		if err != nil || len(games) == 0 {
			return err
		}
		size, err := treeSize(ctx, tx)
		if err != nil {
			return err
		}
		read, err := readBatch(ctx, tx, games)
		if err != nil {
			return err
		}
		hashes := &hashReader{ctx: ctx, idb: tx, fresh: map[int64]tlog.Hash{}}
		var w appended
		for i, q := range games {
			index := size + int64(i)
			record, err := l.record(ctx, tx, read, q, index)
			if err != nil {
				return &unbuildable{gameID: q.GameID, err: err}
			}
			hs, err := tlog.StoredHashes(index, record, hashes)
			if err != nil {
				return fmt.Errorf("hash record %d of the games log: %w", index, err)
			}
			first := tlog.StoredHashIndex(0, index)
			for j, h := range hs {
				hashes.fresh[first+int64(j)] = h
				w.hashIDs, w.hashes = append(w.hashIDs, first+int64(j)), append(w.hashes, h[:])
			}
			w.indexes, w.gameIDs, w.records = append(w.indexes, index), append(w.gameIDs, q.GameID), append(w.records, record)
		}
		if err := w.write(tx, l.now()); err != nil {
			return err
		}
		n = len(games)
		return nil
	})
	return n, err
}

// appended is what a sequencing transaction writes: the records, the
// tree's new hashes, and the games to take off the queue.
type appended struct {
	indexes []int64
	gameIDs []string
	records [][]byte
	hashIDs []int64
	hashes  [][]byte
}

// write queues the transaction's writes (db.Tx.Later): three prepared
// statements, sent together before its commit.
func (w appended) write(tx db.Tx, now time.Time) error {
	if err := tx.Later(`INSERT INTO games_log (idx, game_id, record, appended_at)
		SELECT idx, game_id, record, ? FROM unnest(?::bigint[], ?::uuid[], ?::bytea[]) AS r (idx, game_id, record)`,
		now, w.indexes, w.gameIDs, w.records); err != nil {
		return fmt.Errorf("append %d records to the games log: %w", len(w.indexes), err)
	}
	if err := tx.Later(`INSERT INTO games_log_hashes (id, hash) SELECT * FROM unnest(?::bigint[], ?::bytea[])`, w.hashIDs, w.hashes); err != nil {
		return fmt.Errorf("store the games log's hashes: %w", err)
	}
	if err := tx.Later(`DELETE FROM games_log_queue WHERE game_id = ANY(?::uuid[])`, w.gameIDs); err != nil {
		return fmt.Errorf("take the logged games off the queue: %w", err)
	}
	return nil
}

// queuedGamesSQL reads a batch of the queue, oldest first, leaving out
// the games held back since heldBefore ($1).
var queuedGamesSQL = `SELECT game_id::text, integrity FROM games_log_queue WHERE held_back_at IS NULL OR held_back_at < $1
	ORDER BY queued_at, game_id LIMIT ` + strconv.Itoa(batch)

// queuedGames reads the next batch of the queue.
func queuedGames(ctx context.Context, tx db.Tx, heldBefore time.Time) ([]queued, error) {
	rows, err := db.QueryPrepared(ctx, tx, queuedGamesSQL, heldBefore)
	if err != nil {
		return nil, fmt.Errorf("read the games log's queue: %w", err)
	}
	defer rows.Close()
	var games []queued
	for rows.Next() {
		var q queued
		if err := rows.Scan(&q.GameID, &q.Integrity); err != nil {
			return nil, fmt.Errorf("read the games log's queue: %w", err)
		}
		games = append(games, q)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read the games log's queue: %w", err)
	}
	return games, nil
}

// treeSize is the number of records in the log.
func treeSize(ctx context.Context, idb bun.IDB) (int64, error) {
	rows, err := db.QueryPrepared(ctx, idb, "SELECT coalesce(max(idx) + 1, 0) FROM games_log")
	if err != nil {
		return 0, fmt.Errorf("read the size of the games log: %w", err)
	}
	defer rows.Close()
	var size int64
	if rows.Next() {
		err = rows.Scan(&size)
	}
	if err == nil {
		err = rows.Err()
	}
	if err != nil {
		return 0, fmt.Errorf("read the size of the games log: %w", err)
	}
	return size, nil
}

// hashReader reads the tree's stored hashes: those it holds first (the
// sequencing transaction's, and what it read before), then the table's.
type hashReader struct {
	ctx   context.Context
	idb   bun.IDB
	fresh map[int64]tlog.Hash
}

func (r *hashReader) ReadHashes(indexes []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(indexes))
	var missing []int64
	for i, x := range indexes {
		if h, ok := r.fresh[x]; ok {
			out[i] = h
		} else {
			missing = append(missing, x)
		}
	}
	if len(missing) == 0 {
		return out, nil
	}
	var rows []storedHash
	if err := r.idb.NewSelect().Model(&rows).Where("id IN (?)", bun.List(missing)).Scan(r.ctx); err != nil {
		return nil, fmt.Errorf("read hashes of the games log: %w", err)
	}
	found := make(map[int64][]byte, len(rows))
	for _, row := range rows {
		found[row.ID] = row.Hash
	}
	for i, x := range indexes {
		if _, ok := r.fresh[x]; ok {
			continue
		}
		h, ok := found[x]
		if !ok || len(h) != tlog.HashSize {
			return nil, fmt.Errorf("hash %d of the games log is missing", x)
		}
		copy(out[i][:], h)
	}
	if r.fresh != nil {
		for _, x := range missing {
			r.fresh[x] = tlog.Hash(found[x]) // the sequencer's next records ask for the same frontier
		}
	}
	return out, nil
}

// Tree is the log's latest tree: its size and root hash.
func (l *Log) Tree(ctx context.Context) (tlog.Tree, error) {
	size, err := treeSize(ctx, l.db)
	if err != nil || size == 0 {
		return tlog.Tree{}, err
	}
	l.mu.Lock()
	latest := l.latest
	l.mu.Unlock()
	if latest.N == size {
		return latest, nil
	}
	h, err := tlog.TreeHash(size, l.reader(ctx))
	if err != nil {
		return tlog.Tree{}, fmt.Errorf("hash the games log of %d records: %w", size, err)
	}
	t := tlog.Tree{N: size, Hash: h}
	l.mu.Lock()
	if size > l.latest.N {
		l.latest = t
	}
	l.mu.Unlock()
	return t, nil
}

func (l *Log) reader(ctx context.Context) tlog.HashReader {
	return &hashReader{ctx: ctx, idb: l.db}
}

// Checkpoint is the signed note of a tree: the log's origin, its size and
// its root hash in standard base64, one a line (C2SP tlog-checkpoint).
func (l *Log) Checkpoint(t tlog.Tree) ([]byte, error) {
	text := l.origin + "\n" + strconv.FormatInt(t.N, 10) + "\n" + base64.StdEncoding.EncodeToString(t.Hash[:]) + "\n"
	msg, err := note.Sign(&note.Note{Text: text}, l.signer)
	if err != nil {
		return nil, fmt.Errorf("sign the checkpoint of the games log: %w", err)
	}
	return msg, nil
}

// SignLine signs one line of text with the log's key (the proof of
// reserves' statements): the signature of the note whose text is the
// line, as the note's signature line carries it (standard base64 of the
// key's hash and the signature). sumtree.Snapshot.CheckSignature checks it.
func (l *Log) SignLine(line string) (string, error) {
	msg, err := note.Sign(&note.Note{Text: line + "\n"}, l.signer)
	if err != nil {
		return "", fmt.Errorf("sign %q with the games log's key: %w", line, err)
	}
	fields := strings.Fields(string(msg[len(line)+2:]))
	return fields[len(fields)-1], nil
}

// Tile returns the hashes of a tile of the tree of size records (tlog's
// tile format); NOT_FOUND for a tile that tree does not have.
func (l *Log) Tile(ctx context.Context, t tlog.Tile, size int64) ([]byte, error) {
	if !hasTile(t, size) {
		return nil, domain.Errorf(domain.CodeNotFound, "no such tile in the games log of %d records", size)
	}
	data, err := tlog.ReadTileData(t, l.reader(ctx))
	if err != nil {
		return nil, fmt.Errorf("read tile %s of the games log: %w", t.Path(), err)
	}
	return data, nil
}

// hasTile reports whether the tree of size records has the tile: one of
// the log's height, whose hashes (complete subtrees at its level) the
// tree has.
func hasTile(t tlog.Tile, size int64) bool {
	if t.H != TileHeight || t.L < 0 || t.L > 6 || t.W < 1 || t.W > 1<<TileHeight || t.N < 0 {
		return false
	}
	nodes := size >> (t.L * TileHeight)
	return t.N <= nodes>>TileHeight && t.N<<TileHeight+int64(t.W) <= nodes
}

// Record returns the exact bytes of the record at index.
func (l *Log) Record(ctx context.Context, index int64) ([]byte, error) {
	var rows []logged
	if err := l.db.NewSelect().Model(&rows).Where("idx = ?", index).Scan(ctx); err != nil {
		return nil, fmt.Errorf("read record %d of the games log: %w", index, err)
	}
	if len(rows) == 0 {
		return nil, domain.Errorf(domain.CodeNotFound, "the games log has no record %d", index)
	}
	return rows[0].Record, nil
}

// Proof is a game's record with its inclusion proof in a checkpoint.
type Proof struct {
	Index          int64    `json:"index"`
	Record         []byte   `json:"record" doc:"the record's exact bytes, standard base64"`
	Checkpoint     string   `json:"checkpoint" doc:"the signed checkpoint the proof is against"`
	InclusionProof [][]byte `json:"inclusionProof" doc:"the hashes, standard base64, from the record's leaf to the checkpoint's root (tlog.CheckRecord)"`
}

// GameRecord returns a game's record with its inclusion proof in the
// latest checkpoint; NOT_FOUND until the game is logged.
func (l *Log) GameRecord(ctx context.Context, gameID string) (Proof, error) {
	id, ok := domain.CanonicalID(gameID)
	var rows []logged
	if ok {
		if err := l.db.NewSelect().Model(&rows).Where("game_id = ?", id).Scan(ctx); err != nil {
			return Proof{}, fmt.Errorf("read the record of game %s: %w", id, err)
		}
	}
	if len(rows) == 0 {
		return Proof{}, domain.Errorf(domain.CodeNotFound, "game %s is not in the games log (yet)", gameID)
	}
	t, err := l.Tree(ctx)
	if err != nil {
		return Proof{}, err
	}
	proof, err := tlog.ProveRecord(t.N, rows[0].Index, l.reader(ctx))
	if err != nil {
		return Proof{}, fmt.Errorf("prove record %d of the games log: %w", rows[0].Index, err)
	}
	cp, err := l.Checkpoint(t)
	if err != nil {
		return Proof{}, err
	}
	out := Proof{Index: rows[0].Index, Record: rows[0].Record, Checkpoint: string(cp), InclusionProof: make([][]byte, len(proof))}
	for i, h := range proof {
		out.InclusionProof[i] = h[:]
	}
	return out, nil
}

// IndexOf returns a game's index in the log; false until it is logged.
func (l *Log) IndexOf(ctx context.Context, gameID string) (int64, bool, error) {
	var idx []int64
	if err := l.db.NewSelect().Table("games_log").Column("idx").Where("game_id = ?", gameID).Scan(ctx, &idx); err != nil {
		return 0, false, fmt.Errorf("look for game %s in the games log: %w", gameID, err)
	}
	if len(idx) == 0 {
		return 0, false, nil
	}
	return idx[0], true, nil
}

// encode is a record's exact bytes.
func encode(r gamerecord.Record) ([]byte, error) {
	b, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("encode record %d of the games log: %w", r.Index, err)
	}
	return b, nil
}
