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
	"fmt"
	"io"
	"log/slog"
	"math"
	"time"

	"github.com/uptrace/bun"

	"wager/db"
	"wager/domain"
	"wager/domain/eventlog"
	"wager/domain/game/rules"
	"wager/domain/notify"
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
	bun.BaseModel `bun:"table:games,alias:g"`

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
	Result     *Result         `bun:"result,type:jsonb"`
	RematchOf  *string         `bun:"rematch_of,type:uuid"`
	CreatedAt  time.Time       `bun:"created_at"`
	EndedAt    *time.Time      `bun:"ended_at"`

	// Players are the user ids in seat order, and Seats the players with
	// their names, when a query reads them.
	Players []string `bun:"players,array,scanonly"`
	Seats   []Seat   `bun:"seats,type:jsonb,scanonly"`

	// TournamentID is the tournament the game is played in (nil: none).
	TournamentID *string `bun:"tournament_id,type:uuid"`

	// decoded is State decoded, when this instance made State itself (a
	// start, a move); never stored.
	decoded *decodedState
}

// decodedState is a game's state as its rules hold it, with the JSON it
// was encoded to: a later move clones it instead of decoding that JSON
// again. Shared once kept, as the remembered rows are: only its clones
// are moved.
type decodedState struct {
	from json.RawMessage
	st   rules.State
}

// stateToMove is g's state for a move to change: a clone of the one kept
// decoded when it was encoded to g.State (the same bytes, not equal ones:
// a State assigned since, from the database say, is decoded instead),
// else g.State decoded.
func (g Game) stateToMove(r rules.Rules) (rules.State, error) {
	if d := g.decoded; d != nil && len(d.from) > 0 && len(d.from) == len(g.State) && &d.from[0] == &g.State[0] {
		return d.st.Clone(), nil
	}
	return r.Load(g.State)
}

// Player is a seat in a game.
type Player struct {
	bun.BaseModel `bun:"table:game_players"`

	GameID string `bun:"game_id,pk,type:uuid"`
	UserID string `bun:"user_id,pk,type:uuid"`
	Seat   int    `bun:"seat"`
}

// Ending is a game's end as those who take part in it see it, inside the
// transaction that finishes it (see Participant).
type Ending struct {
	Tx      db.Tx
	Game    Game // its status, winner and end; its Result once the reads have run
	Outcome rules.Outcome
	// Reads gathers what the participants read: one statement, sent once
	// each has added its part, after the game's lock (so it sees whatever
	// was committed before the end).
	Reads *db.Reads
	// Ratings is what the game did to its players' ratings, added by the
	// participant that rates it; game:completed carries them.
	Ratings []RatingChange
	// Queued is the on-chain transfers the settlement queued (pending),
	// which game:completed lists.
	Queued []SettlementTransfer
}

// Paid records the money part of the game's result: the settlement's
// write calls it, and the writes after it see the result whole.
func (e *Ending) Paid(s Settlement) {
	e.Queued = append(e.Queued, s.Queued...)
	s.Queued = nil // told once, in game:completed
	e.Game.Result.Settlement = s
}

// Participant takes part in every game's end (the settlement, the
// players' notices, ratings, achievements and the activity feed,
// referrals, tournament scores), inside the transaction that finishes it,
// so that what it does stands or falls with the end. It does so in two
// steps, for the end to read in one statement and write in one round
// trip: ReadEnd adds what it reads to e.Reads and returns the write to
// make once every participant's reads have run (nil: nothing to write).
// The writes run in order, the settlement's first; what a write writes it
// queues with e.Tx.Later where it can, since nothing of the end reads it.
// An error of either step aborts the end.
type Participant interface {
	ReadEnd(ctx context.Context, e *Ending) (EndWrite, error)
}

// EndWrite is a Participant's second step.
type EndWrite func(ctx context.Context, e *Ending) error

// RatingChange is what a finished game did to a player's rating in its
// game type.
type RatingChange struct {
	UserID      string  `json:"userId" bun:"user_id"`
	Before      float64 `json:"before" bun:"before"`
	After       float64 `json:"after" bun:"after"`
	Provisional bool    `json:"provisional" bun:"provisional" doc:"the rating after the game is still provisional: too few games to be sure of it"`
}

// Delta is the change in whole rating points, as the result card shows it:
// the rounded ratings' difference.
func (c RatingChange) Delta() int {
	return int(math.Round(c.After)) - int(math.Round(c.Before))
}

// SettlementTransfer is an on-chain transfer a settlement queued: the
// escrow's donations swept to the vault, or sent back to a donor.
type SettlementTransfer struct {
	ID          string `json:"id"`
	Kind        string `json:"kind" enum:"sweep,refund" doc:"sweep (escrow to vault) or refund (escrow to the donor's wallet, never to a platform balance; while that wallet has no USDC token account the refund waits for one)"`
	ToAddress   string `json:"toAddress"`
	AmountMinor int64  `json:"amountMinor"`
}

// Settlement is what a finished game paid: the money members of its
// result and of game:completed.
type Settlement struct {
	PotMinor          int64  `json:"potMinor" doc:"player pot plus donations"`
	PlayerPotMinor    int64  `json:"playerPotMinor"`
	SpectatorPotMinor int64  `json:"spectatorPotMinor"`
	FeeMinor          int64  `json:"feeMinor"`
	PayoutMinor       int64  `json:"payoutMinor" doc:"what the winner received; 0 after a draw or cancellation"`
	EscrowAddress     string `json:"escrowAddress"`
	// ReviewHeld: the bets and market were held for review (the players'
	// payout never is), and ReviewReason why.
	ReviewHeld   bool   `json:"reviewHeld,omitempty" doc:"the game's bets and market were held for review when it ended (the players' own payout is not held); see the game's bets and market for how the review ended"`
	ReviewReason string `json:"reviewReason,omitempty" enum:"resign,timeout,linked" doc:"why they were held: resign (the loser resigned), timeout (a round or turn was lost on time) or linked (a bettor or trader was linked to a player by the end)"`
	// Queued are the on-chain transfers the settlement queued:
	// game:completed carries them, the stored result does not (their
	// state is in settlement_transfers).
	Queued []SettlementTransfer `json:"-"`
}

// Result is how a finished game ended and what it paid.
type Result struct {
	WinnerID *string `json:"winnerId" doc:"null for a draw or cancellation"`
	Reason   string  `json:"reason" enum:"score,resign,timeout,abandoned,connect4,board-full" doc:"score, resign, timeout, abandoned, connect4, board-full"`
	Draw     bool    `json:"draw"`
	Settlement
}

// Service runs games.
type Service struct {
	db       *bun.DB
	events   *eventlog.Log
	notify   *notify.Service
	ending   []Participant
	now      domain.Clock
	log      *slog.Logger
	rand     io.Reader
	live     Live
	escrowOf func(gameID string) string
	protect  Protection
	closed   func() bool
	rows     domain.SeqCache[Game]
	// spectatorDelay is how late spectators of a staked Connect Four game
	// see its events.
	spectatorDelay time.Duration
	steps          *db.Batcher[string, stepRow, []eventlog.Event] // the moves stored without a lock (steps.go)
	seatCache
}

// Protection is what player protection says about stakes: every path that
// locks a stake asks it (a free game puts no money in and never does).
type Protection interface {
	// CheckStake refuses the stake of the player who asks in this
	// request (the request's region included).
	CheckStake(ctx context.Context, idb bun.IDB, userID string, stake int64) error
	// CheckRegion refuses a request from a country where no money goes
	// in.
	CheckRegion(ctx context.Context) error
	// StakeRefusals returns the refusals of a stake of each of users
	// (CheckStake's rules without the request's region).
	StakeRefusals(ctx context.Context, idb bun.IDB, users []string, stake int64) (map[string]*domain.Error, error)
}

// Deps are what a Service works with.
type Deps struct {
	Events *eventlog.Log // where games' events go
	Notify *notify.Service
	// Settle pays out every finished game, the first to write of its
	// end (nil: nothing is paid); Ending takes part after it and the
	// players' notices, in order.
	Settle Participant
	Ending []Participant
	Live   Live // spectators, and the newest events heard of
	// EscrowOf is a game's escrow address, recorded among the platform's
	// addresses when the game starts.
	EscrowOf func(gameID string) string
	// Protect answers player protection's rules of stakes (nil: none).
	Protect Protection
	// Closed reports whether the platform is closed to players
	// (maintenance mode): no deadline is enforced while it is (see
	// RunDeadlinesOnce). nil: never closed.
	Closed func() bool
	// SpectatorDelay is how late spectators of a staked Connect Four game
	// see its events (see Service.SpectatorDelay); 0: never late.
	SpectatorDelay time.Duration
}

// New returns a Service.
func New(bdb *bun.DB, now domain.Clock, log *slog.Logger, d Deps) *Service {
	s := &Service{db: bdb, events: d.Events, notify: d.Notify, now: now, log: log, rand: rand.Reader, live: d.Live,
		escrowOf: d.EscrowOf, protect: d.Protect, closed: d.Closed, spectatorDelay: d.SpectatorDelay, rows: domain.SeqCache[Game]{Latest: d.Live.LatestSeq, MaxAge: ReadCacheAge, Size: 10_000}}
	if d.Settle != nil {
		s.ending = append(s.ending, d.Settle)
	}
	s.ending = append(s.ending, endNotices{s})
	s.ending = append(s.ending, d.Ending...)
	s.steps = newSteps(s)
	return s
}

// ReadCacheAge is the longest a game read from the database serves from
// memory without another look, however quiet the game.
const ReadCacheAge = 5 * time.Second

// lockGameSQL reads game $1 with its players in seat order and locks its
// row. It is run prepared (see db.QueryPrepared): every game's end and
// every move in a transaction runs it.
const lockGameSQL = `SELECT g.*, ARRAY(SELECT p.user_id::text FROM game_players AS p WHERE p.game_id = g.id ORDER BY p.seat) AS players
	FROM games AS g WHERE g.id = $1 FOR UPDATE OF g`

// lockGame reads a game with its players and locks its row for the
// transaction. NOT_FOUND when there is none.
func lockGame(ctx context.Context, tx db.Tx, id string) (Game, error) {
	var g Game
	id, ok := domain.CanonicalID(id)
	if !ok {
		return g, domain.Errorf(domain.CodeNotFound, "no such game")
	}
	err := db.ScanPrepared(ctx, tx, &g, lockGameSQL, id)
	if errors.Is(err, sql.ErrNoRows) {
		return g, domain.Errorf(domain.CodeNotFound, "no such game")
	}
	if err != nil {
		return g, fmt.Errorf("lock game %s: %w", id, err)
	}
	return g, nil
}

func rulesOf(gameType string) (rules.Rules, error) {
	r, ok := rules.Get(gameType)
	if !ok {
		return nil, domain.Invalid(map[string]string{"gameType": "unknown game type; see GET /games/available"})
	}
	return r, nil
}
