// Package referrals owns referral codes, who referred whom, and the
// rewards referrers earn from the fees of their referred players' staked
// games: held as pending rewards in the ledger until the earner claims
// them onto their available balance.
package referrals

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"wager/db"
	"wager/domain"
	"wager/domain/game"
	"wager/domain/money"
	"wager/domain/notify"
	"wager/domain/social"
)

// Pending is the ledger account of rewards earned and not claimed yet.
const Pending = "referrals:pending"

// Levels is how many referrers up the chain earn from a player's share.
const Levels = 3

// DefaultBPS are the parts (in basis points of a player's share of the
// fee) that their referrers at levels 1, 2 and 3 earn.
var DefaultBPS = [Levels]int64{2000, 500, 200}

// MaxCodeLength bounds a referral code given at sign-in; a longer one
// cannot be anyone's and is ignored like any unknown code.
const MaxCodeLength = 64

// Ledger and wallet history kinds.
const (
	KindReward = "referral_reward"
	KindClaim  = "referral claim"
)

// Service runs referrals.
type Service struct {
	db        *bun.DB
	notify    *notify.Service
	social    *social.Service
	tell      money.Teller
	now       domain.Clock
	bps       [Levels]int64
	publicURL string
}

// New returns a Service paying bps at levels 1-3; publicURL is where
// referral links point.
func New(bdb *bun.DB, n *notify.Service, s *social.Service, tell money.Teller, now domain.Clock, bps [Levels]int64,
	publicURL string) *Service {
	return &Service{db: bdb, notify: n, social: s, tell: tell, now: now, bps: bps, publicURL: strings.TrimSuffix(publicURL, "/")}
}

// Join records, for a user created in tx (their first sign-in), the
// owner of code as their referrer. An empty or unknown code, the user's
// own code, or a user who already has a referrer changes nothing and is
// no error: a sign-in never fails over a referral.
func Join(ctx context.Context, tx db.Tx, userID, code string) error {
	code = NormalizeCode(code)
	if code == "" {
		return nil
	}
	_, err := tx.ExecContext(ctx, `UPDATE referrals AS r SET referred_by = o.user_id
		FROM referrals AS o WHERE o.code = ? AND r.user_id = ? AND r.referred_by IS NULL AND o.user_id <> r.user_id`, code, userID)
	if err != nil {
		return fmt.Errorf("record the referrer of user %s: %w", userID, err)
	}
	return nil
}

// NormalizeCode is code as stored (codes are lower case), or "" when it
// cannot be a code.
func NormalizeCode(code string) string {
	code = strings.ToLower(strings.TrimSpace(code))
	if len(code) > MaxCodeLength {
		return ""
	}
	return code
}

// Shares splits a game's fee between its players in seat order: F/2
// each, the first player taking the odd minor unit.
func Shares(fee int64) [2]int64 {
	return [2]int64{fee - fee/2, fee / 2}
}

// RewardOf is what a referrer earns from a share at bps basis points,
// rounded down.
func RewardOf(share, bps int64) int64 { return share * bps / 10_000 }

// Reward is one reward earned.
type Reward struct {
	bun.BaseModel `bun:"table:referral_rewards,alias:rw"`

	ID          string     `bun:"id,pk,type:uuid" json:"id"`
	UserID      string     `bun:"user_id,type:uuid" json:"-"`
	FromUserID  string     `bun:"from_user_id,type:uuid" json:"fromUserId" doc:"the player whose share of the fee paid it"`
	Level       int        `bun:"level" json:"level" doc:"1-3: how many steps below you that player is"`
	GameID      string     `bun:"game_id,type:uuid" json:"gameId"`
	AmountMinor int64      `bun:"amount_minor" json:"amountMinor"`
	Status      string     `bun:"status" json:"status" enum:"pending,claimed"`
	CreatedAt   time.Time  `bun:"created_at" json:"createdAt"`
	ClaimedAt   *time.Time `bun:"claimed_at" json:"-"`
	// FromUsername and GameType are read for the page; never written.
	FromUsername string `bun:"from_username,scanonly" json:"-"`
	GameType     string `bun:"game_type,scanonly" json:"-"`
}

// RewardNotice is the data of a referral_reward notification.
type RewardNotice struct {
	RewardID    string `json:"rewardId"`
	FromUserID  string `json:"fromUserId"`
	Level       int    `json:"level"`
	GameID      string `json:"gameId"`
	AmountMinor int64  `json:"amountMinor"`
}

// referrer is one step up a player's chain of referrers.
type referrer struct {
	UserID string `bun:"user_id"`
	Level  int    `bun:"level"`
}

// referrersOf reads a user's referrers, level 1 (who referred them) up to
// Levels.
func referrersOf(ctx context.Context, idb bun.IDB, userID string) ([]referrer, error) {
	var out []referrer
	err := idb.NewRaw(`WITH RECURSIVE up (user_id, level) AS (
			SELECT referred_by, 1 FROM referrals WHERE user_id = ? AND referred_by IS NOT NULL
			UNION ALL
			SELECT r.referred_by, up.level + 1 FROM up JOIN referrals AS r ON r.user_id = up.user_id
			WHERE r.referred_by IS NOT NULL AND up.level < ?)
		SELECT user_id, level FROM up ORDER BY level`, userID, Levels).Scan(ctx, &out)
	if err != nil {
		return nil, fmt.Errorf("read the referrers of user %s: %w", userID, err)
	}
	return out, nil
}

// PayRewards pays the referrers of a won staked game's players their
// rewards out of the fee the settlement in tx just gave the treasury: one
// ledger transaction from the treasury to Pending, a reward row and a
// referral_reward notification each. players are in seat order. It
// returns the total paid; a game whose rewards were paid before pays
// nothing more.
func (s *Service) PayRewards(ctx context.Context, tx db.Tx, gameID string, players []string, fee int64) (int64, error) {
	if fee <= 0 || len(players) != 2 {
		return 0, nil
	}
	shares := Shares(fee)
	var rewards []Reward
	var total int64
	now := s.now()
	for i, p := range players {
		ups, err := referrersOf(ctx, tx, p)
		if err != nil {
			return 0, err
		}
		for _, up := range ups {
			amount := RewardOf(shares[i], s.bps[up.Level-1])
			if amount <= 0 {
				continue
			}
			rewards = append(rewards, Reward{ID: uuid.NewString(), UserID: up.UserID, FromUserID: p, Level: up.Level,
				GameID: gameID, AmountMinor: amount, Status: "pending", CreatedAt: now})
			total += amount
		}
	}
	if total == 0 {
		return 0, nil
	}
	posted, err := money.Post(ctx, tx, s.tell, money.Posting{Kind: KindReward, Reference: "referral:" + gameID,
		Entries: []money.Entry{{Account: money.Treasury, Amount: -total}, {Account: Pending, Amount: total}}})
	if err != nil {
		return 0, fmt.Errorf("pay the referral rewards of game %s: %w", gameID, err)
	}
	if !posted {
		return 0, nil
	}
	if _, err := tx.NewInsert().Model(&rewards).Exec(ctx); err != nil {
		return 0, fmt.Errorf("record the referral rewards of game %s: %w", gameID, err)
	}
	for _, r := range rewards {
		if err := s.notify.Send(ctx, tx, r.UserID, notify.ReferralReward, RewardNotice{RewardID: r.ID, FromUserID: r.FromUserID,
			Level: r.Level, GameID: r.GameID, AmountMinor: r.AmountMinor}); err != nil {
			return 0, err
		}
	}
	return total, nil
}

// ReadEnd takes part in every game's end (game.Participant): it unlocks
// the recruiter achievement of the referrer (level 1) of each player of a
// completed staked game, in the transaction that finishes it; the
// referrers are read with the game's end.
func (s *Service) ReadEnd(ctx context.Context, e *game.Ending) (game.EndWrite, error) {
	g := e.Game
	if g.Status != game.StatusCompleted || g.StakeMinor <= 0 || len(g.Players) == 0 {
		return nil, nil
	}
	var recruiters []string
	e.Reads.Column(db.JSON(&recruiters), "SELECT json_agg(referred_by) FROM referrals WHERE user_id = ANY(?::uuid[]) AND referred_by IS NOT NULL",
		g.Players)
	return func(ctx context.Context, e *game.Ending) error {
		for _, r := range recruiters {
			if _, err := s.social.Unlock(ctx, e.Tx, r, social.Recruiter); err != nil {
				return err
			}
		}
		return nil
	}, nil
}

// UserRef names a user.
type UserRef struct {
	UserID   string `json:"userId"`
	Username string `json:"username"`
}

// LevelCount is how many users are at one level below a user.
type LevelCount struct {
	Level int `json:"level"`
	Users int `json:"users"`
}

// Summary is a user's referral standing: GET /referrals/me.
type Summary struct {
	Code         string       `json:"code"`
	Link         string       `json:"link" doc:"the site's address with ?ref=<code>"`
	ReferredBy   *UserRef     `json:"referredBy" doc:"null when nobody referred you"`
	Levels       []LevelCount `json:"levels" doc:"levels 1 to 3, each with how many users are that many steps below you"`
	PendingMinor int64        `json:"pendingMinor" doc:"rewards earned and not claimed yet"`
	ClaimedMinor int64        `json:"claimedMinor" doc:"rewards claimed so far"`
}

// codeOf returns a user's referral code, giving them one when they have
// none (users created before codes existed get theirs in the migration;
// this covers any created outside FindOrCreate).
func (s *Service) codeOf(ctx context.Context, userID string) (string, error) {
	var code string
	err := s.db.NewSelect().Table("referrals").Column("code").Where("user_id = ?", userID).Scan(ctx, &code)
	if err == nil {
		return code, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("read the referral code of user %s: %w", userID, err)
	}
	err = db.Transact(ctx, s.db, func(ctx context.Context, tx db.Tx) error {
		code, err = EnsureCode(ctx, tx, userID, s.now())
		return err
	})
	return code, err
}

// EnsureCode gives a user a new random referral code in tx unless they
// have one, and returns their code. NOT_FOUND when there is no such user.
func EnsureCode(ctx context.Context, tx db.Tx, userID string, now time.Time) (string, error) {
	for range 10 {
		_, err := tx.ExecContext(ctx, `INSERT INTO referrals (user_id, code, created_at)
			SELECT id, ?, ? FROM users WHERE id = ? ON CONFLICT DO NOTHING`, newCode(), now, userID)
		if err != nil {
			return "", fmt.Errorf("give user %s a referral code: %w", userID, err)
		}
		var code string
		err = tx.NewSelect().Table("referrals").Column("code").Where("user_id = ?", userID).Scan(ctx, &code)
		if err == nil {
			return code, nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return "", fmt.Errorf("read the referral code of user %s: %w", userID, err)
		}
		var exists bool
		if err := tx.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM users WHERE id = ?)", userID).Scan(&exists); err != nil {
			return "", fmt.Errorf("read user %s: %w", userID, err)
		}
		if !exists {
			return "", domain.Errorf(domain.CodeNotFound, "no such user")
		}
		// The random code was taken: try another.
	}
	return "", errors.New("could not generate a unique referral code")
}

// codeAlphabet has no letters that read alike (0/o, 1/l/i).
const codeAlphabet = "23456789abcdefghjkmnpqrstuvwxyz"

// newCode is a random 8-character code: 31^8 (about 8.5e11) of them, so
// a taken one is rare and retried.
func newCode() string {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand never fails on supported systems
	}
	for i := range b {
		b[i] = codeAlphabet[int(b[i])%len(codeAlphabet)]
	}
	return string(b)
}

// Me returns userID's referral standing.
func (s *Service) Me(ctx context.Context, userID string) (Summary, error) {
	code, err := s.codeOf(ctx, userID)
	if err != nil {
		return Summary{}, err
	}
	out := Summary{Code: code, Link: s.publicURL + "/?ref=" + code, Levels: []LevelCount{}}
	var by []UserRef
	if err := s.db.NewRaw(`SELECT u.id AS user_id, u.username FROM referrals AS r JOIN users AS u ON u.id = r.referred_by
		WHERE r.user_id = ?`, userID).Scan(ctx, &by); err != nil {
		return Summary{}, fmt.Errorf("read who referred user %s: %w", userID, err)
	}
	if len(by) == 1 {
		out.ReferredBy = &by[0]
	}
	counts := map[int]int{}
	var rows []LevelCount
	if err := s.db.NewRaw(`WITH RECURSIVE down (user_id, level) AS (`+downCTE+`)
		SELECT level, count(*) AS users FROM down GROUP BY level`, userID, Levels).Scan(ctx, &rows); err != nil {
		return Summary{}, fmt.Errorf("count the referrals of user %s: %w", userID, err)
	}
	for _, r := range rows {
		counts[r.Level] = r.Users
	}
	for l := 1; l <= Levels; l++ {
		out.Levels = append(out.Levels, LevelCount{Level: l, Users: counts[l]})
	}
	if err := s.db.QueryRowContext(ctx, `SELECT
		coalesce(sum(amount_minor) FILTER (WHERE status = 'pending'), 0),
		coalesce(sum(amount_minor) FILTER (WHERE status = 'claimed'), 0)
		FROM referral_rewards WHERE user_id = ?`, userID).Scan(&out.PendingMinor, &out.ClaimedMinor); err != nil {
		return Summary{}, fmt.Errorf("sum the referral rewards of user %s: %w", userID, err)
	}
	return out, nil
}

// downCTE is the body of a recursive "down (user_id, level)": the users
// below ? (a user id), down to ? levels.
const downCTE = `SELECT user_id, 1 FROM referrals WHERE referred_by = ?
	UNION ALL
	SELECT r.user_id, d.level + 1 FROM down AS d JOIN referrals AS r ON r.referred_by = d.user_id WHERE d.level < ?`

// Referred is one user below you in your tree.
type Referred struct {
	UserID      string    `bun:"user_id" json:"userId"`
	Username    string    `bun:"username" json:"username"`
	JoinedAt    time.Time `bun:"joined_at" json:"joinedAt"`
	GamesPlayed int       `bun:"games_played" json:"gamesPlayed" doc:"games they finished, free or staked"`
	EarnedMinor int64     `bun:"earned_minor" json:"earnedMinor" doc:"what their games earned you"`
}

// CheckLevel returns VALIDATION_ERROR unless level is 1 to Levels.
func CheckLevel(level int) error {
	if level < 1 || level > Levels {
		return domain.Invalid(map[string]string{"level": fmt.Sprintf("must be 1 to %d", Levels)})
	}
	return nil
}

// Tree returns the users level steps below userID, newest first, at most
// limit. VALIDATION_ERROR for a level outside 1-3.
func (s *Service) Tree(ctx context.Context, userID string, level, limit int) ([]Referred, error) {
	if err := CheckLevel(level); err != nil {
		return nil, err
	}
	out := []Referred{}
	err := s.db.NewRaw(`WITH RECURSIVE down (user_id, level) AS (`+downCTE+`)
		SELECT u.id AS user_id, u.username, u.created_at AS joined_at,
			(SELECT count(*) FROM player_results AS pr WHERE pr.user_id = u.id) AS games_played,
			(SELECT coalesce(sum(amount_minor), 0) FROM referral_rewards AS rw WHERE rw.user_id = ? AND rw.from_user_id = u.id) AS earned_minor
		FROM down AS d JOIN users AS u ON u.id = d.user_id WHERE d.level = ?
		ORDER BY u.created_at DESC, u.id LIMIT ?`, userID, level, userID, level, limit).Scan(ctx, &out)
	if err != nil {
		return nil, fmt.Errorf("read level %d of user %s's referrals: %w", level, userID, err)
	}
	return out, nil
}

// Rewards returns userID's rewards, newest first, at most limit, older
// than the reward before when it is set.
func (s *Service) Rewards(ctx context.Context, userID string, limit int, before string) ([]Reward, error) {
	out := []Reward{}
	q := s.db.NewSelect().Model(&out).ColumnExpr("rw.*").ColumnExpr("u.username AS from_username, g.game_type").
		Join("JOIN users AS u ON u.id = rw.from_user_id").Join("JOIN games AS g ON g.id = rw.game_id").
		Where("rw.user_id = ?", userID)
	if before != "" {
		id, ok := domain.CanonicalID(before)
		if !ok {
			return nil, domain.Invalid(map[string]string{"before": "must be the id of a reward from a previous page"})
		}
		q = q.Where("(rw.created_at, rw.id) < (SELECT created_at, id FROM referral_rewards WHERE id = ? AND user_id = ?)", id, userID)
	}
	if err := q.Order("rw.created_at DESC", "rw.id DESC").Limit(int64(limit)).Scan(ctx); err != nil {
		return nil, fmt.Errorf("list the referral rewards of user %s: %w", userID, err)
	}
	return out, nil
}

// Claimed is the answer of a claim.
type Claimed struct {
	ClaimedMinor int64 `json:"claimedMinor" doc:"moved to your available balance; 0 when nothing was pending"`
}

// Claim moves all of userID's pending rewards to their available balance
// in one ledger transaction. Claims at the same time pay once: each
// reward row is switched to claimed under its row lock, and a concurrent
// claim that waited for the lock finds it claimed and takes nothing.
func (s *Service) Claim(ctx context.Context, userID string) (Claimed, error) {
	var out Claimed
	err := db.Transact(ctx, s.db, func(ctx context.Context, tx db.Tx) error {
		out = Claimed{}
		now := s.now()
		var amounts []int64
		if err := tx.NewRaw(`UPDATE referral_rewards SET status = 'claimed', claimed_at = ?
			WHERE user_id = ? AND status = 'pending' RETURNING amount_minor`, now, userID).Scan(ctx, &amounts); err != nil &&
			!errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("claim the referral rewards of user %s: %w", userID, err)
		}
		for _, a := range amounts {
			out.ClaimedMinor += a
		}
		if out.ClaimedMinor == 0 {
			return nil
		}
		// The user's account first, then Pending: the order a settlement
		// locks them in (the winner, the treasury, Pending), so that a claim
		// and a settlement of the same user do not deadlock.
		ref := "referral-claim:" + uuid.NewString()
		if _, err := money.Post(ctx, tx, s.tell, money.Posting{Kind: "referral_claim", Reference: ref,
			Entries: []money.Entry{{Account: money.Available(userID), Amount: out.ClaimedMinor}, {Account: Pending, Amount: -out.ClaimedMinor}}}); err != nil {
			return fmt.Errorf("pay the referral rewards of user %s: %w", userID, err)
		}
		return money.RecordActivity(ctx, tx, money.Activity{UserID: userID, Kind: KindClaim, AmountMinor: out.ClaimedMinor,
			Counterparty: "referral rewards"}, now)
	})
	return out, err
}
