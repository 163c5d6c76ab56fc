package market

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"

	"wager/db"
	"wager/domain"
	"wager/domain/game"
	"wager/domain/market/engine"
)

// View is a market as everyone may see it: the GET answer and the data of
// game:market.
type View struct {
	GameID     string           `json:"gameId"`
	Status     string           `json:"status" enum:"open,closed,held,resolved" doc:"closed: a free game (no market) or one that never traded and is over; held: the game's end is under review, and the market resolves when an admin releases it (as the game ended) or voids it (every share pays 500000)"`
	Outcomes   []OutcomeView    `json:"outcomes"`
	Book       []BookView       `json:"book" doc:"per outcome, every price a trader can trade at now: a sell of the other outcome at p is a bid at 1000000 - p, a buy of it an ask"`
	Resolution map[string]int64 `json:"resolution" nullable:"true" doc:"once resolved: what one share of each outcome pays, by outcomeId; null before"`
	LastTrade  *Trade           `json:"lastTrade"`
	Pairs      int64            `json:"pairs" doc:"pairs of shares outstanding (one share of each outcome, backed by 1 USDC)"`
	MaxPairs   int64            `json:"maxPairs" doc:"the most pairs the market may have outstanding: POOL_CAP_MULTIPLE times the player pot, in USDC (0 for a free game, which has no market); an order that would mint past it is refused whole (409 LIMIT_EXCEEDED)"`
}

// OutcomeView is one outcome's prices.
type OutcomeView struct {
	OutcomeID      string `json:"outcomeId"`
	Username       string `json:"username"`
	BestBidMinor   *int64 `json:"bestBidMinor"`
	BestAskMinor   *int64 `json:"bestAskMinor"`
	LastPriceMinor *int64 `json:"lastPriceMinor"`
	VolumeShares   int64  `json:"volumeShares"`
}

// BookView is one outcome's book: bids highest first, asks lowest first.
type BookView struct {
	OutcomeID string  `json:"outcomeId"`
	Bids      []Level `json:"bids"`
	Asks      []Level `json:"asks"`
}

// Level is the shares open at one price.
type Level struct {
	PriceMinor int64 `json:"priceMinor"`
	Shares     int64 `json:"shares"`
}

// view builds the market's View from its row, its open orders and its
// last trade. With storePrices it also stores the row's last prices and
// volumes, in the statement that reads the book.
func (s *Service) view(ctx context.Context, idb bun.IDB, gameID string, m marketRow, last *Trade, storePrices bool) (View, error) {
	var levels []struct {
		OutcomeID string `bun:"outcome_id"`
		Side      string `bun:"side"`
		Price     int64  `bun:"price_minor"`
		Shares    int64  `bun:"shares"`
	}
	if m.Status == StatusOpen {
		q := idb.NewSelect().Table("market_orders").Column("outcome_id", "side", "price_minor").
			ColumnExpr("sum(shares - filled_shares) AS shares").Where("game_id = ? AND status = 'open'", gameID).
			GroupExpr("outcome_id, side, price_minor")
		if storePrices {
			q = q.With("prices", idb.NewRaw("UPDATE markets SET last_price = ?, volume = ?, pairs = ?, paid_minor = ? WHERE game_id = ? RETURNING 1",
				pgdialect.Array(m.LastPrice), pgdialect.Array(m.Volume), m.Pairs, m.Paid, gameID))
		}
		if err := q.Scan(ctx, &levels); err != nil && !errors.Is(err, sql.ErrNoRows) {
			return View{}, fmt.Errorf("read the book of the market of game %s: %w", gameID, err)
		}
	}
	v := View{GameID: gameID, Status: m.Status, Outcomes: []OutcomeView{}, Book: []BookView{}, LastTrade: last, Pairs: m.Pairs,
		MaxPairs: m.MaxPairs}
	bids, asks := make([]map[int64]int64, len(m.Outcomes)), make([]map[int64]int64, len(m.Outcomes))
	for i := range m.Outcomes {
		bids[i], asks[i] = map[int64]int64{}, map[int64]int64{}
	}
	for _, l := range levels {
		i := m.outcome(l.OutcomeID)
		if i < 0 {
			continue
		}
		// Seen from the other outcome, a buy is a sell at the complement.
		if l.Side == "buy" {
			bids[i][l.Price] += l.Shares
			asks[1-i][engine.One-l.Price] += l.Shares
		} else {
			asks[i][l.Price] += l.Shares
			bids[1-i][engine.One-l.Price] += l.Shares
		}
	}
	for i, id := range m.Outcomes {
		b := BookView{OutcomeID: id, Bids: sorted(bids[i], true), Asks: sorted(asks[i], false)}
		o := OutcomeView{OutcomeID: id, VolumeShares: m.Volume[i]}
		if i < len(m.Names) {
			o.Username = m.Names[i]
		}
		if len(b.Bids) > 0 {
			o.BestBidMinor = &b.Bids[0].PriceMinor
		}
		if len(b.Asks) > 0 {
			o.BestAskMinor = &b.Asks[0].PriceMinor
		}
		if p := m.LastPrice[i]; p > 0 {
			o.LastPriceMinor = &p
		}
		v.Outcomes, v.Book = append(v.Outcomes, o), append(v.Book, b)
	}
	if m.Status == StatusResolved && len(m.Resolution) == len(m.Outcomes) {
		v.Resolution = map[string]int64{}
		for i, id := range m.Outcomes {
			v.Resolution[id] = m.Resolution[i]
		}
	}
	return v, nil
}

func sorted(levels map[int64]int64, descending bool) []Level {
	out := make([]Level, 0, len(levels))
	for p, n := range levels {
		out = append(out, Level{PriceMinor: p, Shares: n})
	}
	slices.SortFunc(out, func(a, b Level) int {
		if descending {
			return int(b.PriceMinor - a.PriceMinor)
		}
		return int(a.PriceMinor - b.PriceMinor)
	})
	return out
}

// announce appends game:market with the market as it is now.
func (s *Service) announce(ctx context.Context, tx db.Tx, gameID string, m marketRow, last *Trade) error {
	v, err := s.view(ctx, tx, gameID, m, last, last != nil)
	if err != nil {
		return err
	}
	if _, err := s.events.Append(ctx, tx, domain.GameStreamOf(gameID), s.now(), domain.Event{Name: domain.EventMarket, Data: v}); err != nil {
		return fmt.Errorf("announce the market of game %s: %w", gameID, err)
	}
	return nil
}

// Market returns a game's market. NOT_FOUND when there is no such game.
func (s *Service) Market(ctx context.Context, gameID string) (View, error) {
	g, players, err := s.players(ctx, gameID)
	if err != nil {
		return View{}, err
	}
	var m marketRow
	err = s.db.NewSelect().Table("markets").Column("outcomes", "status", "last_price", "volume", "resolution", "pairs").
		Where("game_id = ?", g.GameID).Scan(ctx, &m)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		m = marketRow{Outcomes: players, Status: StatusClosed, LastPrice: make([]int64, len(players)), Volume: make([]int64, len(players))}
		if g.Status == game.StatusActive && len(players) == 2 && g.StakeMinor > 0 {
			m.Status = StatusOpen
		}
	case err != nil:
		return View{}, fmt.Errorf("read the market of game %s: %w", g.GameID, err)
	}
	m.Names, m.MaxPairs = namesOf(g), s.links.MarketCap(g.StakeMinor*int64(len(players)))
	var last []Trade
	if err := s.db.NewSelect().Model(&last).Where("game_id = ?", g.GameID).Order("id DESC").Limit(1).Scan(ctx); err != nil {
		return View{}, fmt.Errorf("read the last trade of the market of game %s: %w", g.GameID, err)
	}
	var lastTrade *Trade
	if len(last) == 1 {
		lastTrade = &last[0]
	}
	return s.view(ctx, s.db, g.GameID, m, lastTrade, false)
}

// Positions returns what userID holds in a game's market, by outcome.
// NOT_FOUND when there is no such game.
func (s *Service) Positions(ctx context.Context, userID, gameID string) ([]Position, error) {
	g, players, err := s.players(ctx, gameID)
	if err != nil {
		return nil, err
	}
	out := []Position{}
	if err := s.db.NewSelect().Table("market_positions").Column("outcome_id", "shares", "locked_shares", "cost_minor", "redeemed_minor").
		Where("game_id = ? AND user_id = ?", g.GameID, userID).Scan(ctx, &out); err != nil {
		return nil, fmt.Errorf("read the positions of %s in the market of game %s: %w", userID, g.GameID, err)
	}
	slices.SortFunc(out, func(a, b Position) int {
		return slices.Index(players, a.OutcomeID) - slices.Index(players, b.OutcomeID)
	})
	return out, nil
}

// Orders returns userID's orders in a game's market, open ones first,
// then newest first, at most limit, after the order before (an order id
// from the previous page) when it is not "". NOT_FOUND when there is no
// such game, VALIDATION_ERROR when before is none of the user's orders.
func (s *Service) Orders(ctx context.Context, userID, gameID string, limit int, before string) ([]Order, error) {
	g, _, err := s.players(ctx, gameID)
	if err != nil {
		return nil, err
	}
	out := []Order{}
	q := s.db.NewSelect().Model(&out).Where("game_id = ? AND user_id = ?", g.GameID, userID).
		OrderExpr("status = 'open' DESC, seq DESC").Limit(int64(limit))
	if before != "" {
		var cursor Order
		id, ok := domain.CanonicalID(before)
		if ok {
			err = s.db.NewSelect().Model(&cursor).Column("status", "seq").
				Where("id = ? AND game_id = ? AND user_id = ?", id, g.GameID, userID).Scan(ctx)
		}
		if !ok || errors.Is(err, sql.ErrNoRows) {
			return nil, domain.Invalid(map[string]string{"before": "must be the id of one of your orders in this market"})
		}
		if err != nil {
			return nil, fmt.Errorf("read order %s: %w", id, err)
		}
		q = q.Where("(status = 'open', seq) < (?, ?)", cursor.Status == OrderOpen, cursor.Seq)
	}
	if err := q.Scan(ctx); err != nil {
		return nil, fmt.Errorf("read the orders of %s in the market of game %s: %w", userID, g.GameID, err)
	}
	return out, nil
}

// Trades returns a game's trades, newest first, at most limit, older than
// the trade id before when it is not 0. NOT_FOUND when there is no such
// game.
func (s *Service) Trades(ctx context.Context, gameID string, limit int, before int64) ([]Trade, error) {
	g, _, err := s.players(ctx, gameID)
	if err != nil {
		return nil, err
	}
	out := []Trade{}
	q := s.db.NewSelect().Model(&out).Where("game_id = ?", g.GameID).Order("id DESC").Limit(int64(limit))
	if before > 0 {
		q = q.Where("id < ?", before)
	}
	if err := q.Scan(ctx); err != nil {
		return nil, fmt.Errorf("read the trades of the market of game %s: %w", g.GameID, err)
	}
	return out, nil
}
