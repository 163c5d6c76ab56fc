package protection

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"wager/db"
	"wager/domain"
)

// Exclusion kinds.
const (
	KindTimeout       = "timeout"
	KindSelfExclusion = "self-exclusion"
)

// Time-out lengths in hours, and self-exclusion lengths in months.
const (
	MinTimeoutHours = 24
	MaxTimeoutHours = 1008 // six weeks
)

// ExclusionMonths are the self-exclusions that end: 6 months, 1 year, 5
// years.
var ExclusionMonths = []int{6, 12, 60}

// ExclusionRequest asks for a time-out or a self-exclusion.
type ExclusionRequest struct {
	Kind      string `json:"kind" enum:"timeout,self-exclusion"`
	Hours     *int   `json:"hours,omitempty" minimum:"24" maximum:"1008" doc:"a time-out's length: 24 hours to 6 weeks"`
	Months    *int   `json:"months,omitempty" minimum:"6" maximum:"60" doc:"a self-exclusion's length: 6, 12 or 60 months"`
	Permanent *bool  `json:"permanent,omitempty" doc:"true: a self-exclusion that never ends"`
}

// until returns when the asked exclusion ends from now (nil: never), or
// VALIDATION_ERROR naming what is wrong.
func (r ExclusionRequest) until(now time.Time) (*time.Time, error) {
	v := domain.Validator{}
	switch r.Kind {
	case KindTimeout:
		v.Check(r.Hours != nil, "hours", "a time-out needs hours, from 24 to 1008")
		v.Check(r.Hours == nil || (*r.Hours >= MinTimeoutHours && *r.Hours <= MaxTimeoutHours), "hours", "must be from 24 to 1008 (6 weeks)")
		v.Check(r.Months == nil, "months", "is for a self-exclusion; a time-out takes hours")
		v.Check(r.Permanent == nil, "permanent", "is for a self-exclusion; a time-out takes hours")
		if err := v.Err(); err != nil {
			return nil, err
		}
		t := now.Add(time.Duration(*r.Hours) * time.Hour)
		return &t, nil
	case KindSelfExclusion:
		v.Check(r.Hours == nil, "hours", "is for a time-out; a self-exclusion takes months (6, 12 or 60) or permanent")
		permanent := r.Permanent != nil && *r.Permanent
		v.Check(r.Permanent == nil || *r.Permanent, "permanent", "must be true, or left out for months")
		v.Check((r.Months != nil) != permanent, "months", "give either months (6, 12 or 60) or permanent: true")
		if r.Months != nil {
			ok := false
			for _, m := range ExclusionMonths {
				ok = ok || *r.Months == m
			}
			v.Check(ok, "months", "must be 6, 12 or 60")
		}
		if err := v.Err(); err != nil {
			return nil, err
		}
		if permanent {
			return nil, nil
		}
		t := now.AddDate(0, *r.Months, 0)
		return &t, nil
	}
	v.Check(false, "kind", "must be timeout or self-exclusion")
	return nil, v.Err()
}

// StartExclusion starts a time-out or self-exclusion at once and, in the
// same transaction, cancels the player's open market buy orders and takes
// them out of the queues of staked lobbies. A longer one replaces the one
// running; one that would end sooner, or at the same time, is CONFLICT:
// nobody can shorten or lift an exclusion. VALIDATION_ERROR for a bad
// request.
func (s *Service) StartExclusion(ctx context.Context, userID string, r ExclusionRequest) (Exclusion, error) {
	if _, err := r.until(s.now()); err != nil {
		return Exclusion{}, err
	}
	var out Exclusion
	err := db.Transact(ctx, s.db, func(ctx context.Context, tx db.Tx) error {
		// What it ends is locked before the player's lock, in the order of
		// every path that puts money in (db/doc.go): the queue entries and
		// the markets' games, not yet the balances.
		if err := s.lockMoneyIn(ctx, tx, userID); err != nil {
			return err
		}
		if err := lockProtection(ctx, tx, userID, s.now()); err != nil {
			return err
		}
		// After the lock: it starts after whatever money of the player's
		// went in before it. As stored, to the microsecond: the answer is
		// what GET and every refusal say.
		now := s.now().Truncate(time.Microsecond)
		until, err := r.until(now)
		if err != nil {
			return err
		}
		running, err := s.running(ctx, tx, userID, now)
		if err != nil {
			return err
		}
		if running != nil && !later(until, running.Until) {
			return refuseShorter(*running)
		}
		if _, err := tx.ExecContext(ctx, "INSERT INTO exclusions (user_id, kind, starts_at, until) VALUES (?, ?, ?, ?)",
			userID, r.Kind, now, until); err != nil {
			return fmt.Errorf("start the exclusion of %s: %w", userID, err)
		}
		out = Exclusion{Kind: r.Kind, StartsAt: now.UTC(), Until: until}
		if until != nil {
			u := until.UTC()
			out.Until = &u
		}
		return s.endMoneyIn(ctx, tx, userID)
	})
	return out, err
}

// lockMoneyIn locks the rows that endMoneyIn ends: the player's entries in
// staked queues, then the games of the markets where they have open buys.
func (s *Service) lockMoneyIn(ctx context.Context, tx db.Tx, userID string) error {
	if s.queues != nil {
		if err := s.queues.LockStakedQueues(ctx, tx, userID); err != nil {
			return err
		}
	}
	if s.buys != nil {
		return s.buys.LockBuyMarkets(ctx, tx, userID)
	}
	return nil
}

// endMoneyIn takes the player out of the queues of staked lobbies, then
// cancels their open market buys: the lock order of the games (presence,
// then game rows, then balances).
func (s *Service) endMoneyIn(ctx context.Context, tx db.Tx, userID string) error {
	if s.queues != nil {
		if err := s.queues.LeaveStakedQueues(ctx, tx, userID); err != nil {
			return err
		}
	}
	if s.buys != nil {
		return s.buys.CancelBuysOf(ctx, tx, userID)
	}
	return nil
}

func refuseShorter(x Exclusion) error {
	if x.Until == nil {
		return domain.Errorf(domain.CodeConflict, "you excluded yourself for good: that cannot be shortened, lifted or replaced")
	}
	return domain.Errorf(domain.CodeConflict,
		"your %s runs until %s: it cannot be shortened, lifted or replaced by a shorter one; only a longer one replaces it",
		words(x.Kind), FormatTime(*x.Until)).With("until", x.Until.UTC())
}

func words(kind string) string {
	if kind == KindTimeout {
		return "time-out"
	}
	return "self-exclusion"
}

// running returns the exclusion that runs at now, the one that ends last
// (nil: none).
func (s *Service) running(ctx context.Context, idb bun.IDB, userID string, now time.Time) (*Exclusion, error) {
	var x Exclusion
	err := idb.QueryRowContext(ctx, `SELECT kind, starts_at, until FROM exclusions
		WHERE user_id = ? AND starts_at <= ? AND (until IS NULL OR until > ?) ORDER BY until DESC NULLS FIRST LIMIT 1`,
		userID, now, now).Scan(&x.Kind, &x.StartsAt, &x.Until)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the running exclusion of %s: %w", userID, err)
	}
	x.StartsAt = x.StartsAt.UTC()
	if x.Until != nil {
		u := x.Until.UTC()
		x.Until = &u
	}
	return &x, nil
}

// Running returns the player's running time-out or self-exclusion, or nil.
func (s *Service) Running(ctx context.Context, userID string) (*Exclusion, error) {
	return s.running(ctx, s.db, userID, s.now())
}

// History returns every exclusion the player asked for, newest first.
func (s *Service) History(ctx context.Context, userID string) ([]Exclusion, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT kind, starts_at, until FROM exclusions WHERE user_id = ? ORDER BY starts_at DESC, id DESC", userID)
	if err != nil {
		return nil, fmt.Errorf("read the exclusions of %s: %w", userID, err)
	}
	defer rows.Close()
	out := []Exclusion{}
	for rows.Next() {
		var x Exclusion
		if err := rows.Scan(&x.Kind, &x.StartsAt, &x.Until); err != nil {
			return nil, err
		}
		x.StartsAt = x.StartsAt.UTC()
		if x.Until != nil {
			u := x.Until.UTC()
			x.Until = &u
		}
		out = append(out, x)
	}
	return out, rows.Err()
}
