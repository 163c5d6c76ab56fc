// Package reserves is the proof of reserves: every RESERVES_INTERVAL a
// snapshot of everything the platform owes each user (their balances, and
// what is theirs in games, bets, markets, arenas and rewards), as a
// Merkle-sum tree whose root sum is the liabilities, beside the USDC the
// platform's token accounts hold on chain, signed with the public log's
// key. Each user fetches their leaf's salt and path and checks, trusting
// nothing the platform says, that they are counted in the root.
package reserves

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"wager.example.com/sdk/sumtree"
	"wager/domain"
)

// Owed reads one part of the books: it calls add with what the platform
// owes each user in that part, read in idb.
type Owed func(ctx context.Context, idb bun.IDB, add func(userID string, minor int64)) error

// Config is what a snapshot is made of.
type Config struct {
	// Owed are the parts of the books that hold users' money (money,
	// settlement, market, referrals): together, everything the ledger
	// owes (Liabilities).
	Owed []Owed
	// Liabilities is what the ledger says is owed in all; a snapshot whose
	// leaves do not add up to it is refused.
	Liabilities func(ctx context.Context, idb bun.IDB) (int64, error)
	// Holdings reads the platform's token accounts on chain and the slot.
	Holdings func(ctx context.Context) (uint64, []sumtree.Asset, error)
	// Sign signs a statement with the public log's key.
	Sign func(line string) (string, error)
	Now  domain.Clock
	Log  *slog.Logger
	Rand io.Reader // the salts; crypto/rand when nil
}

// Service takes and serves the snapshots.
type Service struct {
	db *bun.DB
	c  Config

	mu     sync.Mutex
	latest *built // the latest snapshot's tree, built once for its users' paths
}

// built is a snapshot's tree and its leaves by user.
type built struct {
	id     int64
	tree   *sumtree.Tree
	leaves map[string]sumtree.Leaf
}

// New returns the proof of reserves of the books in bdb.
func New(bdb *bun.DB, c Config) *Service {
	if c.Rand == nil {
		c.Rand = rand.Reader
	}
	return &Service{db: bdb, c: c}
}

// keptLeaves is how many of the latest snapshots keep their leaves (and so
// serve their users' paths).
const keptLeaves = 6

// row is a snapshot as stored.
type row struct {
	bun.BaseModel    `bun:"table:reserves_snapshots"`
	ID               int64           `bun:"id,pk"`
	TakenAt          time.Time       `bun:"taken_at"`
	Slot             uint64          `bun:"slot"`
	RootHash         []byte          `bun:"root_hash"`
	LiabilitiesMinor int64           `bun:"liabilities_minor"`
	Users            int             `bun:"users"`
	Assets           json.RawMessage `bun:"assets,type:jsonb"`
	AssetsMinor      int64           `bun:"assets_minor"`
	Signature        string          `bun:"signature"`
	Leaves           []byte          `bun:"leaves"`
}

func (r row) snapshot() (sumtree.Snapshot, error) {
	s := sumtree.Snapshot{SnapshotID: strconv.FormatInt(r.ID, 10), At: r.TakenAt, Slot: r.Slot, RootHash: r.RootHash, LiabilitiesMinor: r.LiabilitiesMinor,
		Users: r.Users, AssetsMinor: r.AssetsMinor, Signature: r.Signature}
	if err := json.Unmarshal(r.Assets, &s.Assets); err != nil {
		return s, fmt.Errorf("read the assets of reserves snapshot %d: %w", r.ID, err)
	}
	return s, nil
}

// Take takes a snapshot: what every user is owed, read in one snapshot of
// the database (a leaf each, with a fresh salt), checked against the
// ledger's liabilities; the platform's USDC on chain; the tree, signed
// and stored. A negative balance, leaves that do not add up to the
// ledger's liabilities, or assets the chain did not give are errors, and
// no snapshot is taken.
func (s *Service) Take(ctx context.Context) (sumtree.Snapshot, error) {
	leaves, err := s.owed(ctx)
	if err != nil {
		return sumtree.Snapshot{}, err
	}
	tree, err := sumtree.Build(leaves)
	if err != nil {
		return sumtree.Snapshot{}, fmt.Errorf("take a reserves snapshot: %w", err)
	}
	slot, assets, err := s.c.Holdings(ctx)
	if err != nil {
		return sumtree.Snapshot{}, fmt.Errorf("take a reserves snapshot: %w", err)
	}
	root := tree.Root()
	snap := sumtree.Snapshot{At: s.c.Now(), Slot: slot, RootHash: root.Hash[:], LiabilitiesMinor: root.Sum, Users: len(leaves), Assets: assets}
	if snap.AssetsMinor, err = sumtree.Total(assets); err != nil {
		return sumtree.Snapshot{}, fmt.Errorf("take a reserves snapshot: %w", err)
	}
	var id int64
	if err := s.db.QueryRowContext(ctx, "SELECT nextval('reserves_snapshots_id_seq')").Scan(&id); err != nil {
		return sumtree.Snapshot{}, fmt.Errorf("number a reserves snapshot: %w", err)
	}
	snap.SnapshotID = strconv.FormatInt(id, 10)
	if snap.Signature, err = s.c.Sign(snap.Statement()); err != nil {
		return sumtree.Snapshot{}, err
	}
	r := row{ID: id, TakenAt: snap.At, Slot: snap.Slot, RootHash: snap.RootHash, LiabilitiesMinor: snap.LiabilitiesMinor,
		Users: snap.Users, AssetsMinor: snap.AssetsMinor, Signature: snap.Signature, Leaves: encode(leaves)}
	if r.Assets, err = json.Marshal(assets); err != nil {
		return sumtree.Snapshot{}, err
	}
	if _, err := s.db.NewInsert().Model(&r).Exec(ctx); err != nil {
		return sumtree.Snapshot{}, fmt.Errorf("store reserves snapshot %d: %w", r.ID, err)
	}
	if _, err := s.db.ExecContext(ctx, "UPDATE reserves_snapshots SET leaves = NULL WHERE id <= ? AND leaves IS NOT NULL",
		r.ID-keptLeaves); err != nil {
		return sumtree.Snapshot{}, fmt.Errorf("drop the leaves of older reserves snapshots: %w", err)
	}
	s.keep(&built{id: r.ID, tree: tree, leaves: byUser(leaves)})
	return snap, nil
}

// owed reads what every user is owed in one read-only transaction at
// repeatable read (every part of the books as of one moment), and checks
// that it adds up to the ledger's liabilities.
func (s *Service) owed(ctx context.Context) ([]sumtree.Leaf, error) {
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("take a reserves snapshot: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // read-only
	owed := map[string]int64{}
	var sum int64
	add := func(user string, minor int64) { owed[user] += minor; sum += minor }
	for _, read := range s.c.Owed {
		if err := read(ctx, tx, add); err != nil {
			return nil, fmt.Errorf("take a reserves snapshot: %w", err)
		}
	}
	ledger, err := s.c.Liabilities(ctx, tx)
	if err != nil {
		return nil, fmt.Errorf("take a reserves snapshot: %w", err)
	}
	if sum != ledger {
		return nil, fmt.Errorf("take a reserves snapshot: what users are owed adds up to %d, the ledger's liabilities are %d", sum, ledger)
	}
	leaves := make([]sumtree.Leaf, 0, len(owed))
	for user, minor := range owed {
		if minor == 0 {
			continue
		}
		salt := make([]byte, 16)
		if _, err := io.ReadFull(s.c.Rand, salt); err != nil {
			return nil, fmt.Errorf("salt a reserves snapshot: %w", err)
		}
		leaves = append(leaves, sumtree.Leaf{UserID: user, Salt: salt, Balance: minor})
	}
	return leaves, nil
}

// leafSize is a stored leaf: the user's id (16 bytes), salt (16) and
// balance (8, big-endian).
const leafSize = 40

func encode(leaves []sumtree.Leaf) []byte {
	b := make([]byte, 0, len(leaves)*leafSize)
	for _, l := range leaves {
		id := uuid.MustParse(l.UserID)
		b = append(append(append(b, id[:]...), l.Salt...), binary.BigEndian.AppendUint64(nil, uint64(l.Balance))...)
	}
	return b
}

func decode(b []byte) ([]sumtree.Leaf, error) {
	if len(b)%leafSize != 0 {
		return nil, fmt.Errorf("stored leaves of %d bytes, not a multiple of %d", len(b), leafSize)
	}
	leaves := make([]sumtree.Leaf, len(b)/leafSize)
	for i := range leaves {
		l := b[i*leafSize : (i+1)*leafSize]
		leaves[i] = sumtree.Leaf{UserID: uuid.UUID(l[:16]).String(), Salt: l[16:32:32], Balance: int64(binary.BigEndian.Uint64(l[32:]))}
	}
	return leaves, nil
}

func byUser(leaves []sumtree.Leaf) map[string]sumtree.Leaf {
	m := make(map[string]sumtree.Leaf, len(leaves))
	for _, l := range leaves {
		m[l.UserID] = l
	}
	return m
}

func (s *Service) keep(b *built) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.latest == nil || b.id > s.latest.id {
		s.latest = b
	}
}

// Latest returns the latest snapshot; NOT_FOUND before the first.
func (s *Service) Latest(ctx context.Context) (sumtree.Snapshot, error) {
	var r row
	err := s.db.NewSelect().Model(&r).ExcludeColumn("leaves").Order("id DESC").Limit(1).Scan(ctx)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return sumtree.Snapshot{}, domain.Errorf(domain.CodeNotFound, "no reserves snapshot has been taken yet")
	case err != nil:
		return sumtree.Snapshot{}, fmt.Errorf("read the latest reserves snapshot: %w", err)
	}
	return r.snapshot()
}

// ProofOf returns a user's leaf and path in the latest snapshot;
// NOT_FOUND when there is none yet or the user was owed nothing in it.
func (s *Service) ProofOf(ctx context.Context, userID string) (sumtree.Proof, error) {
	b, err := s.tree(ctx)
	if err != nil {
		return sumtree.Proof{}, err
	}
	l, ok := b.leaves[userID]
	path, found := b.tree.Path(userID)
	if !ok || !found {
		return sumtree.Proof{}, domain.Errorf(domain.CodeNotFound, "the platform owed you nothing at reserves snapshot %d", b.id)
	}
	return sumtree.ProofOf(strconv.FormatInt(b.id, 10), l, path), nil
}

// tree returns the latest snapshot's tree, built from its stored leaves
// when this instance did not take it.
func (s *Service) tree(ctx context.Context) (*built, error) {
	var r row
	err := s.db.NewSelect().Model(&r).Column("id").Order("id DESC").Limit(1).Scan(ctx)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, domain.Errorf(domain.CodeNotFound, "no reserves snapshot has been taken yet")
	case err != nil:
		return nil, fmt.Errorf("read the latest reserves snapshot: %w", err)
	}
	s.mu.Lock()
	b := s.latest
	s.mu.Unlock()
	if b != nil && b.id == r.ID {
		return b, nil
	}
	if err := s.db.NewSelect().Model(&r).Column("leaves").WherePK().Scan(ctx); err != nil {
		return nil, fmt.Errorf("read the leaves of reserves snapshot %d: %w", r.ID, err)
	}
	leaves, err := decode(r.Leaves)
	if err != nil {
		return nil, fmt.Errorf("read the leaves of reserves snapshot %d: %w", r.ID, err)
	}
	tree, err := sumtree.Build(leaves)
	if err != nil {
		return nil, fmt.Errorf("rebuild reserves snapshot %d: %w", r.ID, err)
	}
	b = &built{id: r.ID, tree: tree, leaves: byUser(leaves)}
	s.keep(b)
	return b, nil
}

// Run takes a snapshot every interval until ctx ends: at start when the
// latest is older than interval, then whenever it becomes so. One
// instance takes it (under an advisory lock, the latest read again under
// it); an error is logged, and the next tick tries again.
func (s *Service) Run(ctx context.Context, interval time.Duration) {
	for {
		wait, err := s.due(ctx, interval)
		if err != nil && ctx.Err() == nil {
			s.c.Log.Error("reserves snapshot", "err", err)
			wait = min(interval, time.Minute)
		}
		if !domain.Sleep(ctx, wait) {
			return
		}
	}
}

// reservesLock is the advisory lock under which one instance takes a
// snapshot.
const reservesLock = 0x7265736572766573 // "reserves"

// due takes a snapshot if the latest is older than interval, and returns
// how long until the next one is due.
func (s *Service) due(ctx context.Context, interval time.Duration) (time.Duration, error) {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return 0, fmt.Errorf("take a reserves snapshot: %w", err)
	}
	defer conn.Close()
	var locked bool
	if err := conn.QueryRowContext(ctx, "SELECT pg_try_advisory_lock(?)", reservesLock).Scan(&locked); err != nil {
		return 0, fmt.Errorf("take a reserves snapshot: %w", err)
	}
	if !locked {
		return interval, nil // another instance is taking it
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock(?)", reservesLock) //nolint:errcheck // released with the session anyway
	var last *time.Time
	if err := conn.QueryRowContext(ctx, "SELECT max(taken_at) FROM reserves_snapshots").Scan(&last); err != nil {
		return 0, fmt.Errorf("read when the last reserves snapshot was taken: %w", err)
	}
	if now := s.c.Now(); last != nil && now.Sub(*last) < interval {
		return interval - now.Sub(*last), nil
	}
	snap, err := s.Take(ctx)
	if err != nil {
		return 0, err
	}
	if snap.Shortfall() > 0 {
		s.c.Log.Error("reserves: the assets on chain are below the liabilities", "snapshot", snap.SnapshotID,
			"assetsMinor", snap.AssetsMinor, "liabilitiesMinor", snap.LiabilitiesMinor)
	}
	return interval, nil
}
