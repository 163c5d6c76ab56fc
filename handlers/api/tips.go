package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"wager/domain/money"
	"wager/domain/tips"
	"wager/domain/users"
	"wager/web"
)

// Tips serves tips from one wallet to another.
type Tips struct {
	Users *users.Service
	Tips  *tips.Service
}

// Routes registers tips from wallet to wallet.
func (h *Tips) Routes(r Router) {
	r.JSON(http.MethodPost, "/tips/prepare", h.prepareTip, moneyIn(web.Op{Tag: "tips", Auth: web.AuthRequired,
		Summary: "Prepare a tip: USDC from your wallet straight to another user's wallet",
		Description: "The platform pays the network fee; when the recipient has no USDC account yet your wallet pays its rent. " +
			"At least 10000 minor units; 400 for yourself, 404 for an unknown recipient, game or user; " +
			"a context game must be active and played by you or the recipient, and a context dm must be your conversation with the recipient (its id is the recipient's): else 400 VALIDATION_ERROR naming context; " +
			"403 FORBIDDEN when either blocked the other. Sign the transaction and broadcast it.",
		Request: TipRequest{}, Response: money.Prepared{}, Errors: []int{http.StatusForbidden, http.StatusConflict, http.StatusNotFound}}))
	r.JSON(http.MethodPost, "/tips/broadcast", h.broadcastTip, web.Op{Tag: "tips", Auth: web.AuthRequired,
		Summary: "Broadcast the signed tip; answers once it is confirmed",
		Description: "The recipient gets a tip notification; a tip with a context is announced in that chat by a system message " +
			"(metadata kind tip and amountMinor), which the answer carries (null without a context). Broadcasting the same intent again moves nothing more and answers the same. " + feePayerBudgets,
		Request: SubmitRequest{}, Response: tips.Result{}, Errors: []int{http.StatusConflict, http.StatusNotFound, http.StatusTooManyRequests}})
}

// TipRequest is the body of POST /tips/prepare.
type TipRequest struct {
	ToUserID    string        `json:"toUserId" doc:"the user to tip"`
	AmountMinor int64         `json:"amountMinor" minimum:"10000" doc:"at least 10000 (0.01 USDC)"`
	Context     *tips.Context `json:"context,omitempty" doc:"the chat the tip is given in, where it is announced; leave out for none"`
}

func (h *Tips) prepareTip(c echo.Context) error {
	var req TipRequest
	if err := web.BindJSON(c, &req); err != nil {
		return err
	}
	u, err := currentUser(c, h.Users)
	if err != nil {
		return err
	}
	p, err := h.Tips.Prepare(c.Request().Context(), u, req.ToUserID, req.AmountMinor, req.Context)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, p)
}

func (h *Tips) broadcastTip(c echo.Context) error {
	var req SubmitRequest
	if err := web.BindJSON(c, &req); err != nil {
		return err
	}
	r, err := h.Tips.Broadcast(c.Request().Context(), web.IdentityOf(c).UserID, req.IntentID, req.SignedTransaction)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, r)
}
