package money

import (
	"context"
	"fmt"
	"time"

	"github.com/uptrace/bun"
)

// Activity is one line of a user's wallet history.
type Activity struct {
	bun.BaseModel `bun:"table:wallet_activity"`

	ID           int64     `bun:"id,pk,autoincrement" json:"id"`
	UserID       string    `bun:"user_id,type:uuid" json:"-"`
	Kind         string    `bun:"kind" json:"kind" doc:"deposit, withdrawal, transfer, faucet, ..."`
	AmountMinor  int64     `bun:"amount_minor" json:"amountMinor" doc:"positive into the account, negative out of it"`
	Counterparty string    `bun:"counterparty" json:"counterparty"`
	Signature    string    `bun:"signature" json:"signature"`
	Status       string    `bun:"status" json:"status" doc:"confirmed, pending or failed"`
	CreatedAt    time.Time `bun:"created_at" json:"createdAt"`
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

// History returns a user's wallet history, newest first: at most limit
// lines older than the line id before (0 for the newest).
func (s *Service) History(ctx context.Context, userID string, limit int, before int64) ([]Activity, error) {
	out := []Activity{}
	q := s.db.NewSelect().Model(&out).Where("user_id = ?", userID).Order("id DESC").Limit(int64(limit))
	if before > 0 {
		q = q.Where("id < ?", before)
	}
	if err := q.Scan(ctx); err != nil {
		return out, fmt.Errorf("read the wallet history of user %s: %w", userID, err)
	}
	return out, nil
}
