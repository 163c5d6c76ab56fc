// Package anchors writes the public log of games' checkpoints and the
// proofs of reserves on Solana: when the log's tree grew, at most every
// ANCHOR_INTERVAL, and once for every snapshot of the reserves, the fee
// payer sends one transaction whose SPL Memo instruction states the size
// (or the snapshot) and the root hash. Once on chain, nobody can rewrite
// what came before without the chain showing it: a verifier proves the
// log it is shown consistent with every anchor.
//
// A transaction is stored before it is first sent and is sent again until
// it lands or its blockhash expires (chain.Client.Drive); one that fails
// or expires is replaced at the next turn. One instance anchors at a time.
package anchors

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/gagliardetto/solana-go"
	"github.com/uptrace/bun"
	"golang.org/x/mod/sumdb/tlog"

	"wager.example.com/sdk/anchor"
	"wager.example.com/sdk/sumtree"
	"wager/chain"
	"wager/domain"
)

// Config is what the anchors are written with.
type Config struct {
	Chain *chain.Client
	Payer solana.PrivateKey // the fee payer, who signs the memo
	// Tree is the public log's latest tree.
	Tree func(ctx context.Context) (tlog.Tree, error)
	// Reserves is the latest proof of reserves (NOT_FOUND before the
	// first).
	Reserves func(ctx context.Context) (sumtree.Snapshot, error)
	Now      domain.Clock
	Log      *slog.Logger
}

// Service writes and lists the anchors.
type Service struct {
	db *bun.DB
	c  Config
}

// New returns the anchors kept in bdb.
func New(bdb *bun.DB, c Config) *Service { return &Service{db: bdb, c: c} }

// Anchor statuses.
const (
	statusPending = "pending"
	statusLanded  = "landed"
	statusFailed  = "failed"
	statusExpired = "expired"
)

// row is an anchor as stored.
type row struct {
	bun.BaseModel `bun:"table:transparency_anchors"`
	ID            int64      `bun:"id,pk,autoincrement"`
	Kind          string     `bun:"kind"`
	Size          *int64     `bun:"size"`
	SnapshotID    *int64     `bun:"snapshot_id"`
	RootHash      []byte     `bun:"root_hash"`
	Memo          string     `bun:"memo"`
	Signature     string     `bun:"signature"`
	Raw           []byte     `bun:"raw"`
	LastValid     int64      `bun:"last_valid_block_height"`
	Status        string     `bun:"status"`
	Slot          *int64     `bun:"slot"`
	CreatedAt     time.Time  `bun:"created_at"`
	LandedAt      *time.Time `bun:"landed_at"`
}

// driveWait is how long one turn waits for a pending anchor to land
// before moving on; the next turn drives it again.
const driveWait = 10 * time.Second

// Run anchors until ctx ends: every few seconds it drives the pending
// anchors, then anchors the log when it grew and interval passed since
// its last anchor, and the latest proof of reserves when it has none.
// Errors are logged, and the next turn tries again.
func (s *Service) Run(ctx context.Context, interval time.Duration) {
	for domain.Sleep(ctx, min(interval, 2*time.Second)) {
		if err := s.Once(ctx, interval); err != nil && ctx.Err() == nil {
			s.c.Log.Error("anchors", "err", err)
		}
	}
}

// anchorsLock is the advisory lock under which one instance anchors.
const anchorsLock = 0x616e63686f7273 // "anchors"

// Once is one turn of Run, under the advisory lock (a turn another
// instance is taking is skipped).
func (s *Service) Once(ctx context.Context, interval time.Duration) error {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("anchor: %w", err)
	}
	defer conn.Close()
	var locked bool
	if err := conn.QueryRowContext(ctx, "SELECT pg_try_advisory_lock(?)", anchorsLock).Scan(&locked); err != nil || !locked {
		return err
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock(?)", anchorsLock) //nolint:errcheck // released with the session anyway
	if err := s.drive(ctx); err != nil {
		return err
	}
	if err := s.anchorLog(ctx, interval); err != nil {
		return err
	}
	return s.anchorReserves(ctx)
}

// anchorLog anchors the log's latest tree when it grew since the last
// anchor and interval passed since that one was sent.
func (s *Service) anchorLog(ctx context.Context, interval time.Duration) error {
	t, err := s.c.Tree(ctx)
	if err != nil || t.N == 0 {
		return err
	}
	var last row
	err = s.db.NewSelect().Model(&last).Column("size", "status", "created_at").
		Where("kind = ? AND status IN (?, ?)", anchor.GamesLog, statusPending, statusLanded).Order("id DESC").Limit(1).Scan(ctx)
	switch {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return fmt.Errorf("read the last anchor of the games log: %w", err)
	case last.Status == statusPending, *last.Size >= t.N, s.c.Now().Sub(last.CreatedAt) < interval:
		return nil
	}
	size := t.N
	return s.send(ctx, row{Kind: anchor.GamesLog, Size: &size, RootHash: t.Hash[:],
		Memo: anchor.Memo(anchor.GamesLog, strconv.FormatInt(size, 10), t.Hash[:])})
}

// anchorReserves anchors the latest proof of reserves, once.
func (s *Service) anchorReserves(ctx context.Context) error {
	snap, err := s.c.Reserves(ctx)
	var derr *domain.Error
	switch {
	case errors.As(err, &derr) && derr.Code == domain.CodeNotFound:
		return nil
	case err != nil:
		return err
	}
	id, err := strconv.ParseInt(snap.SnapshotID, 10, 64)
	if err != nil {
		return fmt.Errorf("anchor reserves snapshot %q: %w", snap.SnapshotID, err)
	}
	anchored, err := s.db.NewSelect().Model((*row)(nil)).
		Where("kind = ? AND snapshot_id = ? AND status IN (?, ?)", anchor.Reserves, id, statusPending, statusLanded).Exists(ctx)
	if err != nil || anchored {
		return err
	}
	return s.send(ctx, row{Kind: anchor.Reserves, SnapshotID: &id, RootHash: snap.RootHash,
		Memo: anchor.Memo(anchor.Reserves, snap.SnapshotID, snap.RootHash)})
}

// send signs r's memo transaction, stores it, and drives it.
func (s *Service) send(ctx context.Context, r row) error {
	bh, err := s.c.Chain.Blockhash(ctx)
	if err != nil {
		return fmt.Errorf("anchor %s: %w", r.Memo, err)
	}
	payer := s.c.Payer.PublicKey()
	tx, err := s.c.Chain.Budgeted(ctx, func(b chain.Budget) (*solana.Transaction, error) {
		return solana.NewTransaction([]solana.Instruction{chain.SetComputeUnitLimit(b.Units), chain.SetComputeUnitPrice(b.Price),
			chain.Memo(r.Memo, payer)}, bh.Hash, solana.TransactionPayer(payer))
	})
	if err != nil {
		return fmt.Errorf("build the anchor %s: %w", r.Memo, err)
	}
	if err := chain.SignWith(tx, s.c.Payer); err != nil {
		return err
	}
	if r.Raw, err = tx.MarshalBinary(); err != nil {
		return fmt.Errorf("encode the anchor %s: %w", r.Memo, err)
	}
	r.Signature, r.LastValid, r.Status, r.CreatedAt = tx.Signatures[0].String(), int64(bh.LastValid), statusPending, s.c.Now()
	if _, err := s.db.NewInsert().Model(&r).On("CONFLICT DO NOTHING").Exec(ctx); err != nil {
		return fmt.Errorf("store the anchor %s: %w", r.Memo, err)
	}
	return s.drive(ctx)
}

// drive sends each pending anchor again and records how it ended: landed
// (with its slot), or failed or expired (to be replaced).
func (s *Service) drive(ctx context.Context) error {
	var pending []row
	if err := s.db.NewSelect().Model(&pending).Where("status = ?", statusPending).Order("id").Scan(ctx); err != nil {
		return fmt.Errorf("read the pending anchors: %w", err)
	}
	for _, r := range pending {
		tx, err := solana.TransactionFromBytes(r.Raw)
		if err != nil {
			return fmt.Errorf("read the stored anchor %s: %w", r.Signature, err)
		}
		outcome, reason, err := s.c.Chain.Drive(ctx, tx, uint64(r.LastValid), driveWait)
		switch outcome {
		case chain.Landed:
			slot, err := s.c.Chain.LandedSlot(ctx, tx.Signatures[0])
			if err != nil {
				return err
			}
			r.Status, r.Slot, r.LandedAt = statusLanded, new(int64(slot)), new(s.c.Now())
		case chain.Failed, chain.Refused:
			s.c.Log.Error("anchor refused by the chain", "memo", r.Memo, "reason", reason)
			r.Status = statusFailed
		case chain.Expired:
			r.Status = statusExpired
		default:
			if err != nil {
				s.c.Log.Warn("anchor not landed yet", "memo", r.Memo, "err", err)
			}
			continue
		}
		if _, err := s.db.NewUpdate().Model(&r).Column("status", "slot", "landed_at").WherePK().Exec(ctx); err != nil {
			return fmt.Errorf("record the anchor %s: %w", r.Signature, err)
		}
	}
	return nil
}

// Landed lists the anchors that landed, newest first, at most limit.
func (s *Service) Landed(ctx context.Context, limit int) ([]anchor.Anchor, error) {
	var rows []row
	if err := s.db.NewSelect().Model(&rows).Where("status = ?", statusLanded).Order("landed_at DESC", "id DESC").Limit(int64(limit)).
		Scan(ctx); err != nil {
		return nil, fmt.Errorf("list the anchors: %w", err)
	}
	out := make([]anchor.Anchor, len(rows))
	for i, r := range rows {
		out[i] = anchor.Anchor{Kind: r.Kind, Size: r.Size, RootHash: r.RootHash, Memo: r.Memo, Signature: r.Signature,
			Slot: uint64(*r.Slot), At: *r.LandedAt}
		if r.SnapshotID != nil {
			out[i].SnapshotID = new(strconv.FormatInt(*r.SnapshotID, 10))
		}
	}
	return out, nil
}
