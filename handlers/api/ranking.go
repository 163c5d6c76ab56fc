package api

import (
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"wager/domain"
	"wager/domain/ranking"
	"wager/web"
)

// Ranking serves the leaderboards and ratings.
type Ranking struct {
	Ranking *ranking.Service
}

// Routes registers the leaderboards and profiles' rating charts.
func (h *Ranking) Routes(r Router) {
	period := web.Param{Name: "period", Enum: []string{"day", "week", "month", "all"}, Default: "all",
		Description: "day: since 00:00 UTC today; week: since Monday 00:00 UTC; month: since the 1st, 00:00 UTC; all: ever"}
	offset := web.Param{Name: "offset", Type: "integer", Min: web.Bound(0), Max: web.Bound(ranking.MaxOffset), Default: 0,
		Description: "rows to skip: the rank of the page's first row minus 1"}
	rows := "Each row has the player's completed games, wins, losses, draws and net winnings (payouts minus stakes, free games count as 0) " +
		"and a Glicko-2 rating (start 1500 ± 350, updated after every completed game, staked or free); provisional is true while the deviation is above 110. " +
		"Ranks number the rows from 1 at offset 0; ties keep a fixed order (by user id) so that pages never overlap. Demo bots are never listed."
	r.JSON(http.MethodGet, "/leaderboards/global", h.globalBoard, web.Op{Tag: "leaderboards", Auth: web.AuthNone,
		Summary: "Everyone who completed a game in the period, by net winnings, then wins",
		Description: "Completed games of every type, free and staked. Periods are calendar periods in UTC, so day, week and month start empty. " +
			"The rating shown is the one of the game type the player has played most (ratingGameType). " + rows,
		Response: []ranking.Row{}, Query: []web.Param{period, web.PageLimit, offset}})
	r.JSON(http.MethodGet, "/leaderboards/game/:type", h.gameTypeBoard, web.Op{Tag: "leaderboards", Auth: web.AuthNone,
		Summary:     "Players of a game type by Glicko-2 rating, provisional players after the others",
		Description: "The totals are the player's in that game type, over all time. 404 for an unknown game type (see GET /games/available). " + rows,
		Response:    []ranking.Row{}, Query: []web.Param{web.PageLimit, offset}, Errors: []int{http.StatusNotFound}})
	r.JSON(http.MethodGet, "/leaderboards/friends", h.friendsBoard, web.Op{Tag: "leaderboards", Auth: web.AuthRequired,
		Summary: "You and your friends, ranked like the global board",
		Description: "Everyone of you is listed, with zeros when they completed no game in the period. " +
			"The rating shown is the one of the game type the player has played most (ratingGameType). " + rows,
		Response: []ranking.Row{}, Query: []web.Param{period, web.PageLimit, offset}})
	r.JSON(http.MethodGet, "/users/:id/ratings", h.userRatings, web.Op{Tag: "leaderboards", Auth: web.AuthNone,
		Summary: "A player's Glicko-2 rating in each game type they played, with its history for a chart",
		Description: "Most played game type first; [] before the first completed game. history holds the rating after each of the latest " +
			"games (limit of them, oldest first). 404 for an unknown user.",
		Response: []ranking.TypeRating{}, Query: []web.Param{{Name: "limit", Description: "history points per game type", Type: "integer",
			Min: web.Bound(1), Max: web.Bound(200), Default: 50}}, Errors: []int{http.StatusNotFound}})
}

// boardPage reads ?limit= and ?offset= into v's checks.
func boardPage(v domain.Validator, c echo.Context) ranking.Page {
	p := ranking.Page{Limit: pageLimit(v, c)}
	if s := c.QueryParam("offset"); s != "" {
		n, err := strconv.Atoi(s)
		v.Check(err == nil && n >= 0 && n <= ranking.MaxOffset, "offset", "must be a whole number from 0 to "+strconv.Itoa(ranking.MaxOffset))
		p.Offset = n
	}
	return p
}

// periodPage reads ?period=, ?limit= and ?offset=.
func periodPage(c echo.Context) (ranking.Period, ranking.Page, error) {
	v := domain.Validator{}
	period := ranking.ParsePeriod(v, c.QueryParam("period"))
	page := boardPage(v, c)
	return period, page, v.Err()
}

func (h *Ranking) globalBoard(c echo.Context) error {
	period, page, err := periodPage(c)
	if err != nil {
		return err
	}
	rows, err := h.Ranking.Global(c.Request().Context(), period, page)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, rows)
}

func (h *Ranking) friendsBoard(c echo.Context) error {
	period, page, err := periodPage(c)
	if err != nil {
		return err
	}
	rows, err := h.Ranking.Friends(c.Request().Context(), web.IdentityOf(c).UserID, period, page)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, rows)
}

func (h *Ranking) gameTypeBoard(c echo.Context) error {
	v := domain.Validator{}
	page := boardPage(v, c)
	if err := v.Err(); err != nil {
		return err
	}
	rows, err := h.Ranking.GameType(c.Request().Context(), c.Param("type"), page)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, rows)
}

func (h *Ranking) userRatings(c echo.Context) error {
	v := domain.Validator{}
	points := pageLimit(v, c)
	if err := v.Err(); err != nil {
		return err
	}
	out, err := h.Ranking.Ratings(c.Request().Context(), c.Param("id"), points)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}
