// Package ranking keeps players' results and Glicko-2 ratings and reads
// the leaderboards: global (by net winnings, over a calendar period),
// per game type (by rating) and among friends.
//
// Everything is written by GameFinished, which the game service calls in
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

	"wager/domain"
	"wager/domain/game"
	"wager/domain/game/rules"
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

// GameFinished records a completed two-player game: both players' results,
// their new ratings in the game type (each from the ratings both had
// before the game) with a history point each, and their leaderboard
// totals. Cancelled games are not results and change nothing. Recording a
// game a second time changes nothing either. It implements game.Recorder;
// an error aborts the game's end.
func (s *Service) GameFinished(ctx context.Context, tx bun.Tx, g game.Game, o rules.Outcome) error {
	if g.Status != game.StatusCompleted || len(g.Players) != 2 || g.EndedAt == nil {
		return nil
	}
	at := g.EndedAt.UTC()
	res := resultsOf(g)
	inserted, err := tx.NewRaw(`INSERT INTO player_results (game_id, user_id, game_type, outcome, stake_minor, net_minor, finished_at)
		VALUES (?, ?, ?, ?, ?, ?, ?), (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
		g.ID, res[0].UserID, g.GameType, res[0].Outcome, g.StakeMinor, res[0].Net, at,
		g.ID, res[1].UserID, g.GameType, res[1].Outcome, g.StakeMinor, res[1].Net, at).Exec(ctx)
	if err != nil {
		return fmt.Errorf("record the results of game %s: %w", g.ID, err)
	}
	if n, _ := inserted.RowsAffected(); n == 0 {
		return nil // recorded before
	}
	if err := rate(ctx, tx, g, res, at); err != nil {
		return fmt.Errorf("rate game %s: %w", g.ID, err)
	}
	if err := addTotals(ctx, tx, res, at); err != nil {
		return fmt.Errorf("add game %s to the leaderboards: %w", g.ID, err)
	}
	return nil
}

// storedRating is a ratings row as rate reads it.
type storedRating struct {
	UserID     string  `bun:"user_id"`
	Rating     float64 `bun:"rating"`
	Deviation  float64 `bun:"deviation"`
	Volatility float64 `bun:"volatility"`
}

// rate updates both players' ratings in the game's type. The two rows are
// created if new and then locked in user id order, the same order every
// game uses, so that two games finishing at once with a player in common
// (a demo bot plays many) wait for each other instead of deadlocking.
func rate(ctx context.Context, tx bun.Tx, g game.Game, res [2]result, at time.Time) error {
	ids := []string{res[0].UserID, res[1].UserID}
	sort.Strings(ids)
	d := rating.Default()
	if _, err := tx.NewRaw(`INSERT INTO ratings (user_id, game_type, rating, deviation, volatility, updated_at)
		VALUES (?, ?, ?, ?, ?, ?), (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
		ids[0], g.GameType, d.Rating, d.Deviation, d.Volatility, at,
		ids[1], g.GameType, d.Rating, d.Deviation, d.Volatility, at).Exec(ctx); err != nil {
		return fmt.Errorf("create ratings: %w", err)
	}
	var rows []storedRating
	if err := tx.NewRaw(`SELECT user_id, rating, deviation, volatility FROM ratings
		WHERE game_type = ? AND user_id IN (?, ?) ORDER BY user_id FOR UPDATE`, g.GameType, ids[0], ids[1]).Scan(ctx, &rows); err != nil {
		return fmt.Errorf("lock ratings: %w", err)
	}
	before := map[string]rating.Rating{}
	for _, r := range rows {
		before[r.UserID] = rating.Rating{Rating: r.Rating, Deviation: r.Deviation, Volatility: r.Volatility}
	}
	if len(before) != 2 {
		return fmt.Errorf("found %d of the 2 ratings", len(before))
	}
	after := [2]rating.Rating{}
	after[0], after[1] = rating.Game(before[res[0].UserID], before[res[1].UserID], res[0].Score, rating.DefaultTau)
	for i, r := range res {
		win, loss, draw := tally(r.Outcome)
		if _, err := tx.NewRaw(`UPDATE ratings SET rating = ?, deviation = ?, volatility = ?, games = games + 1,
			wins = wins + ?, losses = losses + ?, draws = draws + ?, net_minor = net_minor + ?, updated_at = ?
			WHERE user_id = ? AND game_type = ?`,
			after[i].Rating, after[i].Deviation, after[i].Volatility, win, loss, draw, r.Net, at, r.UserID, g.GameType).Exec(ctx); err != nil {
			return fmt.Errorf("store the rating of %s: %w", r.UserID, err)
		}
	}
	if _, err := tx.NewRaw(`INSERT INTO rating_history (user_id, game_id, game_type, rating, deviation, volatility, recorded_at)
		VALUES (?, ?, ?, ?, ?, ?, ?), (?, ?, ?, ?, ?, ?, ?)`,
		res[0].UserID, g.ID, g.GameType, after[0].Rating, after[0].Deviation, after[0].Volatility, at,
		res[1].UserID, g.ID, g.GameType, after[1].Rating, after[1].Deviation, after[1].Volatility, at).Exec(ctx); err != nil {
		return fmt.Errorf("record the rating history: %w", err)
	}
	return nil
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

// addTotals adds each player's result to their leaderboard totals of
// every period that contains at, in one statement whose rows go in user id
// order (the lock order of rate).
func addTotals(ctx context.Context, tx bun.Tx, res [2]result, at time.Time) error {
	ordered := res[:]
	sort.Slice(ordered, func(i, j int) bool { return ordered[i].UserID < ordered[j].UserID })
	values := make([]any, 0, 2*len(Periods)*8)
	placeholders := ""
	for _, r := range ordered {
		win, loss, draw := tally(r.Outcome)
		for _, p := range Periods {
			if placeholders != "" {
				placeholders += ", "
			}
			placeholders += "(?, ?::date, ?, 1, ?, ?, ?, ?)"
			values = append(values, string(p), p.Start(at).Format(time.DateOnly), r.UserID, win, loss, draw, r.Net)
		}
	}
	_, err := tx.NewRaw(`INSERT INTO leaderboard_totals AS t (period, starts, user_id, games, wins, losses, draws, net_minor)
		VALUES `+placeholders+`
		ON CONFLICT (period, starts, user_id) DO UPDATE SET games = t.games + 1, wins = t.wins + excluded.wins,
		losses = t.losses + excluded.losses, draws = t.draws + excluded.draws, net_minor = t.net_minor + excluded.net_minor`,
		values...).Exec(ctx)
	return err
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
