package referrals

import (
	"context"
	"fmt"

	"github.com/uptrace/bun"

	"wager/domain/money"
)

// Owed calls add with each referrer's rewards earned and not claimed yet
// (what Pending holds), read in idb (the proof of reserves reads every
// part of the books in one snapshot of the database).
func Owed(ctx context.Context, idb bun.IDB, add func(userID string, minor int64)) error {
	rows, err := idb.QueryContext(ctx, `SELECT user_id::text, amount_minor FROM referral_rewards WHERE status = 'pending'`)
	if err != nil {
		return fmt.Errorf("read the referral rewards not claimed yet: %w", err)
	}
	return money.ScanOwed(rows, add)
}
