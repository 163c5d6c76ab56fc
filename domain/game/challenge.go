package game

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"wager/db"
	"wager/domain"
	"wager/domain/notify"
	"wager/domain/users"
)

// Challenge is a direct invitation to play.
type Challenge struct {
	bun.BaseModel `bun:"table:challenges"`

	ID         string          `bun:"id,pk,type:uuid" json:"id"`
	FromUser   string          `bun:"from_user,type:uuid" json:"fromUserId"`
	ToUser     string          `bun:"to_user,type:uuid" json:"toUserId"`
	GameType   string          `bun:"game_type" json:"gameType" enum:"connect4,rps"`
	StakeMinor int64           `bun:"stake_minor" json:"stakeMinor"`
	Settings   json.RawMessage `bun:"settings,type:jsonb" json:"settings" schema:"GameSettings"`
	Status     string          `bun:"status" json:"status" enum:"pending,accepted,declined,expired,cancelled" doc:"pending, accepted, declined, expired or cancelled"`
	GameID     *string         `bun:"game_id,type:uuid" json:"gameId"`
	CreatedAt  time.Time       `bun:"created_at" json:"createdAt"`
	ExpiresAt  time.Time       `bun:"expires_at" json:"expiresAt"`
}

// MaxPendingChallenges is how many pending challenges one user may have
// sent at once: each notifies its recipient.
const MaxPendingChallenges = 10

// CreateChallenge invites another user to a game. Errors: VALIDATION_ERROR
// (bad type, stake or settings; challenging oneself), NOT_FOUND (no such
// user), FORBIDDEN (one of the two blocked the other), CONFLICT
// (MaxPendingChallenges pending already), INSUFFICIENT_FUNDS (the
// challenger cannot cover the stake), player protection's refusals of the
// challenger's stake (see Protection).
func (s *Service) CreateChallenge(ctx context.Context, from, to, gameType string, stake int64, settings json.RawMessage) (Challenge, error) {
	r, err := rulesOf(gameType)
	if err != nil {
		return Challenge{}, err
	}
	if err := checkStake(stake); err != nil {
		return Challenge{}, err
	}
	norm, err := r.ParseSettings(settings)
	if err != nil {
		return Challenge{}, err
	}
	to, ok := domain.CanonicalID(to)
	if !ok {
		return Challenge{}, domain.Errorf(domain.CodeNotFound, "no such user")
	}
	if from == to {
		return Challenge{}, domain.Invalid(map[string]string{"toUserId": "you cannot challenge yourself"})
	}
	now := s.now()
	c := Challenge{ID: uuid.NewString(), FromUser: from, ToUser: to, GameType: gameType, StakeMinor: stake,
		Settings: norm, Status: "pending", CreatedAt: now, ExpiresAt: now.Add(ChallengeLifetime)}
	err = db.Transact(ctx, s.db, func(ctx context.Context, tx db.Tx) error {
		// One sender's challenges are created one at a time, so that
		// concurrent ones cannot pass the count together.
		if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock(hashtext('challenges'), hashtext(?))", from); err != nil {
			return err
		}
		pending, err := tx.NewSelect().Model((*Challenge)(nil)).
			Where("from_user = ? AND status = 'pending' AND expires_at > ?", from, now).Count(ctx)
		if err != nil {
			return err
		}
		if pending >= MaxPendingChallenges {
			return domain.Errorf(domain.CodeConflict,
				"you have %d pending challenges, the most you may have at once; cancel one or wait until one is answered or expires",
				MaxPendingChallenges)
		}
		if ok, err := tx.NewSelect().Table("users").Where("id = ?", to).Exists(ctx); err != nil {
			return err
		} else if !ok {
			return domain.Errorf(domain.CodeNotFound, "no such user")
		}
		if blocked, err := users.EitherBlocked(ctx, tx, from, to); err != nil {
			return err
		} else if blocked {
			return domain.Errorf(domain.CodeForbidden, "you cannot challenge this user: one of you has blocked the other")
		}
		if err := s.checkStake(ctx, tx, from, stake); err != nil {
			return err
		}
		if available, ok, err := covers(ctx, tx, from, stake); err != nil {
			return err
		} else if !ok {
			return stakeNotCovered(stake, available)
		}
		if _, err := tx.NewInsert().Model(&c).Exec(ctx); err != nil {
			return err
		}
		var from string
		if err := tx.NewSelect().Table("users").Column("username").Where("id = ?", c.FromUser).Scan(ctx, &from); err != nil {
			return err
		}
		if err := s.notify.Send(ctx, tx, to, notify.Challenge, ChallengeNotice{ChallengeID: c.ID, FromUserID: c.FromUser,
			FromUsername: from, GameType: c.GameType, StakeMinor: c.StakeMinor, ExpiresAt: c.ExpiresAt}); err != nil {
			return err
		}
		return s.events.Tell(tx, to, domain.NoticeChallengeReceived, c)
	})
	if err != nil {
		return c, fmt.Errorf("challenge %s to %s: %w", from, to, err)
	}
	return c, nil
}

// Challenges lists the user's pending challenges, sent and received.
func (s *Service) Challenges(ctx context.Context, userID string) ([]Challenge, error) {
	out := []Challenge{}
	err := s.db.NewSelect().Model(&out).Where("(from_user = ? OR to_user = ?) AND status = 'pending' AND expires_at > ?",
		userID, userID, s.now()).Order("created_at DESC").Limit(100).Scan(ctx)
	if err != nil {
		return nil, fmt.Errorf("list the challenges of %s: %w", userID, err)
	}
	return out, nil
}

// RespondChallenge accepts (starting the game), declines (the invited
// user) or cancels (the challenger) a pending challenge. Errors: NOT_FOUND,
// FORBIDDEN (not yours to answer), CONFLICT (no longer pending, expired,
// a player is busy, or player protection refuses the challenger the
// stake), INSUFFICIENT_FUNDS, player protection's refusals of the
// accepting player's stake.
func (s *Service) RespondChallenge(ctx context.Context, userID, challengeID, answer string) (Challenge, error) {
	var c Challenge
	expired := false
	err := db.Transact(ctx, s.db, func(ctx context.Context, tx db.Tx) error {
		c, expired = Challenge{}, false
		id, ok := domain.CanonicalID(challengeID)
		if !ok {
			return domain.Errorf(domain.CodeNotFound, "no such challenge")
		}
		err := tx.NewSelect().Model(&c).Where("id = ?", id).For("UPDATE").Scan(ctx)
		if errors.Is(err, sql.ErrNoRows) || (err == nil && c.FromUser != userID && c.ToUser != userID) {
			return domain.Errorf(domain.CodeNotFound, "no such challenge")
		}
		if err != nil {
			return err
		}
		if c.Status == "pending" && !s.now().Before(c.ExpiresAt) {
			c.Status = "expired"
			expired = true // record the expiry, then answer CONFLICT
			if _, err := tx.NewUpdate().Model(&c).Column("status").WherePK().Exec(ctx); err != nil {
				return err
			}
			return s.tellExpired(tx, c)
		}
		if c.Status != "pending" {
			return domain.Errorf(domain.CodeConflict, "the challenge is %s", c.Status)
		}
		var notice domain.NoticeKind // to the other user
		switch {
		case answer == "cancel" && userID == c.FromUser:
			c.Status, notice = "cancelled", domain.NoticeChallengeCancelled
		case answer == "decline" && userID == c.ToUser:
			c.Status, notice = "declined", domain.NoticeChallengeDeclined
		case answer == "accept" && userID == c.ToUser:
			for _, p := range []string{c.FromUser, c.ToUser} {
				if err := s.checkFree(ctx, tx, p, nil); err != nil {
					return err
				}
			}
			refused, err := s.stakeRefusals(ctx, tx, userID, []presence{{UserID: c.FromUser}}, c.StakeMinor)
			if err != nil {
				return err
			}
			if e := refused[userID]; e != nil {
				return e
			}
			if refused[c.FromUser] != nil {
				return otherRefused("challenger")
			}
			// The one accepting learns how much they are short; startGame
			// refuses a challenger who no longer covers the stake without
			// telling their balance.
			if available, ok, err := covers(ctx, tx, userID, c.StakeMinor); err != nil {
				return err
			} else if !ok {
				return stakeNotCovered(c.StakeMinor, available)
			}
			g, err := s.startGame(ctx, tx, newGame{gameType: c.GameType, stake: c.StakeMinor, settings: c.Settings,
				players: []string{c.FromUser, c.ToUser}})
			if err != nil {
				return err
			}
			c.Status, c.GameID, notice = "accepted", &g.ID, domain.NoticeChallengeAccepted
		default:
			return domain.Errorf(domain.CodeForbidden, "only the invited user can accept or decline, and only the challenger can cancel")
		}
		if _, err := tx.NewUpdate().Model(&c).Column("status", "game_id").WherePK().Exec(ctx); err != nil {
			return err
		}
		other := c.FromUser
		if userID == c.FromUser {
			other = c.ToUser
		}
		return s.events.Tell(tx, other, notice, c)
	})
	if err != nil {
		return c, fmt.Errorf("%s challenge %s: %w", answer, challengeID, err)
	}
	if expired {
		return c, domain.Errorf(domain.CodeConflict, "the challenge expired at %s", c.ExpiresAt.Format(time.RFC3339))
	}
	return c, nil
}

// expireBatch bounds the challenges one statement of the deadline worker
// expires.
const expireBatch = 100

// expireChallenges marks the pending challenges whose time passed by now
// as expired and tells both users of each (challenge:expired), a batch at
// a time: the rows it takes are locked, skipped by another instance's
// worker, so each is told once.
func (s *Service) expireChallenges(ctx context.Context, now time.Time) error {
	for {
		var cs []Challenge
		err := db.Transact(ctx, s.db, func(ctx context.Context, tx db.Tx) error {
			cs = nil
			err := tx.NewRaw(`UPDATE challenges SET status = 'expired' WHERE id IN (SELECT id FROM challenges
				WHERE status = 'pending' AND expires_at <= ? ORDER BY expires_at LIMIT ? FOR UPDATE SKIP LOCKED) RETURNING *`,
				now, expireBatch).Scan(ctx, &cs)
			if err != nil {
				return err
			}
			for _, c := range cs {
				if err := s.tellExpired(tx, c); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("expire the challenges nobody answered: %w", err)
		}
		if len(cs) < expireBatch {
			return nil
		}
	}
}

// tellExpired tells both users of an expired challenge, once tx commits.
func (s *Service) tellExpired(tx db.Tx, c Challenge) error {
	for _, u := range []string{c.FromUser, c.ToUser} {
		if err := s.events.Tell(tx, u, domain.NoticeChallengeExpired, c); err != nil {
			return err
		}
	}
	return nil
}

// ChallengeLifetime is how long a challenge can be accepted.
const ChallengeLifetime = 5 * time.Minute
