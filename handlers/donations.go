package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"wager/domain"
	"wager/web"
)

// DonationRequest is the body of POST /games/:id/donations/prepare.
type DonationRequest struct {
	AmountMinor int64 `json:"amountMinor" minimum:"10000" doc:"at least 10000 (0.01 USDC)"`
}

func (a *App) prepareDonation(c echo.Context) error {
	var req DonationRequest
	if err := web.BindJSON(c, &req); err != nil {
		return err
	}
	u, err := a.currentUser(c)
	if err != nil {
		return err
	}
	p, err := a.Pot.PrepareDonation(c.Request().Context(), u, c.Param("id"), req.AmountMinor)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, p)
}

func (a *App) submitDonation(c echo.Context) error {
	var req SubmitRequest
	if err := web.BindJSON(c, &req); err != nil {
		return err
	}
	r, err := a.Pot.SubmitDonation(c.Request().Context(), web.IdentityOf(c).UserID, c.Param("id"), req.IntentID, req.SignedTransaction)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, r)
}

func (a *App) gamePot(c echo.Context) error {
	p, err := a.Pot.PotOf(c.Request().Context(), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, p)
}

func (a *App) gameDonations(c echo.Context) error {
	v := domain.Validator{}
	limit := pageLimit(v, c)
	if err := v.Err(); err != nil {
		return err
	}
	ds, err := a.Pot.Donations(c.Request().Context(), c.Param("id"), limit, c.QueryParam("before"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, ds)
}
