package gamelog

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"wager.example.com/sdk/gamerecord"
	"wager/db"
	"wager/domain"
	"wager/domain/eventlog"
)

// loggedGame is what the record reads of the game's row.
type loggedGame struct {
	ID           string
	GameType     string
	Settings     json.RawMessage
	TournamentID *string
	StakeMinor   int64
	Status       string
	WinnerID     *string
	Result       json.RawMessage
	CreatedAt    time.Time
	EndedAt      *time.Time
	Players      []gamerecord.Player
}

// loggedGamesSQL reads the rows and the players (in seat order) of a
// batch of games.
const loggedGamesSQL = `SELECT g.id::text, g.game_type, g.settings, g.tournament_id::text, g.stake_minor, g.status, g.winner_id::text,
		g.result, g.created_at, g.ended_at,
		coalesce((SELECT json_agg(json_build_object('userId', p.user_id, 'walletAddress', u.wallet_address) ORDER BY p.seat)
			FROM game_players AS p JOIN users AS u ON u.id = p.user_id WHERE p.game_id = g.id), '[]')
	FROM games AS g WHERE g.id = ANY($1::uuid[])`

// batchOf is what the records of a batch of queued games are built
// from, read with one statement for the games and their players and one
// for their events.
type batchOf struct {
	games  map[string]loggedGame
	events map[string][]eventlog.Event
}

// readBatch reads what the records of the queued games are built from.
func readBatch(ctx context.Context, idb bun.IDB, games []queued) (batchOf, error) {
	ids := make([]string, len(games))
	for i, q := range games {
		ids[i] = q.GameID
	}
	b := batchOf{games: make(map[string]loggedGame, len(games))}
	rows, err := db.QueryPrepared(ctx, idb, loggedGamesSQL, ids)
	if err != nil {
		return batchOf{}, fmt.Errorf("read %d games for the games log: %w", len(ids), err)
	}
	defer rows.Close()
	for rows.Next() {
		var g loggedGame
		var settings, result, players []byte
		if err := rows.Scan(&g.ID, &g.GameType, &settings, &g.TournamentID, &g.StakeMinor, &g.Status, &g.WinnerID,
			&result, &g.CreatedAt, &g.EndedAt, &players); err != nil {
			return batchOf{}, fmt.Errorf("read %d games for the games log: %w", len(ids), err)
		}
		g.Settings, g.Result = settings, result
		if err := json.Unmarshal(players, &g.Players); err != nil {
			return batchOf{}, fmt.Errorf("read the players of game %s for the games log: %w", g.ID, err)
		}
		b.games[g.ID] = g
	}
	if err := rows.Err(); err != nil {
		return batchOf{}, fmt.Errorf("read %d games for the games log: %w", len(ids), err)
	}
	if b.events, err = eventlog.EventsOf(ctx, idb, domain.GameStream, ids); err != nil {
		return batchOf{}, fmt.Errorf("read the events of %d games for the games log: %w", len(ids), err)
	}
	return b, nil
}

// record builds the record of a queued game at index from its batch's
// reads: everything in it is final once the game is queued, so it reads
// the same whenever the sequencer gets to it.
func (l *Log) record(ctx context.Context, idb bun.IDB, b batchOf, q queued, index int64) ([]byte, error) {
	g, ok := b.games[q.GameID]
	if !ok {
		return nil, fmt.Errorf("game %s is queued for the games log but does not exist", q.GameID)
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
	r.Players = g.Players
	events, err := playEvents(g.ID, b.events[g.ID])
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
func playEvents(gameID string, events []eventlog.Event) ([]gamerecord.Event, error) {
	out := make([]gamerecord.Event, 0, len(events))
	for _, e := range events {
		out = append(out, gamerecord.Event{GameID: gameID, Seq: e.Seq, Name: string(e.Name), Data: e.Data, CreatedAt: e.CreatedAt.UTC()})
		if e.Name == domain.EventGameCompleted {
			return out, nil
		}
	}
	return nil, fmt.Errorf("game %s has no %s event to log", gameID, domain.EventGameCompleted)
}
