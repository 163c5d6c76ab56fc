package handlers

import (
	"context"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

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
		h.Live = append(h.Live, views.LiveCard{GameID: g.GameID, GameType: g.GameType, Title: strings.Join(names, " vs "),
			Pot: money.FormatUSDC(g.PotMinor), Spectators: g.SpectatorCount})
	}
	wins, err := a.Games.RecentWins(ctx, 8)
	if err != nil {
		return h, err
	}
	for _, w := range wins {
		h.Wins = append(h.Wins, views.WinLine{GameID: w.GameID, Winner: w.Winner, Payout: money.FormatUSDC(w.PayoutMinor)})
	}
	feed, err := a.Social.Feed(ctx, feedOnHome, 0)
	if err != nil {
		return h, err
	}
	for _, e := range feed {
		h.Feed = append(h.Feed, feedLine(e))
	}
	return h, nil
}

func (a *App) homePage(c echo.Context) error {
	h, err := a.homeView(c.Request().Context())
	if err != nil {
		return err
	}
	p := a.pageFor(c, "Live games")
	p.Feed = true
	return web.Render(c, http.StatusOK, views.Home(p, h))
}

func (a *App) liveFragment(c echo.Context) error {
	h, err := a.homeView(c.Request().Context())
	if err != nil {
		return err
	}
	return web.Render(c, http.StatusOK, views.LiveGrid(h))
}
