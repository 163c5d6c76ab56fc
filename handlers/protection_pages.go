package handlers

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"wager/domain"
	"wager/domain/money"
	"wager/domain/protection"
	"wager/handlers/header"
	"wager/views"
	"wager/web"
)

// protectionPages serve the responsible play page and its forms.
type protectionPages struct {
	protection *protection.Service
	header     *header.Header
}

// protectionPagePath is the Responsible play page.
const protectionPagePath = views.ResponsiblePlayPath

// limitLabels name the limits on the pages.
var limitLabels = map[string]string{
	protection.DepositDay: "Deposits in 24 hours", protection.DepositWeek: "Deposits in 7 days",
	protection.DepositMonth: "Deposits in 30 days", protection.LossDay: "Net loss in 24 hours",
	protection.LossWeek: "Net loss in 7 days", protection.LossMonth: "Net loss in 30 days",
	protection.StakeMax: "Largest stake",
}

// pageRoutes registers the responsible play page and its forms.
func (h *protectionPages) pageRoutes(r *router) {
	r.page(http.MethodGet, protectionPagePath, h.protectionPage)
	r.page(http.MethodPost, protectionPagePath+"/limits", h.protectionLimitsSubmit)
	r.page(http.MethodPost, protectionPagePath+"/exclusion", h.protectionExclusionSubmit)
	r.page(http.MethodPost, protectionPagePath+"/age", h.protectionAgeSubmit)
}

// exclusionText words a running exclusion for the Responsible play page.
func exclusionText(x *protection.Exclusion) string {
	switch {
	case x == nil:
		return ""
	case x.Until == nil:
		return "You excluded yourself for good on " + protection.FormatTime(x.StartsAt) + ". It cannot be lifted."
	case x.Kind == protection.KindTimeout:
		return "Your time-out runs until " + protection.FormatTime(*x.Until) + ". It cannot be shortened; you can only make it longer."
	}
	return "Your self-exclusion runs until " + protection.FormatTime(*x.Until) + ". It cannot be shortened; you can only make it longer."
}

func usdcOrNone(v *int64) string {
	if v == nil {
		return "No limit"
	}
	return money.FormatUSDC(*v) + " USDC"
}

// responsiblePlayView reads what the Responsible play page shows.
func (h *protectionPages) responsiblePlayView(c echo.Context, userID string) (views.ResponsiblePlayView, error) {
	ctx := c.Request().Context()
	l, err := h.protection.Limits(ctx, userID)
	if err != nil {
		return views.ResponsiblePlayView{}, err
	}
	st, err := h.protection.StandingOf(ctx, userID, "")
	if err != nil {
		return views.ResponsiblePlayView{}, err
	}
	confirmed, err := h.protection.AgeConfirmed(ctx, userID)
	if err != nil {
		return views.ResponsiblePlayView{}, err
	}
	cfg := h.protection.Config()
	v := views.ResponsiblePlayView{Reminder: strconv.Itoa(l.SessionReminderMinutes), Exclusion: exclusionText(st.Exclusion),
		AgeConfirmed: confirmed, AgeRequired: cfg.RequireAge, Underage: st.Underage, MinAge: cfg.MinAge,
		Timeouts: []views.Choice{{Value: "24", Label: "24 hours"}, {Value: "48", Label: "48 hours"}, {Value: "72", Label: "72 hours"},
			{Value: "168", Label: "1 week"}, {Value: "336", Label: "2 weeks"}, {Value: "672", Label: "4 weeks"}, {Value: "1008", Label: "6 weeks"}},
		Exclusions: []views.Choice{{Value: "6", Label: "6 months"}, {Value: "12", Label: "1 year"}, {Value: "60", Label: "5 years"},
			{Value: "permanent", Label: "For good"}}}
	current := limitValues(l)
	used := map[string]int64{
		protection.DepositDay: l.Used.DepositMinor.Day, protection.DepositWeek: l.Used.DepositMinor.Week,
		protection.DepositMonth: l.Used.DepositMinor.Month, protection.LossDay: l.Used.LossMinor.Day,
		protection.LossWeek: l.Used.LossMinor.Week, protection.LossMonth: l.Used.LossMinor.Month,
	}
	for _, name := range protection.Names {
		row := views.LimitRow{Name: name, Label: limitLabels[name], Current: usdcOrNone(current[name])}
		if v := current[name]; v != nil {
			row.Value = money.FormatUSDC(*v)
		}
		if u, ok := used[name]; ok {
			row.Used = money.FormatUSDC(u) + " USDC"
		}
		v.Limits = append(v.Limits, row)
	}
	for _, p := range l.Pending {
		v.Pending = append(v.Pending, views.PendingRow{Name: p.Name, Label: limitLabels[p.Name],
			Value: strings.ToLower(usdcOrNone(p.Value)), When: protection.FormatTime(p.EffectiveAt)})
	}
	switch c.QueryParam("saved") {
	case "limits":
		v.Saved = "Your limits are saved. Tighter limits apply now; looser ones wait 24 hours, as listed below."
	case "exclusion":
		v.Saved = "Your break has started. " + exclusionText(st.Exclusion)
	case "age":
		v.Saved = "Thank you: your age is confirmed."
	}
	return v, nil
}

// limitValues are the limits in force, by name.
func limitValues(l protection.Limits) map[string]*int64 {
	return map[string]*int64{
		protection.DepositDay: l.DepositMinor.Day, protection.DepositWeek: l.DepositMinor.Week,
		protection.DepositMonth: l.DepositMinor.Month, protection.LossDay: l.LossMinor.Day,
		protection.LossWeek: l.LossMinor.Week, protection.LossMonth: l.LossMinor.Month, protection.StakeMax: l.StakeMaxMinor,
	}
}

func (h *protectionPages) protectionPage(c echo.Context) error {
	id, err := requireLogin(c)
	if id == nil {
		return err
	}
	v, err := h.responsiblePlayView(c, id.UserID)
	if err != nil {
		return err
	}
	return web.Render(c, http.StatusOK, views.ResponsiblePlay(h.header.Page(c, "Responsible play"), v))
}

// protectionRefused renders the page again with the refusal of one of its
// forms.
func (h *protectionPages) protectionRefused(c echo.Context, userID, form string, err error) error {
	e := web.AsError(err)
	if e.Code == domain.CodeInternal || e.Code == domain.CodeUnavailable {
		return err
	}
	v, verr := h.responsiblePlayView(c, userID)
	if verr != nil {
		return verr
	}
	msg := e.Message
	for field, reason := range e.Fields {
		label := limitLabels[field]
		if label == "" {
			label = map[string]string{"sessionReminderMinutes": "The reality check interval", "hours": "The time-out",
				"months": "The self-exclusion", "birthDate": "The date of birth"}[field]
		}
		if label == "" {
			label = field
		}
		msg = label + " " + reason + "."
	}
	v.Error, v.ErrorForm = sentence(msg), form
	return web.Render(c, web.StatusOf(e.Code), views.ResponsiblePlay(h.header.Page(c, "Responsible play"), v))
}

// protectionLimitsSubmit saves the limits form: only the limits whose
// value changed (an unchanged one sent again would cancel a looser change
// waiting), or, with keep, the current value of one limit, which cancels
// its waiting change.
func (h *protectionPages) protectionLimitsSubmit(c echo.Context) error {
	id, err := requireLogin(c)
	if id == nil {
		return err
	}
	ctx := c.Request().Context()
	l, err := h.protection.Limits(ctx, id.UserID)
	if err != nil {
		return err
	}
	current := limitValues(l)
	var changes protection.Changes
	if keep := c.FormValue("keep"); keep != "" {
		if _, known := limitLabels[keep]; !known {
			return h.protectionRefused(c, id.UserID, "limits", domain.Invalid(map[string]string{"keep": "is not a limit"}))
		}
		changes.Limits = append(changes.Limits, protection.LimitChange{Name: keep, Value: current[keep]})
	} else {
		bad := domain.Validator{}
		for _, name := range protection.Names {
			text := strings.TrimSpace(c.FormValue(name))
			var value *int64
			if text != "" {
				n, err := parseUSDC(text)
				if err != nil {
					bad.Check(false, name, "must be an amount in USDC such as 25 or 2.5, or empty for no limit")
					continue
				}
				value = &n
			}
			if old := current[name]; (old == nil) != (value == nil) || (old != nil && *old != *value) {
				changes.Limits = append(changes.Limits, protection.LimitChange{Name: name, Value: value})
			}
		}
		if text := strings.TrimSpace(c.FormValue("sessionReminderMinutes")); text != "" {
			n, err := strconv.Atoi(text)
			if err != nil || n < 0 || n > protection.MaxReminderMinutes {
				bad.Check(false, "sessionReminderMinutes", "must be a whole number of minutes from 0 to 1440")
			} else if n != l.SessionReminderMinutes {
				changes.Reminder = &n
			}
		}
		if err := bad.Err(); err != nil {
			return h.protectionRefused(c, id.UserID, "limits", err)
		}
	}
	if _, err := h.protection.SetLimits(ctx, id.UserID, changes); err != nil {
		return h.protectionRefused(c, id.UserID, "limits", err)
	}
	return c.Redirect(http.StatusSeeOther, protectionPagePath+"?saved=limits")
}

// protectionExclusionSubmit starts a time-out or self-exclusion once the
// box that says it cannot be undone is ticked.
func (h *protectionPages) protectionExclusionSubmit(c echo.Context) error {
	id, err := requireLogin(c)
	if id == nil {
		return err
	}
	if c.FormValue("confirm") != "yes" {
		return h.protectionRefused(c, id.UserID, "exclusion", domain.Errorf(domain.CodeValidation,
			"tick the box to confirm that you understand it cannot be undone"))
	}
	req := protection.ExclusionRequest{Kind: c.FormValue("kind")}
	if req.Kind == protection.KindTimeout {
		if n, err := strconv.Atoi(c.FormValue("hours")); err == nil {
			req.Hours = &n
		} else {
			req.Hours = new(int)
		}
	} else if length := c.FormValue("length"); length == "permanent" {
		yes := true
		req.Permanent = &yes
	} else {
		n, err := strconv.Atoi(length)
		if err != nil {
			n = 0
		}
		req.Months = &n
	}
	if _, err := h.protection.StartExclusion(c.Request().Context(), id.UserID, req); err != nil {
		return h.protectionRefused(c, id.UserID, "exclusion", err)
	}
	return c.Redirect(http.StatusSeeOther, protectionPagePath+"?saved=exclusion")
}

func (h *protectionPages) protectionAgeSubmit(c echo.Context) error {
	id, err := requireLogin(c)
	if id == nil {
		return err
	}
	if _, err := h.protection.ConfirmAge(c.Request().Context(), id.UserID, strings.TrimSpace(c.FormValue("birthDate"))); err != nil {
		return h.protectionRefused(c, id.UserID, "age", err)
	}
	return c.Redirect(http.StatusSeeOther, protectionPagePath+"?saved=age")
}
