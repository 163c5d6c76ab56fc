package social

import (
	"context"

	"wager/db"
)

// ActivityTournamentWon is the feed entry of a tournament's winner.
const ActivityTournamentWon = "tournament_won"

// TournamentWon is the data of a tournament_won entry.
type TournamentWon struct {
	TournamentID string `json:"tournamentId"`
	Name         string `json:"name" doc:"the tournament's name, as typed"`
	GameType     string `json:"gameType"`
	Players      int    `json:"players"`
	Score        int    `json:"score"`
	PrizeMinor   int64  `json:"prizeMinor" doc:"0 for a free tournament"`
}

// TournamentWon records the winner (one of them, when several share the
// first place) of a finished tournament in the feed, in the transaction
// that pays its prizes.
func (s *Service) TournamentWon(ctx context.Context, tx db.Tx, winnerID string, data TournamentWon) error {
	return s.addActivity(ctx, tx, ActivityTournamentWon, winnerID, data)
}
