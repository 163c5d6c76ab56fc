package money

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/uptrace/bun"
)

// Owed calls add with what each user's own accounts hold: their available
// balance and what is locked in their stakes and arena entries, read in
// idb (the proof of reserves reads every part of the books in one
// snapshot of the database). A user whose accounts are empty is left out.
func Owed(ctx context.Context, idb bun.IDB, add func(userID string, minor int64)) error {
	rows, err := idb.QueryContext(ctx, `SELECT user_id::text, sum(balance) FROM ledger_accounts
		WHERE user_id IS NOT NULL GROUP BY user_id HAVING sum(balance) <> 0`)
	if err != nil {
		return fmt.Errorf("read what users' accounts hold: %w", err)
	}
	return ScanOwed(rows, add)
}

// Liabilities is what the ledger says the platform owes its users: every
// account but the treasury's (the platform's own) and the chain mirrors'.
// The proof of reserves' leaves add up to it.
func Liabilities(ctx context.Context, idb bun.IDB) (int64, error) {
	var total int64
	if err := idb.QueryRowContext(ctx, `SELECT coalesce(sum(balance), 0) FROM ledger_accounts WHERE kind NOT IN ('treasury', 'chain')`).
		Scan(&total); err != nil {
		return 0, fmt.Errorf("read the ledger's liabilities: %w", err)
	}
	return total, nil
}

// ScanOwed calls add for each row of a query of (user id, amount) that
// users are owed, and closes the rows.
func ScanOwed(rows *sql.Rows, add func(userID string, minor int64)) error {
	defer rows.Close()
	for rows.Next() {
		var user string
		var minor int64
		if err := rows.Scan(&user, &minor); err != nil {
			return fmt.Errorf("read what a user is owed: %w", err)
		}
		add(user, minor)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read what users are owed: %w", err)
	}
	return nil
}
