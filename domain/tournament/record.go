package tournament

import (
	"context"
	"fmt"

	"wager/db"
	"wager/domain/game"
	"wager/domain/game/rules"
)

// ReadEnd takes part in every game's end (game.Participant): the result of a tournament's
// game scores for its players (Record.After) in the transaction that
// finishes the game, and they wait for their next pairing. A game nobody
// played (cancelled: neither player moved in time) is a loss for both,
// and pauses them: players who are not there are not paired again until
// they join again. Games of no tournament are none of its business.
//
// It reads with the game's end (the players' records, locked) and queues
// the statement that scores them.
func (s *Service) ReadEnd(ctx context.Context, e *game.Ending) (game.EndWrite, error) {
	g := e.Game
	if g.TournamentID == nil {
		return nil, nil
	}
	var rows []playerRecord
	e.Reads.With("tournament_records", `SELECT user_id, score, games, wins, draws, losses, streak FROM tournament_players
		WHERE tournament_id = ? AND user_id = ANY(?::uuid[]) FOR UPDATE`, *g.TournamentID, g.Players)
	e.Reads.Column(db.JSON(&rows), "SELECT json_agg(r) FROM tournament_records AS r")
	return func(ctx context.Context, e *game.Ending) error {
		return s.score(ctx, e.Tx, e.Game, e.Outcome, rows)
	}, nil
}

// playerRecord is a tournament player's record as ReadEnd reads it.
type playerRecord struct {
	UserID string `json:"user_id"`
	Score  int    `json:"score"`
	Games  int    `json:"games"`
	Wins   int    `json:"wins"`
	Draws  int    `json:"draws"`
	Losses int    `json:"losses"`
	Streak int    `json:"streak"`
}

// score queues the statement that stores the records of a tournament
// game's players after it (rows: their records before it).
func (s *Service) score(ctx context.Context, tx db.Tx, g game.Game, o rules.Outcome, rows []playerRecord) error {
	abandoned := g.Status == game.StatusCancelled
	users := make([]string, len(rows))
	cols := [6][]int{}
	for i, r := range rows {
		out := Loss
		switch {
		case abandoned:
		case o.Winner == r.UserID:
			out = Win
		case o.Winner == "":
			out = Draw
		}
		rec := Record{Score: r.Score, Games: r.Games, Wins: r.Wins, Draws: r.Draws, Losses: r.Losses, Streak: r.Streak}.After(out)
		users[i] = r.UserID
		for k, v := range []int{rec.Score, rec.Games, rec.Wins, rec.Draws, rec.Losses, rec.Streak} {
			cols[k] = append(cols[k], v)
		}
	}
	if len(users) == 0 {
		return nil
	}
	err := tx.Later(`UPDATE tournament_players AS p SET score = v.score, games = v.games, wins = v.wins,
			draws = v.draws, losses = v.losses, streak = v.streak, current_game = NULL,
			paused = p.paused OR ?, waiting_since = CASE WHEN p.paused OR ? THEN NULL ELSE ?::timestamptz END
		FROM unnest(?::uuid[], ?::int[], ?::int[], ?::int[], ?::int[], ?::int[], ?::int[]) AS v (u, score, games, wins, draws, losses, streak)
		WHERE p.tournament_id = ? AND p.user_id = v.u`,
		abandoned, abandoned, s.now(), users, cols[0], cols[1], cols[2], cols[3], cols[4], cols[5], *g.TournamentID)
	if err != nil {
		return fmt.Errorf("score game %s in tournament %s: %w", g.ID, *g.TournamentID, err)
	}
	return nil
}
