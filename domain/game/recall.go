package game

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"wager/domain"
	"wager/domain/money"
)

// RecallGames is how many games Recall answers.
const RecallGames = 10

// Recalled is one staked game as the player recalls it: what they staked
// and were paid, their balance (available and locked together) just
// before the game took their stake and just after the game's last
// posting that touched their balance (its settlement, or the refund of a
// cancelled game), and every step of the game.
type Recalled struct {
	GameID             string    `json:"gameId"`
	GameType           string    `json:"gameType" enum:"connect4,rps"`
	Status             string    `json:"status" enum:"completed,cancelled"`
	EndedAt            time.Time `json:"endedAt"`
	StakeMinor         int64     `json:"stakeMinor" doc:"your stake"`
	PayoutMinor        int64     `json:"payoutMinor" doc:"what the game paid to your available balance: a win's payout, a draw's or a cancellation's stake back; 0 after a loss"`
	BalanceBeforeMinor int64     `json:"balanceBeforeMinor" doc:"your platform balance (available and locked) just before the stake was taken"`
	BalanceAfterMinor  int64     `json:"balanceAfterMinor" doc:"your platform balance just after the game paid out; it differs from balanceBeforeMinor - stakeMinor + payoutMinor only by what else moved your balance while the game ran"`
	Steps              []Step    `json:"steps" bun:"-" doc:"the game's events, in order"`
}

// Step is one event of a recalled game.
type Step struct {
	Seq       int              `json:"seq"`
	Name      domain.EventName `json:"event"`
	Data      json.RawMessage  `json:"data" type:"object" doc:"the event's payload; its shape depends on the event name"`
	CreatedAt time.Time        `json:"createdAt"`
}

// Recall returns userID's last RecallGames staked games that ended,
// newest first. The balances come from the ledger: the balance now less
// every entry on the user's accounts from the stake's posting on (before)
// or after the game's last posting (after).
func (s *Service) Recall(ctx context.Context, userID string) ([]Recalled, error) {
	var rows []struct {
		Recalled
		RawSteps json.RawMessage `bun:"steps"`
	}
	err := s.db.NewRaw(`WITH mine AS (
			SELECT g.id, g.game_type, g.status, g.ended_at, g.stake_minor FROM game_players AS p JOIN games AS g ON g.id = p.game_id
			WHERE p.user_id = ?0 AND g.stake_minor > 0 AND g.ended_at IS NOT NULL
			ORDER BY g.ended_at DESC, g.id DESC LIMIT ?3),
		accounts AS (SELECT id, balance FROM ledger_accounts WHERE id IN (?1, ?2)),
		posted AS (SELECT m.id AS game_id, e.transaction_id, e.account_id, e.amount, t.reference
			FROM mine AS m JOIN ledger_transactions AS t ON t.reference IN ('stake:' || m.id || ':' || ?0, 'settle:' || m.id)
			JOIN ledger_entries AS e ON e.transaction_id = t.id AND e.account_id IN (?1, ?2)),
		bounds AS (SELECT game_id, min(transaction_id) FILTER (WHERE reference LIKE 'stake:%') AS first, max(transaction_id) AS last,
				coalesce(sum(amount) FILTER (WHERE reference LIKE 'settle:%' AND account_id = ?1 AND amount > 0), 0) AS payout
			FROM posted GROUP BY game_id)
		SELECT m.id AS game_id, m.game_type, m.status, m.ended_at, m.stake_minor, coalesce(b.payout, 0) AS payout_minor,
			(SELECT coalesce(sum(balance), 0) FROM accounts) - coalesce((SELECT sum(e.amount) FROM ledger_entries AS e
				WHERE e.account_id IN (?1, ?2) AND e.transaction_id >= b.first), 0) AS balance_before_minor,
			(SELECT coalesce(sum(balance), 0) FROM accounts) - coalesce((SELECT sum(e.amount) FROM ledger_entries AS e
				WHERE e.account_id IN (?1, ?2) AND e.transaction_id > b.last), 0) AS balance_after_minor,
			(SELECT json_agg(json_build_object('seq', v.seq, 'event', v.name, 'data', v.data, 'createdAt', v.created_at) ORDER BY v.seq)
				FROM game_events AS v WHERE v.game_id = m.id) AS steps
		FROM mine AS m LEFT JOIN bounds AS b ON b.game_id = m.id
		ORDER BY m.ended_at DESC, m.id DESC`,
		userID, money.Available(userID), money.Locked(userID), RecallGames).Scan(ctx, &rows)
	if err != nil {
		return nil, fmt.Errorf("recall the games of %s: %w", userID, err)
	}
	out := make([]Recalled, len(rows))
	for i, r := range rows {
		out[i] = r.Recalled
		out[i].Steps = []Step{}
		if len(r.RawSteps) > 0 {
			if err := json.Unmarshal(r.RawSteps, &out[i].Steps); err != nil {
				return nil, fmt.Errorf("read the steps of game %s: %w", r.GameID, err)
			}
		}
	}
	return out, nil
}
