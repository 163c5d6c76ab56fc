package handlers

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"wager/domain"
	"wager/domain/game/rules"
	"wager/domain/money"
	"wager/domain/ranking"
	"wager/domain/rating"
	"wager/handlers/header"
	"wager/views"
	"wager/web"
)

// rankingPages serve the leaderboards page.
type rankingPages struct {
	ranking *ranking.Service
	header  *header.Header
}

// leaderboardsPage shows one board: ?board=global|friends|<game type>,
// ?period= for global and friends, ?offset= to page.
func (h *rankingPages) leaderboardsPage(c echo.Context) error {
	id := web.IdentityOf(c)
	v := views.LeaderboardView{Board: c.QueryParam("board"), Period: c.QueryParam("period"), SignedIn: id != nil}
	for _, info := range rules.Available() {
		v.Types = append(v.Types, info.GameType)
	}
	if v.Board == "" || v.Board == "friends" && id == nil {
		v.Board = "global"
	}
	check := domain.Validator{}
	period := ranking.ParsePeriod(check, v.Period)
	v.Period = string(period)
	v.Offset, _ = strconv.Atoi(c.QueryParam("offset"))
	v.Offset = max(0, min(v.Offset, ranking.MaxOffset))
	page := ranking.Page{Limit: views.LeaderboardPage + 1, Offset: v.Offset} // one more tells whether a next page exists
	var rows []ranking.Row
	var err error
	ctx := c.Request().Context()
	switch {
	case check.Err() != nil:
		v.Period, v.Error = "all", "That period does not exist: choose today, this week, this month or all time."
	case v.Board == "global":
		rows, err = h.ranking.Global(ctx, period, page)
	case v.Board == "friends":
		rows, err = h.ranking.Friends(ctx, id.UserID, period, page)
	default:
		rows, err = h.ranking.GameType(ctx, v.Board, page)
		if domain.ErrorCode(err) == domain.CodeNotFound {
			v.Board, v.Error, err = "global", "There is no such game: here is everyone's board.", nil
			rows, err = h.ranking.Global(ctx, period, page)
		}
	}
	if err != nil {
		return err
	}
	if len(rows) > views.LeaderboardPage {
		rows, v.More = rows[:views.LeaderboardPage], true
	}
	for _, r := range rows {
		v.Rows = append(v.Rows, views.LeaderRow{Rank: r.Rank, Username: r.Username, Games: r.GamesPlayed, Wins: r.Wins,
			Losses: r.Losses, Net: signedUSDC(r.NetWinningsMinor), Negative: r.NetWinningsMinor < 0,
			Rating: ratingText(r.Rating, r.Provisional), Provisional: r.Provisional})
	}
	return web.Render(c, http.StatusOK, views.LeaderboardsPage(h.header.Page(c, "Leaderboards"), v))
}

func signedUSDC(minor int64) string {
	if minor > 0 {
		return "+" + money.FormatUSDC(minor)
	}
	return money.FormatUSDC(minor)
}

// ratingText is a rating as people read it: whole points, with a
// question mark while provisional (as Lichess writes it).
func ratingText(r float64, provisional bool) string {
	s := strconv.Itoa(int(math.Round(r)))
	if provisional {
		s += "?"
	}
	return s
}

// ratingPoints is how many games a profile's rating chart shows.
const ratingPoints = 100

// ratingCards reads a profile's ratings for its charts.
func ratingCards(c echo.Context, ranks *ranking.Service, userID string) ([]views.RatingCard, error) {
	ratings, err := ranks.Ratings(c.Request().Context(), userID, ratingPoints)
	if err != nil {
		return nil, err
	}
	var out []views.RatingCard
	for _, r := range ratings {
		var xs []int64
		var ys []float64
		if len(r.History) > 0 && len(r.History) == r.GamesPlayed {
			// The whole history: the line starts where everyone does.
			xs, ys = append(xs, r.History[0].At.Add(-time.Minute).Unix()), append(ys, rating.DefaultRating)
		}
		for _, p := range r.History {
			xs, ys = append(xs, p.At.Unix()), append(ys, math.Round(p.Rating))
		}
		points, err := json.Marshal([2]any{xs, ys})
		if err != nil {
			return nil, err
		}
		games := "games"
		if r.GamesPlayed == 1 {
			games = "game"
		}
		summary := fmt.Sprintf("%s: rating %s after %d %s (%d won, %d lost, %d drawn).", views.GameName(r.GameType),
			ratingText(r.Rating, r.Provisional), r.GamesPlayed, games, r.Wins, r.Losses, r.Draws)
		out = append(out, views.RatingCard{GameType: r.GameType, Summary: summary, Provisional: r.Provisional, Points: string(points)})
	}
	return out, nil
}
