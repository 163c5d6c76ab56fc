package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"wager/domain"
	"wager/domain/game"
	"wager/domain/pot"
	"wager/web"
)

// DonationRequest is the body of POST /games/:id/donations/prepare.
type DonationRequest struct {
	AmountMinor int64 `json:"amountMinor" doc:"at least 10000 (0.01 USDC)"`
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

// GameDetail is a game's public metadata with what anyone needs to check
// its money on chain.
type GameDetail struct {
	game.Meta
	EscrowAddress string         `json:"escrowAddress" doc:"the game's escrow: donations are sent here on chain"`
	Pot           pot.Pot        `json:"pot"`
	Settlement    []pot.Transfer `json:"settlement" doc:"on-chain transfers of the settlement, with their signatures"`
}

func (a *App) gameDetail(c echo.Context) (GameDetail, error) {
	ctx := c.Request().Context()
	m, err := a.Games.Metadata(ctx, c.Param("id"))
	if err != nil {
		return GameDetail{}, err
	}
	p, err := a.Pot.PotOf(ctx, m.GameID)
	if err != nil {
		return GameDetail{}, err
	}
	transfers, err := a.Pot.Transfers(ctx, m.GameID)
	if err != nil {
		return GameDetail{}, err
	}
	return GameDetail{Meta: m, EscrowAddress: a.Pot.EscrowAddress(m.GameID).String(), Pot: p, Settlement: transfers}, nil
}
