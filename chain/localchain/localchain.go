// Package localchain is the embedded Solana chain used when no
// SOLANA_RPC_URL is configured: an in-process JSON-RPC server with the
// response shapes solana-go expects, so the platform talks to it through the
// same client it uses for a real cluster.
//
// It models what the platform's transactions touch: SOL balances and fees,
// one USDC-like mint, associated token accounts (CreateIdempotent,
// CloseAccount), TransferChecked, ComputeBudget and Memo, and the runtime's
// rule that a transaction may not leave a wallet it debits or creates with
// a balance above 0 and below the rent-exempt minimum. It verifies every
// signature, the blockhash (recent ones only) and refuses replays. A
// transaction that fails is refused whole, as a real RPC's preflight
// refuses it, and changes nothing. A landed transaction keeps the log
// messages a validator would have written (the runtime's lines for each
// instruction and the Memo program's own), which getTransaction answers.
// State lives in PostgreSQL (schema localchain), so balances survive
// restarts and several server instances share one chain.
package localchain

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gagliardetto/solana-go"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"

	"wager/chain"
)

// Fees and rent as on Solana's mainnet.
const (
	FeePerSignature = 5000
	// TokenAccountRent is the rent-exempt minimum of a 165-byte token account.
	TokenAccountRent = chain.TokenAccountRent
	// SystemAccountRent is the rent-exempt minimum of a 0-byte System
	// account: RentExempt(0).
	SystemAccountRent = chain.SystemAccountRent
	// BlockhashLifetime is how long a blockhash stays valid:
	// chain.BlockhashValidity blocks of blockhashEvery.
	BlockhashLifetime = chain.BlockhashValidity * blockhashEvery
	// blockhashEvery is how often a new blockhash is produced on demand:
	// a slot's time.
	blockhashEvery = 400 * time.Millisecond
	// lockKey serialises transaction processing across instances, as a
	// leader orders a real chain's transactions.
	lockKey = 7_364_202
)

// RentExempt returns the rent-exempt minimum for an account of size bytes.
func RentExempt(size uint64) uint64 { return (128 + size) * 6960 }

// Chain is the embedded chain.
type Chain struct {
	db  *bun.DB
	now func() time.Time

	Mint          solana.PublicKey
	MintAuthority solana.PublicKey
	// FinalizeSlots is how many slots (of blockhashEvery) after it landed a
	// transaction is reported finalized; before, confirmed.
	FinalizeSlots int
}

// New opens the chain stored in bdb, creating the USDC-like mint at genesis
// when it does not exist yet.
func New(ctx context.Context, bdb *bun.DB, now func() time.Time, mint, mintAuthority solana.PublicKey) (*Chain, error) {
	c := &Chain{db: bdb, now: now, Mint: mint, MintAuthority: mintAuthority}
	err := c.inTx(ctx, func(ctx context.Context, s *state) error {
		if _, ok, err := s.mint(ctx, mint); err != nil || ok {
			return err
		}
		if err := s.createAccount(ctx, mint, RentExempt(82), chain.TokenProgramID); err != nil {
			return err
		}
		_, err := s.tx.NewInsert().Model(&mintRow{Address: mint.String(), Decimals: chain.USDCDecimals,
			MintAuthority: mintAuthority.String()}).Exec(ctx)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("create the genesis of the local chain: %w", err)
	}
	return c, nil
}

// rpcError is a JSON-RPC error as Solana's RPC reports it.
type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *rpcError) Error() string { return e.Message }

func simulationFailed(format string, args ...any) *rpcError {
	return &rpcError{Code: -32002, Message: "Transaction simulation failed: " + fmt.Sprintf(format, args...)}
}

// SendTransaction verifies and executes a wire transaction and returns its
// signature. Any failure changes nothing: a transaction the chain refuses
// is an *rpcError, and a database failure an error naming what was being
// read or written. It records the price the transaction paid per compute
// unit and the accounts it wrote, for RecentPrioritizationFees.
func (c *Chain) SendTransaction(ctx context.Context, raw []byte) (solana.Signature, error) {
	tx, err := decodeTransaction(raw)
	if err != nil {
		return solana.Signature{}, err
	}
	if err := tx.VerifySignatures(); err != nil {
		return solana.Signature{}, &rpcError{Code: -32003, Message: "Transaction signature verification failure: " + err.Error()}
	}
	sig := tx.Signatures[0]
	err = c.inTx(ctx, func(ctx context.Context, s *state) error {
		if seen, err := s.tx.NewSelect().Table("localchain.transactions").
			Where("signature = ?", sig.String()).Exists(ctx); err != nil {
			return fmt.Errorf("look up transaction %s: %w", sig, err)
		} else if seen {
			return simulationFailed("This transaction has already been processed")
		}
		ran, err := c.run(ctx, s, tx)
		if err != nil {
			return err
		}
		slot, err := s.nextSlot(ctx)
		if err != nil {
			return err
		}
		units := int64(ran.units)
		if _, err := s.tx.NewInsert().Model(&txRow{Signature: sig.String(), Slot: slot, Fee: int64(ran.fee),
			Raw: raw, CreatedAt: c.now(), ComputeUnitPrice: int64(ran.price), Writable: writable(tx),
			Logs: ran.logs, Units: &units, PreBalances: ran.pre, PostBalances: ran.post}).Exec(ctx); err != nil {
			return fmt.Errorf("record transaction %s: %w", sig, err)
		}
		return nil
	})
	return sig, err
}

func decodeTransaction(raw []byte) (*solana.Transaction, error) {
	tx, err := solana.TransactionFromBytes(raw)
	if err != nil {
		return nil, &rpcError{Code: -32602, Message: "invalid transaction: failed to deserialize: " + err.Error()}
	}
	if tx.Message.IsVersioned() && tx.Message.NumLookups() > 0 {
		return nil, &rpcError{Code: -32602, Message: "invalid transaction: address lookup tables are not supported"}
	}
	if len(tx.Signatures) == 0 {
		return nil, &rpcError{Code: -32602, Message: "invalid transaction: no signatures"}
	}
	return tx, nil
}

// run checks tx's blockhash and executes it against s.
func (c *Chain) run(ctx context.Context, s *state, tx *solana.Transaction) (executed, error) {
	var created time.Time
	err := s.tx.NewSelect().Table("localchain.blockhashes").Column("created_at").
		Where("hash = ?", tx.Message.RecentBlockhash.String()).Scan(ctx, &created)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && c.BlockHeight() > LastValid(created)) {
		return executed{}, simulationFailed("Blockhash not found")
	}
	if err != nil {
		return executed{}, fmt.Errorf("read blockhash %s: %w", tx.Message.RecentBlockhash, err)
	}
	return execute(ctx, s, tx)
}

// writable returns the accounts tx's message marks writable.
func writable(tx *solana.Transaction) []string {
	out := []string{}
	for _, k := range tx.Message.AccountKeys {
		if ok, err := tx.Message.IsWritable(k); err == nil && ok {
			out = append(out, k.String())
		}
	}
	return out
}

// Simulation is what running a transaction without keeping it showed: Err
// is nil when it would land, else why it would not (the text a send would
// be refused with); Units is the estimate of the compute it consumed (see
// unitsTransfer and the others).
type Simulation struct {
	Err   *string
	Logs  []string
	Units uint64
}

// errSimulated rolls a simulation's database transaction back.
var errSimulated = errors.New("simulated")

// Simulate runs a wire transaction as SendTransaction would, in a database
// transaction that is rolled back: nothing changes and nothing is recorded.
// Signatures are verified only with sigVerify, so an unsigned message can
// be measured. A transaction that would fail is a Simulation with Err; an
// error is a transaction that cannot be decoded (*rpcError) or a database
// failure.
func (c *Chain) Simulate(ctx context.Context, raw []byte, sigVerify bool) (Simulation, error) {
	tx, err := decodeTransaction(raw)
	if err != nil {
		return Simulation{}, err
	}
	refused := func(why string) (Simulation, error) {
		why = strings.TrimPrefix(why, "Transaction simulation failed: ")
		return Simulation{Err: &why, Logs: []string{}}, nil
	}
	if sigVerify {
		if err := tx.VerifySignatures(); err != nil {
			return refused("SignatureFailure")
		}
	}
	var ran executed
	err = c.inTx(ctx, func(ctx context.Context, s *state) error {
		if ran, err = c.run(ctx, s, tx); err != nil {
			return err
		}
		return errSimulated
	})
	var re *rpcError
	switch {
	case errors.As(err, &re):
		return refused(re.Message)
	case !errors.Is(err, errSimulated):
		return Simulation{}, err
	}
	return Simulation{Logs: ran.logs, Units: ran.units}, nil
}

// PrioritizationFee is the least price per compute unit, in micro-lamports,
// that a transaction landed in Slot paid.
type PrioritizationFee struct {
	Slot uint64 `json:"slot" bun:"slot"`
	Fee  uint64 `json:"prioritizationFee" bun:"fee"`
}

// RecentPrioritizationFees returns, for each of the last
// PrioritizationFeeSlots slots in which a transaction that writes one of
// accounts (any account, for none) landed, the least price such a
// transaction paid, oldest first. Slots without one are left out (a real
// node lists every slot it has seen with its block's least price).
func (c *Chain) RecentPrioritizationFees(ctx context.Context, accounts []string) ([]PrioritizationFee, error) {
	slot, err := c.Slot(ctx)
	if err != nil {
		return nil, err
	}
	q := c.db.NewSelect().Table("localchain.transactions").ColumnExpr("slot, min(compute_unit_price) AS fee").
		Where("raw IS NOT NULL AND slot > ?", int64(slot)-PrioritizationFeeSlots).Group("slot").Order("slot")
	if len(accounts) > 0 {
		q = q.Where("writable && ?::text[]", pgdialect.Array(accounts))
	}
	out := []PrioritizationFee{}
	if err := q.Scan(ctx, &out); err != nil {
		return nil, fmt.Errorf("read recent prioritization fees: %w", err)
	}
	return out, nil
}

// PrioritizationFeeSlots is how many recent slots RecentPrioritizationFees
// looks at: what a node's cache holds.
const PrioritizationFeeSlots = 150

// SignatureStatus returns the slot of a processed transaction and whether
// it is finalized (FinalizeSlots after it landed), or false when it was
// not processed.
func (c *Chain) SignatureStatus(ctx context.Context, sig string) (slot uint64, finalized, ok bool, err error) {
	var row txRow
	err = c.db.NewSelect().Model(&row).Column("slot", "created_at").Where("signature = ?", sig).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, false, nil
	}
	if err != nil {
		return 0, false, false, fmt.Errorf("read the status of transaction %s: %w", sig, err)
	}
	return row.Slot, c.finalized(row.CreatedAt), true, nil
}

// finalized reports whether a transaction that landed at landed is
// finalized: FinalizeSlots slots have passed since.
func (c *Chain) finalized(landed time.Time) bool {
	return !c.now().Before(landed.Add(time.Duration(c.FinalizeSlots) * blockhashEvery))
}

// LatestBlockhash returns the newest blockhash, producing a new one when the
// newest is older than blockhashEvery, and the last block height at which
// a transaction built on it can land.
func (c *Chain) LatestBlockhash(ctx context.Context) (solana.Hash, uint64, error) {
	var row struct {
		Hash      string    `bun:"hash"`
		CreatedAt time.Time `bun:"created_at"`
	}
	err := c.db.NewSelect().Table("localchain.blockhashes").Column("hash", "created_at").
		Order("created_at DESC").Limit(1).Scan(ctx, &row)
	// A blockhash made later by another clock than c's (tests share a
	// database) is not c's newest: it would outlive its last valid height.
	if age := c.now().Sub(row.CreatedAt); err == nil && age >= 0 && age < blockhashEvery {
		h, err := solana.HashFromBase58(row.Hash)
		if err != nil {
			return h, 0, fmt.Errorf("parse stored blockhash %q: %w", row.Hash, err)
		}
		return h, LastValid(row.CreatedAt), nil
	}
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return solana.Hash{}, 0, fmt.Errorf("read the latest blockhash: %w", err)
	}
	var h solana.Hash
	rand.Read(h[:])
	now := c.now()
	err = c.inTx(ctx, func(ctx context.Context, s *state) error {
		slot, err := s.nextSlot(ctx)
		if err != nil {
			return err
		}
		if _, err := s.tx.ExecContext(ctx, "INSERT INTO localchain.blockhashes (hash, slot, created_at) VALUES (?, ?, ?)",
			h.String(), slot, now); err != nil {
			return fmt.Errorf("store blockhash %s: %w", h, err)
		}
		return nil
	})
	return h, LastValid(now), err
}

// BlockhashValid reports whether a blockhash can still be used.
func (c *Chain) BlockhashValid(ctx context.Context, h string) (bool, error) {
	var created time.Time
	err := c.db.NewSelect().Table("localchain.blockhashes").Column("created_at").Where("hash = ?", h).Scan(ctx, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read blockhash %s: %w", h, err)
	}
	return c.BlockHeight() <= LastValid(created), nil
}

// BlockHeight is the chain's block height: one block every blockhashEvery
// of its clock, whether or not anything happened, as on a cluster. It is
// the clock of blockhash expiry.
func (c *Chain) BlockHeight() uint64 { return heightAt(c.now()) }

func heightAt(t time.Time) uint64 { return uint64(t.UnixNano() / int64(blockhashEvery)) }

// LastValid is the last block height at which a transaction built on a
// blockhash produced at created can land: chain.BlockhashValidity blocks,
// BlockhashLifetime, later.
func LastValid(created time.Time) uint64 { return heightAt(created) + chain.BlockhashValidity }

// Slot returns the current slot.
func (c *Chain) Slot(ctx context.Context) (uint64, error) {
	var slot uint64
	if err := c.db.NewSelect().Table("localchain.state").Column("slot").Where("id = 1").Scan(ctx, &slot); err != nil {
		return 0, fmt.Errorf("read the current slot: %w", err)
	}
	return slot, nil
}

// MaxAirdrop is the most lamports one airdrop gives (1,000 SOL): balances
// are 64-bit, and a test needs no more.
const MaxAirdrop = 1_000 * 1_000_000_000

// Airdrop credits lamports to an address (creating it as a system account)
// and records a transaction signature for it.
func (c *Chain) Airdrop(ctx context.Context, to solana.PublicKey, lamports uint64) (solana.Signature, error) {
	if lamports > MaxAirdrop {
		return solana.Signature{}, fmt.Errorf("an airdrop of %d lamports is more than %d", lamports, uint64(MaxAirdrop))
	}
	return c.credit(ctx, func(ctx context.Context, s *state) error {
		acc, ok, err := s.account(ctx, to)
		if err != nil {
			return err
		}
		if !ok {
			return s.createAccount(ctx, to, lamports, chain.SystemProgramID)
		}
		return s.setLamports(ctx, to, acc.Lamports+int64(lamports))
	})
}

// MintTo mints tokens of the chain's mint into owner's associated token
// account, creating it when needed: the dev faucet.
func (c *Chain) MintTo(ctx context.Context, owner solana.PublicKey, amount uint64) (solana.Signature, error) {
	return c.credit(ctx, func(ctx context.Context, s *state) error {
		ata := chain.ATA(owner, c.Mint)
		if _, ok, err := s.tokenAccount(ctx, ata); err != nil {
			return err
		} else if !ok {
			if err := s.createAccount(ctx, ata, TokenAccountRent, chain.TokenProgramID); err != nil {
				return err
			}
			if _, err := s.tx.NewInsert().Model(&tokenRow{Address: ata.String(), Mint: c.Mint.String(),
				Owner: owner.String()}).Exec(ctx); err != nil {
				return fmt.Errorf("record token account %s: %w", ata, err)
			}
		}
		if _, err := s.tx.ExecContext(ctx, "UPDATE localchain.token_accounts SET amount = amount + ? WHERE address = ?",
			amount, ata.String()); err != nil {
			return fmt.Errorf("credit %d tokens to %s: %w", amount, ata, err)
		}
		if _, err := s.tx.ExecContext(ctx, "UPDATE localchain.mints SET supply = supply + ? WHERE address = ?",
			amount, c.Mint.String()); err != nil {
			return fmt.Errorf("raise the supply of mint %s: %w", c.Mint, err)
		}
		return nil
	})
}

// credit runs a state change that is not a user transaction (airdrop,
// faucet) and records it under a fresh signature.
func (c *Chain) credit(ctx context.Context, fn func(context.Context, *state) error) (solana.Signature, error) {
	var sig solana.Signature
	rand.Read(sig[:])
	err := c.inTx(ctx, func(ctx context.Context, s *state) error {
		if err := fn(ctx, s); err != nil {
			return err
		}
		slot, err := s.nextSlot(ctx)
		if err != nil {
			return err
		}
		if _, err := s.tx.NewInsert().Model(&txRow{Signature: sig.String(), Slot: slot, CreatedAt: c.now(), Writable: []string{}}).Exec(ctx); err != nil {
			return fmt.Errorf("record transaction %s: %w", sig, err)
		}
		return nil
	})
	return sig, err
}

func (c *Chain) inTx(ctx context.Context, fn func(context.Context, *state) error) error {
	return c.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock(?)", lockKey); err != nil {
			return fmt.Errorf("lock the local chain: %w", err)
		}
		return fn(ctx, &state{tx: tx})
	})
}
