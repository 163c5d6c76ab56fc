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
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"

	"wager/db"
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

// BetPool holds a game's bets until settlement.
func BetPool(gameID string) string { return "game:" + gameID + ":bets" }

// Market holds a game's prediction market money: what open buys lock and
// the collateral of the shares outstanding.
func Market(gameID string) string { return "game:" + gameID + ":market" }

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
	// At is when it happened by the service's clock; zero is the
	// database's clock. The windows of player protection's limits are
	// read from it, so every movement they count sets it.
	At time.Time
}

// Teller tells a user's open sockets something once the caller's
// transaction commits (eventlog.Log does, on every instance).
type Teller interface {
	Tell(tx db.Tx, userID string, kind domain.NoticeKind, data any) error
}

// Notices are this package's personal notices by name, each with its data
// type (see rules.Events): domain.NoticeBalance carries a user's new
// platform balance.
var Notices = map[domain.NoticeKind]any{domain.NoticeBalance: PlatformBalance{}}

// PlatformBalance is a user's balance on the platform: what they can
// spend and what is locked in stakes.
type PlatformBalance struct {
	AvailableMinor int64 `json:"availableMinor"`
	LockedMinor    int64 `json:"lockedMinor"`
}

// Post records p inside tx, creating user accounts as needed. It returns
// false (and changes nothing) when p.Reference was posted before, and
// INSUFFICIENT_FUNDS when an account that may not go negative would. The
// database refuses entries that do not sum to zero at commit.
//
// Every user whose available or locked balance p changes is told the new
// balance through tell (NoticeBalance) once tx commits. Post is the one
// place where users' balances change, so no movement (stake, payout,
// refund, deposit, withdrawal) can forget to tell. tell may be nil only
// where nobody listens (the ledger's own tests) or no user account moves.
func Post(ctx context.Context, tx db.Tx, tell Teller, p Posting) (bool, error) {
	n, err := PostAll(ctx, tx, tell, []Posting{p})
	return n == 1, err
}

// PostAll is Post of several postings, in order, in one statement
// whatever their number (a market order's trades are posted together),
// and one more to read the balances it tells. It returns how many were
// new; a posting whose reference was posted before is skipped.
// INSUFFICIENT_FUNDS names the first posting's kind.
func PostAll(ctx context.Context, tx db.Tx, tell Teller, ps []Posting) (int, error) {
	if len(ps) == 0 {
		return 0, nil
	}
	var accounts []string
	kinds, refs, memos := make([]string, len(ps)), make([]string, len(ps)), make([]string, len(ps))
	ats := make([]*time.Time, len(ps))
	var entryRefs, entryAccounts []string
	var amounts []int64
	for i, p := range ps {
		var sum int64
		for _, e := range p.Entries {
			if e.Amount == 0 {
				return 0, fmt.Errorf("ledger: zero entry on %s", e.Account)
			}
			sum += e.Amount
			if !slices.Contains(accounts, e.Account) {
				accounts = append(accounts, e.Account)
			}
			// In the postings' order: a debit before the credits that follow it.
			entryRefs, entryAccounts, amounts = append(entryRefs, p.Reference), append(entryAccounts, e.Account), append(amounts, e.Amount)
		}
		if sum != 0 || len(p.Entries) < 2 {
			return 0, fmt.Errorf("ledger: %s %s does not balance (sum %d)", p.Kind, p.Reference, sum)
		}
		if slices.Contains(refs[:i], p.Reference) {
			return 0, fmt.Errorf("ledger: reference %s twice in one call", p.Reference)
		}
		kinds[i], refs[i], memos[i] = p.Kind, p.Reference, p.Memo
		if !p.At.IsZero() {
			ats[i] = &p.At
		}
	}
	open := newAccounts(accounts)
	// The entries' trigger (which moves the balances) and foreign keys run
	// at the end of the statement, after the accounts are opened and after
	// the existing ones are locked in id order (db/doc.go): two postings of
	// the same accounts in opposite directions (an entry fee and its refund)
	// wait for each other instead of deadlocking.
	var created []string
	err := tx.NewRaw(`WITH opened AS (
			INSERT INTO ledger_accounts (id, kind, user_id, allow_negative)
			SELECT * FROM unnest(?::text[], ?::text[], ?::uuid[], ?::boolean[]) ON CONFLICT (id) DO NOTHING
		), locked AS (
			SELECT id FROM ledger_accounts WHERE id = ANY(?::text[]) ORDER BY id FOR NO KEY UPDATE
		), t AS (
			INSERT INTO ledger_transactions (kind, reference, memo, created_at)
			SELECT k, r, m, coalesce(a, now()) FROM unnest(?::text[], ?::text[], ?::text[], ?::timestamptz[]) AS x(k, r, m, a)
			ON CONFLICT (reference) DO NOTHING RETURNING id, reference
		), e AS (
			INSERT INTO ledger_entries (transaction_id, account_id, amount)
			SELECT t.id, x.a, x.m FROM unnest(?::text[], ?::text[], ?::bigint[]) WITH ORDINALITY AS x(r, a, m, n)
			JOIN t ON t.reference = x.r ORDER BY x.n
		)
		SELECT reference FROM t WHERE (SELECT count(*) FROM locked) >= 0`,
		pgdialect.Array(open.ids), pgdialect.Array(open.kinds), pgdialect.Array(open.users), pgdialect.Array(open.negative),
		pgdialect.Array(accounts),
		pgdialect.Array(kinds), pgdialect.Array(refs), pgdialect.Array(memos), pgdialect.Array(ats),
		pgdialect.Array(entryRefs), pgdialect.Array(entryAccounts), pgdialect.Array(amounts)).Scan(ctx, &created)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.ConstraintName == "ledger_accounts_no_overdraft" {
			return 0, domain.Errorf(domain.CodeInsufficientFunds, "the balance does not cover %s", describe(ps[0].Kind))
		}
		return 0, fmt.Errorf("record ledger transaction %s %s: %w", ps[0].Kind, ps[0].Reference, err)
	}
	if len(created) == 0 || tell == nil {
		return len(created), nil
	}
	var moved []Entry
	for _, p := range ps {
		if slices.Contains(created, p.Reference) {
			moved = append(moved, p.Entries...)
		}
	}
	if err := tellBalances(ctx, tx, tell, moved); err != nil {
		return 0, err
	}
	return len(created), nil
}

// tellBalances reads, in one query, the balances of the users whose
// accounts entries moved and tells each user theirs after the commit. The
// rows are locked by this transaction's entries, so what it reads is what
// commits. Two transactions of one user that commit at nearly the same
// time may have their notices delivered in either order; the next movement
// or page load corrects a stale figure.
func tellBalances(ctx context.Context, tx db.Tx, tell Teller, entries []Entry) error {
	var users []string
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Account, "user:")
		if !ok {
			continue
		}
		if uid, _, _ := strings.Cut(rest, ":"); !slices.Contains(users, uid) {
			users = append(users, uid)
		}
	}
	if len(users) == 0 {
		return nil
	}
	balances, err := platformBalances(ctx, tx, users)
	if err != nil {
		return err
	}
	for _, uid := range users {
		if err := tell.Tell(tx, uid, domain.NoticeBalance, balances[uid]); err != nil {
			return fmt.Errorf("tell user %s the new balance: %w", uid, err)
		}
	}
	return nil
}

// platformBalances reads the platform balances of users in one query
// (zero for accounts not opened yet).
func platformBalances(ctx context.Context, idb bun.IDB, users []string) (map[string]PlatformBalance, error) {
	accounts := make([]string, 0, 2*len(users))
	for _, uid := range users {
		accounts = append(accounts, Available(uid), Locked(uid))
	}
	var rows []struct {
		ID      string `bun:"id"`
		Balance int64  `bun:"balance"`
	}
	if err := idb.NewSelect().Table("ledger_accounts").Column("id", "balance").Where("id IN (?)", bun.List(accounts)).
		Scan(ctx, &rows); err != nil {
		return nil, fmt.Errorf("read the platform balances of %d users: %w", len(users), err)
	}
	got := make(map[string]int64, len(rows))
	for _, r := range rows {
		got[r.ID] = r.Balance
	}
	out := make(map[string]PlatformBalance, len(users))
	for _, uid := range users {
		out[uid] = PlatformBalance{AvailableMinor: got[Available(uid)], LockedMinor: got[Locked(uid)]}
	}
	return out, nil
}

func describe(kind string) string {
	switch kind {
	case "withdrawal":
		return "this withdrawal"
	case "stake":
		return "the stake"
	case "market_order":
		return "this order"
	}
	return "this payment"
}

// accountRows are the ledger accounts a posting may open, as columns.
type accountRows struct {
	ids, kinds []string
	users      []*string
	negative   []bool
}

// newAccounts returns the rows of the user and game accounts among ids,
// which postings open on first use; platform accounts exist from the
// migration. Only chain mirrors may go negative.
func newAccounts(ids []string) accountRows {
	var r accountRows
	for _, id := range ids {
		var kind string
		var userID *string
		allowNegative := false
		switch {
		case strings.HasPrefix(id, "user:"):
			uid, suffix, _ := strings.Cut(strings.TrimPrefix(id, "user:"), ":")
			kind, userID = "user_"+suffix, &uid
		case strings.HasPrefix(id, "game:"):
			_, suffix, _ := strings.Cut(strings.TrimPrefix(id, "game:"), ":")
			kind = "game_" + suffix // spectators, bets, market
		case strings.HasPrefix(id, "chain:escrow:"):
			kind, allowNegative = "chain", true
		default:
			continue
		}
		r.ids, r.kinds, r.users, r.negative = append(r.ids, id), append(r.kinds, kind), append(r.users, userID), append(r.negative, allowNegative)
	}
	return r
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
