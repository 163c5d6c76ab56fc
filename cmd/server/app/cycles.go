package app

import (
	"context"

	"wager/db"
	"wager/domain/game"
	"wager/domain/money"
	"wager/domain/settlement"
	"wager/domain/tips"
	"wager/domain/x402"
)

// gameSettlement pays out every finished game through the integrity
// reviews (game.Participant): the pot, the market, or a hold of both.
type gameSettlement struct{ a *App }

// ReadEnd implements game.Participant.
func (s gameSettlement) ReadEnd(ctx context.Context, e *game.Ending) (game.EndWrite, error) {
	return s.a.Referee.ReadEnd(ctx, e)
}

// tournamentResults tells the app's tournaments of every finished game
// (game.Participant): the tournaments' service is built after the games'
// one, which it starts games with.
type tournamentResults struct{ a *App }

// ReadEnd implements game.Participant.
func (r tournamentResults) ReadEnd(ctx context.Context, e *game.Ending) (game.EndWrite, error) {
	return r.a.Tournaments.ReadEnd(ctx, e)
}

// confirmers confirms the intent kinds that the services built after
// money prepare (money adds deposits and transfers, its own).
func (a *App) confirmers() money.Confirmers {
	return money.Confirmers{
		settlement.KindDonation: func(ctx context.Context, tx db.Tx, in money.Intent) error {
			return a.Settlement.ConfirmDonation(ctx, tx, in)
		},
		settlement.KindBet: func(ctx context.Context, tx db.Tx, in money.Intent) error {
			return a.Settlement.ConfirmBet(ctx, tx, in)
		},
		tips.KindTip: func(ctx context.Context, tx db.Tx, in money.Intent) error {
			return a.Tips.Confirm(ctx, tx, in)
		},
		x402.KindPayment: func(ctx context.Context, tx db.Tx, in money.Intent) error {
			return a.X402.ConfirmPayment(ctx, tx, in)
		},
	}
}
