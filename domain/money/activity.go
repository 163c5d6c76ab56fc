package money

import (
	"context"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"wager/db"
)

// Kinds of wallet history line (deposits and transfers are the intent
// kinds KindDeposit and KindTransfer; x402 payments are "payment").
const (
	KindWithdrawal     = "withdrawal"
	KindStake          = "stake"           // locked from the balance when a game starts
	KindWinnings       = "winnings"        // the pot less the fee, to the winner
	KindStakeRefund    = "stake refund"    // a stake back after a draw or cancellation
	KindDonation       = "donation"        // from the donor's wallet to a game's escrow
	KindDonationRefund = "donation refund" // a donation back, on chain to the wallet
	KindBet            = "bet"             // from the bettor's wallet to a game's escrow
	KindBetWinnings    = "bet winnings"    // a winning bet's payout, to the balance
	KindBetRefund      = "bet refund"      // a bet back: to the balance after a draw, cancellation or void; on chain to the wallet when refused as it landed
	KindTipSent        = "tip sent"        // from the tipper's wallet to another user's
	KindTipReceived    = "tip received"    // into the recipient's wallet from another user's
	KindMarketPayout   = "market payout"   // a resolved market's shares redeemed, to the balance
)

// Activity is one line of a user's wallet history.
type Activity struct {
	bun.BaseModel `bun:"table:wallet_activity,alias:a"`

	ID           int64     `bun:"id,pk,autoincrement" json:"id,string" doc:"a sequence number as a string; pass the last one seen as ?before= for older ones"`
	UserID       string    `bun:"user_id,type:uuid" json:"-"`
	Kind         string    `bun:"kind" json:"kind" enum:"deposit,transfer,withdrawal,stake,winnings,stake refund,donation,donation refund,bet,bet winnings,bet refund,tip sent,tip received,market payout,referral claim,payment,tournament entry,tournament refund,tournament prize" doc:"what moved the money"`
	AmountMinor  int64     `bun:"amount_minor" json:"amountMinor" doc:"positive into the account, negative out of it"`
	Counterparty string    `bun:"counterparty" json:"counterparty"`
	Signature    string    `bun:"signature" json:"signature"`
	Status       string    `bun:"status" json:"status" enum:"confirmed,failed" doc:"confirmed, or failed (a withdrawal the network refused or that expired: the amount is back on the balance)"`
	GameID       string    `bun:"game_id,type:uuid,nullzero" json:"gameId,omitempty" doc:"the game the money moved for (a stake, winnings, a refund, a donation); absent otherwise"`
	CreatedAt    time.Time `bun:"created_at" json:"createdAt"`
	// GameType is the type of the game, read with the history so that the
	// page can name it; never written.
	GameType string `bun:"game_type,scanonly" json:"-"`
}

func (s *Service) record(ctx context.Context, idb bun.IDB, a Activity) error {
	return RecordActivity(ctx, idb, a, s.now())
}

// RecordActivity adds a line to a user's wallet history (inside the
// transaction that moves the money).
func RecordActivity(ctx context.Context, idb bun.IDB, a Activity, now time.Time) error {
	if a.Status == "" {
		a.Status = "confirmed"
	}
	a.CreatedAt = now
	if _, err := idb.NewInsert().Model(&a).Exec(ctx); err != nil {
		return fmt.Errorf("record the %s activity of user %s: %w", a.Kind, a.UserID, err)
	}
	return nil
}

// RecordActivityLater is RecordActivity queued with the writes of tx (see
// db.Tx.Later): the line is stored with them, before the commit.
func RecordActivityLater(tx db.Tx, a Activity, now time.Time) error {
	if a.Status == "" {
		a.Status = "confirmed"
	}
	var gameID any // NULL without a game
	if a.GameID != "" {
		gameID = a.GameID
	}
	if err := tx.Later(`INSERT INTO wallet_activity (user_id, kind, amount_minor, counterparty, signature, status, game_id, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, a.UserID, a.Kind, a.AmountMinor, a.Counterparty, a.Signature, a.Status, gameID, now); err != nil {
		return fmt.Errorf("record the %s activity of user %s: %w", a.Kind, a.UserID, err)
	}
	return nil
}

// History returns a user's wallet history, newest first: at most limit
// lines older than the line id before (0 for the newest).
func (s *Service) History(ctx context.Context, userID string, limit int, before int64) ([]Activity, error) {
	out := []Activity{}
	q := s.db.NewSelect().Model(&out).ColumnExpr("a.*").ColumnExpr("g.game_type").
		Join("LEFT JOIN games AS g ON g.id = a.game_id").
		Where("a.user_id = ?", userID).Order("a.id DESC").Limit(int64(limit))
	if before > 0 {
		q = q.Where("a.id < ?", before)
	}
	if err := q.Scan(ctx); err != nil {
		return out, fmt.Errorf("read the wallet history of user %s: %w", userID, err)
	}
	return out, nil
}
