package gamelog

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"wager/domain"
	"wager/domain/gamelog/gamerecord"
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
	r := gamerecord.Record{Version: 1, Index: index, GameID: g.ID, GameType: g.GameType, Settings: g.Settings, TournamentID: g.TournamentID,
		StakeMinor: g.StakeMinor, StartedAt: g.CreatedAt.UTC(), EndedAt: g.EndedAt.UTC(),
		Outcome: gamerecord.Outcome{Status: g.Status, WinnerUserID: g.WinnerID, Reason: result.Reason},
		Money: gamerecord.Money{PotMinor: result.PotMinor, DonationsMinor: result.SpectatorPotMinor, FeeMinor: result.FeeMinor,
			Payouts: []gamerecord.Payout{}, Integrity: q.Integrity}}
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
		r.Money.Payouts = append(r.Money.Payouts, gamerecord.Payout{UserID: *g.WinnerID, AmountMinor: result.PayoutMinor, Kind: gamerecord.PayoutPot})
	case g.WinnerID == nil && g.StakeMinor > 0:
		for _, p := range r.Players {
			r.Money.Payouts = append(r.Money.Payouts, gamerecord.Payout{UserID: p.UserID, AmountMinor: g.StakeMinor, Kind: gamerecord.PayoutRefund})
		}
	}
	for _, p := range l.payers {
		if g.StakeMinor == 0 {
			break // a free game takes no bets and has no market
		}
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
func (l *Log) playEvents(ctx context.Context, gameID string) ([]gamerecord.Event, error) {
	out := []gamerecord.Event{}
	for after := 0; ; {
		page, err := l.events.Events(ctx, domain.GameStreamOf(gameID), after, 500)
		if err != nil {
			return nil, fmt.Errorf("read the events of game %s for the games log: %w", gameID, err)
		}
		for _, e := range page {
			out = append(out, gamerecord.Event{GameID: gameID, Seq: e.Seq, Name: e.Name, Data: e.Data, CreatedAt: e.CreatedAt.UTC()})
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
