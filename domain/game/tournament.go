package game

import (
	"context"
	"encoding/json"

	"wager/db"
	"wager/domain"
)

// errTournamentRematch refuses a rematch of a tournament's game: the
// tournament pairs its players itself.
var errTournamentRematch = domain.Errorf(domain.CodeConflict,
	"a tournament's game has no rematch: the tournament pairs its players again")

// StartTournamentGame starts a free game of a tournament between two
// players (in seat order) inside tx, the tournament's transaction: an
// ordinary free game with its tournamentId, whose players are told of the
// match. CONFLICT when a player is in a queue or another game (nothing of
// the game is written then, but tx is the caller's to roll back);
// VALIDATION_ERROR for a game type or settings the rules refuse.
func (s *Service) StartTournamentGame(ctx context.Context, tx db.Tx, tournamentID, gameType string, settings json.RawMessage, players []string) (Game, error) {
	return s.startGame(ctx, tx, newGame{tournament: &tournamentID, gameType: gameType, settings: settings, players: players})
}
