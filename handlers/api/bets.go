package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"wager/domain/money"
	"wager/domain/settlement"
	"wager/domain/users"
	"wager/web"
)

// Bets serves the betting pools of games.
type Bets struct {
	Users      *users.Service
	Settlement *settlement.Service
}

// Routes registers a game's betting pools.
func (h *Bets) Routes(r Router) {
	r.JSON(http.MethodPost, "/games/:id/bets/prepare", h.prepareBet, moneyIn(web.Op{Tag: "spectate", Auth: web.AuthRequired,
		Summary: "Prepare a bet on a player from your wallet into the game's escrow",
		Description: "Open to signed-in non-players while the game is active and its first round is not decided " +
			"(rps: the first reveal; connect four: the first move); after that 409 BETTING_CLOSED.",
		Request: BetRequest{}, Response: money.Prepared{}, Errors: []int{http.StatusBadRequest, http.StatusForbidden, http.StatusConflict, http.StatusNotFound}}))
	r.JSON(http.MethodPost, "/games/:id/bets/submit", h.submitBet, web.Op{Tag: "spectate", Auth: web.AuthRequired,
		Summary: "Submit the signed bet; answers once it is confirmed and in the pool",
		Description: "The room gets game:bet with the new pool totals. A bet that cannot join its pool when it lands (betting " +
			"closed, the pool's cap, a link to a player, a player protection refusal) answers refunded: true and is refunded on " +
			"chain to the wallet that paid it, never to the platform balance. Submitting the same intent again moves nothing more. " +
			feePayerBudgets,
		Request: SubmitRequest{}, Response: settlement.BetResult{}, Errors: []int{http.StatusConflict, http.StatusNotFound, http.StatusTooManyRequests}})
	r.JSON(http.MethodGet, "/games/:id/bets", h.gameBets, web.Op{Tag: "spectate", Auth: web.AuthNone,
		Summary: "The game's betting pools and bets, newest first", Response: settlement.Bets{}, Errors: []int{http.StatusNotFound}})
}

// BetRequest is the body of POST /games/:id/bets/prepare.
type BetRequest struct {
	OnUserID    string `json:"onUserId" doc:"the player the bet is on"`
	AmountMinor int64  `json:"amountMinor" minimum:"10000" doc:"at least 10000 (0.01 USDC)"`
}

func (h *Bets) prepareBet(c echo.Context) error {
	var req BetRequest
	if err := web.BindJSON(c, &req); err != nil {
		return err
	}
	u, err := currentUser(c, h.Users)
	if err != nil {
		return err
	}
	p, err := h.Settlement.PrepareBet(c.Request().Context(), u, c.Param("id"), req.OnUserID, req.AmountMinor)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, p)
}

func (h *Bets) submitBet(c echo.Context) error {
	var req SubmitRequest
	if err := web.BindJSON(c, &req); err != nil {
		return err
	}
	r, err := h.Settlement.SubmitBet(c.Request().Context(), web.IdentityOf(c).UserID, c.Param("id"), req.IntentID, req.SignedTransaction)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, r)
}

func (h *Bets) gameBets(c echo.Context) error {
	b, err := h.Settlement.BetsOf(c.Request().Context(), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, b)
}
