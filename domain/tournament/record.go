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
	e.Reads.With("tournament_records", `SELECT `+recordColumns+` FROM tournament_players
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
	// Berserks and TimeLosses are Record's.
	Berserks   int `json:"berserks"`
	TimeLosses int `json:"time_losses"`
}

// recordColumns are a player's record's columns (playerRecord's).
const recordColumns = "user_id, score, games, wins, draws, losses, streak, berserks, time_losses"

func (p playerRecord) record() Record {
	return Record{Score: p.Score, Games: p.Games, Wins: p.Wins, Draws: p.Draws, Losses: p.Losses, Streak: p.Streak,
		Berserks: p.Berserks, TimeLosses: p.TimeLosses}
}

// Pause reasons, in words for people.
const (
	PausedByPlayer   = "paused by the player"
	PausedTimeLosses = "lost two games in a row on time"
	PausedAbsent     = "did not play a game: neither player moved"
)

// score queues the statement that stores the records of a tournament
// game's players after it (rows: their records before it). A game nobody
// played pauses both; PauseAfterTimeLosses games in a row lost on time
// pause the player.
func (s *Service) score(ctx context.Context, tx db.Tx, g game.Game, o rules.Outcome, rows []playerRecord) error {
	if len(rows) == 0 {
		return nil
	}
	abandoned := g.Status == game.StatusCancelled
	r, ok := rules.Get(g.GameType)
	if !ok {
		return fmt.Errorf("score game %s: unknown game type %q", g.ID, g.GameType)
	}
	st, err := r.Load(g.State)
	if err != nil {
		return fmt.Errorf("score game %s: %w", g.ID, err)
	}
	users := make([]string, len(rows))
	cols := [8][]int{}
	reasons := make([]*string, len(rows))
	for i, p := range rows {
		if abandoned {
			reasons[i] = ptr(PausedAbsent)
		}
		rec := p.record().After(resultOf(g.GameType, abandoned, o, st, p.UserID))
		if rec.TimeLosses >= PauseAfterTimeLosses {
			reasons[i] = ptr(PausedTimeLosses)
		}
		users[i] = p.UserID
		for k, v := range []int{rec.Score, rec.Games, rec.Wins, rec.Draws, rec.Losses, rec.Streak, rec.Berserks, rec.TimeLosses} {
			cols[k] = append(cols[k], v)
		}
	}
	err = tx.Later(`UPDATE tournament_players AS p SET score = v.score, games = v.games, wins = v.wins,
			draws = v.draws, losses = v.losses, streak = v.streak, berserks = v.berserks, time_losses = v.time_losses, current_game = NULL,
			paused = p.paused OR v.reason IS NOT NULL, paused_reason = CASE WHEN p.paused THEN p.paused_reason ELSE v.reason END,
			waiting_since = CASE WHEN p.paused OR v.reason IS NOT NULL THEN NULL ELSE ?::timestamptz END
		FROM unnest(?::uuid[], ?::int[], ?::int[], ?::int[], ?::int[], ?::int[], ?::int[], ?::int[], ?::int[], ?::text[])
			AS v (u, score, games, wins, draws, losses, streak, berserks, time_losses, reason)
		WHERE p.tournament_id = ? AND p.user_id = v.u`,
		s.now(), users, cols[0], cols[1], cols[2], cols[3], cols[4], cols[5], cols[6], cols[7], reasons, *g.TournamentID)
	if err != nil {
		return fmt.Errorf("score game %s in tournament %s: %w", g.ID, *g.TournamentID, err)
	}
	return nil
}

func ptr[T any](v T) *T { return &v }
