package api

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"wager/domain"
	"wager/domain/integrity"
	"wager/domain/tournament"
	"wager/web"
)

// Tournaments serves the tournaments (arenas).
type Tournaments struct {
	Tournaments *tournament.Service
}

// Routes registers tournaments (arenas): creating, listing and
// reading them, joining and withdrawing, and their events.
func (h *Tournaments) Routes(r Router) {
	r.JSON(http.MethodPost, "/tournaments", h.createTournament, web.Op{Tag: "tournaments", Auth: web.AuthRequired, Status: http.StatusCreated,
		Summary: "Schedule a tournament (an arena)",
		Description: "Anyone signed in may. For durationMinutes from startsAt, its players are paired again and again into free games of gameType " +
			"with settings, closest scores first; a win scores 2, a draw 1, and after two wins in a row each further win 4 until a game that is not a win. " +
			"When the time is up and the last game has finished, the entry fees (less 1%) are paid as prizes by prizeSplitBps. " +
			"400 VALIDATION_ERROR naming each invalid field: name (1-60 characters), gameType, settings, entryFeeMinor (0, or 100000 to 100000000), " +
			"startsAt (RFC 3339, from now to 7 days ahead), durationMinutes (1-180), maxPlayers (2-256 unless the server allows more: TOURNAMENT_MAX_PLAYERS), " +
			"prizeSplitBps (1-10 whole numbers, each 0 or more, summing to 10000). " +
			"429 RATE_LIMITED with Retry-After past TOURNAMENT_CREATE_PER_DAY (5) arenas created by you in the last 24 hours (Retry-After: when the oldest " +
			"of them leaves the 24 hours), or while TOURNAMENTS_SCHEDULED_MAX (200) arenas are scheduled or running.",
		Request: tournament.NewTournament{}, Response: tournament.Tournament{}, Errors: []int{http.StatusTooManyRequests}})
	r.JSON(http.MethodGet, "/tournaments", h.listTournaments, web.Op{Tag: "tournaments", Auth: web.AuthNone,
		Summary:     "Tournaments of a status: scheduled and running ones by default, soonest first",
		Description: "Finished and cancelled ones come latest first.",
		Response:    []tournament.Tournament{},
		Query: []web.Param{{Name: "status", Description: "only tournaments of this status (default: scheduled and running)",
			Enum: []string{tournament.StatusScheduled, tournament.StatusRunning, tournament.StatusFinished, tournament.StatusCancelled}},
			{Name: "upcoming", Description: "true: only those that have not started, soonest first (the next start first), recurring arenas' occurrences among them",
				Enum: []string{"true", "false"}},
			web.PageLimit, web.PageBefore("the id of the previous page's last tournament")}})
	r.JSON(http.MethodGet, "/tournaments/:id", h.getTournament, web.Op{Tag: "tournaments", Auth: web.AuthNone,
		Summary: "A tournament with its standings (ties share a rank) and, once finished, its prizes",
		Description: "Prizes: fee = floor(pool / 100); place i gets floor((pool - fee) x prizeSplitBps[i] / 10000); players tied on score share the prizes " +
			"of the places they span equally (rounded down); with fewer players than places, the places nobody reached are shared by the places " +
			"reached in proportion to their own shares. What rounding leaves goes to the platform with the fee.",
		Response: tournament.Detail{}, Errors: []int{http.StatusNotFound}})
	r.JSON(http.MethodGet, "/tournaments/:id/standings", h.standings, web.Op{Tag: "tournaments", Auth: web.AuthOptional,
		Summary:     "A tournament's standings, or with around=me your line and the 5 above and below it",
		Description: "Without around: every line, best first. around=me needs you signed in (401) and in the tournament (409 CONFLICT).",
		Response:    StandingsPage{}, Errors: []int{http.StatusNotFound, http.StatusConflict, http.StatusUnauthorized},
		Query: []web.Param{{Name: "around", Description: "me: only the lines around yours", Enum: []string{"me"}}}})
	r.JSON(http.MethodGet, "/tournaments/:id/events", h.tournamentEvents, web.Op{Tag: "tournaments", Auth: web.AuthNone,
		Summary:  "The tournament's live events after a seq (what the live socket sends; for clients that poll or catch up)",
		Response: TournamentEventsPage{}, Errors: []int{http.StatusNotFound},
		Query: []web.Param{{Name: "after", Description: "the last seq you have; 0 for all", Type: "integer", Min: web.Bound(0)}}})
	r.JSON(http.MethodPost, "/tournaments/:id/join", h.entryAction(h.Tournaments.Join), moneyIn(web.Op{Tag: "tournaments", Auth: web.AuthRequired,
		Summary: "Enter a tournament, or play again after withdrawing from a running one",
		Description: "Until endsAt: joining late is allowed. The entry fee is locked from your available balance (409 INSUFFICIENT_FUNDS) and counts as a stake " +
			"for your limits; it is paid once: returning after a pause pays nothing. 409 CONFLICT when the tournament is full, over or cancelled. " +
			"409 LINKED_ACCOUNT when the tournament is paid and your account is linked to one of its entrants (one referred the other, a tip or " +
			"transfer went between you in the last 30 days, or with LINK_BY_IP you signed in from one client address): the message names whom and why. " +
			"403 AGENTS_NOT_ALLOWED when your account is a bot (POST /users/me/bot) and the arena's agentsAllowed is false. " +
			"Joining while in answers your entry unchanged.",
		Response: tournament.Entry{}, Errors: []int{http.StatusNotFound}}))
	r.JSON(http.MethodPost, "/tournaments/:id/withdraw", h.entryAction(h.Tournaments.Withdraw), web.Op{Tag: "tournaments", Auth: web.AuthRequired,
		Summary: "Leave a tournament: refunded before the start, paused after it",
		Description: "Before the start your entry fee goes back to your available balance. After it you stay in the standings with your entry in the pool, " +
			"and you are not paired until you join again (without paying again); a game you are playing still counts. " +
			"409 CONFLICT when you are not in it or it is over.",
		Response: tournament.Entry{}, Errors: []int{http.StatusNotFound, http.StatusConflict}})
	r.JSON(http.MethodPost, "/tournaments/:id/pause", h.entryAction(h.Tournaments.Pause), web.Op{Tag: "tournaments", Auth: web.AuthRequired,
		Summary: "Pause: not paired again until you resume",
		Description: "Any time before the end; you stay in the standings with your entry in the pool. A game you are playing is not touched: " +
			"play it out or resign it (it is lost on time if you leave it). Two games in a row lost on time pause you too (pausedReason says so). " +
			"Pausing while paused answers your entry unchanged. 409 CONFLICT when you are not in it or it is over.",
		Response: tournament.Entry{}, Errors: []int{http.StatusNotFound, http.StatusConflict}})
	r.JSON(http.MethodPost, "/tournaments/:id/resume", h.entryAction(h.Tournaments.Resume), web.Op{Tag: "tournaments", Auth: web.AuthRequired,
		Summary: "Resume after a pause: paired again as soon as you are free",
		Description: "Resuming while not paused answers your entry unchanged. 409 CONFLICT when you are not in it (join it) or it is over; " +
			"403 AGENTS_NOT_ALLOWED when your account is a bot and the arena is for people.",
		Response: tournament.Entry{}, Errors: []int{http.StatusNotFound, http.StatusConflict, http.StatusForbidden}})
	r.JSON(http.MethodPost, "/tournaments/:id/berserk", h.berserk, web.Op{Tag: "tournaments", Auth: web.AuthRequired,
		Summary: "Berserk: halve your time in your current arena game for +1 point on a win",
		Description: "Before your first move of the game: your seconds per round or turn halve (rounded down, at least 3) for the rest of it, " +
			"the round or turn running included. A win then scores 1 more, once you played at least 7 of your own moves (Connect Four) or 2 rounds " +
			"(rock, paper, scissors). The game's room gets game:berserk; standings count your berserks. " +
			"409 CONFLICT when you are not playing a game of the arena now, moved already, went berserk already, half of your round or turn " +
			"has passed already, or the game's rounds or turns are too short to halve (3 seconds).",
		Response: tournament.BerserkAnswer{}, Errors: []int{http.StatusNotFound, http.StatusConflict}})
}

// ScheduleRoutes registers the admins' recurring arenas.
func (h *Tournaments) ScheduleRoutes(r Router) {
	r.JSON(http.MethodPost, "/admin/tournament-schedules", h.createSchedule, web.Op{Tag: "admin", Auth: web.AuthAdmin, Status: http.StatusCreated,
		Summary: "Create a recurring arena",
		Description: "Each occurrence is created an hour before it starts, as a normal arena with scheduleId (GET /tournaments?upcoming=true lists it). " +
			"400 VALIDATION_ERROR naming each invalid field: the arena's fields as POST /tournaments checks them, every (hourly, daily or weekly) " +
			"and at (HH:MM in UTC; hourly arenas start at its minute of every hour, weekly ones on the weekday of the first start). " +
			"Recorded in the audit log (tournament.schedule).",
		Request: tournament.NewSchedule{}, Response: tournament.Schedule{}})
	r.JSON(http.MethodPost, "/admin/tournaments/:id/games/:gameId/void", h.voidGame, web.Op{Tag: "admin", Auth: web.AuthAdmin,
		Summary: "Void an ended arena game for integrity: its points are taken back",
		Description: "The game's winner (both players after a draw) is scored again from their games in order without it, the streak across it " +
			"too; the loser keeps what they had. Standings and later pairings use the new scores. Once the prizes were paid nothing is clawed back: " +
			"prizeChanges shows what the new standings would pay (staff decide). Voiding it again answers the void unchanged. " +
			"400 VALIDATION_ERROR naming reason; 404 when the game is not an ended game of the tournament. Recorded in the audit log (tournament.void).",
		Request: VoidRequest{}, Response: tournament.Void{}, Errors: []int{http.StatusNotFound}})
	r.JSON(http.MethodGet, "/admin/tournaments/:id/voids", h.listVoids, web.Op{Tag: "admin", Auth: web.AuthAdmin,
		Summary: "An arena's voided games, the latest first, with the records and prizes they changed", Response: []tournament.Void{},
		Errors: []int{http.StatusNotFound}})
	r.JSON(http.MethodGet, "/admin/tournament-schedules", h.listSchedules, web.Op{Tag: "admin", Auth: web.AuthAdmin,
		Summary: "The recurring arenas, the newest first", Response: []tournament.Schedule{}})
	r.JSON(http.MethodDelete, "/admin/tournament-schedules/:id", h.stopSchedule, web.Op{Tag: "admin", Auth: web.AuthAdmin,
		Summary:     "Stop a recurring arena: no occurrence is created after this (those created stay)",
		Description: "Stopping it again answers it unchanged. Recorded in the audit log (tournament.schedule.stop).",
		Response:    tournament.Schedule{}, Errors: []int{http.StatusNotFound}})
}

// VoidRequest is the body of an arena game's void.
type VoidRequest struct {
	Reason string `json:"reason" minLength:"1" maxLength:"500" doc:"why, for the record (required)"`
}

func (h *Tournaments) voidGame(c echo.Context) error {
	var req VoidRequest
	if err := web.BindJSON(c, &req); err != nil {
		return err
	}
	reason, err := integrity.DecisionReason(req.Reason)
	if err != nil {
		return err
	}
	v, err := h.Tournaments.VoidGame(c.Request().Context(), web.IdentityOf(c).UserID, c.Param("id"), c.Param("gameId"), reason)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, v)
}

func (h *Tournaments) listVoids(c echo.Context) error {
	out, err := h.Tournaments.Voids(c.Request().Context(), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

func (h *Tournaments) createSchedule(c echo.Context) error {
	var req tournament.NewSchedule
	if err := web.BindJSON(c, &req); err != nil {
		return err
	}
	sc, err := h.Tournaments.CreateSchedule(c.Request().Context(), web.IdentityOf(c).UserID, req)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, sc)
}

func (h *Tournaments) listSchedules(c echo.Context) error {
	out, err := h.Tournaments.Schedules(c.Request().Context())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

func (h *Tournaments) stopSchedule(c echo.Context) error {
	sc, err := h.Tournaments.StopSchedule(c.Request().Context(), web.IdentityOf(c).UserID, c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, sc)
}

func (h *Tournaments) entryAction(do func(ctx context.Context, userID, id string) (tournament.Entry, error)) echo.HandlerFunc {
	return func(c echo.Context) error {
		e, err := do(c.Request().Context(), web.IdentityOf(c).UserID, c.Param("id"))
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, e)
	}
}

func (h *Tournaments) berserk(c echo.Context) error {
	b, err := h.Tournaments.Berserk(c.Request().Context(), web.IdentityOf(c).UserID, c.Param("id"), "")
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, b)
}

// StandingsPage is lines of a tournament's standings.
type StandingsPage struct {
	PlayerCount int                   `json:"playerCount" doc:"every entrant, whatever lines are here"`
	Standings   []tournament.Standing `json:"standings" doc:"best first; ties share a rank"`
}

func (h *Tournaments) standings(c echo.Context) error {
	ctx := c.Request().Context()
	switch c.QueryParam("around") {
	case "":
		d, err := h.Tournaments.Get(ctx, c.Param("id"))
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, StandingsPage{PlayerCount: len(d.Standings), Standings: d.Standings})
	case "me":
		id := web.IdentityOf(c)
		if id == nil {
			return domain.Errorf(domain.CodeUnauthorized, "sign in to see the standings around you")
		}
		lines, n, err := h.Tournaments.StandingsAround(ctx, c.Param("id"), id.UserID)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, StandingsPage{PlayerCount: n, Standings: lines})
	}
	return domain.Invalid(map[string]string{"around": "must be me, or absent"})
}

// TournamentEventsPage is a page of a tournament's events.
type TournamentEventsPage struct {
	Events []TournamentEvent `json:"events"`
}

// TournamentEvent is one stored event of a tournament's room.
type TournamentEvent struct {
	TournamentID string           `json:"tournamentId"`
	Seq          int              `json:"seq"`
	Name         domain.EventName `json:"event"`
	Data         json.RawMessage  `json:"data" type:"object" doc:"the event's payload; its shape depends on the event name"`
	CreatedAt    time.Time        `json:"createdAt"`
}

func (h *Tournaments) createTournament(c echo.Context) error {
	var req tournament.NewTournament
	if err := web.BindJSON(c, &req); err != nil {
		return err
	}
	t, err := h.Tournaments.Create(c.Request().Context(), web.IdentityOf(c).UserID, req)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, t)
}

func (h *Tournaments) listTournaments(c echo.Context) error {
	v := domain.Validator{}
	limit := pageLimit(v, c)
	if err := v.Err(); err != nil {
		return err
	}
	status := c.QueryParam("status")
	switch c.QueryParam("upcoming") {
	case "", "false":
	case "true":
		if status != "" && status != tournament.StatusScheduled {
			return domain.Invalid(map[string]string{"upcoming": "upcoming arenas are scheduled ones: leave status out"})
		}
		status = tournament.StatusScheduled
	default:
		return domain.Invalid(map[string]string{"upcoming": "must be true or false"})
	}
	out, err := h.Tournaments.List(c.Request().Context(), status, limit, c.QueryParam("before"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

func (h *Tournaments) getTournament(c echo.Context) error {
	d, err := h.Tournaments.Get(c.Request().Context(), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, d)
}

func (h *Tournaments) tournamentEvents(c echo.Context) error {
	after, err := strconv.Atoi(c.QueryParam("after"))
	if c.QueryParam("after") != "" && (err != nil || after < 0) {
		return domain.Invalid(map[string]string{"after": "must be a seq number, 0 or more"})
	}
	evs, err := h.Tournaments.EventsAfter(c.Request().Context(), c.Param("id"), after, 200)
	if err != nil {
		return err
	}
	page := TournamentEventsPage{Events: make([]TournamentEvent, len(evs))}
	for i, e := range evs {
		page.Events[i] = TournamentEvent{TournamentID: e.Stream.ID, Seq: e.Seq, Name: e.Name, Data: e.Data, CreatedAt: e.CreatedAt}
	}
	return c.JSON(http.StatusOK, page)
}
