package ranking

import (
	"context"
	"fmt"
	"time"

	"wager/domain"
	"wager/domain/game"
	"wager/domain/game/rules"
	"wager/domain/rating"
)

// Period is the stretch of time a global or friends board sums.
type Period string

// Periods, calendar ones in UTC. A board of a calendar period starts
// empty when the period begins, as daily and weekly prize boards do;
// that keeps each of them one index range (see leaderboard_totals).
const (
	All   Period = "all"
	Month Period = "month" // since the 1st of this month, 00:00 UTC
	Week  Period = "week"  // since Monday 00:00 UTC (ISO weeks)
	Day   Period = "day"   // since 00:00 UTC today
)

// Periods are every period, in the order Rate adds to them.
var Periods = []Period{All, Month, Week, Day}

// ParsePeriod reads ?period= into v's checks; empty is All.
func ParsePeriod(v domain.Validator, s string) Period {
	if s == "" {
		return All
	}
	for _, p := range Periods {
		if string(p) == s {
			return p
		}
	}
	v.Check(false, "period", "must be day, week, month or all")
	return ""
}

// epoch is the starts of the All period's rows.
var epoch = time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC)

// Start returns the first day (UTC) of the period that contains t; the
// same day PostgreSQL's date_trunc gives in RebuildTotals.
func (p Period) Start(t time.Time) time.Time {
	t = t.UTC()
	day := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
	switch p {
	case Day:
		return day
	case Week:
		return day.AddDate(0, 0, -((int(t.Weekday()) + 6) % 7))
	case Month:
		return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
	}
	return epoch
}

// Row is one line of a leaderboard.
type Row struct {
	Rank             int     `bun:"-" json:"rank" doc:"1 for the first line of the whole board (offset counts)"`
	UserID           string  `bun:"user_id" json:"userId"`
	Username         string  `bun:"username" json:"username"`
	GamesPlayed      int     `bun:"games" json:"gamesPlayed" doc:"completed games in the board's period (or game type)"`
	Wins             int     `bun:"wins" json:"wins"`
	Losses           int     `bun:"losses" json:"losses"`
	Draws            int     `bun:"draws" json:"draws"`
	NetWinningsMinor int64   `bun:"net_minor" json:"netWinningsMinor" doc:"payouts received minus stakes paid"`
	Rating           float64 `bun:"rating" json:"rating" doc:"Glicko-2 rating; on global and friends boards the one of ratingGameType"`
	RatingDeviation  float64 `bun:"deviation" json:"ratingDeviation"`
	Provisional      bool    `bun:"provisional" json:"provisional" doc:"ratingDeviation is above 110: the rating is not established yet"`
	RatingGameType   *string `bun:"rating_game_type" json:"ratingGameType" doc:"the game type the rating is of: the board's own, or on global and friends boards the type the player has played most (null before their first game: 1500 ± 350)"`
}

// MaxOffset is the deepest a board can be read. A page costs a walk of
// the board's index up to its offset, with a users lookup per row walked
// (to leave bots out): 2,000 rows deep that stays near 10 ms on a board of
// 100,000 players (BenchmarkLeaderboards), 10,000 deep it was 70 ms.
const MaxOffset = 2_000

// Page is which part of a board to read.
type Page struct {
	Limit  int
	Offset int
}

// mainRating joins the rating shown on boards that span game types: the
// one of the type the player has played most (the most recently played
// on a tie), from the handful of ratings rows of the player in column.
func mainRating(column string) string {
	return `LEFT JOIN LATERAL (SELECT r.game_type, r.rating, r.deviation, r.provisional FROM ratings AS r
		WHERE r.user_id = ` + column + ` ORDER BY r.games DESC, r.updated_at DESC, r.game_type LIMIT 1) AS m ON true`
}

// Global returns a page of the board of everyone who completed a game in
// the current period, by net winnings, then wins (then user id, so that
// pages never overlap). Demo bots are left out. The page is cut from the
// index of leaderboard_totals first and only its rows look up their
// ratings, so that a deep page costs a walk of the index, not a rating
// lookup per row skipped.
func (s *Service) Global(ctx context.Context, period Period, page Page) ([]Row, error) {
	out := []Row{}
	err := s.db.NewRaw(`SELECT p.*, m.game_type AS rating_game_type, coalesce(m.rating, ?) AS rating,
			coalesce(m.deviation, ?) AS deviation, coalesce(m.provisional, true) AS provisional
		FROM (SELECT t.user_id, u.username, t.games, t.wins, t.losses, t.draws, t.net_minor
			FROM leaderboard_totals AS t
			JOIN users AS u ON u.id = t.user_id AND NOT u.bot
			WHERE t.period = ? AND t.starts = ?
			ORDER BY t.net_minor DESC, t.wins DESC, t.user_id
			LIMIT ? OFFSET ?) AS p
		`+mainRating("p.user_id")+`
		ORDER BY p.net_minor DESC, p.wins DESC, p.user_id`, rating.DefaultRating, rating.DefaultDeviation,
		string(period), period.Start(s.now()).Format(time.DateOnly), page.Limit, page.Offset).Scan(ctx, &out)
	if err != nil {
		return nil, fmt.Errorf("read the %s leaderboard: %w", period, err)
	}
	return ranked(out, page), nil
}

// Friends returns a page of the board of me and my friends, ranked like
// Global over the period; those without games in it are listed with
// zeros, after everyone who won something. Demo bots are left out.
func (s *Service) Friends(ctx context.Context, me string, period Period, page Page) ([]Row, error) {
	out := []Row{}
	err := s.db.NewRaw(`WITH circle AS (SELECT ?::uuid AS user_id UNION SELECT friend_id FROM friends WHERE user_id = ?)
		SELECT u.id AS user_id, u.username, coalesce(t.games, 0) AS games, coalesce(t.wins, 0) AS wins,
			coalesce(t.losses, 0) AS losses, coalesce(t.draws, 0) AS draws, coalesce(t.net_minor, 0) AS net_minor,
			m.game_type AS rating_game_type, coalesce(m.rating, ?) AS rating, coalesce(m.deviation, ?) AS deviation,
			coalesce(m.provisional, true) AS provisional
		FROM circle AS c
		JOIN users AS u ON u.id = c.user_id AND NOT u.bot
		LEFT JOIN leaderboard_totals AS t ON t.period = ? AND t.starts = ? AND t.user_id = c.user_id
		`+mainRating("u.id")+`
		ORDER BY coalesce(t.net_minor, 0) DESC, coalesce(t.wins, 0) DESC, u.id
		LIMIT ? OFFSET ?`, me, me, rating.DefaultRating, rating.DefaultDeviation, string(period), period.Start(s.now()).Format(time.DateOnly),
		page.Limit, page.Offset).Scan(ctx, &out)
	if err != nil {
		return nil, fmt.Errorf("read the %s leaderboard of %s and friends: %w", period, me, err)
	}
	return ranked(out, page), nil
}

// GameType returns a page of the board of a game type: established
// players by rating, then provisional ones by rating (then user id). The
// totals are the player's in that game type. NOT_FOUND for an unknown
// type; a known type nobody has played is an empty board.
func (s *Service) GameType(ctx context.Context, gameType string, page Page) ([]Row, error) {
	if _, ok := rules.Get(gameType); !ok {
		return nil, domain.Errorf(domain.CodeNotFound, "no game type %q; see GET /games/available", gameType)
	}
	out := []Row{}
	err := s.db.NewRaw(`SELECT r.user_id, u.username, r.games, r.wins, r.losses, r.draws, r.net_minor,
			r.game_type AS rating_game_type, r.rating, r.deviation, r.provisional
		FROM ratings AS r
		JOIN users AS u ON u.id = r.user_id AND NOT u.bot
		WHERE r.game_type = ?
		ORDER BY r.provisional, r.rating DESC, r.user_id
		LIMIT ? OFFSET ?`, gameType, page.Limit, page.Offset).Scan(ctx, &out)
	if err != nil {
		return nil, fmt.Errorf("read the %s leaderboard: %w", gameType, err)
	}
	return ranked(out, page), nil
}

// ranked numbers a page's rows from the page's offset.
func ranked(rows []Row, page Page) []Row {
	for i := range rows {
		rows[i].Rank = page.Offset + i + 1
	}
	return rows
}

// TypeRating is a player's rating in one game type with its history.
type TypeRating struct {
	GameType         string    `bun:"game_type" json:"gameType" enum:"connect4,rps"`
	Rating           float64   `bun:"rating" json:"rating"`
	RatingDeviation  float64   `bun:"deviation" json:"ratingDeviation"`
	Volatility       float64   `bun:"volatility" json:"volatility"`
	Provisional      bool      `bun:"provisional" json:"provisional"`
	GamesPlayed      int       `bun:"games" json:"gamesPlayed"`
	Wins             int       `bun:"wins" json:"wins"`
	Losses           int       `bun:"losses" json:"losses"`
	Draws            int       `bun:"draws" json:"draws"`
	NetWinningsMinor int64     `bun:"net_minor" json:"netWinningsMinor"`
	UpdatedAt        time.Time `bun:"updated_at" json:"updatedAt"`
	History          []Point   `bun:"-" json:"history" doc:"the rating after each of the latest games, oldest first"`
}

// Point is the rating after one game.
type Point struct {
	GameID          string    `bun:"game_id" json:"gameId"`
	Rating          float64   `bun:"rating" json:"rating"`
	RatingDeviation float64   `bun:"deviation" json:"ratingDeviation"`
	At              time.Time `bun:"recorded_at" json:"at"`
}

// Ratings returns a user's rating in every game type they have played
// (most played first), each with the points of their last points games
// for a chart. NOT_FOUND when there is no such user; [] before their
// first game.
func (s *Service) Ratings(ctx context.Context, userID string, points int) ([]TypeRating, error) {
	userID, ok := domain.CanonicalID(userID)
	if !ok {
		return nil, domain.Errorf(domain.CodeNotFound, "no such user")
	}
	if exists, err := s.db.NewSelect().Table("users").Where("id = ?", userID).Exists(ctx); err != nil {
		return nil, fmt.Errorf("read user %s: %w", userID, err)
	} else if !exists {
		return nil, domain.Errorf(domain.CodeNotFound, "no such user")
	}
	out := []TypeRating{}
	if err := s.db.NewRaw(`SELECT game_type, rating, deviation, volatility, provisional, games, wins, losses, draws, net_minor, updated_at
		FROM ratings WHERE user_id = ? ORDER BY games DESC, game_type`, userID).Scan(ctx, &out); err != nil {
		return nil, fmt.Errorf("read the ratings of %s: %w", userID, err)
	}
	for i := range out {
		history := []Point{}
		if err := s.db.NewRaw(`SELECT * FROM (SELECT game_id, rating, deviation, recorded_at FROM rating_history
			WHERE user_id = ? AND game_type = ? ORDER BY recorded_at DESC, game_id DESC LIMIT ?) AS h
			ORDER BY recorded_at, game_id`, userID, out[i].GameType, points).Scan(ctx, &history); err != nil {
			return nil, fmt.Errorf("read the %s rating history of %s: %w", out[i].GameType, userID, err)
		}
		out[i].History = history
	}
	return out, nil
}

// Change is what one game did to a player's rating.
type Change = game.RatingChange

// GameChanges returns the rating changes a finished game made to its
// players: none for a game that was not rated (cancelled, or not over).
// The rating before is the player's previous history point in the game
// type, or the starting rating before their first game.
func (s *Service) GameChanges(ctx context.Context, gameID string) ([]Change, error) {
	var out []Change
	if err := s.db.NewRaw(`SELECT h.user_id, h.rating AS after, h.deviation > ? AS provisional,
			coalesce((SELECT p.rating FROM rating_history AS p
				WHERE p.user_id = h.user_id AND p.game_type = h.game_type AND (p.recorded_at, p.game_id) < (h.recorded_at, h.game_id)
				ORDER BY p.recorded_at DESC, p.game_id DESC LIMIT 1), ?) AS before
		FROM rating_history AS h WHERE h.game_id = ?`,
		rating.ProvisionalDeviation, rating.Default().Rating, gameID).Scan(ctx, &out); err != nil {
		return nil, fmt.Errorf("read the rating changes of game %s: %w", gameID, err)
	}
	return out, nil
}
