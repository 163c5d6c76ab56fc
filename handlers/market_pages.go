package handlers

import (
	"context"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"wager/domain/market"
	"wager/domain/money"
	"wager/views"
	"wager/web"
)

// marketPages serve a game page's market fragment.
type marketPages struct {
	market *market.Service
}

// marketMine is the viewer's part of a market in words.
func marketMine(ctx context.Context, markets *market.Service, userID string, m market.View) (*views.MarketMine, error) {
	positions, err := markets.Positions(ctx, userID, m.GameID)
	if err != nil {
		return nil, err
	}
	orders, err := markets.Orders(ctx, userID, m.GameID, 50, "")
	if err != nil {
		return nil, err
	}
	names, last := map[string]string{}, map[string]*int64{}
	for _, o := range m.Outcomes {
		names[o.OutcomeID], last[o.OutcomeID] = o.Username, o.LastPriceMinor
	}
	out := &views.MarketMine{}
	var redeemable int64
	for _, p := range positions {
		switch {
		case p.Shares > 0:
			out.Positions = append(out.Positions, positionWords(p, names[p.OutcomeID], last[p.OutcomeID], m.Resolution))
			redeemable += p.Shares * m.Resolution[p.OutcomeID]
		case p.RedeemedMinor != nil && *p.RedeemedMinor > 0:
			out.Positions = append(out.Positions, "Shares of "+names[p.OutcomeID]+" redeemed for "+money.FormatUSDC(*p.RedeemedMinor)+" USDC")
		}
	}
	if m.Status == market.StatusResolved && redeemable > 0 {
		out.Redeemable = "Redeem " + money.FormatUSDC(redeemable) + " USDC"
	}
	for _, o := range orders {
		out.Orders = append(out.Orders, views.MarketOrderLine{ID: o.ID, Text: orderWords(o, names[o.OutcomeID]), Open: o.Status == market.OrderOpen})
	}
	return out, nil
}

// positionWords: "10 shares of alice · 2 in open orders · worth 6.2 USDC at
// the last price · cost 6 USDC", or once resolved what they pay.
func positionWords(p market.Position, name string, last *int64, resolution map[string]int64) string {
	var b strings.Builder
	b.WriteString(strconv.FormatInt(p.Shares, 10) + " shares of " + name)
	if resolution != nil {
		b.WriteString(" · pay " + money.FormatUSDC(p.Shares*resolution[p.OutcomeID]) + " USDC")
		return b.String()
	}
	if p.LockedShares > 0 {
		b.WriteString(" · " + strconv.FormatInt(p.LockedShares, 10) + " in open orders")
	}
	if last != nil {
		b.WriteString(" · worth " + money.FormatUSDC(p.Shares**last) + " USDC at the last price")
	}
	b.WriteString(" · cost " + money.FormatUSDC(p.CostMinor) + " USDC")
	return b.String()
}

// orderWords: "Buy 5 of alice at 0.6 · 2 filled · open".
func orderWords(o market.Order, name string) string {
	verb := "Buy"
	if o.Side == "sell" {
		verb = "Sell"
	}
	s := verb + " " + strconv.FormatInt(o.Shares, 10) + " of " + name + " at " + money.FormatUSDC(o.PriceMinor)
	if o.FilledShares > 0 && o.FilledShares < o.Shares {
		s += " · " + strconv.FormatInt(o.FilledShares, 10) + " filled"
	}
	return s + " · " + o.Status
}

// gameMarketMine is the viewer's part of a game's market, fetched by the
// page after every change of the market.
func (h *marketPages) gameMarketMine(c echo.Context) error {
	id, err := requireLogin(c)
	if id == nil {
		return err
	}
	ctx := c.Request().Context()
	m, err := h.market.Market(ctx, c.Param("id"))
	if err != nil {
		return err
	}
	mine, err := marketMine(ctx, h.market, id.UserID, m)
	if err != nil {
		return err
	}
	return web.Render(c, http.StatusOK, views.MarketMineSection(mine))
}
