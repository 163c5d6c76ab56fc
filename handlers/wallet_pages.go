package handlers

import (
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"wager/domain"
	"wager/domain/game"
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
	games     *game.Service
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

// recallPage shows the signed-in user's game recall: the last staked
// games with their money and every step (GET /users/me/games/recall).
func (h *walletPages) recallPage(c echo.Context) error {
	id, err := requireLogin(c)
	if id == nil {
		return err
	}
	games, err := h.games.Recall(c.Request().Context(), id.UserID)
	if err != nil {
		return err
	}
	out := make([]views.RecallGame, len(games))
	for i, g := range games {
		v := views.RecallGame{GameID: g.GameID, GameType: g.GameType, EndedAt: views.DateTime(g.EndedAt), Result: recallResult(g),
			Stake: money.USDC(g.StakeMinor), Paid: money.USDC(g.PayoutMinor), Before: money.USDC(g.BalanceBeforeMinor), After: money.USDC(g.BalanceAfterMinor)}
		if other := g.BalanceAfterMinor - (g.BalanceBeforeMinor - g.StakeMinor + g.PayoutMinor); other != 0 {
			sign := "+"
			if other < 0 {
				sign, other = "-", -other
			}
			v.Other = "While it ran, other movements (a deposit, another game) changed your balance by " + sign + money.USDC(other) + "."
		}
		for _, s := range g.Steps {
			v.Steps = append(v.Steps, views.RecallStep{Seq: s.Seq, Name: string(s.Name), At: s.CreatedAt.UTC().Format("15:04:05"), Data: string(s.Data)})
		}
		out[i] = v
	}
	return web.Render(c, http.StatusOK, views.Recall(h.header.Page(c, "Game recall"), out))
}

// recallResult says how a recalled game ended for the player.
func recallResult(g game.Recalled) string {
	switch {
	case g.PayoutMinor > g.StakeMinor:
		return "Won: " + money.USDC(g.PayoutMinor) + " paid to you"
	case g.PayoutMinor == g.StakeMinor && g.Status == game.StatusCancelled:
		return "Cancelled: your stake came back"
	case g.PayoutMinor == g.StakeMinor:
		return "Drawn: your stake came back"
	case g.PayoutMinor == 0:
		return "Lost: your stake went to the winner"
	}
	return money.USDC(g.PayoutMinor) + " of your stake came back"
}
