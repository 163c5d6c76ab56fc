package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"wager/domain"
	"wager/domain/market"
	"wager/domain/market/engine"
	"wager/web"
)

// Market serves games' prediction markets.
type Market struct {
	Market *market.Service
}

// Routes registers a game's prediction market.
func (h *Market) Routes(r Router) {
	orderErrors := []int{http.StatusBadRequest, http.StatusForbidden, http.StatusConflict, http.StatusNotFound}
	r.JSON(http.MethodPost, "/games/:id/market/orders/buy", h.buyShares, moneyIn(web.Op{Tag: "market", Auth: web.AuthRequired, Status: http.StatusCreated,
		Summary: "Buy shares of a player in the game's prediction market",
		Description: "A limit order: locks priceMinor x shares of your available balance (409 INSUFFICIENT_FUNDS), matches at the " +
			"resting orders' prices (sells of the same player, and buys of the other player when the prices sum to 1000000 or more: " +
			"a new pair is minted), and the rest stays on the book (GTC) or is cancelled (IOC). Players of the game may not trade (403); " +
			"the market trades while the game is active (409 GAME_NOT_ACTIVE). The room gets game:market.",
		Request: market.OrderRequest{}, Response: market.Placed{}, Errors: orderErrors}))
	r.JSON(http.MethodPost, "/games/:id/market/orders/sell", h.sellShares, web.Op{Tag: "market", Auth: web.AuthRequired, Status: http.StatusCreated,
		Summary: "Sell shares of a player you hold in the game's prediction market",
		Description: "A limit order: locks the shares (409 INSUFFICIENT_SHARES), matches buys of the same player at or above the price " +
			"and sells of the other player when the prices sum to 1000000 or less (the pair is merged and both sellers paid).",
		Request: market.OrderRequest{}, Response: market.Placed{}, Errors: orderErrors})
	r.JSON(http.MethodDelete, "/games/:id/market/orders/:orderId", h.cancelOrder, web.Op{Tag: "market", Auth: web.AuthRequired,
		Summary: "Cancel your open order and release what it locks", Response: market.Order{},
		Description: "Another user's order -> 404; an order filled or cancelled already -> 409 CONFLICT.",
		Errors:      []int{http.StatusConflict, http.StatusNotFound}})
	r.JSON(http.MethodGet, "/games/:id/market", h.gameMarket, web.Op{Tag: "market", Auth: web.AuthNone,
		Summary:  "The game's prediction market: prices per player, the book, the last trade and, once resolved, what shares pay",
		Response: market.View{}, Errors: []int{http.StatusNotFound}})
	r.JSON(http.MethodGet, "/games/:id/market/positions", h.marketPositions, web.Op{Tag: "market", Auth: web.AuthRequired,
		Summary: "What you hold in the game's market, by player", Response: []market.Position{}, Errors: []int{http.StatusNotFound}})
	r.JSON(http.MethodGet, "/games/:id/market/orders", h.marketOrders, web.Op{Tag: "market", Auth: web.AuthRequired,
		Summary: "Your orders in the game's market, open ones first, then newest first", Response: []market.Order{},
		Errors: []int{http.StatusBadRequest, http.StatusNotFound},
		Query:  []web.Param{web.PageLimit, web.PageBefore("an order's id: only the orders listed after it (the last id of the previous page)")}})
	r.JSON(http.MethodGet, "/games/:id/market/trades", h.marketTrades, web.Op{Tag: "market", Auth: web.AuthNone,
		Summary: "The game's trades, newest first, for price charts", Response: []market.Trade{},
		Description: "Each trade as its taker saw it: the player whose shares the taker bought or sold and the price per share; " +
			"the other player's price is 1000000 less it.",
		Errors: []int{http.StatusBadRequest, http.StatusNotFound},
		Query:  []web.Param{web.PageLimit, web.PageBefore("a trade's id: only older ones (the last id of the previous page)")}})
	r.JSON(http.MethodPost, "/games/:id/market/redeem", h.redeemShares, web.Op{Tag: "market", Auth: web.AuthRequired,
		Summary: "Redeem your shares in the resolved market to your available balance",
		Description: "Pays once: a share of the winner 1000000, of the loser 0, each 500000 after a draw or a cancellation; " +
			"again -> redeemedMinor 0. Before the game is over -> 409 CONFLICT.",
		Response: market.Redeemed{}, Errors: []int{http.StatusConflict, http.StatusNotFound}})
}

func (h *Market) buyShares(c echo.Context) error  { return h.placeOrder(c, engine.Buy) }
func (h *Market) sellShares(c echo.Context) error { return h.placeOrder(c, engine.Sell) }

func (h *Market) placeOrder(c echo.Context, side engine.Side) error {
	var req market.OrderRequest
	if err := web.BindJSON(c, &req); err != nil {
		return err
	}
	p, err := h.Market.Place(c.Request().Context(), web.IdentityOf(c).UserID, c.Param("id"), side, req)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, p)
}

func (h *Market) cancelOrder(c echo.Context) error {
	o, err := h.Market.Cancel(c.Request().Context(), web.IdentityOf(c).UserID, c.Param("id"), c.Param("orderId"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, o)
}

func (h *Market) gameMarket(c echo.Context) error {
	v, err := h.Market.Market(c.Request().Context(), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, v)
}

func (h *Market) marketPositions(c echo.Context) error {
	ps, err := h.Market.Positions(c.Request().Context(), web.IdentityOf(c).UserID, c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, ps)
}

func (h *Market) marketOrders(c echo.Context) error {
	v := domain.Validator{}
	limit := pageLimit(v, c)
	if err := v.Err(); err != nil {
		return err
	}
	os, err := h.Market.Orders(c.Request().Context(), web.IdentityOf(c).UserID, c.Param("id"), limit, c.QueryParam("before"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, os)
}

func (h *Market) marketTrades(c echo.Context) error {
	limit, before, err := PageParams(c)
	if err != nil {
		return err
	}
	ts, err := h.Market.Trades(c.Request().Context(), c.Param("id"), limit, before)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, ts)
}

func (h *Market) redeemShares(c echo.Context) error {
	r, err := h.Market.Redeem(c.Request().Context(), web.IdentityOf(c).UserID, c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, r)
}
