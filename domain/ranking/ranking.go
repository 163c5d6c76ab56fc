// Package ranking keeps players' results and Glicko-2 ratings and reads
// the leaderboards: global (by net winnings, over a calendar period),
// per game type (by rating) and among friends.
//
// Everything is written by Rate, which the game service calls in
// the transaction that finishes a game, so results, ratings and boards
// stand or fall with the game's end and its payout. The rating maths is
// the pure domain/rating package; this package only stores it.
package ranking

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/uptrace/bun"

	"wager/db"
	"wager/domain"
	"wager/domain/game"
	"wager/domain/rating"
)

// Service records results and ratings and reads the leaderboards.
type Service struct {
	db  *bun.DB
	now domain.Clock
}

// New returns the ranking service; now decides which day, week and month
// the period boards show.
func New(bdb *bun.DB, now domain.Clock) *Service {
	return &Service{db: bdb, now: now}
}

// Outcomes of a player_results row.
const (
	Win  = "win"
	Loss = "loss"
	Draw = "draw"
)

// result is one player's side of a completed game.
type result struct {
	UserID  string
	Outcome string
	Score   float64 // 1, 0.5 or 0 for the rating update
	Net     int64
}

// resultsOf splits a completed game into its two players' results: the
// winner's net is the payout less their stake, the loser's minus their
// stake, and after a draw the stakes came back, so both nets are 0.
func resultsOf(g game.Game) [2]result {
	var winner string
	var payout int64
	if g.Result != nil {
		payout = g.Result.PayoutMinor
		if g.Result.WinnerID != nil {
			winner = *g.Result.WinnerID
		}
	}
	var out [2]result
	for i, id := range g.Players {
		switch {
		case winner == "":
			out[i] = result{UserID: id, Outcome: Draw, Score: 0.5}
		case id == winner:
			out[i] = result{UserID: id, Outcome: Win, Score: 1, Net: payout - g.StakeMinor}
		default:
			out[i] = result{UserID: id, Outcome: Loss, Score: 0, Net: -g.StakeMinor}
		}
	}
	return out
}

// Rate records a completed two-player game: both players' results,
// their new ratings in the game type (each from the ratings both had
// before the game) with a history point each, and their leaderboard
// totals; it returns what the game did to the players' ratings.
// Cancelled games are not results, change nothing and return no changes.
// Recording a game a second time changes nothing either (the game service
// rates a game once, as it ends). It takes part in every game's end
// (game.Participant); an error aborts the end.
//
// It reads with the game's end (its ratings created if new, locked and
// read: the rows are inserted, and so locked, in user id order, the same
// order every game uses, so that two games finishing at once with a
// player in common, as the demo bots play many, wait for each other
// instead of deadlocking; the no-op update of a conflict is what locks an
// existing row and lets RETURNING read it), and queues one statement that
// writes the results, the new ratings, their history and the totals, all
// of it only if the results were not recorded before.
func (s *Service) ReadEnd(ctx context.Context, e *game.Ending) (game.EndWrite, error) {
	tx, g, reads := e.Tx, e.Game, e.Reads
	if g.Status != game.StatusCompleted || len(g.Players) != 2 || g.EndedAt == nil {
		return nil, nil
	}
	at := g.EndedAt.UTC()
	ids := []string{g.Players[0], g.Players[1]}
	sort.Strings(ids)
	d := rating.Default()
	var rows []storedRating
	reads.With("ranking_ratings", `INSERT INTO ratings AS r (user_id, game_type, rating, deviation, volatility, updated_at)
		VALUES (?, ?, ?, ?, ?, ?), (?, ?, ?, ?, ?, ?)
		ON CONFLICT (user_id, game_type) DO UPDATE SET games = r.games
		RETURNING user_id, rating, deviation, volatility`,
		ids[0], g.GameType, d.Rating, d.Deviation, d.Volatility, at,
		ids[1], g.GameType, d.Rating, d.Deviation, d.Volatility, at)
	reads.Column(db.JSON(&rows), "SELECT json_agg(r) FROM ranking_ratings AS r")
	return func(ctx context.Context, e *game.Ending) error {
		g := e.Game
		res := resultsOf(g)
		before, err := ratingsOf(rows, res)
		if err != nil {
			return fmt.Errorf("lock the ratings of game %s: %w", g.ID, err)
		}
		var after [2]rating.Rating
		after[0], after[1] = rating.Game(before[0], before[1], res[0].Score, rating.DefaultTau)
		query, args := record(g, res, after, at)
		if err := tx.Later(query, args...); err != nil {
			return fmt.Errorf("record game %s: %w", g.ID, err)
		}
		for i, r := range res {
			e.Ratings = append(e.Ratings, Change{UserID: r.UserID, Before: before[i].Rating, After: after[i].Rating,
				Provisional: after[i].Deviation > rating.ProvisionalDeviation})
		}
		return nil
	}, nil
}

// storedRating is a ratings row as Rate reads it.
type storedRating struct {
	UserID     string  `json:"user_id"`
	Rating     float64 `json:"rating"`
	Deviation  float64 `json:"deviation"`
	Volatility float64 `json:"volatility"`
}

// ratingsOf returns the ratings of res's players, in its order, from the
// rows read.
func ratingsOf(rows []storedRating, res [2]result) ([2]rating.Rating, error) {
	var out [2]rating.Rating
	found := 0
	for i, r := range res {
		for _, row := range rows {
			if row.UserID == r.UserID {
				out[i] = rating.Rating{Rating: row.Rating, Deviation: row.Deviation, Volatility: row.Volatility}
				found++
				break
			}
		}
	}
	if found != 2 {
		return out, fmt.Errorf("found %d of the 2 ratings", found)
	}
	return out, nil
}

// record is the statement that writes a game: both players' results and,
// only when the results are new, their new ratings (after), a history
// point each and their leaderboard totals. The totals' rows go in user id
// order (the lock order of the ratings). The ratings, which Rate's read
// locked, are updated through their key as an upsert's conflict: an
// UPDATE joined to the new values left the planner free to read every
// rating of the game type instead (as it did while the table's
// statistics were of its first rows).
func record(g game.Game, res [2]result, after [2]rating.Rating, at time.Time) (string, []any) {
	args := []any{
		g.ID, res[0].UserID, g.GameType, res[0].Outcome, g.StakeMinor, res[0].Net, at,
		g.ID, res[1].UserID, g.GameType, res[1].Outcome, g.StakeMinor, res[1].Net, at,
		g.GameType, at,
	}
	for i, r := range res {
		win, loss, draw := tally(r.Outcome)
		args = append(args, r.UserID, after[i].Rating, after[i].Deviation, after[i].Volatility, win, loss, draw, r.Net)
	}
	args = append(args, g.ID, g.GameType, at)
	totals, totalArgs := totalsValues(res, at)
	args = append(args, totalArgs...)
	return `WITH results AS (
			INSERT INTO player_results (game_id, user_id, game_type, outcome, stake_minor, net_minor, finished_at)
			VALUES (?, ?, ?, ?, ?, ?, ?), (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING
			RETURNING user_id
		), rated AS (
			INSERT INTO ratings AS r (user_id, game_type, rating, deviation, volatility, games, wins, losses, draws, net_minor, updated_at)
			SELECT v.user_id, ?, v.rating, v.deviation, v.volatility, 1, v.wins, v.losses, v.draws, v.net_minor, ?::timestamptz
			FROM (VALUES
				(?::uuid, ?::double precision, ?::double precision, ?::double precision, ?::integer, ?::integer, ?::integer, ?::bigint),
				(?::uuid, ?::double precision, ?::double precision, ?::double precision, ?::integer, ?::integer, ?::integer, ?::bigint)
			) AS v (user_id, rating, deviation, volatility, wins, losses, draws, net_minor)
			WHERE EXISTS (SELECT FROM results)
			ON CONFLICT (user_id, game_type) DO UPDATE SET rating = excluded.rating, deviation = excluded.deviation,
				volatility = excluded.volatility, games = r.games + 1, wins = r.wins + excluded.wins, losses = r.losses + excluded.losses,
				draws = r.draws + excluded.draws, net_minor = r.net_minor + excluded.net_minor, updated_at = excluded.updated_at
			RETURNING r.user_id, r.rating, r.deviation, r.volatility
		), history AS (
			INSERT INTO rating_history (user_id, game_id, game_type, rating, deviation, volatility, recorded_at)
			SELECT user_id, ?::uuid, ?::text, rating, deviation, volatility, ?::timestamptz FROM rated
		)
		INSERT INTO leaderboard_totals AS t (period, starts, user_id, games, wins, losses, draws, net_minor)
		SELECT v.* FROM (VALUES ` + totals + `) AS v WHERE EXISTS (SELECT FROM results)
		ON CONFLICT (period, starts, user_id) DO UPDATE SET games = t.games + 1, wins = t.wins + excluded.wins,
		losses = t.losses + excluded.losses, draws = t.draws + excluded.draws, net_minor = t.net_minor + excluded.net_minor`,
		args
}

// tally is an outcome as (wins, losses, draws) increments.
func tally(outcome string) (win, loss, draw int) {
	switch outcome {
	case Win:
		return 1, 0, 0
	case Loss:
		return 0, 1, 0
	}
	return 0, 0, 1
}

// totalsValues returns the rows that add each player's result to their
// leaderboard totals of every period that contains at, as a VALUES list
// and its arguments, in user id order (the lock order of the ratings).
func totalsValues(res [2]result, at time.Time) (string, []any) {
	ordered := res
	sort.Slice(ordered[:], func(i, j int) bool { return ordered[i].UserID < ordered[j].UserID })
	values := make([]any, 0, 2*len(Periods)*7)
	placeholders := ""
	for _, r := range ordered {
		win, loss, draw := tally(r.Outcome)
		for _, p := range Periods {
			if placeholders != "" {
				placeholders += ", "
			}
			placeholders += "(?::text, ?::date, ?::uuid, 1, ?::integer, ?::integer, ?::integer, ?::bigint)"
			values = append(values, string(p), p.Start(at).Format(time.DateOnly), r.UserID, win, loss, draw, r.Net)
		}
	}
	return placeholders, values
}

// RebuildTotals recomputes every leaderboard total from player_results in
// one statement: for loading results in bulk and for repairing the boards
// after a result was corrected by hand. It takes the table's lock, so
// games that finish meanwhile wait for it.
func RebuildTotals(ctx context.Context, idb bun.IDB) error {
	_, err := idb.ExecContext(ctx, `
		LOCK TABLE leaderboard_totals IN EXCLUSIVE MODE;
		DELETE FROM leaderboard_totals;
		INSERT INTO leaderboard_totals (period, starts, user_id, games, wins, losses, draws, net_minor)
		SELECT p.period, p.starts, r.user_id, count(*), count(*) FILTER (WHERE r.outcome = 'win'),
			count(*) FILTER (WHERE r.outcome = 'loss'), count(*) FILTER (WHERE r.outcome = 'draw'), sum(r.net_minor)
		FROM player_results AS r
		CROSS JOIN LATERAL (VALUES
			('all', date '1970-01-01'),
			('month', date_trunc('month', r.finished_at AT TIME ZONE 'UTC')::date),
			('week', date_trunc('week', r.finished_at AT TIME ZONE 'UTC')::date),
			('day', (r.finished_at AT TIME ZONE 'UTC')::date)) AS p (period, starts)
		GROUP BY p.period, p.starts, r.user_id`)
	if err != nil {
		return fmt.Errorf("rebuild the leaderboard totals: %w", err)
	}
	return nil
}
