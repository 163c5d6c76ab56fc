package market

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"

	"wager/db"
	"wager/domain"
	"wager/domain/game"
	"wager/domain/market/engine"
	"wager/domain/money"
)

var sideNames = map[engine.Side]string{engine.Buy: "buy", engine.Sell: "sell"}

var kindNames = map[engine.Kind]string{engine.Transfer: "transfer", engine.Mint: "mint", engine.Merge: "merge"}

// validate checks an order's fields and returns its time in force.
func (r OrderRequest) validate(outcomes []string) (engine.TIF, error) {
	fields := map[string]string{}
	if !slices.Contains(outcomes, r.OutcomeID) {
		fields["outcomeId"] = "must be the userId of one of the game's players"
	}
	if r.PriceMinor < engine.MinPrice || r.PriceMinor > engine.MaxPrice || r.PriceMinor%engine.Tick != 0 {
		fields["priceMinor"] = "must be a multiple of 10000 from 10000 to 990000"
	}
	if r.Shares < 1 || r.Shares > engine.MaxShares {
		fields["shares"] = "must be a whole number of shares from 1 to 100000"
	}
	tif := engine.GTC
	switch r.TimeInForce {
	case "", "GTC":
	case "IOC":
		tif = engine.IOC
	default:
		fields["timeInForce"] = "must be GTC or IOC"
	}
	if len(fields) > 0 {
		return tif, domain.Invalid(fields)
	}
	return tif, nil
}

// Place takes a buy or sell order of userID into the market of gameID:
// it locks what the order needs, matches it (see package engine) and
// writes everything it changed in one transaction. Errors: NOT_FOUND,
// VALIDATION_ERROR, FORBIDDEN (a player of the game), GAME_NOT_ACTIVE,
// INSUFFICIENT_FUNDS (a buy) or INSUFFICIENT_SHARES (a sell).
func (s *Service) Place(ctx context.Context, userID, gameID string, side engine.Side, req OrderRequest) (Placed, error) {
	gameID, ok := domain.CanonicalID(gameID)
	if !ok {
		return Placed{}, domain.Errorf(domain.CodeNotFound, "no such game")
	}
	var out Placed
	err := db.Transact(ctx, s.db, func(ctx context.Context, tx bun.Tx) error {
		var err error
		out, err = s.place(ctx, tx, userID, gameID, side, req)
		return err
	})
	return out, err
}

func (s *Service) place(ctx context.Context, tx bun.Tx, userID, gameID string, side engine.Side, req OrderRequest) (Placed, error) {
	status, m, err := s.lock(ctx, tx, gameID)
	if err != nil {
		return Placed{}, err
	}
	if slices.Contains(m.Outcomes, userID) {
		return Placed{}, domain.Errorf(domain.CodeForbidden, "players of a game may not trade its market")
	}
	if status != game.StatusActive || m.Status != StatusOpen {
		return Placed{}, domain.Errorf(domain.CodeGameNotActive, "the market trades while the game is active")
	}
	tif, err := req.validate(m.Outcomes)
	if err != nil {
		return Placed{}, err
	}
	now := s.now()
	order := Order{ID: uuid.NewString(), GameID: gameID, UserID: userID, Side: sideNames[side], OutcomeID: req.OutcomeID,
		PriceMinor: req.PriceMinor, Shares: req.Shares, TimeInForce: "GTC", Status: OrderOpen, CreatedAt: now, UpdatedAt: now}
	if tif == engine.IOC {
		order.TimeInForce = "IOC"
	}
	// The taker comes after every resting order: its ID only has to sort last.
	taker := engine.Order{ID: math.MaxInt64, Owner: userID, Side: side, Outcome: m.outcome(req.OutcomeID),
		Price: req.PriceMinor, Shares: req.Shares}
	book, makers, err := s.crossing(ctx, tx, gameID, m, taker)
	if err != nil {
		return Placed{}, err
	}
	res, err := book.Place(taker, tif)
	if err != nil {
		return Placed{}, fmt.Errorf("match an order in the market of game %s: %w", gameID, err)
	}

	users := []string{userID}
	for _, f := range res.Fills {
		if !slices.Contains(users, f.Maker.Owner) {
			users = append(users, f.Maker.Owner)
		}
	}
	holdings, err := s.holdings(ctx, tx, gameID, m, users)
	if err != nil {
		return Placed{}, err
	}
	fx := newEffects(gameID, order.ID, holdings)
	if !fx.lock(taker) {
		return Placed{}, domain.Errorf(domain.CodeInsufficientShares, "you hold fewer unlocked shares of that player than the order sells")
	}
	trades := make([]Trade, len(res.Fills))
	filled := map[int64]int64{} // maker seq -> shares
	out := Placed{Trades: make([]Fill, len(res.Fills))}
	for i, f := range res.Fills {
		fx.fill(taker, f, i)
		filled[f.Maker.ID] += f.Shares
		trades[i] = Trade{GameID: gameID, Kind: kindNames[f.Kind], OutcomeID: req.OutcomeID, PriceMinor: f.TakerPrice,
			Shares: f.Shares, MakerOrderID: makers[f.Maker.ID], TakerOrderID: order.ID, CreatedAt: now}
		out.Trades[i] = Fill{PriceMinor: f.TakerPrice, Shares: f.Shares}
		m.traded(req.OutcomeID, f.TakerPrice, f.Shares, f.Kind)
	}
	order.FilledShares = res.Filled
	switch {
	case res.Filled == req.Shares:
		order.Status = OrderFilled
	case !res.Rested:
		order.Status = OrderCancelled
		fx.release(taker, req.Shares-res.Filled, "market-release:"+order.ID)
	}
	if !fx.valid() {
		return Placed{}, fmt.Errorf("order %s would leave a position negative", order.ID)
	}

	if _, err := tx.NewInsert().Model(&order).Returning("seq").Exec(ctx); err != nil {
		return Placed{}, fmt.Errorf("record an order in the market of game %s: %w", gameID, err)
	}
	if len(trades) > 0 {
		if _, err := tx.NewInsert().Model(&trades).Exec(ctx); err != nil {
			return Placed{}, fmt.Errorf("record the trades of order %s: %w", order.ID, err)
		}
		if err := fillMakers(ctx, tx, filled, now); err != nil {
			return Placed{}, err
		}
	}
	if err := s.write(ctx, tx, gameID, m, fx); err != nil {
		return Placed{}, err
	}
	if s.Achievements != nil && len(trades) > 0 {
		if err := s.Achievements.UnlockEach(ctx, tx, users, AchievementTrader); err != nil {
			return Placed{}, err
		}
	}
	var last *Trade
	if len(trades) > 0 {
		last = &trades[len(trades)-1]
	}
	if err := s.announce(ctx, tx, gameID, m, last); err != nil {
		return Placed{}, err
	}
	out.Order = order
	return out, nil
}

// crossing loads the resting orders that taker can cross into a book (a
// buy of X at q: sells of X at q or less and buys of the other outcome at
// One-q or more; a sell the other way round) and returns it with the ids
// of those orders by seq.
func (s *Service) crossing(ctx context.Context, tx bun.Tx, gameID string, m marketRow, taker engine.Order) (*engine.Book, map[int64]string, error) {
	x, y := m.Outcomes[taker.Outcome], m.Outcomes[1-taker.Outcome]
	q := taker.Price
	cond := "(side = 'sell' AND outcome_id = ? AND price_minor <= ?) OR (side = 'buy' AND outcome_id = ? AND price_minor >= ?)"
	if taker.Side == engine.Sell {
		cond = "(side = 'buy' AND outcome_id = ? AND price_minor >= ?) OR (side = 'sell' AND outcome_id = ? AND price_minor <= ?)"
	}
	var rows []Order
	if err := tx.NewSelect().Model(&rows).Column("id", "seq", "user_id", "side", "outcome_id", "price_minor", "shares", "filled_shares").
		Where("game_id = ? AND status = 'open'", gameID).Where(cond, x, q, y, engine.One-q).Order("seq").Scan(ctx); err != nil {
		return nil, nil, fmt.Errorf("load the orders an order crosses in the market of game %s: %w", gameID, err)
	}
	book, ids := engine.New(), make(map[int64]string, len(rows))
	for _, r := range rows {
		if err := book.Rest(r.engineOrder(m)); err != nil {
			return nil, nil, fmt.Errorf("load order %s of the market of game %s: %w", r.ID, gameID, err)
		}
		ids[r.Seq] = r.ID
	}
	return book, ids, nil
}

// holdings reads what users hold in the market.
func (s *Service) holdings(ctx context.Context, tx bun.Tx, gameID string, m marketRow, users []string) (map[slot]*holding, error) {
	var rows []struct {
		UserID    string `bun:"user_id"`
		OutcomeID string `bun:"outcome_id"`
		holding
	}
	if err := tx.NewSelect().Table("market_positions").Column("user_id", "outcome_id").
		ColumnExpr("shares, locked_shares AS locked, cost_minor AS cost").
		Where("game_id = ? AND user_id IN (?)", gameID, bun.List(users)).Scan(ctx, &rows); err != nil {
		return nil, fmt.Errorf("read positions in the market of game %s: %w", gameID, err)
	}
	out := make(map[slot]*holding, len(rows))
	for _, r := range rows {
		h := r.holding
		out[slot{r.UserID, m.outcome(r.OutcomeID)}] = &h
	}
	return out, nil
}

// fillMakers adds the shares filled to the resting orders (by seq).
func fillMakers(ctx context.Context, tx bun.Tx, filled map[int64]int64, now time.Time) error {
	seqs, shares := make([]int64, 0, len(filled)), make([]int64, 0, len(filled))
	for seq, n := range filled {
		seqs, shares = append(seqs, seq), append(shares, n)
	}
	_, err := tx.NewRaw(`UPDATE market_orders AS o SET filled_shares = o.filled_shares + f.n, updated_at = ?,
		status = CASE WHEN o.filled_shares + f.n = o.shares THEN 'filled' ELSE 'open' END
		FROM unnest(?::bigint[], ?::bigint[]) AS f(seq, n) WHERE o.seq = f.seq`,
		now, pgdialect.Array(seqs), pgdialect.Array(shares)).Exec(ctx)
	if err != nil {
		return fmt.Errorf("fill %d resting orders: %w", len(seqs), err)
	}
	return nil
}

// write stores the holdings fx changed and its ledger postings.
func (s *Service) write(ctx context.Context, tx bun.Tx, gameID string, m marketRow, fx *effects) error {
	if len(fx.holdings) > 0 {
		var users, outcomes []string
		var shares, locked, cost []int64
		for k, h := range fx.holdings {
			users, outcomes = append(users, k.User), append(outcomes, m.Outcomes[k.Outcome])
			shares, locked, cost = append(shares, h.Shares), append(locked, h.Locked), append(cost, h.Cost)
		}
		if _, err := tx.NewRaw(`INSERT INTO market_positions (game_id, user_id, outcome_id, shares, locked_shares, cost_minor)
			SELECT ?, * FROM unnest(?::uuid[], ?::uuid[], ?::bigint[], ?::bigint[], ?::bigint[])
			ON CONFLICT (game_id, user_id, outcome_id) DO UPDATE SET shares = EXCLUDED.shares,
				locked_shares = EXCLUDED.locked_shares, cost_minor = EXCLUDED.cost_minor`,
			gameID, pgdialect.Array(users), pgdialect.Array(outcomes), pgdialect.Array(shares), pgdialect.Array(locked),
			pgdialect.Array(cost)).Exec(ctx); err != nil {
			return fmt.Errorf("write positions in the market of game %s: %w", gameID, err)
		}
	}
	if _, err := money.PostAll(ctx, tx, s.rooms, fx.postings); err != nil {
		return err
	}
	return nil
}

// traded updates the last prices and volumes after a trade of outcomeID
// at price: the other outcome's last price is its complement.
func (m *marketRow) traded(outcomeID string, price, shares int64, kind engine.Kind) {
	i := m.outcome(outcomeID)
	m.LastPrice[i], m.LastPrice[1-i] = price, engine.One-price
	m.Volume[i] += shares
	if kind != engine.Transfer { // a pair was minted or merged: both outcomes traded
		m.Volume[1-i] += shares
	}
}

// Cancel cancels an open order of userID and releases what it locks.
// Errors: NOT_FOUND (no such order of that user in that market), CONFLICT
// (filled or cancelled already).
func (s *Service) Cancel(ctx context.Context, userID, gameID, orderID string) (Order, error) {
	gameID, ok := domain.CanonicalID(gameID)
	if !ok {
		return Order{}, domain.Errorf(domain.CodeNotFound, "no such game")
	}
	orderID, ok = domain.CanonicalID(orderID)
	if !ok {
		return Order{}, domain.Errorf(domain.CodeNotFound, "no such order")
	}
	var out Order
	err := db.Transact(ctx, s.db, func(ctx context.Context, tx bun.Tx) error {
		_, m, err := s.lock(ctx, tx, gameID)
		if err != nil {
			return err
		}
		out = Order{}
		err = tx.NewSelect().Model(&out).Where("id = ? AND game_id = ? AND user_id = ?", orderID, gameID, userID).Scan(ctx)
		if errors.Is(err, sql.ErrNoRows) {
			return domain.Errorf(domain.CodeNotFound, "no such order")
		}
		if err != nil {
			return fmt.Errorf("read order %s: %w", orderID, err)
		}
		if out.Status != OrderOpen {
			return domain.Errorf(domain.CodeConflict, "the order is %s already", out.Status)
		}
		holdings, err := s.holdings(ctx, tx, gameID, m, []string{userID})
		if err != nil {
			return err
		}
		fx := newEffects(gameID, orderID, holdings)
		fx.release(out.engineOrder(m), out.Shares-out.FilledShares, "market-cancel:"+orderID)
		out.Status, out.UpdatedAt = OrderCancelled, s.now()
		if _, err := tx.NewUpdate().Model(&out).Column("status", "updated_at").WherePK().Exec(ctx); err != nil {
			return fmt.Errorf("cancel order %s: %w", orderID, err)
		}
		if err := s.write(ctx, tx, gameID, m, fx); err != nil {
			return err
		}
		return s.announce(ctx, tx, gameID, m, nil)
	})
	return out, err
}

func (o Order) engineOrder(m marketRow) engine.Order {
	side := engine.Buy
	if o.Side == "sell" {
		side = engine.Sell
	}
	return engine.Order{ID: o.Seq, Owner: o.UserID, Side: side, Outcome: m.outcome(o.OutcomeID), Price: o.PriceMinor,
		Shares: o.Shares - o.FilledShares}
}
