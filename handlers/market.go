package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"wager/domain"
	"wager/domain/market"
	"wager/domain/market/engine"
	"wager/web"
)

func (a *App) buyShares(c echo.Context) error  { return a.placeOrder(c, engine.Buy) }
func (a *App) sellShares(c echo.Context) error { return a.placeOrder(c, engine.Sell) }

func (a *App) placeOrder(c echo.Context, side engine.Side) error {
	var req market.OrderRequest
	if err := web.BindJSON(c, &req); err != nil {
		return err
	}
	p, err := a.Market.Place(c.Request().Context(), web.IdentityOf(c).UserID, c.Param("id"), side, req)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, p)
}

func (a *App) cancelOrder(c echo.Context) error {
	o, err := a.Market.Cancel(c.Request().Context(), web.IdentityOf(c).UserID, c.Param("id"), c.Param("orderId"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, o)
}

func (a *App) gameMarket(c echo.Context) error {
	v, err := a.Market.Market(c.Request().Context(), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, v)
}

func (a *App) marketPositions(c echo.Context) error {
	ps, err := a.Market.Positions(c.Request().Context(), web.IdentityOf(c).UserID, c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, ps)
}

func (a *App) marketOrders(c echo.Context) error {
	v := domain.Validator{}
	limit := pageLimit(v, c)
	if err := v.Err(); err != nil {
		return err
	}
	os, err := a.Market.Orders(c.Request().Context(), web.IdentityOf(c).UserID, c.Param("id"), limit, c.QueryParam("before"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, os)
}

func (a *App) marketTrades(c echo.Context) error {
	limit, before, err := pageParams(c)
	if err != nil {
		return err
	}
	ts, err := a.Market.Trades(c.Request().Context(), c.Param("id"), limit, before)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, ts)
}

func (a *App) redeemShares(c echo.Context) error {
	r, err := a.Market.Redeem(c.Request().Context(), web.IdentityOf(c).UserID, c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, r)
}
