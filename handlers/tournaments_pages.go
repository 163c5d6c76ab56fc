package handlers

import (
	"maps"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"wager/domain"
	"wager/domain/game/rules"
	"wager/domain/money"
	"wager/domain/tournament"
	"wager/handlers/header"
	"wager/handlers/livepage"
	"wager/views"
	"wager/web"
)

// tournamentPages serve the arenas' pages.
type tournamentPages struct {
	tournaments *tournament.Service
	now         domain.Clock
	header      *header.Header
}

// pageRoutes registers the arenas' pages: the list with its
// form, the live page of one, and its join and withdraw buttons.
func (h *tournamentPages) pageRoutes(r *router) {
	r.page(http.MethodGet, "/arenas", h.arenasPage)
	r.page(http.MethodPost, "/arenas", h.arenasCreate)
	r.page(http.MethodGet, "/arenas/:id", h.arenaPage)
	r.page(http.MethodPost, "/arenas/:id/join", h.arenaAction(true))
	r.page(http.MethodPost, "/arenas/:id/withdraw", h.arenaAction(false))
}

// arenasPage lists the arenas open to join and watch, the latest
// finished ones, and the form: GET /tournaments (both lists) for browsers.
func (h *tournamentPages) arenasPage(c echo.Context) error {
	form := views.ArenaForm{GameType: "rps", EntryFee: "0", StartsIn: "5", Duration: "10", MaxPlayers: "64", Split: "50, 30, 20"}
	return h.renderArenas(c, http.StatusOK, form, nil)
}

func (h *tournamentPages) renderArenas(c echo.Context, status int, form views.ArenaForm, failure error) error {
	ctx := c.Request().Context()
	open, err := h.tournaments.List(ctx, "", 50, "")
	if err != nil {
		return err
	}
	done, err := h.tournaments.List(ctx, tournament.StatusFinished, 10, "")
	if err != nil {
		return err
	}
	v := views.ArenasView{Form: form, MaxPlayers: h.tournaments.MaxPlayersLimit(), SignedIn: web.IdentityOf(c) != nil}
	for _, t := range open {
		v.Open = append(v.Open, arenaCard(t))
	}
	for _, t := range done {
		v.Finished = append(v.Finished, arenaCard(t))
	}
	for _, t := range rules.Available() {
		v.Types = append(v.Types, views.GameTypeOption{Type: t.GameType, Name: t.Name})
	}
	if failure != nil {
		v.Error = arenaError(failure)
	}
	return web.Render(c, status, views.ArenasPage(h.header.Page(c, "Arenas"), v))
}

func arenaCard(t tournament.Tournament) views.ArenaCard {
	when := "starts " + views.DateTime(t.StartsAt)
	switch t.Status {
	case tournament.StatusRunning:
		when = "ends " + views.DateTime(t.EndsAt)
	case tournament.StatusFinished, tournament.StatusCancelled:
		when = "ended " + views.DateTime(t.EndsAt)
	}
	words := views.GameName(t.GameType) + " · " + entryWords(t.EntryFeeMinor) + " · " + playerCountWords(t.PlayerCount, t.MaxPlayers)
	if t.Recurrence != nil {
		words += " · recurs " + *t.Recurrence
	}
	if !t.AgentsAllowed {
		words += " · for people only"
	}
	return views.ArenaCard{ID: t.ID, Name: t.Name, Status: t.Status, When: when, Words: words}
}

func entryWords(fee int64) string {
	if fee == 0 {
		return "free"
	}
	return money.FormatUSDC(fee) + " USDC entry"
}

func playerCountWords(n, max int) string {
	return strconv.Itoa(n) + " of " + strconv.Itoa(max) + " players"
}

// arenaError says a refusal in a sentence: each invalid field by its
// label, or the refusal's own message.
func arenaError(err error) string {
	e := web.AsError(err)
	if len(e.Fields) == 0 {
		if words, ok := stakeRefusal(e); ok {
			return strings.Replace(words, "This game needs", "The entry fee is", 1)
		}
		return e.Message
	}
	labels := map[string]string{"name": "The name", "gameType": "The game", "entryFeeMinor": "The entry fee", "startsAt": "The start",
		"durationMinutes": "The length", "maxPlayers": "The number of players", "prizeSplitBps": "The prizes", "settings": "The settings"}
	var out []string
	for _, f := range slices.Sorted(maps.Keys(e.Fields)) {
		label := labels[f]
		if label == "" {
			label = fieldLabel(f)
		}
		out = append(out, label+" "+e.Fields[f]+".")
	}
	return strings.Join(out, " ")
}

// arenasCreate is the page's form: POST /tournaments for browsers. A
// valid arena opens its page; a refused one shows the form again with
// what to fix.
func (h *tournamentPages) arenasCreate(c echo.Context) error {
	id, err := requireLogin(c)
	if id == nil {
		return err
	}
	form := views.ArenaForm{Name: c.FormValue("name"), GameType: c.FormValue("gameType"), EntryFee: strings.TrimSpace(c.FormValue("entryFee")),
		StartsIn: strings.TrimSpace(c.FormValue("startsIn")), Duration: strings.TrimSpace(c.FormValue("duration")),
		MaxPlayers: strings.TrimSpace(c.FormValue("maxPlayers")), Split: strings.TrimSpace(c.FormValue("split"))}
	fail := func(err error) error {
		if e := web.AsError(err); e.Code == domain.CodeInternal {
			return err
		} else {
			return h.renderArenas(c, web.StatusOf(e.Code), form, err)
		}
	}
	req, err := arenaRequest(form, h.now())
	if err != nil {
		return fail(err)
	}
	t, err := h.tournaments.Create(c.Request().Context(), id.UserID, req)
	if err != nil {
		return fail(err)
	}
	return c.Redirect(http.StatusSeeOther, "/arenas/"+t.ID)
}

// arenaRequest reads the form into what POST /tournaments takes; a field
// that is not even a number is refused by its name.
func arenaRequest(f views.ArenaForm, now time.Time) (tournament.NewTournament, error) {
	v := domain.Validator{}
	req := tournament.NewTournament{Name: f.Name, GameType: f.GameType}
	fee, err := parseUSDC(f.EntryFee)
	v.Check(err == nil, "entryFeeMinor", "must be an amount in USDC such as 1.5")
	req.EntryFeeMinor = fee
	whole := func(field, s string, def int) int {
		if s == "" {
			return def
		}
		n, err := strconv.Atoi(s)
		v.Check(err == nil, field, "must be a whole number")
		return n
	}
	startsIn := whole("startsAt", f.StartsIn, 0)
	v.Check(startsIn >= 0 && startsIn <= 7*24*60, "startsAt", "must be from 0 to 10080 minutes from now")
	req.StartsAt = now.Add(time.Duration(min(max(startsIn, 0), 7*24*60)) * time.Minute).UTC().Format(time.RFC3339)
	req.DurationMinutes = whole("durationMinutes", f.Duration, 0)
	if f.MaxPlayers != "" {
		n := whole("maxPlayers", f.MaxPlayers, 0)
		req.MaxPlayers = &n
	}
	if f.Split != "" {
		for _, part := range strings.Split(f.Split, ",") {
			pct, err := strconv.ParseFloat(strings.TrimSpace(part), 64)
			v.Check(err == nil && pct >= 0 && pct <= 100, "prizeSplitBps", "must be percentages such as 50, 30, 20 that sum to 100")
			req.PrizeSplitBps = append(req.PrizeSplitBps, int(math.Round(pct*100)))
		}
	}
	return req, v.Err()
}

// arenaPage is a tournament's live page: GET /tournaments/:id for
// browsers, kept live by the tournament's room over the page's socket.
func (h *tournamentPages) arenaPage(c echo.Context) error {
	return h.renderArena(c, http.StatusOK, c.QueryParam("done"), nil)
}

// Outcomes of a join or a withdrawal, which the arena page they lead back
// to names (?done=): a code, so that a link cannot put words on the page.
const (
	doneIn       = "in"
	doneInPaid   = "in-paid"
	donePaused   = "paused"
	doneLeft     = "left"
	doneRefunded = "refunded"
)

// doneMessage is what the arena page says after a join or a withdrawal
// (done: one of the codes above; anything else says nothing); the amounts
// are the tournament's entry fee, which a join locks and a refund returns.
func doneMessage(done string, feeMinor int64) string {
	switch done {
	case doneIn:
		return "You are in."
	case doneInPaid:
		return "You are in: " + money.FormatUSDC(feeMinor) + " USDC entry fee locked until the end."
	case donePaused:
		return "You are paused: you keep your place and are not paired until you play again."
	case doneLeft:
		return "You left the arena."
	case doneRefunded:
		return "You left the arena: " + money.FormatUSDC(feeMinor) + " USDC refunded."
	}
	return ""
}

func (h *tournamentPages) renderArena(c echo.Context, status int, done string, failure error) error {
	d, err := h.tournaments.Get(c.Request().Context(), c.Param("id"))
	if err != nil {
		return err
	}
	v := views.ArenaView{ID: d.ID, Name: d.Name, GameType: d.GameType, Status: d.Status, StartsAt: d.StartsAt, EndsAt: d.EndsAt,
		Message: doneMessage(done, d.EntryFeeMinor), Live: livepage.ArenaLive(d.Status, d.LastSeq, len(d.Standings), d.MaxPlayers, d.PrizePoolMinor, d.Standings, d.Prizes)}
	v.Live.StartsAt, v.Live.EndsAt = d.StartsAt, d.EndsAt
	v.Facts = arenaFacts(d.Tournament)
	if failure != nil {
		v.Error = arenaError(failure)
		_, v.ShortOfFunds = stakeRefusal(web.AsError(failure))
	}
	if id := web.IdentityOf(c); id != nil {
		v.SignedIn, v.Me = true, id.UserID
		for _, s := range d.Standings {
			if s.UserID == id.UserID {
				v.Joined, v.Paused = true, s.Paused
			}
		}
	}
	return web.Render(c, status, views.ArenaPage(h.header.Page(c, d.Name), v))
}

// arenaFacts are a tournament's terms, one sentence each.
func arenaFacts(t tournament.Tournament) []string {
	facts := []string{}
	if t.EntryFeeMinor == 0 {
		facts = append(facts, "Free to enter: no prizes")
	} else {
		facts = append(facts, "Entry "+money.FormatUSDC(t.EntryFeeMinor)+" USDC", "Prizes by place: "+splitWords(t.PrizeSplitBps)+" of the pool less 1%")
	}
	facts = append(facts, "From "+views.DateTime(t.StartsAt)+" to "+views.DateTime(t.EndsAt), "Scheduled by "+t.CreatedBy.Username)
	if t.Recurrence != nil {
		facts = append(facts, "Recurs "+*t.Recurrence)
	}
	if t.AgentsAllowed {
		facts = append(facts, "Bots and AI agents may enter")
	} else {
		facts = append(facts, "For people only: bot accounts may not enter")
	}
	return facts
}

func splitWords(split []int) string {
	parts := make([]string, len(split))
	for i, b := range split {
		parts[i] = strconv.FormatFloat(float64(b)/100, 'f', -1, 64) + "%"
	}
	return strings.Join(parts, ", ")
}

// arenaAction is the page's join or withdraw button: POST
// /tournaments/:id/join or /withdraw for browsers, answered with the page
// and what happened (or why not).
func (h *tournamentPages) arenaAction(join bool) echo.HandlerFunc {
	return func(c echo.Context) error {
		id, err := requireLogin(c)
		if id == nil {
			return err
		}
		ctx := c.Request().Context()
		var e tournament.Entry
		if join {
			e, err = h.tournaments.Join(ctx, id.UserID, c.Param("id"))
		} else {
			e, err = h.tournaments.Withdraw(ctx, id.UserID, c.Param("id"))
		}
		if err != nil {
			if we := web.AsError(err); we.Code != domain.CodeInternal && we.Code != domain.CodeNotFound {
				return h.renderArena(c, web.StatusOf(we.Code), "", err)
			}
			return err
		}
		done := doneIn
		switch {
		case e.LockedMinor > 0:
			done = doneInPaid
		case e.Status == tournament.EntryPaused:
			done = donePaused
		case e.Status == tournament.EntryWithdrawn && e.RefundedMinor > 0:
			done = doneRefunded
		case e.Status == tournament.EntryWithdrawn:
			done = doneLeft
		}
		return c.Redirect(http.StatusSeeOther, "/arenas/"+e.TournamentID+"?done="+done)
	}
}
