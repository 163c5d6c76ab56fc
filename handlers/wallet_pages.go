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
		Faucet: a.DevFaucet, Chain: a.ChainID}
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
	w.WalletURL = a.Explorer().URL("address", w.WalletAddress)
	w.DepositURL = a.Explorer().URL("address", w.DepositAddress)

	items, err := a.Money.History(ctx, u.ID, walletHistoryPage, before)
	if err != nil {
		return err
	}
	for _, it := range items {
		w.History = append(w.History, views.WalletActivity{Activity: it, ExplorerURL: a.Explorer().URL("tx", it.Signature)})
	}
	if len(items) == walletHistoryPage {
		w.Older = "/wallet?before=" + strconv.FormatInt(items[len(items)-1].ID, 10)
	}
	return web.Render(c, http.StatusOK, views.Wallet(a.pageFor(c, "Wallet"), w))
}

// Explorer links transactions and addresses to the Solana Explorer on the
// server's cluster.
type Explorer struct {
	ChainID   string // localnet, devnet, testnet, mainnet or custom
	RPC       bool   // the embedded chain's RPC is served at /dev/solana-rpc
	PublicURL string
}

// Explorer returns the explorer links of the configured cluster.
func (o Options) Explorer() Explorer {
	return Explorer{ChainID: o.ChainID, RPC: o.DevFaucet, PublicURL: o.PublicURL}
}

// URL links a transaction signature or an address ("tx" or "address") to
// the Solana Explorer: the embedded chain through its public RPC endpoint,
// devnet and testnet by name, mainnet plain. It is "" when there is nothing
// to link to (an unnamed cluster, or the embedded chain without its RPC
// endpoint).
func (e Explorer) URL(kind, id string) string {
	if id == "" {
		return ""
	}
	base := "https://explorer.solana.com/" + kind + "/" + url.PathEscape(id)
	switch e.ChainID {
	case "localnet":
		if !e.RPC {
			return ""
		}
		return base + "?cluster=custom&customUrl=" + url.QueryEscape(e.PublicURL+"/dev/solana-rpc")
	case "devnet", "testnet":
		return base + "?cluster=" + e.ChainID
	case "mainnet":
		return base
	}
	return ""
}
