package social

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"wager/db"
	"wager/domain/notify"
)

// Achievement is the definition of something a user can earn once.
type Achievement struct {
	ID          string `json:"id" doc:"a stable slug"`
	Name        string `json:"name"`
	Description string `json:"description"`
	Category    string `json:"category" enum:"games,money,social,markets" doc:"games, money, social, markets"`
}

// Achievement ids.
const (
	FirstGame     = "first-game"
	FirstWin      = "first-win"
	WinStreak3    = "win-streak-3"
	Flawless      = "flawless"
	HighRoller    = "high-roller"
	FirstDonation = "first-donation"
	Patron        = "patron"
	FirstTip      = "first-tip"
	SocialButter  = "social"
	Recruiter     = "recruiter"
	FirstBet      = "first-bet"
	Trader        = "trader"
)

// Thresholds of the achievements that count money or friends.
const (
	HighRollerStakeMinor = 10_000_000 // a win staked at 10 USDC or more
	PatronMinor          = 10_000_000 // donations totalling 10 USDC or more
	SocialFriends        = 5
)

// Achievements are every definition, in the order pages show them.
var Achievements = []Achievement{
	{FirstGame, "First game", "Finish a game.", "games"},
	{FirstWin, "First win", "Win a game.", "games"},
	{WinStreak3, "Hat trick", "Win three games in a row.", "games"},
	{Flawless, "Flawless", "Win a best-of-3 or longer without losing a round.", "games"},
	{HighRoller, "High roller", "Win a game staked at 10 USDC or more.", "money"},
	{FirstDonation, "First donation", "Donate to a game's pot.", "money"},
	{Patron, "Patron", "Donate 10 USDC or more in all.", "money"},
	{FirstTip, "First tip", "Tip another player.", "money"},
	{SocialButter, "Social", "Have 5 friends.", "social"},
	{Recruiter, "Recruiter", "Someone you referred finishes a staked game.", "social"},
	{FirstBet, "First bet", "Place a bet on a live game.", "markets"},
	{Trader, "Trader", "Trade in a game's prediction market.", "markets"},
}

var achievementByID = func() map[string]Achievement {
	m := map[string]Achievement{}
	for _, a := range Achievements {
		m[a.ID] = a
	}
	return m
}()

// Unlocked is an achievement a user has.
type Unlocked struct {
	AchievementID string    `bun:"achievement_id" json:"achievementId"`
	Name          string    `bun:"-" json:"name"`
	UnlockedAt    time.Time `bun:"unlocked_at" json:"unlockedAt"`
}

// AchievementNotice is the data of an achievement notification and of its
// activity entry.
type AchievementNotice struct {
	AchievementID string `json:"achievementId"`
	Name          string `json:"name"`
	Description   string `json:"description"`
}

// Unlock gives userID the achievement id in the caller's transaction
// (ctx one of db.Transact's): once ever, with a notification and an
// activity entry the first time. It reports whether this call unlocked it.
func (s *Service) Unlock(ctx context.Context, tx db.Tx, userID, id string) (bool, error) {
	n, err := s.unlock(ctx, tx, []string{userID}, []string{id})
	return n == 1, err
}

// UnlockEach is Unlock of one achievement for several users (the two
// sides of a trade) in one statement.
func (s *Service) UnlockEach(ctx context.Context, tx db.Tx, userIDs []string, id string) error {
	ids := make([]string, len(userIDs))
	for i := range ids {
		ids[i] = id
	}
	_, err := s.unlock(ctx, tx, userIDs, ids)
	return err
}

// unlock gives users[i] the achievement ids[i], each once ever, in one
// statement (a game's end earns both players a few at once, mostly ones
// they already have), and returns how many were new.
func (s *Service) unlock(ctx context.Context, tx db.Tx, users, ids []string) (int, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	for _, id := range ids {
		if _, ok := achievementByID[id]; !ok {
			return 0, fmt.Errorf("unlock %s: no such achievement", id)
		}
	}
	var unlocked []struct {
		UserID string `bun:"user_id"`
		ID     string `bun:"achievement_id"`
	}
	err := db.ScanPrepared(ctx, tx, &unlocked, `INSERT INTO user_achievements (user_id, achievement_id, unlocked_at)
		SELECT u, id, $1 FROM unnest($2::uuid[], $3::text[]) AS x(u, id) ON CONFLICT DO NOTHING RETURNING user_id, achievement_id`,
		s.now(), users, ids)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("unlock %v for %v: %w", ids, users, err)
	}
	// Their notifications in one statement, and their feed entries in
	// another, however many were unlocked.
	msgs := make([]notify.Message, len(unlocked))
	entries := make([]actorData, len(unlocked))
	for i, u := range unlocked {
		a := achievementByID[u.ID]
		data := AchievementNotice{AchievementID: a.ID, Name: a.Name, Description: a.Description}
		msgs[i] = notify.Message{UserID: u.UserID, Type: notify.Achievement, Data: data}
		entries[i] = actorData{u.UserID, data}
	}
	if err := s.notify.SendMany(ctx, tx, msgs); err != nil {
		return 0, err
	}
	if err := s.addActivities(ctx, tx, ActivityAchievement, entries); err != nil {
		return 0, err
	}
	return len(unlocked), nil
}

// AchievementsOf returns the achievements a user has, earliest first.
// NOT_FOUND when there is no such user.
func (s *Service) AchievementsOf(ctx context.Context, userID string) ([]Unlocked, error) {
	userID, err := s.existing(ctx, userID)
	if err != nil {
		return nil, err
	}
	out := []Unlocked{}
	if err := s.db.NewSelect().Table("user_achievements").Column("achievement_id", "unlocked_at").
		Where("user_id = ?", userID).Order("unlocked_at", "achievement_id").Scan(ctx, &out); err != nil {
		return nil, fmt.Errorf("read the achievements of %s: %w", userID, err)
	}
	for i := range out {
		out[i].Name = achievementByID[out[i].AchievementID].Name
	}
	return out, nil
}
