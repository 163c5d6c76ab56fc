package market

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"

	"wager.example.com/sdk/gamerecord"
	"wager/db"
	"wager/domain"
	"wager/domain/game"
	"wager/domain/market/engine"
	"wager/domain/money"
)

// Resolve closes and resolves a finished game's market in tx (the game's
// settlement transaction, or an admin's review of a held market): every
// open order is cancelled and what it locks released, then a share of the
// winner pays One and of the loser nothing, or each pays half after a
// draw, a cancellation or a void (winner ""). Holders get a
// market_resolved notification. A game whose market never opened costs
// one statement: no order can open it afterwards, since orders take the
// game's row, which tx holds, and find the game over. A second call
// changes nothing.
func (s *Service) Resolve(ctx context.Context, tx db.Tx, gameID, winner string) error {
	m, ok, err := s.close(ctx, tx, gameID)
	if err != nil || !ok {
		return err
	}
	m.Resolution = []int64{engine.One / 2, engine.One / 2}
	if i := m.outcome(winner); i >= 0 {
		m.Resolution[i], m.Resolution[1-i] = engine.One, 0
	}
	m.Status = StatusResolved
	var holders []struct {
		UserID     string `bun:"user_id"`
		Redeemable int64  `bun:"redeemable"`
	}
	if err := tx.NewRaw(`WITH resolved AS (
			UPDATE markets SET status = 'resolved', resolution = ?, resolved_at = ? WHERE game_id = ? RETURNING 1
		)
		SELECT user_id, sum(shares * CASE WHEN outcome_id = ? THEN ?::bigint ELSE ?::bigint END) AS redeemable
		FROM market_positions WHERE game_id = ? AND shares > 0 GROUP BY user_id ORDER BY user_id`,
		pgdialect.Array(m.Resolution), s.now(), gameID, m.Outcomes[0], m.Resolution[0], m.Resolution[1], gameID).
		Scan(ctx, &holders); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("resolve the market of game %s: %w", gameID, err)
	}
	if s.notify != nil {
		for _, h := range holders {
			if err := s.notify.Send(ctx, tx, h.UserID, NoticeResolved, ResolvedNotice{GameID: gameID, WinnerID: winner,
				RedeemableMinor: h.Redeemable}); err != nil {
				return err
			}
		}
	}
	return s.announce(ctx, tx, gameID, m, nil)
}

// Hold closes a finished game's market in tx without resolving it: every
// open order is cancelled and what it locks released, and the market is
// held (no order, no redemption) until Resolve, when an admin releases or
// voids it. It returns the market's holders (everyone with shares), to be
// told; a game without a market returns none.
func (s *Service) Hold(ctx context.Context, tx db.Tx, gameID string) ([]string, error) {
	m, ok, err := s.close(ctx, tx, gameID)
	if err != nil || !ok {
		return nil, err
	}
	m.Status = StatusHeld
	var holders []string
	if err := tx.NewRaw(`WITH held AS (UPDATE markets SET status = 'held' WHERE game_id = ? RETURNING 1)
		SELECT DISTINCT user_id FROM market_positions WHERE game_id = ? AND shares > 0 ORDER BY user_id`, gameID, gameID).
		Scan(ctx, &holders); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("hold the market of game %s: %w", gameID, err)
	}
	return holders, s.announce(ctx, tx, gameID, m, nil)
}

// close locks a finished game's market that is open or held, cancels its
// open orders and releases what they lock and what open sells lock of
// positions. It reports false when there is no such market, or it is
// resolved already.
func (s *Service) close(ctx context.Context, tx db.Tx, gameID string) (marketRow, bool, error) {
	var opened bool
	if err := tx.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM markets WHERE game_id = ? AND status IN ('open', 'held'))", gameID).
		Scan(&opened); err != nil {
		return marketRow{}, false, fmt.Errorf("look for the market of game %s: %w", gameID, err)
	}
	if !opened {
		return marketRow{}, false, nil
	}
	_, m, err := s.lock(ctx, tx, gameID)
	if err != nil || len(m.Outcomes) != 2 || m.Status == StatusResolved {
		return m, false, err
	}
	var open []Order
	if err := tx.NewRaw(`WITH unlocked AS (
			UPDATE market_positions SET locked_shares = 0 WHERE game_id = ? AND locked_shares > 0 RETURNING 1
		)
		UPDATE market_orders SET status = 'cancelled', updated_at = ? WHERE game_id = ? AND status = 'open'
		RETURNING id, seq, user_id, side, outcome_id, price_minor, shares, filled_shares`, gameID, s.now(), gameID).Scan(ctx, &open); err != nil &&
		!errors.Is(err, sql.ErrNoRows) {
		return m, false, fmt.Errorf("cancel the open orders of the market of game %s: %w", gameID, err)
	}
	fx := newEffects(gameID, "", map[slot]*holding{})
	for _, o := range open {
		if o.Side == "buy" {
			fx.release(o.engineOrder(m), o.Shares-o.FilledShares, "market-cancel:"+o.ID)
		}
	}
	if _, err := money.PostAll(ctx, tx, s.events, fx.stamped(s.now())); err != nil {
		return m, false, err
	}
	return m, true, nil
}

// Redeem pays userID what their shares in a resolved market are worth, to
// their available balance, once: the shares are gone after it, so a second
// call (or a concurrent one) pays 0. Errors: NOT_FOUND, CONFLICT (the
// market is not resolved yet).
func (s *Service) Redeem(ctx context.Context, userID, gameID string) (Redeemed, error) {
	g, _, err := s.players(ctx, gameID)
	if err != nil {
		return Redeemed{}, err
	}
	var out Redeemed
	err = db.Transact(ctx, s.db, func(ctx context.Context, tx db.Tx) error {
		out = Redeemed{}
		var m marketRow
		err := tx.NewSelect().Table("markets").Column("outcomes", "status", "resolution").Where("game_id = ?", g.GameID).Scan(ctx, &m)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("read the market of game %s: %w", g.GameID, err)
		}
		switch {
		case m.Status == StatusHeld:
			return domain.Errorf(domain.CodeConflict, "the market is held while the game's end is reviewed: it pays out once an admin releases or voids it")
		case m.Status == StatusResolved:
		case g.Status == game.StatusActive:
			return domain.Errorf(domain.CodeConflict, "the market pays out once the game is over")
		default:
			return nil // the game is over and its market never opened: nothing to pay
		}
		var paid []struct {
			Shares int64 `bun:"shares"`
			Payout int64 `bun:"payout"`
		}
		// The rows' locks make a concurrent redemption wait and then find
		// no shares left.
		if err := tx.NewRaw(`UPDATE market_positions AS p SET shares = 0,
				redeemed_minor = coalesce(p.redeemed_minor, 0) + p.shares * CASE WHEN p.outcome_id = ? THEN ?::bigint ELSE ?::bigint END
			FROM (SELECT outcome_id, shares FROM market_positions WHERE game_id = ? AND user_id = ? AND shares > 0 FOR UPDATE) AS old
			WHERE p.game_id = ? AND p.user_id = ? AND p.outcome_id = old.outcome_id
			RETURNING old.shares, old.shares * CASE WHEN p.outcome_id = ? THEN ?::bigint ELSE ?::bigint END AS payout`,
			m.Outcomes[0], m.Resolution[0], m.Resolution[1], g.GameID, userID, g.GameID, userID,
			m.Outcomes[0], m.Resolution[0], m.Resolution[1]).Scan(ctx, &paid); err != nil && !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("redeem the shares of %s in the market of game %s: %w", userID, g.GameID, err)
		}
		for _, p := range paid {
			out.RedeemedMinor += p.Payout
		}
		if out.RedeemedMinor == 0 {
			return nil
		}
		if _, err := money.Post(ctx, tx, s.events, money.Posting{Kind: "market_redeem", Reference: "market-redeem:" + g.GameID + ":" + userID,
			Memo: "market of game " + g.GameID, At: s.now(), Entries: []money.Entry{{Account: money.Market(g.GameID), Amount: -out.RedeemedMinor},
				{Account: money.Available(userID), Amount: out.RedeemedMinor}}}); err != nil {
			return err
		}
		return money.RecordActivity(ctx, tx, money.Activity{UserID: userID, Kind: money.KindMarketPayout, AmountMinor: out.RedeemedMinor,
			Counterparty: "game " + g.GameID, GameID: g.GameID}, s.now())
	})
	return out, err
}

// ReadOpen adds to reads what buyers paid in a game's open market (0 when
// it has none) and who holds its shares, for the game's end.
func (s *Service) ReadOpen(reads *db.Reads, gameID string, paid *int64, holders *[]string) {
	reads.Column(paid, "SELECT coalesce((SELECT paid_minor FROM markets WHERE game_id = ? AND status = 'open'), 0)", gameID)
	reads.Column(db.JSON(holders), "SELECT coalesce(json_agg(DISTINCT user_id), '[]') FROM market_positions WHERE game_id = ?", gameID)
}

// Payouts are what a resolved market pays its holders, one each, in user
// id order: their shares at the resolution's prices, redeemed or not
// (gamerecord.PayoutMarket). A market not resolved (none, or held for
// review) pays nothing yet.
func (s *Service) Payouts(ctx context.Context, idb bun.IDB, gameID string) ([]gamerecord.Payout, error) {
	out := []gamerecord.Payout{}
	if err := idb.NewRaw(`SELECT user_id, amount_minor, ? AS kind FROM (
			SELECT p.user_id, sum(coalesce(p.redeemed_minor, 0) + p.shares *
				CASE WHEN p.outcome_id = m.outcomes[1] THEN m.resolution[1] ELSE m.resolution[2] END) AS amount_minor
			FROM market_positions AS p JOIN markets AS m ON m.game_id = p.game_id
			WHERE p.game_id = ? AND m.status = 'resolved' GROUP BY p.user_id
		) AS paid WHERE amount_minor > 0 ORDER BY user_id`, gamerecord.PayoutMarket, gameID).Scan(ctx, &out); err != nil &&
		!errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("read what the market of game %s paid: %w", gameID, err)
	}
	return out, nil
}
