package market

import (
	"context"
	"fmt"

	"github.com/uptrace/bun"

	"wager/domain/market/engine"
	"wager/domain/money"
)

// Owed calls add with what the markets' accounts hold for each user, read
// in idb (the proof of reserves reads every part of the books in one
// snapshot of the database): what their open buy orders lock, and their
// shares' part of the collateral. A resolved market owes each share what
// its resolution says; one not resolved yet (open or held) owes each
// share half of a pair's collateral, what a void would pay: every pair is
// one share of each outcome, so the shares' parts add up to the
// collateral whoever wins.
func Owed(ctx context.Context, idb bun.IDB, add func(userID string, minor int64)) error {
	rows, err := idb.QueryContext(ctx, `SELECT user_id::text, (price_minor * (shares - filled_shares))::bigint FROM market_orders
		WHERE status = 'open' AND side = 'buy'
		UNION ALL
		SELECT p.user_id::text, (p.shares * CASE WHEN m.status <> 'resolved' THEN ?::bigint
			WHEN p.outcome_id = m.outcomes[1] THEN m.resolution[1] ELSE m.resolution[2] END)::bigint
		FROM market_positions AS p JOIN markets AS m ON m.game_id = p.game_id WHERE p.shares > 0`, engine.One/2)
	if err != nil {
		return fmt.Errorf("read what the markets hold for users: %w", err)
	}
	return money.ScanOwed(rows, add)
}
