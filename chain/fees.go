package chain

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"slices"

	"github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/rpc"
)

// Budget is the compute budget of a transaction: the SetComputeUnitLimit and
// SetComputeUnitPrice it carries. The priority fee is Units x Price.
type Budget struct {
	Units uint32 // compute unit limit
	Price uint64 // micro-lamports per compute unit
}

// DefaultBudget is what a transaction carries when the chain could not be
// asked: the limit fits ATA creation, a TransferChecked, a CloseAccount and
// a memo, at a modest price.
var DefaultBudget = Budget{Units: ComputeUnitLimit, Price: ComputeUnitPrice}

// PriorityFee is what b costs in lamports on top of the signatures' fee:
// Units x Price micro-lamports, rounded up as the runtime does.
func (b Budget) PriorityFee() int64 {
	return int64((uint64(b.Units)*b.Price + 999_999) / 1_000_000)
}

// orDefault is b, or DefaultBudget for the zero Budget (a builder's caller
// that says nothing).
func (b Budget) orDefault(def Budget) Budget {
	if b == (Budget{}) {
		return def
	}
	return b
}

// How the client picks a budget.
const (
	// FeePercentile is the percentile of the recent prices on the accounts
	// a transaction writes that it pays. Above the median so that, when
	// those accounts are contended, it lands in the next slots rather than
	// half the time; below the top so that one slot's spike does not set
	// it (the cap bounds a lasting one).
	FeePercentile = 75
	// DefaultMaxPriorityFee is Fees.MaxPrice's default, in micro-lamports
	// per compute unit (MAX_PRIORITY_FEE_MICROLAMPORTS): 1 lamport per unit,
	// at most about 0.00004 SOL of priority fee on a transfer that opens a
	// token account, so the fee payer's 2 SOL a day still pays for some
	// 40,000 of them.
	DefaultMaxPriorityFee = 1_000_000
	// MinComputeUnitPrice is the least price paid: what every transaction
	// paid before prices followed the chain, for accounts nobody contends.
	MinComputeUnitPrice = ComputeUnitPrice
	// UnitMarginPercent and UnitMarginFixed are added to the units a
	// simulation consumed. The percentage covers the state changing between
	// the simulation and the landing (a balance that becomes zero, a longer
	// path in a program); the fixed part covers small transactions, where
	// 10 % is less than one CPI's or one log line's worth of units.
	UnitMarginPercent = 10
	UnitMarginFixed   = 3_000
	// UnitsToOpenAccount is added for each CreateIdempotent: opening a
	// token account takes about 9,100 units more than finding it open
	// (LiteSVM), and one open at simulation may be closed before the
	// transaction lands (an escrow's last transfer closes it while a
	// donation to it waits for its signature).
	UnitsToOpenAccount = 10_000
	// MaxComputeUnits is the most a transaction may ask for.
	MaxComputeUnits = 1_400_000
)

// Fees is how a Client prices the transactions it budgets.
type Fees struct {
	// MaxPrice caps the compute unit price, in micro-lamports
	// (MAX_PRIORITY_FEE_MICROLAMPORTS; zero: DefaultMaxPriorityFee).
	MaxPrice uint64
	// Log receives the fallbacks to DefaultBudget (nil: slog.Default()).
	Log *slog.Logger
}

func (f Fees) maxPrice() uint64 {
	if f.MaxPrice == 0 {
		return DefaultMaxPriorityFee
	}
	return f.MaxPrice
}

func (f Fees) log() *slog.Logger {
	if f.Log == nil {
		return slog.Default()
	}
	return f.Log
}

// BuildFunc builds a transaction with a compute budget.
type BuildFunc func(Budget) (*solana.Transaction, error)

// Budgeted builds a transaction, asks the chain what it should pay and how
// many units it needs, and builds it again with that budget: the price is
// PriceFor the accounts it writes; the limit is what simulating the
// message (unsigned, on its own blockhash) consumed, plus the margin. When
// the chain cannot tell (an RPC error, a simulation that fails), that part
// of the budget is DefaultBudget's and the fallback is logged: the money
// path goes on, and a transaction that cannot land is refused when sent.
// It fails only when build does.
func (c *Client) Budgeted(ctx context.Context, build BuildFunc) (*solana.Transaction, error) {
	tx, err := build(DefaultBudget)
	if err != nil {
		return nil, err
	}
	budget := Budget{Units: DefaultBudget.Units, Price: c.PriceFor(ctx, writableAccounts(tx))}
	probe, err := build(Budget{Units: MaxComputeUnits, Price: budget.Price})
	if err != nil {
		return nil, err
	}
	if units, err := c.SimulatedUnits(ctx, probe); err != nil {
		c.Fees.log().Warn("compute unit limit: simulation failed, using the default limit",
			"limit", DefaultBudget.Units, "err", err)
	} else {
		budget.Units = UnitLimit(units, accountsOpened(probe))
	}
	return build(budget)
}

// UnitLimit is the compute unit limit for a transaction that consumed units
// in simulation and carries opens CreateIdempotent instructions:
// UnitMarginPercent more, plus UnitMarginFixed, plus UnitsToOpenAccount
// for each, at most MaxComputeUnits.
func UnitLimit(units uint64, opens int) uint32 {
	return uint32(min(units+units*UnitMarginPercent/100+UnitMarginFixed+uint64(opens)*UnitsToOpenAccount, MaxComputeUnits))
}

// accountsOpened counts tx's CreateIdempotent instructions.
func accountsOpened(tx *solana.Transaction) int {
	n := 0
	keys := tx.Message.AccountKeys
	for _, ix := range tx.Message.Instructions {
		if int(ix.ProgramIDIndex) < len(keys) && keys[ix.ProgramIDIndex].Equals(ATAProgramID) &&
			len(ix.Data) == 1 && ix.Data[0] == 1 {
			n++
		}
	}
	return n
}

// PriceFor returns the compute unit price for a transaction that writes
// accounts: the FeePercentile of the prices recent slots paid to write
// them, at least MinComputeUnitPrice and at most Fees.MaxPrice. When the
// chain does not answer it returns DefaultBudget's price (capped) and logs
// it.
func (c *Client) PriceFor(ctx context.Context, accounts []solana.PublicKey) uint64 {
	limit := c.Fees.maxPrice()
	recent, err := c.RPC.GetRecentPrioritizationFees(ctx, accounts)
	if err != nil {
		c.Fees.log().Warn("compute unit price: getRecentPrioritizationFees failed, using the default price",
			"price", min(DefaultBudget.Price, limit), "err", err)
		return min(DefaultBudget.Price, limit)
	}
	prices := make([]uint64, len(recent))
	for i, r := range recent {
		prices[i] = r.PrioritizationFee
	}
	return min(max(Percentile(prices, FeePercentile), MinComputeUnitPrice), limit)
}

// Percentile returns the p-th percentile of values by the nearest-rank
// method (the smallest value at least p % of them are at or below), or 0
// for none.
func Percentile(values []uint64, p int) uint64 {
	if len(values) == 0 {
		return 0
	}
	sorted := slices.Clone(values)
	slices.Sort(sorted)
	rank := (p*len(sorted) + 99) / 100 // ceil(p/100 x n)
	return sorted[max(rank, 1)-1]
}

// SimulatedUnits returns the compute units tx consumed when the chain ran it
// without keeping anything: its exact message, on its own blockhash,
// signatures not checked (tx may be unsigned). A transaction the simulation
// refused is an error naming why.
func (c *Client) SimulatedUnits(ctx context.Context, tx *solana.Transaction) (uint64, error) {
	unsigned := *tx
	if len(unsigned.Signatures) == 0 {
		unsigned.Signatures = make([]solana.Signature, tx.Message.Header.NumRequiredSignatures)
	}
	out, err := c.RPC.SimulateTransactionWithOpts(ctx, &unsigned, &rpc.SimulateTransactionOpts{
		SigVerify: false, ReplaceRecentBlockhash: false, Commitment: rpc.CommitmentConfirmed})
	if err != nil {
		return 0, fmt.Errorf("simulate the transaction: %w", err)
	}
	switch {
	case out == nil || out.Value == nil:
		return 0, errors.New("simulate the transaction: no result")
	case out.Value.Err != nil:
		return 0, fmt.Errorf("simulate the transaction: it fails: %v", out.Value.Err)
	case out.Value.UnitsConsumed == nil || *out.Value.UnitsConsumed == 0:
		return 0, errors.New("simulate the transaction: no units consumed reported")
	}
	return *out.Value.UnitsConsumed, nil
}

// writableAccounts returns the accounts tx's message marks writable.
func writableAccounts(tx *solana.Transaction) []solana.PublicKey {
	var out []solana.PublicKey
	for _, k := range tx.Message.AccountKeys {
		if ok, err := tx.Message.IsWritable(k); err == nil && ok {
			out = append(out, k)
		}
	}
	return out
}

// BudgetOf reads the compute budget instructions of tx. Without a
// SetComputeUnitLimit the limit is the runtime's default: 3,000 units per
// instruction of a builtin program (ComputeBudget, System) and 200,000 per
// other instruction, at most MaxComputeUnits; without a
// SetComputeUnitPrice the price is 0.
func BudgetOf(tx *solana.Transaction) Budget {
	var b Budget
	limitSet, units := false, 0
	keys := tx.Message.AccountKeys
	for _, ix := range tx.Message.Instructions {
		switch {
		case int(ix.ProgramIDIndex) < len(keys) && keys[ix.ProgramIDIndex].Equals(SystemProgramID):
			units += 3_000
			continue
		case int(ix.ProgramIDIndex) >= len(keys) || !keys[ix.ProgramIDIndex].Equals(ComputeBudgetProgramID):
			units += 200_000
			continue
		}
		units += 3_000
		switch d := ix.Data; {
		case len(d) == 5 && d[0] == 2:
			b.Units, limitSet = binary.LittleEndian.Uint32(d[1:]), true
		case len(d) == 9 && d[0] == 3:
			b.Price = binary.LittleEndian.Uint64(d[1:])
		}
	}
	if !limitSet {
		b.Units = uint32(min(units, MaxComputeUnits))
	}
	return b
}
