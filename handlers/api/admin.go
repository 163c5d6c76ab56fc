package api

import (
	"log/slog"
	"net/http"

	"github.com/labstack/echo/v4"

	"wager/domain"
	"wager/domain/flags"
	"wager/domain/money"
	"wager/web"
)

// Admin serves the admin's feature flags and the reconciliation of the books.
type Admin struct {
	Flags *flags.Service
	Money *money.Service
	Log   *slog.Logger
}

// Routes registers reconciliation and the feature flags' switches.
func (h *Admin) Routes(r Router) {
	r.JSON(http.MethodGet, "/admin/reconciliation", h.reconciliation, web.Op{Tag: "admin", Auth: web.AuthAdmin,
		Summary:  "Ledger totals and chain balance against ledger balance for every platform address",
		Response: money.Reconciliation{},
		Description: "The chain reads wait at most " + money.ChainReadWait.String() + " together for the Solana network: an address not read by then " +
			"has chainMinor null and is listed in unreadAddresses, and balanced is false. A network that does not answer is never an error here."})
	r.JSON(http.MethodGet, "/admin/feature-flags", h.adminListFlags, web.Op{Tag: "admin", Auth: web.AuthAdmin,
		Summary: "Feature flags with who changed them and when", Response: AdminFlags{}})
	r.JSON(http.MethodPut, "/admin/feature-flags/:name", h.adminSetFlag, web.Op{Tag: "admin", Auth: web.AuthAdmin,
		Summary: "Turn a feature flag on or off", Request: SetFlagRequest{}, Response: flags.Flag{},
		Description: "Recorded in the audit log (flag.set).", Errors: []int{http.StatusNotFound}})
}

// AdminFlags is the answer of GET /admin/feature-flags.
type AdminFlags struct {
	Flags   []flags.Flag   `json:"flags"`
	Changes []flags.Change `json:"changes" doc:"the newest changes first"`
}

func (h *Admin) adminListFlags(c echo.Context) error {
	ctx := c.Request().Context()
	list, err := h.Flags.List(ctx)
	if err != nil {
		return err
	}
	changes, err := h.Flags.Changes(ctx, 50)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, AdminFlags{Flags: list, Changes: changes})
}

// SetFlagRequest is the body of PUT /admin/feature-flags/:name.
type SetFlagRequest struct {
	Enabled *bool `json:"enabled" doc:"required"`
}

func (h *Admin) adminSetFlag(c echo.Context) error {
	var req SetFlagRequest
	if err := web.BindJSON(c, &req); err != nil {
		return err
	}
	if req.Enabled == nil {
		return domain.Invalid(map[string]string{"enabled": "required: true or false"})
	}
	id := web.IdentityOf(c)
	f, err := h.Flags.SetByAdmin(c.Request().Context(), c.Param("name"), *req.Enabled, id.UserID, id.Username+" ("+id.Wallet+")")
	if err != nil {
		return err
	}
	h.Log.Info("feature flag changed", "flag", f.Name, "enabled", f.Enabled, "by", id.UserID)
	return c.JSON(http.StatusOK, f)
}

func (h *Admin) reconciliation(c echo.Context) error {
	r, err := h.Money.Reconcile(c.Request().Context())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, r)
}
