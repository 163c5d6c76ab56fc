package localchain

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/gagliardetto/solana-go"
	"github.com/uptrace/bun"
)

type accountRow struct {
	bun.BaseModel `bun:"table:localchain.accounts"`
	Address       string `bun:"address,pk"`
	Lamports      int64  `bun:"lamports"`
	Owner         string `bun:"owner"`
}

type mintRow struct {
	bun.BaseModel `bun:"table:localchain.mints"`
	Address       string `bun:"address,pk"`
	Decimals      uint8  `bun:"decimals"`
	Supply        int64  `bun:"supply"`
	MintAuthority string `bun:"mint_authority"`
}

type tokenRow struct {
	bun.BaseModel `bun:"table:localchain.token_accounts"`
	Address       string `bun:"address,pk"`
	Mint          string `bun:"mint"`
	Owner         string `bun:"owner"`
	Amount        int64  `bun:"amount"`
}

type txRow struct {
	bun.BaseModel `bun:"table:localchain.transactions"`
	Signature     string    `bun:"signature,pk"`
	Slot          uint64    `bun:"slot"`
	Fee           int64     `bun:"fee"`
	Raw           []byte    `bun:"raw"`
	CreatedAt     time.Time `bun:"created_at"`
	// ComputeUnitPrice and Writable (a transaction's, not an airdrop's)
	// answer getRecentPrioritizationFees.
	ComputeUnitPrice int64    `bun:"compute_unit_price"`
	Writable         []string `bun:"writable,array"`
	// Logs, Units and the lamports of the message's accounts before and
	// after answer getTransaction; they are NULL for what landed before
	// they were kept, and for airdrops.
	Logs         []string `bun:"logs,array"`
	Units        *int64   `bun:"units"`
	PreBalances  []int64  `bun:"pre_balances,array"`
	PostBalances []int64  `bun:"post_balances,array"`
}

// state reads and writes accounts inside one database transaction.
type state struct{ tx bun.Tx }

func one[T any](ctx context.Context, q *bun.SelectQuery, row *T) (bool, error) {
	err := q.Model(row).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

func (s *state) account(ctx context.Context, addr solana.PublicKey) (accountRow, bool, error) {
	var row accountRow
	ok, err := one(ctx, s.tx.NewSelect().Where("address = ?", addr.String()).For("UPDATE"), &row)
	if err != nil {
		return row, false, fmt.Errorf("read account %s: %w", addr, err)
	}
	return row, ok, nil
}

func (s *state) mint(ctx context.Context, addr solana.PublicKey) (mintRow, bool, error) {
	var row mintRow
	ok, err := one(ctx, s.tx.NewSelect().Where("address = ?", addr.String()), &row)
	if err != nil {
		return row, false, fmt.Errorf("read mint %s: %w", addr, err)
	}
	return row, ok, nil
}

func (s *state) tokenAccount(ctx context.Context, addr solana.PublicKey) (tokenRow, bool, error) {
	var row tokenRow
	ok, err := one(ctx, s.tx.NewSelect().Where("address = ?", addr.String()).For("UPDATE"), &row)
	if err != nil {
		return row, false, fmt.Errorf("read token account %s: %w", addr, err)
	}
	return row, ok, nil
}

func (s *state) createAccount(ctx context.Context, addr solana.PublicKey, lamports uint64, owner solana.PublicKey) error {
	if _, err := s.tx.NewInsert().Model(&accountRow{Address: addr.String(), Lamports: int64(lamports), Owner: owner.String()}).
		Exec(ctx); err != nil {
		return fmt.Errorf("create account %s: %w", addr, err)
	}
	return nil
}

func (s *state) setLamports(ctx context.Context, addr solana.PublicKey, lamports int64) error {
	if _, err := s.tx.ExecContext(ctx, "UPDATE localchain.accounts SET lamports = ? WHERE address = ?", lamports, addr.String()); err != nil {
		return fmt.Errorf("set the lamports of %s: %w", addr, err)
	}
	return nil
}

func (s *state) setTokenAmount(ctx context.Context, addr string, amount int64) error {
	if _, err := s.tx.ExecContext(ctx, "UPDATE localchain.token_accounts SET amount = ? WHERE address = ?", amount, addr); err != nil {
		return fmt.Errorf("set the token amount of %s: %w", addr, err)
	}
	return nil
}

func (s *state) nextSlot(ctx context.Context) (uint64, error) {
	var slot uint64
	if err := s.tx.QueryRowContext(ctx, "UPDATE localchain.state SET slot = slot + 1 WHERE id = 1 RETURNING slot").Scan(&slot); err != nil {
		return 0, fmt.Errorf("advance the slot: %w", err)
	}
	return slot, nil
}

// packMint is the 82-byte SPL Token mint layout.
func packMint(m mintRow) []byte {
	b := make([]byte, 82)
	binary.LittleEndian.PutUint32(b[0:], 1) // COption::Some(mint_authority)
	auth := solana.MustPublicKeyFromBase58(m.MintAuthority)
	copy(b[4:36], auth[:])
	binary.LittleEndian.PutUint64(b[36:], uint64(m.Supply))
	b[44] = m.Decimals
	b[45] = 1 // initialized; no freeze authority
	return b
}

// packTokenAccount is the 165-byte SPL Token account layout.
func packTokenAccount(t tokenRow) []byte {
	b := make([]byte, 165)
	mint := solana.MustPublicKeyFromBase58(t.Mint)
	owner := solana.MustPublicKeyFromBase58(t.Owner)
	copy(b[0:32], mint[:])
	copy(b[32:64], owner[:])
	binary.LittleEndian.PutUint64(b[64:], uint64(t.Amount))
	b[108] = 1 // AccountState::Initialized
	return b
}
