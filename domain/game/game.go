// Package game runs games: lobbies and matchmaking, the game lifecycle
// (waiting, active, completed, cancelled) over the pure rules in
// game/rules, round and turn deadlines that any instance can claim, stakes
// and settlement through the ledger, rematches and challenges, and the
// per-game event stream that live rooms replay and follow.
package game

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"time"

	"github.com/uptrace/bun"

	"wager/domain"
	"wager/domain/game/rules"
)

// Game statuses.
const (
	StatusWaiting   = "waiting"
	StatusActive    = "active"
	StatusCompleted = "completed"
	StatusCancelled = "cancelled"
)

// Game is a persisted game.
type Game struct {
	bun.BaseModel `bun:"table:games"`

	ID         string          `bun:"id,pk,type:uuid"`
	LobbyID    *string         `bun:"lobby_id,type:uuid"`
	GameType   string          `bun:"game_type"`
	StakeMinor int64           `bun:"stake_minor"`
	Settings   json.RawMessage `bun:"settings,type:jsonb"`
	Status     string          `bun:"status"`
	State      json.RawMessage `bun:"state,type:jsonb"`
	Seq        int             `bun:"seq"`
	Deadline   *time.Time      `bun:"deadline"`
	WinnerID   *string         `bun:"winner_id,type:uuid"`
	Result     json.RawMessage `bun:"result,type:jsonb"`
	RematchOf  *string         `bun:"rematch_of,type:uuid"`
	CreatedAt  time.Time       `bun:"created_at"`
	EndedAt    *time.Time      `bun:"ended_at"`
}

// Player is a seat in a game.
type Player struct {
	bun.BaseModel `bun:"table:game_players"`

	GameID string `bun:"game_id,pk,type:uuid"`
	UserID string `bun:"user_id,pk,type:uuid"`
	Seat   int    `bun:"seat"`
}

// Settler pays out a finished game inside the transaction that finishes it
// and returns the money members of game:completed (potMinor, feeMinor...).
type Settler func(ctx context.Context, tx bun.Tx, g Game, players []string, o rules.Outcome) (map[string]any, error)

// Service runs games.
type Service struct {
	db     *bun.DB
	now    domain.Clock
	log    *slog.Logger
	rand   io.Reader
	settle Settler
	notify func(ctx context.Context, tx bun.Tx, userID string, notice Notice) error
}

// New returns a Service. settle pays out finished games.
func New(bdb *bun.DB, now domain.Clock, log *slog.Logger, settle Settler) *Service {
	s := &Service{db: bdb, now: now, log: log, rand: rand.Reader, settle: settle}
	s.notify = s.sendNotice
	return s
}

// loadGame reads a game, locking it FOR UPDATE when lock is set.
func loadGame(ctx context.Context, idb bun.IDB, id string, lock bool) (Game, error) {
	var g Game
	id, ok := domain.CanonicalID(id)
	if !ok {
		return g, domain.Errorf(domain.CodeNotFound, "no such game")
	}
	q := idb.NewSelect().Model(&g).Where("id = ?", id)
	if lock {
		q = q.For("UPDATE")
	}
	if err := q.Scan(ctx); errors.Is(err, sql.ErrNoRows) {
		return g, domain.Errorf(domain.CodeNotFound, "no such game")
	} else if err != nil {
		return g, err
	}
	return g, nil
}

// playerIDs returns a game's players in seat order.
func playerIDs(ctx context.Context, idb bun.IDB, gameID string) ([]string, error) {
	var ids []string
	err := idb.NewSelect().Model((*Player)(nil)).Column("user_id").Where("game_id = ?", gameID).Order("seat").Scan(ctx, &ids)
	return ids, err
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func rulesOf(gameType string) (rules.Rules, error) {
	r, ok := rules.Get(gameType)
	if !ok {
		return nil, domain.Invalid(map[string]string{"gameType": "unknown game type; see GET /games/available"})
	}
	return r, nil
}
