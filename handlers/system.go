package handlers

import (
	"context"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"wager/domain"
	"wager/domain/flags"
	"wager/web"
)

// Health is the answer of GET /health.
type Health struct {
	Status        string `json:"status" doc:"ok, or degraded when a dependency is down"`
	Database      string `json:"database" doc:"ok or unreachable"`
	Version       string `json:"version"`
	UptimeSeconds int64  `json:"uptimeSeconds"`
}

func (a *App) health(c echo.Context) error {
	ctx, cancel := context.WithTimeout(c.Request().Context(), 2*time.Second)
	defer cancel()
	h := Health{Status: "ok", Database: "ok", Version: APIVersion,
		UptimeSeconds: int64(time.Since(a.started).Seconds())}
	if err := a.DB.PingContext(ctx); err != nil {
		a.log.Warn("health: database unreachable", "err", err)
		h.Status, h.Database = "degraded", "unreachable"
		return c.JSON(http.StatusServiceUnavailable, h)
	}
	return c.JSON(http.StatusOK, h)
}

// Version is the answer of GET /version.
type Version struct {
	APIVersion    string `json:"apiVersion"`
	MinSDKVersion string `json:"minSdkVersion"`
}

func (a *App) version(c echo.Context) error {
	return c.JSON(http.StatusOK, Version{APIVersion: APIVersion, MinSDKVersion: a.MinSDKVersion})
}

func (a *App) featureFlags(c echo.Context) error {
	return c.JSON(http.StatusOK, a.Flags.Snapshot())
}

func (a *App) openAPI(c echo.Context) error {
	return c.JSON(http.StatusOK, a.Docs.Document())
}

// AdminFlags is the answer of GET /admin/feature-flags.
type AdminFlags struct {
	Flags   []flags.Flag   `json:"flags"`
	Changes []flags.Change `json:"changes" doc:"the newest changes first"`
}

func (a *App) adminListFlags(c echo.Context) error {
	ctx := c.Request().Context()
	list, err := a.Flags.List(ctx)
	if err != nil {
		return err
	}
	changes, err := a.Flags.Changes(ctx, 50)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, AdminFlags{Flags: list, Changes: changes})
}

// SetFlagRequest is the body of PUT /admin/feature-flags/:name.
type SetFlagRequest struct {
	Enabled *bool `json:"enabled" doc:"required"`
}

func (a *App) adminSetFlag(c echo.Context) error {
	var req SetFlagRequest
	if err := web.BindJSON(c, &req); err != nil {
		return err
	}
	if req.Enabled == nil {
		return domain.Invalid(map[string]string{"enabled": "required: true or false"})
	}
	id := web.IdentityOf(c)
	f, err := a.Flags.Set(c.Request().Context(), c.Param("name"), *req.Enabled, id.Username+" ("+id.Wallet+")")
	if err != nil {
		return err
	}
	a.log.Info("feature flag changed", "flag", f.Name, "enabled", f.Enabled, "by", id.UserID)
	return c.JSON(http.StatusOK, f)
}
