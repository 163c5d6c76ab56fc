package handlers

import (
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"wager/domain"
	"wager/domain/auth"
	"wager/domain/money"
	"wager/domain/users"
	"wager/web"
)

// currentUser loads the signed-in user.
func (a *App) currentUser(c echo.Context) (users.User, error) {
	return a.Users.ByID(c.Request().Context(), web.IdentityOf(c).UserID)
}

func (a *App) walletBalance(c echo.Context) error {
	u, err := a.currentUser(c)
	if err != nil {
		return err
	}
	b, err := a.Money.BalanceOf(c.Request().Context(), u)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, b)
}

// TransferRequest is the body of POST /wallets/transfer/prepare.
type TransferRequest struct {
	ToAddress   string `json:"toAddress" doc:"base58 wallet address; the balance's depositAddress credits your platform balance"`
	AmountMinor int64  `json:"amountMinor" minimum:"10000" maximum:"1000000000000" doc:"USDC minor units (1 USDC = 1000000); at least 10000 (0.01 USDC)"`
}

func (a *App) prepareTransfer(c echo.Context) error {
	var req TransferRequest
	if err := web.BindJSON(c, &req); err != nil {
		return err
	}
	v := domain.Validator{}
	to, err := auth.ParseWallet("toAddress", req.ToAddress)
	if err != nil {
		v.Check(false, "toAddress", "must be a base58 Solana address")
	}
	if err := money.CheckAmount("amountMinor", req.AmountMinor); err != nil {
		v.Check(false, "amountMinor", web.AsError(err).Fields["amountMinor"])
	}
	if err := v.Err(); err != nil {
		return err
	}
	u, err := a.currentUser(c)
	if err != nil {
		return err
	}
	kind := money.KindTransfer
	if to.Equals(a.Money.DepositAddress()) {
		kind = money.KindDeposit
	}
	p, err := a.Money.Prepare(c.Request().Context(), money.PrepareSpec{Kind: kind, User: u, To: to, Amount: req.AmountMinor})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, p)
}

// SubmitRequest is the body of every .../submit.
type SubmitRequest struct {
	IntentID          string `json:"intentId"`
	SignedTransaction string `json:"signedTransaction" doc:"base64 of the prepared transaction with your wallet's signature"`
}

func (a *App) submitTransfer(c echo.Context) error {
	var req SubmitRequest
	if err := web.BindJSON(c, &req); err != nil {
		return err
	}
	r, err := a.Money.SubmitFor(c.Request().Context(), web.IdentityOf(c).UserID, req.IntentID, req.SignedTransaction, "",
		money.KindDeposit, money.KindTransfer)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, r)
}

// WithdrawRequest is the body of POST /wallets/withdraw.
type WithdrawRequest struct {
	AmountMinor int64 `json:"amountMinor" minimum:"1" doc:"USDC minor units (1 USDC = 1000000)"`
}

func (a *App) withdraw(c echo.Context) error {
	var req WithdrawRequest
	if err := web.BindJSON(c, &req); err != nil {
		return err
	}
	u, err := a.currentUser(c)
	if err != nil {
		return err
	}
	w, err := a.Money.Withdraw(c.Request().Context(), u, req.AmountMinor, c.Request().Header.Get("Idempotency-Key"))
	if err != nil {
		return err
	}
	status := http.StatusOK
	if w.Status == "pending" {
		status = http.StatusAccepted
	}
	return c.JSON(status, w)
}

// ActivityPage is one page of wallet history.
type ActivityPage struct {
	Items      []money.Activity `json:"items"`
	NextBefore *string          `json:"nextBefore" doc:"the id to pass as ?before= for the next page; null on the last page"`
}

func (a *App) walletHistory(c echo.Context) error {
	limit, before, err := pageParams(c)
	if err != nil {
		return err
	}
	items, err := a.Money.History(c.Request().Context(), web.IdentityOf(c).UserID, limit, before)
	if err != nil {
		return err
	}
	page := ActivityPage{Items: items}
	if len(items) == limit {
		next := strconv.FormatInt(items[len(items)-1].ID, 10)
		page.NextBefore = &next
	}
	return c.JSON(http.StatusOK, page)
}

// pageParams reads ?limit= (default 50, at most 200) and ?before= (a
// numeric id).
func pageParams(c echo.Context) (int, int64, error) {
	v := domain.Validator{}
	limit, before := pageLimit(v, c), int64(0)
	if s := c.QueryParam("before"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		v.Check(err == nil && n > 0, "before", "must be an id from a previous page")
		before = n
	}
	return limit, before, v.Err()
}

// pageLimit reads ?limit= (default 50, at most 200) into v's checks.
func pageLimit(v domain.Validator, c echo.Context) int {
	s := c.QueryParam("limit")
	if s == "" {
		return 50
	}
	n, err := strconv.Atoi(s)
	v.Check(err == nil && n >= 1 && n <= 200, "limit", "must be a whole number from 1 to 200")
	return n
}

// FaucetRequest is the body of POST /dev/faucet.
type FaucetRequest struct {
	Address     string `json:"address"`
	AmountMinor int64  `json:"amountMinor"`
}

func (a *App) faucet(c echo.Context) error {
	var req FaucetRequest
	if err := web.BindJSON(c, &req); err != nil {
		return err
	}
	to, err := auth.ParseWallet("address", req.Address)
	if err != nil {
		return err
	}
	r, err := a.Money.Faucet(c.Request().Context(), to, req.AmountMinor)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, r)
}
