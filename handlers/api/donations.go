package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"wager/domain"
	"wager/domain/money"
	"wager/domain/settlement"
	"wager/domain/users"
	"wager/web"
)

// Donations serves donations to games' pots.
type Donations struct {
	Users      *users.Service
	Settlement *settlement.Service
}

// Routes registers donations into a game's escrow and its pot.
func (h *Donations) Routes(r Router) {
	r.JSON(http.MethodPost, "/games/:id/donations/prepare", h.prepareDonation, moneyIn(web.Op{Tag: "spectate", Auth: web.AuthRequired,
		Summary:     "Prepare a donation from your wallet into the game's escrow",
		Description: "Spectators of an active game only (403 for its players); at least 10000 minor units. Sign the transaction and submit it.",
		Request:     DonationRequest{}, Response: money.Prepared{}, Errors: []int{http.StatusForbidden, http.StatusConflict, http.StatusNotFound}}))
	r.JSON(http.MethodPost, "/games/:id/donations/submit", h.submitDonation, web.Op{Tag: "spectate", Auth: web.AuthRequired,
		Summary: "Submit the signed donation; answers once it is confirmed and in the pot",
		Description: "The room gets game:donation, game:pot and a system chat message. A donation that lands after the game ended " +
			"answers refunded: true and is refunded on chain to the wallet that paid it, never to the platform balance. " +
			"Submitting the same intent again moves nothing more. " + feePayerBudgets,
		Request: SubmitRequest{}, Response: settlement.DonationResult{}, Errors: []int{http.StatusConflict, http.StatusNotFound, http.StatusTooManyRequests}})
	r.JSON(http.MethodGet, "/games/:id/pot", h.gamePot, web.Op{Tag: "spectate", Auth: web.AuthNone,
		Summary: "The game's pot: stakes, donations, and what the winner would get", Response: settlement.Pot{}, Errors: []int{http.StatusNotFound}})
	r.JSON(http.MethodGet, "/games/:id/donations", h.gameDonations, web.Op{Tag: "spectate", Auth: web.AuthNone,
		Summary: "The game's donations, newest first", Response: []settlement.Donation{}, Errors: []int{http.StatusBadRequest, http.StatusNotFound},
		Query: []web.Param{web.PageLimit,
			web.PageBefore("a donation's signature: only older ones (the last signature of the previous page)")}})
}

// DonationRequest is the body of POST /games/:id/donations/prepare.
type DonationRequest struct {
	AmountMinor int64 `json:"amountMinor" minimum:"10000" doc:"at least 10000 (0.01 USDC)"`
}

func (h *Donations) prepareDonation(c echo.Context) error {
	var req DonationRequest
	if err := web.BindJSON(c, &req); err != nil {
		return err
	}
	u, err := currentUser(c, h.Users)
	if err != nil {
		return err
	}
	p, err := h.Settlement.PrepareDonation(c.Request().Context(), u, c.Param("id"), req.AmountMinor)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, p)
}

func (h *Donations) submitDonation(c echo.Context) error {
	var req SubmitRequest
	if err := web.BindJSON(c, &req); err != nil {
		return err
	}
	r, err := h.Settlement.SubmitDonation(c.Request().Context(), web.IdentityOf(c).UserID, c.Param("id"), req.IntentID, req.SignedTransaction)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, r)
}

func (h *Donations) gamePot(c echo.Context) error {
	p, err := h.Settlement.PotOf(c.Request().Context(), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, p)
}

func (h *Donations) gameDonations(c echo.Context) error {
	v := domain.Validator{}
	limit := pageLimit(v, c)
	if err := v.Err(); err != nil {
		return err
	}
	ds, err := h.Settlement.Donations(c.Request().Context(), c.Param("id"), limit, c.QueryParam("before"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, ds)
}
