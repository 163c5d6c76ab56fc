package market

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"

	"wager/db"
	"wager/domain"
	"wager/domain/market/engine"
	"wager/domain/money"
)

// validate checks an order's fields and returns its time in force.
func (r OrderRequest) validate(outcomes []string) (engine.TIF, error) {
	fields := map[string]string{}
	if !slices.Contains(outcomes, r.OutcomeID) {
		fields["outcomeId"] = "must be the userId of one of the game's players"
	}
	if r.PriceMinor < engine.MinPrice || r.PriceMinor > engine.MaxPrice || r.PriceMinor%engine.Tick != 0 {
		fields["priceMinor"] = "must be from 0.01 to 0.99 USDC a share, in whole cents"
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

// holdings reads what users hold in the market.
func (s *Service) holdings(ctx context.Context, tx db.Tx, gameID string, m marketRow, users []string) (map[slot]*holding, error) {
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
func fillMakers(ctx context.Context, tx db.Tx, filled map[int64]int64, now time.Time) error {
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
func (s *Service) write(ctx context.Context, tx db.Tx, gameID string, m marketRow, fx *effects) error {
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
	if _, err := money.PostAll(ctx, tx, s.events, fx.stamped(s.now())); err != nil {
		return err
	}
	return nil
}

// traded updates the last prices, volumes, outstanding pairs and money
// paid after a trade of outcomeID at price: the other outcome's last price
// is its complement.
func (m *marketRow) traded(outcomeID string, price, shares int64, kind engine.Kind) {
	i := m.outcome(outcomeID)
	m.LastPrice[i], m.LastPrice[1-i] = price, engine.One-price
	m.Volume[i] += shares
	if kind != engine.Transfer { // a pair was minted or merged: both outcomes traded
		m.Volume[1-i] += shares
	}
	switch kind {
	case engine.Transfer:
		m.Paid += price * shares
	case engine.Mint: // both buyers paid: a whole pair
		m.Paid += engine.One * shares
		m.Pairs += shares
	case engine.Merge:
		m.Pairs -= shares
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
	err := db.Transact(ctx, s.db, func(ctx context.Context, tx db.Tx) error {
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

// LockBuyMarkets locks, for tx and in id order, the games whose markets
// hold open buy orders of userID: what CancelBuysOf would lock first.
func (s *Service) LockBuyMarkets(ctx context.Context, tx db.Tx, userID string) error {
	if _, err := tx.ExecContext(ctx, `SELECT 1 FROM games WHERE id IN (SELECT game_id FROM market_orders
		WHERE user_id = ? AND side = 'buy' AND status = 'open') ORDER BY id FOR NO KEY UPDATE`, userID); err != nil {
		return fmt.Errorf("lock the markets of the open buys of %s: %w", userID, err)
	}
	return nil
}

// CancelBuysOf cancels every open buy order of userID, in every market,
// and releases what they lock, in tx (a time-out or self-exclusion
// starts). Each market is locked as an order locks it (its game, then
// itself), in the order of the games' ids, before the balance moves.
func (s *Service) CancelBuysOf(ctx context.Context, tx db.Tx, userID string) error {
	var games []string
	if err := tx.NewRaw(`SELECT DISTINCT game_id FROM market_orders WHERE user_id = ? AND side = 'buy' AND status = 'open' ORDER BY game_id`,
		userID).Scan(ctx, &games); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("find the open buy orders of %s: %w", userID, err)
	}
	now := s.now()
	for _, gameID := range games {
		_, m, err := s.lock(ctx, tx, gameID)
		if err != nil {
			return err
		}
		var open []Order
		if err := tx.NewRaw(`UPDATE market_orders SET status = 'cancelled', updated_at = ?
			WHERE game_id = ? AND user_id = ? AND side = 'buy' AND status = 'open'
			RETURNING id, seq, user_id, side, outcome_id, price_minor, shares, filled_shares`, now, gameID, userID).
			Scan(ctx, &open); err != nil && !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("cancel the buy orders of %s in the market of game %s: %w", userID, gameID, err)
		}
		fx := newEffects(gameID, "", map[slot]*holding{})
		for _, o := range open {
			fx.release(o.engineOrder(m), o.Shares-o.FilledShares, "market-cancel:"+o.ID)
		}
		if _, err := money.PostAll(ctx, tx, s.events, fx.stamped(now)); err != nil {
			return err
		}
		if err := s.announce(ctx, tx, gameID, m, nil); err != nil {
			return err
		}
	}
	return nil
}

func (o Order) engineOrder(m marketRow) engine.Order {
	side := engine.Buy
	if o.Side == "sell" {
		side = engine.Sell
	}
	return engine.Order{ID: o.Seq, Owner: o.UserID, Side: side, Outcome: m.outcome(o.OutcomeID), Price: o.PriceMinor,
		Shares: o.Shares - o.FilledShares}
}
