package handlers

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"wager/domain"
	"wager/domain/game/rules"
	"wager/domain/integrity"
	"wager/domain/money"
	"wager/handlers/api"
	"wager/handlers/header"
	"wager/handlers/livepage"
	"wager/views"
	"wager/web"
)

// integrityPages serve the review queue's page and its decisions.
type integrityPages struct {
	referee *integrity.Referee
	header  *header.Header
}

// integrityPagePath: the review queue answers browsers at /admin/integrity
// (the JSON queue's address, see pagesForBrowsers) and lives here.
const integrityPagePath = "/admin/integrity/page"

// pageRoutes registers the review queue's page and its decisions.
func (h *integrityPages) pageRoutes(r *router) {
	r.page(http.MethodGet, integrityPagePath, h.integrityPage)
	r.page(http.MethodPost, integrityPagePath+"/:gameId/:decision", h.integrityDecide)
}

func (h *integrityPages) integrityPage(c echo.Context) error {
	id, err := requireAdmin(c)
	if id == nil {
		return err
	}
	done := doneWords(c.QueryParam("done"), c.QueryParam("game"))
	if done != "" {
		r, err := h.referee.Of(c.Request().Context(), c.QueryParam("game"))
		if err != nil {
			return err
		}
		// The decider reads their reason back; nobody reads another's here.
		if r != nil && r.Status == c.QueryParam("done") && r.DeciderID != nil && *r.DeciderID == id.UserID && r.DecisionReason != nil {
			done += " Your reason: " + *r.DecisionReason
		}
	}
	return h.renderIntegrity(c, http.StatusOK, views.IntegrityView{Done: done}, caseForm{})
}

// caseForm is what the queue's page shows again in one case after a post
// to it: the reason typed, and the decision that waits for confirmation.
type caseForm struct {
	gameID, reason string
	confirm        *views.IntegrityConfirm
}

// integrityDecide releases or voids a held game from the queue's forms:
// with a valid reason it first asks for a confirmation, and once
// confirmed decides and shows the queue with what the decision did.
func (h *integrityPages) integrityDecide(c echo.Context) error {
	if id, err := requireAdmin(c); id == nil {
		return err
	}
	gameID, decision, typed := c.Param("gameId"), c.Param("decision"), c.FormValue("reason")
	question, button, ok := confirmWords(decision, gameID)
	if !ok {
		return domain.Errorf(domain.CodeNotFound, "no such resource")
	}
	form := caseForm{gameID: gameID, reason: typed}
	reason, err := integrity.DecisionReason(typed)
	if err != nil {
		words := "Give a reason for your decision (1 to 500 characters): it is recorded with the decision and in the audit log."
		if strings.TrimSpace(typed) != "" {
			words += " Yours " + web.AsError(err).Fields["reason"] + "."
		}
		return h.renderIntegrity(c, http.StatusBadRequest, views.IntegrityView{Error: words}, form)
	}
	if c.FormValue("confirmed") != "yes" {
		form.confirm = &views.IntegrityConfirm{Action: decisionAction(gameID, decision), Question: question, Reason: reason, Button: button}
		return h.renderIntegrity(c, http.StatusOK, views.IntegrityView{}, form)
	}
	r, err := api.DecideReview(c, h.referee, decision, reason)
	if err != nil {
		return h.renderIntegrity(c, web.StatusOf(domain.ErrorCode(err)), views.IntegrityView{Error: web.AsError(err).Message}, form)
	}
	return c.Redirect(http.StatusSeeOther, integrityPagePath+"?done="+r.Status+"&game="+r.GameID)
}

func decisionAction(gameID, decision string) string {
	return integrityPagePath + "/" + gameID + "/" + decision
}

// confirmWords asks to confirm a decision, and names its button; ok is
// false for a decision that does not exist.
func confirmWords(decision, gameID string) (question, button string, ok bool) {
	switch decision {
	case "release":
		return "Release game " + gameID + "? Its bets and market will be paid as the game ended.", "Yes, release", true
	case "void":
		return "Void game " + gameID + "? Every bet will be refunded in full and every share pays 0.5 USDC.", "Yes, void", true
	}
	return "", "", false
}

// doneWords says what a decision did, for the page after it.
func doneWords(status, gameID string) string {
	switch status {
	case integrity.StatusReleased:
		return "Released game " + gameID + ": its bets and market were paid as the game ended."
	case integrity.StatusVoided:
		return "Voided game " + gameID + ": every bet was refunded in full and every share pays 0.5 USDC."
	}
	return ""
}

// requireAdmin returns the signed-in admin. Without one it returns nil:
// a visitor who is not signed in has been sent to the sign-in page (the
// error is nil, or why the redirect failed), anyone else gets ADMIN_ONLY.
func requireAdmin(c echo.Context) (*web.Identity, error) {
	id, err := requireLogin(c)
	if id == nil {
		return nil, err
	}
	if !id.Admin {
		return nil, domain.Errorf(domain.CodeAdminOnly, "only administrators can review games")
	}
	return id, nil
}

func (h *integrityPages) renderIntegrity(c echo.Context, status int, v views.IntegrityView, form caseForm) error {
	id, err := requireAdmin(c)
	if id == nil {
		return err
	}
	cases, err := h.referee.Queue(c.Request().Context(), id.UserID)
	if err != nil {
		return err
	}
	for _, k := range cases {
		w := caseWords(k)
		if k.GameID == form.gameID {
			w.Reason, w.Confirm = form.reason, form.confirm
		}
		v.Cases = append(v.Cases, w)
	}
	return web.Render(c, status, views.IntegrityQueue(h.header.Page(c, "Integrity reviews"), v))
}

// caseWords is a held game in sentences.
func caseWords(k integrity.Case) views.IntegrityCase {
	names := map[string]string{}
	for _, p := range k.Players {
		names[p.UserID] = p.Username
	}
	pot := k.StakeMinor * int64(len(k.Players))
	v := views.IntegrityCase{GameID: k.GameID, GameHref: "/game/" + k.GameID,
		ReleaseAction: decisionAction(k.GameID, "release"), VoidAction: decisionAction(k.GameID, "void"),
		Title:  views.GameName(k.GameType) + ", " + money.FormatUSDC(k.StakeMinor) + " USDC a player",
		Ending: names[k.WinnerID] + " won; " + reasonWords(k.Reason) + ".",
		Held: "Held " + views.DateTime(k.HeldAt) + ": " + money.FormatUSDC(k.PoolsMinor) + " USDC bet and " +
			money.FormatUSDC(k.VolumeMinor) + " USDC paid for shares, against a player pot of " + money.FormatUSDC(pot) + " USDC."}
	for _, b := range k.Bettors {
		v.Bettors = append(v.Bettors, b.Username+" bet "+money.FormatUSDC(b.AmountMinor)+" USDC on "+names[b.OnUserID])
	}
	for _, t := range k.Traders {
		v.Traders = append(v.Traders, t.Username+" holds "+strconv.FormatInt(t.Shares, 10)+" shares of "+names[t.OutcomeID]+
			" (paid "+money.FormatUSDC(t.CostMinor)+" USDC net)")
	}
	bettor := map[string]string{}
	for _, b := range k.Bettors {
		bettor[b.UserID] = b.Username
	}
	for _, t := range k.Traders {
		bettor[t.UserID] = t.Username
	}
	for _, l := range k.Links {
		link := views.IntegrityLink{Pair: bettor[l.UserID] + " is linked to " + l.Username + ": " + integrity.ReasonWords(l.Reasons)}
		for _, e := range l.Evidence {
			link.Evidence = append(link.Evidence, e.Sentence(""))
		}
		v.Links = append(v.Links, link)
	}
	if len(k.Conflicts) > 0 {
		v.Conflict = "You may not decide this case: " + integrity.ConflictWords(k.Conflicts) +
			". Another member of staff, an admin without a stake in it, must decide it."
	}
	switch h := k.History.(type) {
	case []rules.RPSRound:
		for _, r := range h {
			line := "Round " + strconv.Itoa(r.Round) + ": "
			var moves []string
			for _, p := range k.Players {
				moves = append(moves, p.Username+" "+choiceWords(r.Choices[p.UserID]))
			}
			line += strings.Join(moves, ", ")
			switch {
			case r.Reason == "timeout":
				line += ", " + names[livepage.Deref(r.WinnerID)] + " won it on time"
			case r.WinnerID != nil:
				line += ", " + names[*r.WinnerID] + " won it"
			default:
				line += ", drawn"
			}
			v.History = append(v.History, line)
		}
	case []rules.C4Move:
		for _, m := range h {
			v.History = append(v.History, "Move "+strconv.Itoa(m.MoveNumber)+": "+names[m.UserID]+" in column "+strconv.Itoa(m.Column+1))
		}
	}
	return v
}

func choiceWords(c *string) string {
	if c == nil {
		return "did not choose"
	}
	return *c
}

// reasonWords says how a held game ended.
func reasonWords(reason string) string {
	switch reason {
	case integrity.ReasonResigned:
		return "the other player resigned"
	case integrity.ReasonLinked:
		return "a bettor or trader is linked to a player"
	}
	return "a round or turn was lost on time"
}
