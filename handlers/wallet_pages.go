package handlers

import (
	"net/http"
	"net/url"
	"strconv"

	"github.com/labstack/echo/v4"

	"wager/domain"
	"wager/views"
	"wager/web"
)

// walletHistoryPage is how many history lines the wallet page shows.
const walletHistoryPage = 20

// walletPage shows the signed-in user's balances, the deposit, withdraw
// and faucet forms (driven by static/js/wallet.js over the JSON API) and
// their wallet history, ?before=<id> for older lines.
func (a *App) walletPage(c echo.Context) error {
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
	u, err := a.Users.ByID(ctx, id.UserID)
	if err != nil {
		return err
	}
	w := views.WalletPage{WalletAddress: u.WalletAddress, Before: before,
		Faucet: a.Config.DevFaucet && a.LocalChain != nil, Chain: a.Config.ChainID()}
	b, err := a.Money.BalanceOf(ctx, u)
	if err != nil {
		// The platform balance comes from the database: when only the
		// chain is not answering, show the page and say so.
		de := web.AsError(err)
		if de.Code != domain.CodeUnavailable || b.DepositAddress == "" {
			return err
		}
		w.ChainError = de.Message
	}
	w.AvailableMinor, w.LockedMinor, w.DepositAddress = b.AvailableMinor, b.LockedMinor, b.DepositAddress
	w.OnChainUSDCMinor, w.Lamports = b.OnChain.USDCMinor, b.OnChain.Lamports
	w.WalletURL = a.explorerURL("address", w.WalletAddress)
	w.DepositURL = a.explorerURL("address", w.DepositAddress)

	items, err := a.Money.History(ctx, u.ID, walletHistoryPage, before)
	if err != nil {
		return err
	}
	for _, it := range items {
		w.History = append(w.History, views.WalletActivity{Activity: it, ExplorerURL: a.explorerURL("tx", it.Signature)})
	}
	if len(items) == walletHistoryPage {
		w.Older = "/wallet?before=" + strconv.FormatInt(items[len(items)-1].ID, 10)
	}
	return web.Render(c, http.StatusOK, views.Wallet(a.pageFor(c, "Wallet"), w))
}

// explorerURL links a transaction signature or an address ("tx" or
// "address") to the Solana Explorer on the server's cluster: the embedded
// chain through its public RPC endpoint, devnet and testnet by name,
// mainnet plain. It is "" when there is nothing to link to (an unnamed
// cluster, or the embedded chain without its RPC endpoint).
func (a *App) explorerURL(kind, id string) string {
	if id == "" {
		return ""
	}
	base := "https://explorer.solana.com/" + kind + "/" + url.PathEscape(id)
	switch a.Config.ChainID() {
	case "localnet":
		if !a.Config.DevFaucet || a.LocalChain == nil {
			return ""
		}
		return base + "?cluster=custom&customUrl=" + url.QueryEscape(a.Config.PublicURL+"/dev/solana-rpc")
	case "devnet", "testnet":
		return base + "?cluster=" + a.Config.ChainID()
	case "mainnet":
		return base
	}
	return ""
}
