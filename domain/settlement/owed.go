package settlement

import (
	"context"
	"fmt"

	"github.com/uptrace/bun"

	"wager/domain/money"
)

// Owed calls add with what the games' pools hold for each user, read in
// idb (the proof of reserves reads every part of the books in one snapshot
// of the database): their bets not yet paid out (open, or held for
// review), their donations to games whose spectator pot was not paid to a
// winner, and the late donations and refused bets whose refund on chain
// has not landed yet. The pools' ledger accounts hold exactly these.
func Owed(ctx context.Context, idb bun.IDB, add func(userID string, minor int64)) error {
	rows, err := idb.QueryContext(ctx, `WITH refunded AS (
			SELECT refund_of FROM settlement_transfers WHERE refund_of IS NOT NULL AND status = 'confirmed'
		)
		SELECT bettor_id::text, amount_minor FROM bets
		WHERE status IN ('open', 'held') OR (late AND signature NOT IN (SELECT refund_of FROM refunded))
		UNION ALL
		SELECT d.donor_id::text, d.amount_minor FROM donations AS d
		WHERE d.signature NOT IN (SELECT refund_of FROM refunded) AND (d.late OR NOT EXISTS (
			SELECT 1 FROM ledger_transactions AS t JOIN ledger_entries AS e ON e.transaction_id = t.id
			WHERE t.reference = 'settle:' || d.game_id AND e.account_id = 'game:' || d.game_id || ':spectators'))`)
	if err != nil {
		return fmt.Errorf("read what the games' pools hold for users: %w", err)
	}
	return money.ScanOwed(rows, add)
}
