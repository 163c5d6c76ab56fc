package handlers

import (
	"context"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"wager/web"
)

// operationRoutes registers health, versions, feature flags, the API's own
// documents and the static files: never 426, never 503 for maintenance.
func (a *App) operationRoutes(r *router) {
	r.Ops(http.MethodGet, "/health", a.health, web.Op{Summary: "Service health",
		Description: "Checks the database. 503 with status \"degraded\" when it is unreachable.",
		Response:    Health{}, Errors: []int{http.StatusServiceUnavailable}})
	r.Ops(http.MethodGet, "/version", a.version, web.Op{Summary: "API and minimum SDK version", Response: Version{}})
	r.Ops(http.MethodGet, "/feature-flags", a.featureFlags, web.Op{Summary: "Feature flags by name",
		Response: map[string]bool{}})
	r.Ops(http.MethodGet, "/openapi.json", a.openAPI, web.Op{Summary: "This API as an OpenAPI 3.1 document",
		Description: "gzip-encoded for clients that accept it.", Response: map[string]any{}, ETag: true})
	r.Ops(http.MethodGet, "/asyncapi.json", a.asyncAPI, web.Op{Summary: "The live socket (GET /ws) as an AsyncAPI 3.0 document",
		Description: "Every client message and every frame: joined, resumed, each game event with its data, each personal notice, resync, error. " +
			"gzip-encoded for clients that accept it.", Response: map[string]any{}, ETag: true})
	r.e.GET("/static/*", serveStatic)
}

// Health is the answer of GET /health.
type Health struct {
	Status        string `json:"status" enum:"ok,degraded" doc:"ok, or degraded when a dependency is down"`
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
	return c.JSON(http.StatusOK, a.flags.Snapshot())
}
