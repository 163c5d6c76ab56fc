package gamelog

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"wager/domain"
)

// Record is one game in the log: who played what for how much, every
// event of its public log up to its end (the commitments and reveals
// included), how it ended and every payout to the minor unit. From a
// record alone a verifier replaying the game's rules gets the same
// outcome and the same pot payout.
type Record struct {
	Version      int             `json:"version"`
	Index        int64           `json:"index"`
	GameID       string          `json:"gameId"`
	GameType     string          `json:"gameType"`
	Settings     json.RawMessage `json:"settings"`
	TournamentID *string         `json:"tournamentId"`
	Players      []Player        `json:"players"`
	StakeMinor   int64           `json:"stakeMinor"`
	StartedAt    time.Time       `json:"startedAt"`
	EndedAt      time.Time       `json:"endedAt"`
	Events       []Event         `json:"events"`
	Outcome      Outcome         `json:"outcome"`
	Money        Money           `json:"money"`
}

// Player is a seat of a logged game, in seat order.
type Player struct {
	UserID        string `json:"userId" bun:"user_id"`
	WalletAddress string `json:"walletAddress" bun:"wallet_address"`
}

// Event is an event of a logged game, as GET /games/:id/events gives it.
type Event struct {
	GameID    string           `json:"gameId"`
	Seq       int              `json:"seq"`
	Name      domain.EventName `json:"event"`
	Data      json.RawMessage  `json:"data"`
	CreatedAt time.Time        `json:"createdAt"`
}

// Outcome is how a logged game ended.
type Outcome struct {
	Status       string  `json:"status" enum:"completed,cancelled"`
	WinnerUserID *string `json:"winnerUserId"`
	Reason       string  `json:"reason"`
}

// Money is what a logged game paid.
type Money struct {
	PotMinor       int64    `json:"potMinor"`
	DonationsMinor int64    `json:"donationsMinor"`
	FeeMinor       int64    `json:"feeMinor"`
	Payouts        []Payout `json:"payouts"`
	Integrity      string   `json:"integrity" enum:"none,released,voided"`
}

// Payout is one payment of a logged game's end.
type Payout struct {
	UserID      string `json:"userId" bun:"user_id"`
	AmountMinor int64  `json:"amountMinor" bun:"amount_minor"`
	Kind        string `json:"kind" bun:"kind" enum:"pot,refund,bet,market"`
}

// Kinds of payout.
const (
	PayoutPot    = "pot"    // the winner's payout of the players' pot and donations
	PayoutRefund = "refund" // a stake given back after a draw or cancellation, or a bet refunded
	PayoutBet    = "bet"    // a winning bet's payout
	PayoutMarket = "market" // what a holder's shares pay once the market is resolved
)

// loggedGame is what the record reads of the game's row.
type loggedGame struct {
	ID           string          `bun:"id"`
	GameType     string          `bun:"game_type"`
	Settings     json.RawMessage `bun:"settings"`
	TournamentID *string         `bun:"tournament_id"`
	StakeMinor   int64           `bun:"stake_minor"`
	Status       string          `bun:"status"`
	WinnerID     *string         `bun:"winner_id"`
	Result       json.RawMessage `bun:"result"`
	CreatedAt    time.Time       `bun:"created_at"`
	EndedAt      *time.Time      `bun:"ended_at"`
}

// record builds the record of a queued game at index: everything in it
// is final once the game is queued, so it reads the same whenever the
// sequencer gets to it.
func (l *Log) record(ctx context.Context, idb bun.IDB, q queued, index int64) ([]byte, error) {
	var g loggedGame
	if err := idb.NewRaw(`SELECT id, game_type, settings, tournament_id, stake_minor, status, winner_id, result, created_at, ended_at
		FROM games WHERE id = ?`, q.GameID).Scan(ctx, &g); err != nil {
		return nil, fmt.Errorf("read game %s for the games log: %w", q.GameID, err)
	}
	if g.EndedAt == nil {
		return nil, fmt.Errorf("game %s is queued for the games log but has not ended", q.GameID)
	}
	var result struct {
		Reason            string `json:"reason"`
		PotMinor          int64  `json:"potMinor"`
		SpectatorPotMinor int64  `json:"spectatorPotMinor"`
		FeeMinor          int64  `json:"feeMinor"`
		PayoutMinor       int64  `json:"payoutMinor"`
	}
	if err := json.Unmarshal(g.Result, &result); err != nil {
		return nil, fmt.Errorf("read the result of game %s for the games log: %w", q.GameID, err)
	}
	r := Record{Version: 1, Index: index, GameID: g.ID, GameType: g.GameType, Settings: g.Settings, TournamentID: g.TournamentID,
		StakeMinor: g.StakeMinor, StartedAt: g.CreatedAt.UTC(), EndedAt: g.EndedAt.UTC(),
		Outcome: Outcome{Status: g.Status, WinnerUserID: g.WinnerID, Reason: result.Reason},
		Money: Money{PotMinor: result.PotMinor, DonationsMinor: result.SpectatorPotMinor, FeeMinor: result.FeeMinor,
			Payouts: []Payout{}, Integrity: q.Integrity}}
	if err := idb.NewRaw(`SELECT p.user_id, u.wallet_address FROM game_players AS p JOIN users AS u ON u.id = p.user_id
		WHERE p.game_id = ? ORDER BY p.seat`, g.ID).Scan(ctx, &r.Players); err != nil {
		return nil, fmt.Errorf("read the players of game %s for the games log: %w", g.ID, err)
	}
	events, err := l.playEvents(ctx, g.ID)
	if err != nil {
		return nil, err
	}
	r.Events = events
	switch {
	case g.WinnerID != nil && result.PayoutMinor > 0:
		r.Money.Payouts = append(r.Money.Payouts, Payout{UserID: *g.WinnerID, AmountMinor: result.PayoutMinor, Kind: PayoutPot})
	case g.WinnerID == nil && g.StakeMinor > 0:
		for _, p := range r.Players {
			r.Money.Payouts = append(r.Money.Payouts, Payout{UserID: p.UserID, AmountMinor: g.StakeMinor, Kind: PayoutRefund})
		}
	}
	for _, p := range l.payers {
		paid, err := p.Payouts(ctx, idb, g.ID)
		if err != nil {
			return nil, err
		}
		r.Money.Payouts = append(r.Money.Payouts, paid...)
	}
	return encode(r)
}

// playEvents are a game's events up to and with game:completed: what came
// after (transfers confirmed, a review decided) is not the game's play.
func (l *Log) playEvents(ctx context.Context, gameID string) ([]Event, error) {
	out := []Event{}
	for after := 0; ; {
		page, err := l.events.Events(ctx, domain.GameStreamOf(gameID), after, 500)
		if err != nil {
			return nil, fmt.Errorf("read the events of game %s for the games log: %w", gameID, err)
		}
		for _, e := range page {
			out = append(out, Event{GameID: gameID, Seq: e.Seq, Name: e.Name, Data: e.Data, CreatedAt: e.CreatedAt.UTC()})
			if e.Name == domain.EventGameCompleted {
				return out, nil
			}
		}
		if len(page) == 0 {
			return nil, fmt.Errorf("game %s has no %s event to log", gameID, domain.EventGameCompleted)
		}
		after = page[len(page)-1].Seq
	}
}
