// Package money owns platform balances and every movement of USDC: the
// double-entry ledger in PostgreSQL, prepare/submit intents for
// user-signed Solana transfers, deposits, withdrawals and reconciliation
// of the ledger against the chain.
package money

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/uptrace/bun"

	"wager/domain"
)

// Ledger account ids.
const (
	Treasury = "treasury"    // fees and payments earned by the platform
	Vault    = "chain:vault" // minus the USDC the vault holds on chain
)

// Available is a user's spendable platform balance.
func Available(userID string) string { return "user:" + userID + ":available" }

// Locked is a user's balance locked in stakes.
func Locked(userID string) string { return "user:" + userID + ":locked" }

// SpectatorPot holds a game's donations until settlement.
func SpectatorPot(gameID string) string { return "game:" + gameID + ":spectators" }

// Escrow is minus the USDC a game's escrow address holds on chain.
func Escrow(gameID string) string { return "chain:escrow:" + gameID }

// Entry is one line of a ledger transaction: a signed amount on an account.
type Entry struct {
	Account string
	Amount  int64
}

// Posting is one ledger transaction. Reference is unique: posting the same
// reference twice records it once.
type Posting struct {
	Kind      string
	Reference string
	Memo      string
	Entries   []Entry
}

// Post records p inside tx, creating user accounts as needed. It returns
// false (and changes nothing) when p.Reference was posted before, and
// INSUFFICIENT_FUNDS when an account that may not go negative would. The
// database refuses entries that do not sum to zero at commit.
func Post(ctx context.Context, tx bun.Tx, p Posting) (bool, error) {
	var sum int64
	for _, e := range p.Entries {
		if e.Amount == 0 {
			return false, fmt.Errorf("ledger: zero entry on %s", e.Account)
		}
		sum += e.Amount
		if err := ensureAccount(ctx, tx, e.Account); err != nil {
			return false, err // names the account
		}
	}
	if sum != 0 || len(p.Entries) < 2 {
		return false, fmt.Errorf("ledger: %s %s does not balance (sum %d)", p.Kind, p.Reference, sum)
	}
	var id int64
	err := tx.QueryRowContext(ctx, `INSERT INTO ledger_transactions (kind, reference, memo) VALUES (?, ?, ?)
		ON CONFLICT (reference) DO NOTHING RETURNING id`, p.Kind, p.Reference, p.Memo).Scan(&id)
	if err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return false, nil
		}
		return false, fmt.Errorf("record ledger transaction %s %s: %w", p.Kind, p.Reference, err)
	}
	for _, e := range p.Entries {
		if _, err := tx.ExecContext(ctx, "INSERT INTO ledger_entries (transaction_id, account_id, amount) VALUES (?, ?, ?)",
			id, e.Account, e.Amount); err != nil {
			var pgErr *pgconn.PgError
			if errors.As(err, &pgErr) && pgErr.ConstraintName == "ledger_accounts_no_overdraft" {
				return false, domain.Errorf(domain.CodeInsufficientFunds, "the balance does not cover %s", describe(p.Kind))
			}
			return false, fmt.Errorf("record the entry on %s of ledger transaction %s %s: %w", e.Account, p.Kind, p.Reference, err)
		}
	}
	return true, nil
}

func describe(kind string) string {
	switch kind {
	case "withdrawal":
		return "this withdrawal"
	case "stake":
		return "the stake"
	}
	return "this payment"
}

// ensureAccount creates user and game accounts on first use; platform
// accounts exist from the migration. Only chain mirrors may go negative.
func ensureAccount(ctx context.Context, tx bun.Tx, id string) error {
	var kind string
	var userID any
	allowNegative := false
	switch {
	case strings.HasPrefix(id, "user:"):
		uid, suffix, _ := strings.Cut(strings.TrimPrefix(id, "user:"), ":")
		kind, userID = "user_"+suffix, uid
	case strings.HasPrefix(id, "game:") && strings.HasSuffix(id, ":spectators"):
		kind = "game_spectators"
	case strings.HasPrefix(id, "chain:escrow:"):
		kind, allowNegative = "chain", true
	default:
		return nil // platform accounts exist from the migration
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO ledger_accounts (id, kind, user_id, allow_negative) VALUES (?, ?, ?, ?)
		ON CONFLICT (id) DO NOTHING`, id, kind, userID, allowNegative); err != nil {
		return fmt.Errorf("open ledger account %s: %w", id, err)
	}
	return nil
}

// BalanceOf returns an account's balance (0 when it does not exist yet).
func BalanceOf(ctx context.Context, idb bun.IDB, account string) (int64, error) {
	var balance int64
	if err := idb.QueryRowContext(ctx, "SELECT coalesce((SELECT balance FROM ledger_accounts WHERE id = ?), 0)", account).
		Scan(&balance); err != nil {
		return 0, fmt.Errorf("read the balance of %s: %w", account, err)
	}
	return balance, nil
}

// Totals returns the sum of every account balance and the sum of every
// entry; both are zero in healthy books.
func Totals(ctx context.Context, idb bun.IDB) (balances, entries int64, err error) {
	err = idb.QueryRowContext(ctx, `SELECT (SELECT coalesce(sum(balance), 0) FROM ledger_accounts),
		(SELECT coalesce(sum(amount), 0) FROM ledger_entries)`).Scan(&balances, &entries)
	if err != nil {
		return 0, 0, fmt.Errorf("read the ledger totals: %w", err)
	}
	return balances, entries, nil
}
