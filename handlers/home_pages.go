package handlers

import (
	"context"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"wager/domain/game"
	"wager/domain/money"
	"wager/domain/social"
	"wager/handlers/header"
	"wager/handlers/livepage"
	"wager/views"
	"wager/web"
)

// homePages serve the home page and its live grid.
type homePages struct {
	games  *game.Service
	social *social.Service
	header *header.Header
}

func (h *homePages) homeView(ctx context.Context) (views.HomeView, error) {
	var v views.HomeView
	live, err := h.games.Live(ctx, 24)
	if err != nil {
		return v, err
	}
	for _, g := range live {
		var names []string
		for _, p := range g.Players {
			names = append(names, p.Username)
			v.Players = append(v.Players, views.LivePlayerLine{Username: p.Username, GameID: g.GameID})
		}
		v.Live = append(v.Live, views.LiveCard{GameID: g.GameID, GameType: g.GameType, Title: strings.Join(names, " vs "),
			Pot: potWords(g.PotMinor), Spectators: g.SpectatorCount})
	}
	wins, err := h.games.RecentWins(ctx, 8)
	if err != nil {
		return v, err
	}
	for _, w := range wins {
		v.Wins = append(v.Wins, views.WinLine{GameID: w.GameID, Winner: w.Winner, Payout: money.FormatUSDC(w.PayoutMinor)})
	}
	feed, err := h.social.Feed(ctx, feedOnHome, 0)
	if err != nil {
		return v, err
	}
	for _, e := range feed {
		v.Feed = append(v.Feed, livepage.FeedLine(e))
	}
	return v, nil
}

func (h *homePages) homePage(c echo.Context) error {
	v, err := h.homeView(c.Request().Context())
	if err != nil {
		return err
	}
	p := h.header.Page(c, "Live games")
	p.Feed = true
	return web.Render(c, http.StatusOK, views.Home(p, v))
}

func (h *homePages) liveFragment(c echo.Context) error {
	v, err := h.homeView(c.Request().Context())
	if err != nil {
		return err
	}
	return web.Render(c, http.StatusOK, views.LiveGrid(v))
}

// potWords is a live game's pot on its card: a free game has none.
func potWords(potMinor int64) string {
	if potMinor == 0 {
		return "Free game"
	}
	return money.USDC(potMinor)
}
