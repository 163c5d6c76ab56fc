package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"wager/web"
)

// BetRequest is the body of POST /games/:id/bets/prepare.
type BetRequest struct {
	OnUserID    string `json:"onUserId" doc:"the player the bet is on"`
	AmountMinor int64  `json:"amountMinor" minimum:"10000" doc:"at least 10000 (0.01 USDC)"`
}

func (a *App) prepareBet(c echo.Context) error {
	var req BetRequest
	if err := web.BindJSON(c, &req); err != nil {
		return err
	}
	u, err := a.currentUser(c)
	if err != nil {
		return err
	}
	p, err := a.Pot.PrepareBet(c.Request().Context(), u, c.Param("id"), req.OnUserID, req.AmountMinor)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, p)
}

func (a *App) submitBet(c echo.Context) error {
	var req SubmitRequest
	if err := web.BindJSON(c, &req); err != nil {
		return err
	}
	r, err := a.Pot.SubmitBet(c.Request().Context(), web.IdentityOf(c).UserID, c.Param("id"), req.IntentID, req.SignedTransaction)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, r)
}

func (a *App) gameBets(c echo.Context) error {
	b, err := a.Pot.BetsOf(c.Request().Context(), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, b)
}
