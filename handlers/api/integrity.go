package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"wager/domain"
	"wager/domain/integrity"
	"wager/domain/users"
	"wager/web"
)

// Integrity serves the review queue, its decisions and the links between accounts.
type Integrity struct {
	Users   *users.Service
	Links   *integrity.Links
	Referee *integrity.Referee
}

// Routes registers the admins' review queue and account links.
func (h *Integrity) Routes(r Router) {
	r.JSON(http.MethodGet, "/admin/integrity", h.integrityQueue, web.Op{Tag: "admin", Auth: web.AuthAdmin,
		Summary: "Games whose bets and market are held for review, longest waiting first",
		Description: "A staked game whose pools together, or whose market's paid volume, exceed its player pot is held when it ends by resignation or with a round or turn lost on time. " +
			"Each entry has the bettors, the traders, the links between them and the players with what made each link, when and by whom, the game's history, " +
			"and the stakes you have in the game (conflicts): an admin with any may not decide it.",
		Response: []integrity.Case{}})
	for _, decision := range []string{"release", "void"} {
		summary := map[string]string{
			"release": "Settle a held game's bets and market as the game ended",
			"void":    "Refund every bet of a held game in full and resolve its market at 0.50 USDC a share (500000 minor units)",
		}[decision]
		r.JSON(http.MethodPost, "/admin/integrity/:gameId/"+decision, h.decideReview(decision), web.Op{Tag: "admin", Auth: web.AuthAdmin,
			Summary: summary, Description: "Takes the reason for the decision (required: 400 VALIDATION_ERROR naming reason without one), recorded with the review " +
				"(decisionReason) and in the audit log. Answers the game's integrity record. 403 CONFLICT_OF_INTEREST when you played in the game, bet on it, " +
				"traded in its market, entered its arena, or tipped or are linked to anyone in it: another admin must decide it. " +
				"404 when the game was never held; 409 CONFLICT when its review was decided already.",
			Request: IntegrityDecisionRequest{}, Response: integrity.Review{}, Errors: []int{http.StatusForbidden, http.StatusNotFound, http.StatusConflict}})
	}
	r.JSON(http.MethodGet, "/admin/users/:id/links", h.userLinks, web.Op{Tag: "admin", Auth: web.AuthAdmin,
		Summary: "Accounts linked to a user, why, and the evidence",
		Description: "Linked accounts may not bet on or trade each other's games (403 LINKED_TO_PLAYER): one referred the other, a tip or transfer went between them in the last 30 days, or (LINK_BY_IP) both signed in from one client address in the last 30 days. " +
			"Each link carries what made it, when and by whom (evidence).",
		Response: []integrity.Link{}, Errors: []int{http.StatusNotFound}})
}

func (h *Integrity) integrityQueue(c echo.Context) error {
	q, err := h.Referee.Queue(c.Request().Context(), web.IdentityOf(c).UserID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, q)
}

// IntegrityDecisionRequest is the body of POST
// /admin/integrity/:gameId/release and /void.
type IntegrityDecisionRequest struct {
	Reason string `json:"reason" minLength:"1" maxLength:"500" doc:"why you decide so, 1 to 500 characters (line breaks kept, no control or text-direction characters): recorded with the review and in the audit log"`
}

func (h *Integrity) decideReview(decision string) echo.HandlerFunc {
	return func(c echo.Context) error {
		var req IntegrityDecisionRequest
		// An empty body is a decision without a reason: refused naming it.
		if c.Request().ContentLength != 0 {
			if err := web.BindJSON(c, &req); err != nil {
				return err
			}
		}
		r, err := DecideReview(c, h.Referee, decision, req.Reason)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, r)
	}
}

func (h *Integrity) userLinks(c echo.Context) error {
	u, err := h.Users.ByID(c.Request().Context(), c.Param("id"))
	if err != nil {
		return err
	}
	links, err := h.Links.LinksOf(c.Request().Context(), u.ID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, links)
}

// DecideReview releases or voids a held game's review for the signed-in admin,
// who gives reason.
func DecideReview(c echo.Context, reviews *integrity.Referee, decision, reason string) (integrity.Review, error) {
	ctx, actor, gameID := c.Request().Context(), web.IdentityOf(c).UserID, c.Param("gameId")
	switch decision {
	case "release":
		return reviews.Release(ctx, actor, gameID, reason)
	case "void":
		return reviews.Void(ctx, actor, gameID, reason)
	}
	return integrity.Review{}, domain.Errorf(domain.CodeNotFound, "no such resource")
}
