package api

import (
	"io"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"wager/domain/protection"
	"wager/domain/users"
	"wager/web"
)

// protectionRefusals is what the description of every money-in route says
// player protection may answer.
const protectionRefusals = "Player protection (a free game is never refused): 403 SELF_EXCLUDED (with until) during a time-out or self-exclusion, " +
	"403 AGE_UNCONFIRMED until the age is confirmed (REQUIRE_AGE_CONFIRMATION), 403 UNDERAGE for an account found younger than MIN_AGE, " +
	"403 REGION_RESTRICTED from a country in RESTRICTED_COUNTRIES, 409 LIMIT_EXCEEDED (with limit, the dotted name of the limit, and resetsAt, " +
	"when its window frees enough; null when waiting does not) past one of your limits: deposits over a window's deposit limit, " +
	"a stake above stakeMaxMinor, and stakes, bets and market buys once a window's net loss reached its limit."

// moneyIn documents a route that puts money in: player protection's
// refusals.
func moneyIn(op web.Op) web.Op {
	if op.Description != "" {
		op.Description += " "
	}
	op.Description += protectionRefusals
	op.Errors = append(op.Errors, http.StatusForbidden, http.StatusConflict)
	return op
}

// LimitsRequest documents the body of PUT /users/me/limits; the handler
// reads the body itself, to tell a field left out from one set to null.
type LimitsRequest struct {
	DepositMinor           *LimitWindowsRequest `json:"depositMinor,omitempty" doc:"the deposit limits to set"`
	LossMinor              *LimitWindowsRequest `json:"lossMinor,omitempty" doc:"the net loss limits to set"`
	StakeMaxMinor          *int64               `json:"stakeMaxMinor,omitempty" nullable:"true" minimum:"0" maximum:"1000000000000000" doc:"null removes it"`
	SessionReminderMinutes *int                 `json:"sessionReminderMinutes,omitempty" nullable:"true" minimum:"0" maximum:"1440" doc:"0: no reminder; null: the default (60)"`
}

// LimitWindowsRequest are the windows of a limit to set; null removes one.
type LimitWindowsRequest struct {
	Day   *int64 `json:"day,omitempty" nullable:"true" minimum:"0" maximum:"1000000000000000"`
	Week  *int64 `json:"week,omitempty" nullable:"true" minimum:"0" maximum:"1000000000000000"`
	Month *int64 `json:"month,omitempty" nullable:"true" minimum:"0" maximum:"1000000000000000"`
}

// MyProfile is the signed-in user's own profile: the public one and what
// only they see.
type MyProfile struct {
	UserProfile
	AgeConfirmed bool `json:"ageConfirmed" doc:"the age was confirmed (POST /users/me/age-confirmation); with REQUIRE_AGE_CONFIRMATION money goes in only after it"`
	// PreviousSignInAt is the sign-in before the latest one.
	PreviousSignInAt *time.Time `json:"previousSignInAt" doc:"the sign-in before your latest one (null: the latest was the first)"`
}

// Protection serves the players' limits, exclusion, age and session.
type Protection struct {
	Users      *users.Service
	Protection *protection.Service
}

// Routes registers the player's limits, exclusion, age and
// session, and staff's read of them.
func (h *Protection) Routes(r Router) {
	r.JSON(http.MethodGet, "/users/me/limits", h.getLimits, web.Op{Tag: "protection", Auth: web.AuthRequired,
		Summary: "Your limits, the looser changes waiting, and what is used of each",
		Description: "Windows are rolling: day 24 hours, week 7 days, month 30 days. Used deposits count prepared deposits that have not expired; " +
			"used losses are net losses (0 when the window is a net win).",
		Response: protection.Limits{}})
	r.JSON(http.MethodPut, "/users/me/limits", h.putLimits, web.Op{Tag: "protection", Auth: web.AuthRequired,
		Summary: "Set any of your limits (null removes one)",
		Description: "A tighter value (lower, or a limit where there was none) applies at once; a looser one (higher, or removed) 24 hours after you ask " +
			"and is listed in pending until then (asking again starts the 24 hours again); the current value or a tighter one replaces a waiting looser change. " +
			"sessionReminderMinutes changes at once. A negative, fractional or unknown field is 400 naming it.",
		Request: LimitsRequest{}, Response: protection.Limits{}})
	r.JSON(http.MethodPost, "/users/me/exclusion", h.startExclusion, web.Op{Tag: "protection", Auth: web.AuthRequired, Status: http.StatusCreated,
		Summary: "Take a time-out or exclude yourself, starting now",
		Description: "{kind: timeout, hours: 24-1008}, {kind: self-exclusion, months: 6|12|60} or {kind: self-exclusion, permanent: true}. " +
			"While it runs, deposits, stakes, tournament entries, bets, market buys, donations and tips are 403 SELF_EXCLUDED; withdrawals, sells, " +
			"cancels, redemptions, chat and free games go on. Starting it cancels your open market buy orders and takes you out of staked queues. " +
			"It cannot be shortened, lifted or replaced by a shorter one (409 CONFLICT), by you or by staff; a longer one replaces it.",
		Request: protection.ExclusionRequest{}, Response: protection.Exclusion{}, Errors: []int{http.StatusConflict}})
	r.JSON(http.MethodGet, "/users/me/exclusion", h.getExclusion, web.Op{Tag: "protection", Auth: web.AuthRequired,
		Summary: "Your running time-out or self-exclusion; 204 when none", Response: protection.Exclusion{},
		Responses: map[int]any{http.StatusNoContent: nil}})
	r.JSON(http.MethodPost, "/users/me/age-confirmation", h.confirmAge, web.Op{Tag: "protection", Auth: web.AuthRequired,
		Summary: "Confirm your age with your birth date",
		Description: "MIN_AGE (18) or older: ageConfirmed. Younger: 403 UNDERAGE, and the account is refused on every money-in path for good, " +
			"whatever it sends later. Not a real date, in the future or before 1900: 400.",
		Request: protection.AgeRequest{}, Response: protection.AgeConfirmation{}, Errors: []int{http.StatusForbidden}})
	r.JSON(http.MethodGet, "/users/me/session", h.sessionCheck, web.Op{Tag: "protection", Auth: web.AuthRequired,
		Summary: "The reality check: how long since you signed in, and what you won or lost since",
		Description: "Signed in is when this access token was issued (POST /auth/login-wallet), or when this browser session started (the sign-in page). " +
			"netMinor is payouts, refunds, sales and redemptions less stakes, bets and market buys since then.",
		Response: protection.Session{}})
	r.JSON(http.MethodGet, "/admin/users/:id/protection", h.staffProtection, web.Op{Tag: "admin", Auth: web.AuthAdmin,
		Summary:     "A user's limits, exclusions and age confirmation (read only)",
		Description: "Staff read them; no route lets anyone lift or shorten an exclusion, or change another user's limits.",
		Response:    protection.StaffView{}, Errors: []int{http.StatusNotFound}})
}

func (h *Protection) getLimits(c echo.Context) error {
	l, err := h.Protection.Limits(c.Request().Context(), web.IdentityOf(c).UserID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, l)
}

func (h *Protection) putLimits(c echo.Context) error {
	body, err := io.ReadAll(c.Request().Body)
	if err != nil {
		return err // over the body limit
	}
	changes, err := protection.ParseChanges(body)
	if err != nil {
		return err
	}
	l, err := h.Protection.SetLimits(c.Request().Context(), web.IdentityOf(c).UserID, changes)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, l)
}

func (h *Protection) startExclusion(c echo.Context) error {
	var req protection.ExclusionRequest
	if err := web.BindJSON(c, &req); err != nil {
		return err
	}
	x, err := h.Protection.StartExclusion(c.Request().Context(), web.IdentityOf(c).UserID, req)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, x)
}

func (h *Protection) getExclusion(c echo.Context) error {
	x, err := h.Protection.Running(c.Request().Context(), web.IdentityOf(c).UserID)
	if err != nil {
		return err
	}
	if x == nil {
		return c.NoContent(http.StatusNoContent)
	}
	return c.JSON(http.StatusOK, x)
}

func (h *Protection) confirmAge(c echo.Context) error {
	var req protection.AgeRequest
	if err := web.BindJSON(c, &req); err != nil {
		return err
	}
	out, err := h.Protection.ConfirmAge(c.Request().Context(), web.IdentityOf(c).UserID, req.BirthDate)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

func (h *Protection) sessionCheck(c echo.Context) error {
	id := web.IdentityOf(c)
	s, err := h.Protection.SessionOf(c.Request().Context(), id.UserID, id.SignedInAt)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, s)
}

func (h *Protection) staffProtection(c echo.Context) error {
	u, err := h.Users.ByID(c.Request().Context(), c.Param("id"))
	if err != nil {
		return err
	}
	v, err := h.Protection.StaffViewOf(c.Request().Context(), u.ID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, v)
}

// myProfile is the signed-in user's own profile.
func myProfile(c echo.Context, protections *protection.Service, u users.User) (MyProfile, error) {
	ok, err := protections.AgeConfirmed(c.Request().Context(), u.ID)
	if err != nil {
		return MyProfile{}, err
	}
	return MyProfile{UserProfile: ProfileOf(u), AgeConfirmed: ok, PreviousSignInAt: u.PreviousSignInAt}, nil
}
