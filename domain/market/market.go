// Package market runs a prediction market per two-player game: a limit
// order book per game (see package engine) whose shares pay 1 USDC if
// their player wins, paid from and to platform balances.
//
// Every order, cancel and resolution is one database transaction that
// locks the game's row and then the market's row (the order in which a
// game's settlement takes them), loads the resting orders the change can
// cross, runs the engine on them, and writes the orders, trades, positions
// and balanced ledger postings together, with a game:market event. So any
// number of instances may take orders for one market.
package market

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/uptrace/bun"

	"wager/db"
	"wager/domain"
	"wager/domain/eventlog"
	"wager/domain/game"
)

// Market statuses.
const (
	StatusOpen     = "open"     // the game is active: orders are taken
	StatusClosed   = "closed"   // the game is not active and the market was never opened
	StatusResolved = "resolved" // the game ended: shares pay what Resolution says
	StatusHeld     = "held"     // the game ended and its end is under review: resolved when an admin releases or voids it
)

// Order statuses.
const (
	OrderOpen      = "open"
	OrderFilled    = "filled"
	OrderCancelled = "cancelled"
)

// Events are this package's room events by name, each with its data type
// (see rules.Events): domain.EventMarket follows every change of a
// market.
var Events = map[domain.EventName]any{domain.EventMarket: View{}}

// Notifier sends a user a notification in the caller's transaction.
type Notifier interface {
	Send(ctx context.Context, tx db.Tx, userID, typ string, data any) error
}

// Unlocker unlocks an achievement for users in the caller's transaction.
type Unlocker interface {
	UnlockEach(ctx context.Context, tx db.Tx, userIDs []string, id string) error
}

// Achievement unlocked by a user's first trade, and the notification type
// of a resolution.
const (
	AchievementTrader = "trader"
	NoticeResolved    = "market_resolved"
)

// Service takes orders, cancels, resolutions and redemptions.
type Service struct {
	db           *bun.DB
	events       *eventlog.Log
	games        *game.Service
	now          domain.Clock
	links        Links
	notify       Notifier
	achievements Unlocker
	protect      Protection

	orders *db.Batcher[string, pending, Placed]
}

// Deps are the Service's optional collaborators.
type Deps struct {
	// Notify tells holders their market resolved (nil: nobody).
	Notify Notifier
	// Achievements unlocks trader at a user's first trade (nil: none).
	Achievements Unlocker
	// Protect answers player protection's rules of buys (nil: none).
	Protect Protection
}

// Links is what the integrity rules say about trades: who may not trade
// whose game, and how many pairs a market may have outstanding.
type Links interface {
	// LinkRefusals returns the LINKED_TO_PLAYER refusal of each of users
	// linked to one of players.
	LinkRefusals(ctx context.Context, idb bun.IDB, users, players []string) (map[string]*domain.Error, error)
	// MarketCap is the most pairs a market may have outstanding when the
	// player pot is playerPot.
	MarketCap(playerPot int64) int64
}

// Protection is what player protection says about market buys (sells,
// cancels and redemptions take money out and never ask).
type Protection interface {
	// CheckRegion refuses an order from a country where no money goes in.
	CheckRegion(ctx context.Context) error
	// BuyRefusals returns the refusal of a buy by one of users (nil:
	// none) once the orders before it in the same transaction moved lost
	// of their money out of their balance.
	BuyRefusals(ctx context.Context, idb bun.IDB, users []string) (func(userID string, lost, atRisk int64) *domain.Error, error)
}

// New returns the market service; links answers who may trade how much.
func New(bdb *bun.DB, events *eventlog.Log, games *game.Service, links Links, now domain.Clock, d Deps) *Service {
	s := &Service{db: bdb, events: events, games: games, links: links, now: now,
		notify: d.Notify, achievements: d.Achievements, protect: d.Protect}
	s.orders = newOrders(s)
	return s
}

// Order is one limit order, as its owner sees it.
type Order struct {
	bun.BaseModel `bun:"table:market_orders"`

	ID           string    `bun:"id,pk" json:"id"`
	Seq          int64     `bun:"seq,nullzero" json:"-"`
	GameID       string    `bun:"game_id" json:"gameId"`
	UserID       string    `bun:"user_id" json:"-"`
	Side         string    `bun:"side" json:"side" enum:"buy,sell"`
	OutcomeID    string    `bun:"outcome_id" json:"outcomeId" doc:"the player the shares are of"`
	PriceMinor   int64     `bun:"price_minor" json:"priceMinor"`
	Shares       int64     `bun:"shares" json:"shares"`
	FilledShares int64     `bun:"filled_shares" json:"filledShares"`
	TimeInForce  string    `bun:"time_in_force" json:"timeInForce" enum:"GTC,IOC"`
	Status       string    `bun:"status" json:"status" enum:"open,filled,cancelled"`
	CreatedAt    time.Time `bun:"created_at" json:"createdAt"`
	UpdatedAt    time.Time `bun:"updated_at" json:"-"`
}

// Fill is one trade of an order, at the price its owner paid or got per
// share of the order's outcome.
type Fill struct {
	PriceMinor int64 `json:"priceMinor"`
	Shares     int64 `json:"shares"`
}

// Placed is the answer to an order: the order as it stands after matching
// and its trades.
type Placed struct {
	Order  Order  `json:"order"`
	Trades []Fill `json:"trades"`
}

// Trade is one trade of a market, seen from its taker: the outcome the
// taker bought or sold and the price per share of it.
type Trade struct {
	bun.BaseModel `bun:"table:market_trades"`

	ID           int64     `bun:"id,pk,autoincrement" json:"id,string" doc:"a sequence number as a string; pass the last one seen as ?before= for older ones"`
	GameID       string    `bun:"game_id" json:"-"`
	Kind         string    `bun:"kind" json:"kind" enum:"transfer,mint,merge" doc:"transfer: shares changed hands; mint: a new pair was created; merge: a pair was destroyed"`
	OutcomeID    string    `bun:"outcome_id" json:"outcomeId"`
	PriceMinor   int64     `bun:"price_minor" json:"priceMinor"`
	Shares       int64     `bun:"shares" json:"shares"`
	MakerOrderID string    `bun:"maker_order_id" json:"-"`
	TakerOrderID string    `bun:"taker_order_id" json:"-"`
	CreatedAt    time.Time `bun:"created_at" json:"createdAt"`
}

// Position is what a user holds of one outcome.
type Position struct {
	OutcomeID    string `bun:"outcome_id" json:"outcomeId"`
	Shares       int64  `bun:"shares" json:"shares" doc:"shares held, lockedShares included"`
	LockedShares int64  `bun:"locked_shares" json:"lockedShares" doc:"shares open sell orders hold"`
	CostMinor    int64  `bun:"cost_minor" json:"costMinor" doc:"paid for shares less received for shares sold"`
	// RedeemedMinor is what redeeming paid for this outcome's shares.
	RedeemedMinor *int64 `bun:"redeemed_minor" json:"redeemedMinor,omitempty" doc:"once redeemed: what the shares paid"`
}

// Redeemed is the answer to a redemption.
type Redeemed struct {
	RedeemedMinor int64 `json:"redeemedMinor"`
}

// ResolvedNotice is the data of a market_resolved notification.
type ResolvedNotice struct {
	GameID          string `json:"gameId"`
	WinnerID        string `json:"winnerId,omitempty" doc:"empty after a draw or a cancellation"`
	RedeemableMinor int64  `json:"redeemableMinor" doc:"what the holder's shares pay out at redemption"`
}

// OrderRequest is the body of an order.
type OrderRequest struct {
	OutcomeID   string `json:"outcomeId" doc:"the player whose shares to trade"`
	PriceMinor  int64  `json:"priceMinor" minimum:"10000" maximum:"990000" multipleOf:"10000" doc:"per share, a multiple of 10000"`
	Shares      int64  `json:"shares" minimum:"1" maximum:"100000"`
	TimeInForce string `json:"timeInForce,omitempty" enum:"GTC,IOC" doc:"GTC (default): the unfilled rest stays on the book; IOC: it is cancelled"`
}

// marketRow is the market's row as an order reads it.
type marketRow struct {
	Outcomes   []string `bun:"outcomes,array"`
	Status     string   `bun:"status"`
	LastPrice  []int64  `bun:"last_price,array"`
	Volume     []int64  `bun:"volume,array"`
	Resolution []int64  `bun:"resolution,array"`
	Pairs      int64    `bun:"pairs"`       // outstanding pairs of shares
	Paid       int64    `bun:"paid_minor"`  // what buyers paid for shares in the market's trades
	Names      []string `bun:"names,array"` // the players' usernames, in the order of Outcomes
	MaxPairs   int64    `bun:"-"`           // the cap on Pairs (0: a free game)
}

func (m marketRow) outcome(userID string) int { return slices.Index(m.Outcomes, userID) }

// lockedGame is the game of a market as an order sees it.
type lockedGame struct {
	Status string `bun:"game_status"`
	Stake  int64  `bun:"stake_minor"`
}

// lock takes the game's row and then the market's, in one statement (the
// market is created on first use, its outcomes the players in seat
// order), and returns the game's status and stake and the market with the
// players' names. A free game, or one without two players, has no market:
// its row is zero.
func (s *Service) lock(ctx context.Context, tx db.Tx, gameID string) (lockedGame, marketRow, error) {
	var row struct {
		lockedGame
		marketRow
	}
	err := tx.NewRaw(`WITH g AS (
			SELECT g.id, g.status, g.stake_minor,
				array(SELECT p.user_id FROM game_players AS p WHERE p.game_id = g.id ORDER BY p.seat) AS players,
				array(SELECT u.username FROM game_players AS p JOIN users AS u ON u.id = p.user_id
					WHERE p.game_id = g.id ORDER BY p.seat) AS names
			FROM games AS g WHERE g.id = ? FOR NO KEY UPDATE OF g
		), m AS (
			INSERT INTO markets (game_id, outcomes, status, created_at)
			SELECT id, players, 'open', ? FROM g WHERE cardinality(players) = 2 AND stake_minor > 0
			ON CONFLICT (game_id) DO UPDATE SET status = markets.status
			RETURNING outcomes, status, last_price, volume, resolution, pairs, paid_minor
		)
		SELECT g.status AS game_status, g.stake_minor, g.names, m.* FROM g LEFT JOIN m ON true`, gameID, s.now()).Scan(ctx, &row)
	if errors.Is(err, sql.ErrNoRows) {
		return lockedGame{}, marketRow{}, domain.Errorf(domain.CodeNotFound, "no such game")
	}
	if err != nil {
		return lockedGame{}, marketRow{}, fmt.Errorf("lock the market of game %s: %w", gameID, err)
	}
	row.MaxPairs = s.links.MarketCap(row.Stake * int64(len(row.Names)))
	return row.lockedGame, row.marketRow, nil
}

// players returns a game's metadata and its players' ids in seat order,
// NOT_FOUND when there is no such game.
func (s *Service) players(ctx context.Context, gameID string) (game.Meta, []string, error) {
	id, ok := domain.CanonicalID(gameID)
	if !ok {
		return game.Meta{}, nil, domain.Errorf(domain.CodeNotFound, "no such game")
	}
	g, err := s.games.Metadata(ctx, id)
	if err != nil {
		return g, nil, err
	}
	ids := make([]string, len(g.Players))
	for i, p := range g.Players {
		ids[i] = p.UserID
	}
	return g, ids, nil
}

func namesOf(g game.Meta) []string {
	names := make([]string, len(g.Players))
	for i, p := range g.Players {
		names[i] = p.Username
	}
	return names
}
