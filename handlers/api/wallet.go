package api

import (
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"wager/chain/localchain"
	"wager/domain"
	"wager/domain/auth"
	"wager/domain/money"
	"wager/domain/users"
	"wager/web"
)

// Wallet serves the platform balance, transfers, withdrawals, the wallet's history and the dev faucet.
type Wallet struct {
	Users      *users.Service
	Money      *money.Service
	LocalChain *localchain.Chain
	DevFaucet  bool
}

// Routes registers the platform balance, transfers, withdrawals, the
// wallet's history and, with DEV_FAUCET, the embedded chain's faucet and RPC.
func (h *Wallet) Routes(r Router) {
	r.JSON(http.MethodGet, "/wallets/me/balance", h.walletBalance, web.Op{Tag: "wallet", Auth: web.AuthRequired,
		Summary: "Platform balance, deposit address and on-chain holdings", Response: money.Balance{},
		Description: "The platform balance is always answered. The wallet's on-chain holdings wait at most " + money.ChainReadWait.String() +
			" for the Solana network: onChain is null when it did not answer in time, never an error."})
	r.JSON(http.MethodPost, "/wallets/transfer/prepare", h.prepareTransfer, moneyIn(web.Op{Tag: "wallet", Auth: web.AuthRequired,
		Summary: "Prepare a USDC transfer from your wallet (to depositAddress: a deposit)",
		Description: "Answers an unsigned transaction with the platform as fee payer. Sign it with your wallet and submit it before expiresAt. " +
			"When the recipient of a plain transfer has no USDC account yet, your wallet pays its rent (0.00203928 SOL; 409 INSUFFICIENT_FUNDS without it). " +
			"A deposit, and a plain transfer to another wallet, is at least 10000 minor units (0.01 USDC): less is 400 naming amountMinor. " +
			"A plain transfer to any other address of the platform (its vault, fee payer or a game's escrow) is 400.",
		Request: TransferRequest{}, Response: money.Prepared{}, Errors: []int{http.StatusConflict}}))
	r.JSON(http.MethodPost, "/wallets/transfer/submit", h.submitTransfer, web.Op{Tag: "wallet", Auth: web.AuthRequired,
		Summary: "Submit the signed transfer; answers once it is confirmed",
		Description: "Submitting the same intent again answers the same receipt and moves nothing more. 409 when it expired or the network refused it; 503 when the outcome is not known yet (submit again). " +
			feePayerBudgets,
		Request: SubmitRequest{}, Response: money.Receipt{}, Errors: []int{http.StatusNotFound, http.StatusConflict, http.StatusTooManyRequests, http.StatusServiceUnavailable}})
	r.JSON(http.MethodPost, "/wallets/withdraw", h.withdraw, web.Op{Tag: "wallet", Auth: web.AuthRequired,
		Summary: "Withdraw from your platform balance to your wallet",
		Description: "Send Idempotency-Key (at most 255 characters) to make retries safe; a key names one amount (409 for another). " +
			"200 when confirmed, 202 while pending: the platform sends it again until it lands, and one the network refuses or that expires " +
			"ends failed, its amount back on your balance, once it can no longer land (within some 90 s). At least 100000 minor units (0.1 USDC). The platform opens your wallet's USDC account if it is missing, " +
			"once per user and for a withdrawal of at least 1000000 (1 USDC); after that a missing account is 409 CONFLICT. " +
			"Its fee (and that rent) count towards FEE_PAYER_DAILY_LAMPORTS (0.02 SOL) per user per UTC day: past it, 429 RATE_LIMITED. " +
			"They count towards FEE_PAYER_GLOBAL_DAILY_LAMPORTS (2 SOL, for all users together) too, but that one never refuses a withdrawal.",
		Request: WithdrawRequest{}, Response: money.Withdrawal{}, Errors: []int{http.StatusConflict, http.StatusTooManyRequests},
		Responses: map[int]any{http.StatusAccepted: money.Withdrawal{}},
		Header:    []web.Param{{Name: "Idempotency-Key", MaxLength: 255, Description: "makes retries safe"}}})
	r.JSON(http.MethodGet, "/wallets/me/transactions", h.walletHistory, web.Op{Tag: "wallet", Auth: web.AuthRequired,
		Summary: "Your wallet history, newest first", Response: []money.Activity{},
		Query: []web.Param{web.PageLimit, web.PageBefore("the id of the last line of the previous page")}})
	if h.DevFaucet {
		r.JSON(http.MethodPost, "/dev/faucet", h.faucet, web.Op{Tag: "dev", Auth: web.AuthNone,
			Summary: "Test USDC and SOL on the embedded chain (DEV_FAUCET=true only)", Request: FaucetRequest{},
			Response: money.FaucetResult{}})
		r.Asset(http.MethodPost, "/dev/solana-rpc", echo.WrapHandler(h.LocalChain), web.Op{Tag: "dev",
			Summary:     "The embedded chain's Solana JSON-RPC (DEV_FAUCET=true only)",
			Description: "For standard Solana client libraries: getLatestBlockhash, sendTransaction, getSignatureStatuses, getTransaction, getAccountInfo, getBalance, getTokenAccountBalance, getMinimumBalanceForRentExemption, requestAirdrop, getHealth, getVersion."})
	}
}

// currentUser loads the signed-in user.
func currentUser(c echo.Context, us *users.Service) (users.User, error) {
	return us.ByID(c.Request().Context(), web.IdentityOf(c).UserID)
}

func (h *Wallet) walletBalance(c echo.Context) error {
	u, err := currentUser(c, h.Users)
	if err != nil {
		return err
	}
	b, err := h.Money.BalanceOf(c.Request().Context(), u)
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

func (h *Wallet) prepareTransfer(c echo.Context) error {
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
	u, err := currentUser(c, h.Users)
	if err != nil {
		return err
	}
	kind := money.KindTransfer
	if to.Equals(h.Money.DepositAddress()) {
		kind = money.KindDeposit
	}
	p, err := h.Money.Prepare(c.Request().Context(), money.PrepareSpec{Kind: kind, User: u, To: to, Amount: req.AmountMinor})
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

func (h *Wallet) submitTransfer(c echo.Context) error {
	var req SubmitRequest
	if err := web.BindJSON(c, &req); err != nil {
		return err
	}
	r, err := h.Money.SubmitFor(c.Request().Context(), web.IdentityOf(c).UserID, req.IntentID, req.SignedTransaction, "",
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

func (h *Wallet) withdraw(c echo.Context) error {
	var req WithdrawRequest
	if err := web.BindJSON(c, &req); err != nil {
		return err
	}
	u, err := currentUser(c, h.Users)
	if err != nil {
		return err
	}
	w, err := h.Money.Withdraw(c.Request().Context(), u, req.AmountMinor, c.Request().Header.Get("Idempotency-Key"))
	if err != nil {
		return err
	}
	status := http.StatusOK
	if w.Status == "pending" {
		status = http.StatusAccepted
	}
	return c.JSON(status, w)
}

func (h *Wallet) walletHistory(c echo.Context) error {
	limit, before, err := PageParams(c)
	if err != nil {
		return err
	}
	items, err := h.Money.History(c.Request().Context(), web.IdentityOf(c).UserID, limit, before)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, items)
}

// PageParams reads ?limit= (default 50, at most 200) and ?before= (a
// numeric id).
func PageParams(c echo.Context) (int, int64, error) {
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

func (h *Wallet) faucet(c echo.Context) error {
	var req FaucetRequest
	if err := web.BindJSON(c, &req); err != nil {
		return err
	}
	to, err := auth.ParseWallet("address", req.Address)
	if err != nil {
		return err
	}
	r, err := h.Money.Faucet(c.Request().Context(), to, req.AmountMinor)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, r)
}
