package handlers

import (
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"wager/domain"
	"wager/domain/money"
	"wager/domain/users"
	"wager/handlers/header"
	"wager/handlers/livepage"
	"wager/views"
	"wager/web"
)

// walletPages serve the wallet page.
type walletPages struct {
	users     *users.Service
	money     *money.Service
	devFaucet bool
	chainID   string
	explorer  livepage.Explorer
	header    *header.Header
}

// walletHistoryPage is how many history lines the wallet page shows.
const walletHistoryPage = 20

// walletPage shows the signed-in user's balances, the deposit, withdraw
// and faucet forms (driven by static/js/wallet.js over the JSON API) and
// their wallet history, ?before=<id> for older lines.
func (h *walletPages) walletPage(c echo.Context) error {
	id, err := requireLogin(c)
	if id == nil {
		return err
	}
	var before int64
	if s := c.QueryParam("before"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n <= 0 {
			return domain.Invalid(map[string]string{"before": "must be an id from a previous page"})
		}
		before = n
	}
	ctx := c.Request().Context()
	u, err := h.users.ByID(ctx, id.UserID)
	if err != nil {
		return err
	}
	w := views.WalletPage{WalletAddress: u.WalletAddress, Before: before,
		Faucet: h.devFaucet, Chain: h.chainID}
	b, err := h.money.BalanceOf(ctx, u)
	if err != nil {
		return err
	}
	w.AvailableMinor, w.LockedMinor, w.DepositAddress = b.AvailableMinor, b.LockedMinor, b.DepositAddress
	if b.OnChain != nil {
		w.OnChainUSDCMinor, w.Lamports = b.OnChain.USDCMinor, b.OnChain.Lamports
	} else {
		w.ChainUnread = true
	}
	w.WalletURL = h.explorer.URL("address", w.WalletAddress)
	w.DepositURL = h.explorer.URL("address", w.DepositAddress)

	items, err := h.money.History(ctx, u.ID, walletHistoryPage, before)
	if err != nil {
		return err
	}
	for _, it := range items {
		w.History = append(w.History, views.WalletActivity{Activity: it, ExplorerURL: h.explorer.URL("tx", it.Signature)})
	}
	if len(items) == walletHistoryPage {
		w.Older = "/wallet?before=" + strconv.FormatInt(items[len(items)-1].ID, 10)
	}
	return web.Render(c, http.StatusOK, views.Wallet(h.header.Page(c, "Wallet"), w))
}
