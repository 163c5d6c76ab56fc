package handlers

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"wager/domain"
	"wager/domain/game/rules"
	"wager/domain/money"
	"wager/views"
	"wager/web"
)

func (a *App) homeView(ctx context.Context) (views.HomeView, error) {
	var h views.HomeView
	live, err := a.Games.Live(ctx, 24)
	if err != nil {
		return h, err
	}
	for _, g := range live {
		var names []string
		for _, p := range g.Players {
			names = append(names, p.Username)
			h.Players = append(h.Players, views.LivePlayerLine{Username: p.Username, GameID: g.GameID})
		}
		p, err := a.Pot.PotOf(ctx, g.GameID)
		if err != nil {
			return h, err
		}
		h.Live = append(h.Live, views.LiveCard{GameID: g.GameID, GameType: g.GameType, Title: strings.Join(names, " vs "),
			Pot: money.FormatUSDC(p.TotalMinor), Spectators: g.SpectatorCount})
	}
	wins, err := a.Games.RecentWins(ctx, 8)
	if err != nil {
		return h, err
	}
	for _, w := range wins {
		h.Wins = append(h.Wins, views.WinLine{GameID: w.GameID, Winner: w.Winner, Payout: money.FormatUSDC(w.PayoutMinor)})
	}
	return h, nil
}

func (a *App) homePage(c echo.Context) error {
	h, err := a.homeView(c.Request().Context())
	if err != nil {
		return err
	}
	return web.Render(c, http.StatusOK, views.Home(a.pageFor(c, "Live games"), h))
}

func (a *App) liveFragment(c echo.Context) error {
	h, err := a.homeView(c.Request().Context())
	if err != nil {
		return err
	}
	return web.Render(c, http.StatusOK, views.LiveGrid(h))
}

func (a *App) playView(ctx context.Context, form views.PlayForm, errMsg string) (views.PlayView, error) {
	v := views.PlayView{Form: form, Error: errMsg}
	for _, t := range rules.Available() {
		v.Types = append(v.Types, views.GameTypeOption{Type: t.GameType, Name: t.Name})
	}
	lobbies, err := a.Games.Lobbies(ctx, 20)
	if err != nil {
		return v, err
	}
	for _, l := range lobbies {
		if l.Queued > 0 {
			v.Lobbies = append(v.Lobbies, views.LobbyLine{ID: l.ID, GameType: l.GameType, Stake: money.FormatUSDC(l.StakeMinor), Queued: l.Queued})
		}
	}
	return v, nil
}

// playerPage runs a page for signed-in players who are not in a game: the
// others go to sign in, or to their game.
func (a *App) playerPage(c echo.Context, page func(id *web.Identity) error) error {
	id, err := requireLogin(c)
	if id == nil {
		return err
	}
	if cg, err := a.Games.CurrentGameOf(c.Request().Context(), id.UserID); err != nil {
		return err
	} else if cg != nil {
		return c.Redirect(http.StatusSeeOther, "/game/"+cg.GameID)
	}
	return page(id)
}

func (a *App) playPage(c echo.Context) error {
	return a.playerPage(c, func(*web.Identity) error {
		v, err := a.playView(c.Request().Context(), views.PlayForm{GameType: "rps", Stake: "0", Rounds: "3", RoundSeconds: "20"}, "")
		if err != nil {
			return err
		}
		return web.Render(c, http.StatusOK, views.Play(a.pageFor(c, "Play"), v))
	})
}

// playSubmit opens a lobby from the form and queues the player there.
func (a *App) playSubmit(c echo.Context) error {
	id, err := requireLogin(c)
	if id == nil {
		return err
	}
	ctx := c.Request().Context()
	form := views.PlayForm{GameType: c.FormValue("gameType"), Stake: strings.TrimSpace(c.FormValue("stake")),
		Rounds: strings.TrimSpace(c.FormValue("rounds")), RoundSeconds: strings.TrimSpace(c.FormValue("roundSeconds"))}
	fail := func(err error) error {
		e := web.AsError(err)
		if e.Code == domain.CodeInternal {
			return err
		}
		msg := e.Message
		for field, reason := range e.Fields {
			msg = fieldLabel(field) + " " + reason + "."
		}
		v, verr := a.playView(ctx, form, msg)
		if verr != nil {
			return verr
		}
		return web.Render(c, web.StatusOf(e.Code), views.Play(a.pageFor(c, "Play"), v))
	}
	stake, err := parseUSDC(form.Stake)
	if err != nil {
		return fail(err)
	}
	settings := map[string]any{}
	if form.GameType == "rps" {
		for key, value := range map[string]string{"rounds": form.Rounds, "roundSeconds": form.RoundSeconds} {
			if value == "" {
				continue
			}
			n, err := strconv.Atoi(value)
			if err != nil {
				return fail(domain.Invalid(map[string]string{"settings." + key: "must be a whole number"}))
			}
			settings[key] = n
		}
	}
	raw, _ := json.Marshal(settings)
	l, err := a.Games.CreateLobby(ctx, id.UserID, form.GameType, stake, raw)
	if err != nil {
		return fail(err)
	}
	return a.joinAndGo(c, id.UserID, l.ID, fail)
}

func (a *App) joinAndGo(c echo.Context, userID, lobbyID string, fail func(error) error) error {
	res, err := a.Games.JoinQueue(c.Request().Context(), userID, lobbyID)
	if err != nil {
		return fail(err)
	}
	if res.Status == "matched" {
		return c.Redirect(http.StatusSeeOther, "/game/"+res.GameID)
	}
	return c.Redirect(http.StatusSeeOther, "/play/wait/"+lobbyID)
}

func (a *App) playJoin(c echo.Context) error {
	id, err := requireLogin(c)
	if id == nil {
		return err
	}
	return a.joinAndGo(c, id.UserID, c.Param("id"), func(err error) error {
		v, verr := a.playView(c.Request().Context(), views.PlayForm{GameType: "rps", Stake: "0"}, web.AsError(err).Message)
		if verr != nil {
			return verr
		}
		return web.Render(c, web.StatusOf(web.AsError(err).Code), views.Play(a.pageFor(c, "Play"), v))
	})
}

func (a *App) playWait(c echo.Context) error {
	return a.playerPage(c, func(*web.Identity) error {
		return web.Render(c, http.StatusOK, views.Waiting(a.pageFor(c, "Waiting for an opponent"), c.Param("id")))
	})
}

func (a *App) playLeave(c echo.Context) error {
	id, err := requireLogin(c)
	if id == nil {
		return err
	}
	if err := a.Games.LeaveQueue(c.Request().Context(), id.UserID, c.Param("id")); err != nil && domain.ErrorCode(err) != domain.CodeNotFound {
		return err
	}
	return c.Redirect(http.StatusSeeOther, "/play")
}

// parseUSDC reads a USDC amount ("1.5") as minor units, exactly.
func parseUSDC(s string) (int64, error) {
	bad := domain.Invalid(map[string]string{"stakeMinor": "must be an amount in USDC such as 1.5, with at most 6 decimals"})
	if s == "" {
		return 0, nil
	}
	whole, frac, _ := strings.Cut(s, ".")
	if len(frac) > 6 || (whole == "" && frac == "") || strings.Trim(whole+frac, "0123456789") != "" || len(whole) > 9 {
		return 0, bad
	}
	w, _ := strconv.ParseInt("0"+whole, 10, 64)
	f, _ := strconv.ParseInt((frac + "000000")[:6], 10, 64)
	return w*1_000_000 + f, nil
}

func fieldLabel(f string) string {
	switch f {
	case "stakeMinor":
		return "The stake"
	case "settings.rounds":
		return "Rounds"
	case "settings.roundSeconds":
		return "Seconds per round"
	case "gameType":
		return "The game"
	}
	return f
}

func (a *App) adminPage(c echo.Context) error {
	id := web.IdentityOf(c)
	if id == nil {
		_, err := requireLogin(c)
		return err
	}
	if !id.Admin {
		return domain.Errorf(domain.CodeAdminOnly, "only admins can open this page")
	}
	ctx := c.Request().Context()
	var v views.AdminView
	list, err := a.Flags.List(ctx)
	if err != nil {
		return err
	}
	for _, f := range list {
		line := views.FlagLine{Name: f.Name, Description: f.Description, Enabled: f.Enabled, UpdatedAt: f.UpdatedAt}
		if f.UpdatedBy != nil {
			line.UpdatedBy = *f.UpdatedBy
		}
		v.Flags = append(v.Flags, line)
	}
	changes, err := a.Flags.Changes(ctx, 20)
	if err != nil {
		return err
	}
	for _, ch := range changes {
		v.Changes = append(v.Changes, views.FlagChangeLine{Name: ch.Name, By: ch.ChangedBy, Enabled: ch.Enabled, At: ch.ChangedAt})
	}
	if r, err := a.Money.Reconcile(ctx); err != nil {
		v.Books.Error = web.AsError(err).Message
	} else {
		v.Books = views.BooksView{LedgerTotal: money.FormatUSDC(r.LedgerTotalMinor), EntriesTotal: money.FormatUSDC(r.EntriesTotalMinor),
			Balanced: r.Balanced}
		for _, ad := range r.Addresses {
			v.Books.Addresses = append(v.Books.Addresses, views.AddressLine{Label: ad.Label, Address: ad.Address,
				Chain: money.FormatUSDC(ad.ChainMinor), Ledger: money.FormatUSDC(ad.LedgerMinor), OK: ad.DifferenceMinor == 0})
		}
	}
	return web.Render(c, http.StatusOK, views.Admin(a.pageFor(c, "Admin"), v))
}

func (a *App) adminFlag(c echo.Context) error {
	id := web.IdentityOf(c)
	if id == nil || !id.Admin {
		return domain.Errorf(domain.CodeAdminOnly, "only admins can change flags")
	}
	enabled := c.FormValue("enabled") == "true"
	if _, err := a.Flags.Set(c.Request().Context(), c.Param("name"), enabled, id.Username+" ("+id.Wallet+")"); err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, "/admin")
}
