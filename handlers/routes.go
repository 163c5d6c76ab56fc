package handlers

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"wager/domain/flags"
	"wager/web"
)

// maxBody is the largest request body the API reads (1 MiB).
const maxBody = "1M"

// maintenanceRetry is the Retry-After of a maintenance answer.
const maintenanceRetry = 60 * time.Second

// routes builds the Echo server: global middleware, then every route.
func (a *App) routes() *echo.Echo {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = web.ErrorHandler(a.log, a.renderErrorPage)
	e.IPExtractor = echo.ExtractIPDirect()

	policy := web.VersionPolicy{APIVersion: APIVersion, MinSDK: a.Config.MinSDKVersion,
		GraceUntil: a.Config.SDKGraceUntil, Now: a.now}
	e.Use(
		middleware.RequestID(),
		web.Observe(a.log, a.metrics),
		web.Recover(a.log),
		web.VersionHeaders(policy),
		middleware.BodyLimit(maxBody),
	)

	a.Docs = web.NewOpenAPI("Wager Arena API", APIVersion,
		"Head-to-head games for USDC stakes on Solana, with spectators, chat and donations.")
	r := &router{
		e:       e,
		app:     a,
		docs:    a.Docs,
		version: web.CheckSDKVersion(policy),
		maintenance: web.Maintenance(func() bool { return a.Flags.Enabled(flags.Maintenance) },
			web.IsAdmin, maintenanceRetry),
	}

	// Operational endpoints: never 426, never 503 for maintenance.
	r.ops(http.MethodGet, "/health", a.health, web.Op{Summary: "Service health",
		Description: "Checks the database. 503 with status \"degraded\" when it is unreachable.",
		Response:    Health{}, Errors: []int{http.StatusServiceUnavailable}})
	r.ops(http.MethodGet, "/version", a.version, web.Op{Summary: "API and minimum SDK version", Response: Version{}})
	r.ops(http.MethodGet, "/feature-flags", a.featureFlags, web.Op{Summary: "Feature flags by name",
		Response: map[string]bool{}})
	r.ops(http.MethodGet, "/openapi.json", a.openAPI, web.Op{Summary: "This API as an OpenAPI 3.1 document",
		Response: map[string]any{}})
	e.GET("/metrics", echo.WrapHandler(a.metrics.Handler()))
	e.GET("/static/*", serveStatic)

	// Admin.
	r.json(http.MethodGet, "/admin/feature-flags", a.adminListFlags, web.Op{Tag: "admin", Auth: web.AuthAdmin,
		Summary: "Feature flags with who changed them and when", Response: AdminFlags{}})
	r.json(http.MethodPut, "/admin/feature-flags/:name", a.adminSetFlag, web.Op{Tag: "admin", Auth: web.AuthAdmin,
		Summary: "Turn a feature flag on or off", Request: SetFlagRequest{}, Response: flags.Flag{},
		Errors: []int{http.StatusNotFound}})

	// Pages.
	r.page(http.MethodGet, "/", a.homePage)
	r.page(http.MethodGet, "/docs", a.docsPage)
	return e
}

// router registers routes with the middleware their kind needs and
// documents the JSON ones.
type router struct {
	e           *echo.Echo
	app         *App
	docs        *web.OpenAPI
	version     echo.MiddlewareFunc
	maintenance echo.MiddlewareFunc
}

// json registers an API route: version check, maintenance, then the
// authentication the operation declares.
func (r *router) json(method, path string, h echo.HandlerFunc, op web.Op) {
	if op.Tag == "" {
		panic("handlers: route " + path + " has no tag")
	}
	mw := []echo.MiddlewareFunc{web.MarkAPI, r.version, r.maintenance}
	switch op.Auth {
	case web.AuthRequired:
		mw = append(mw, web.RequireUser)
	case web.AuthAdmin:
		mw = append(mw, web.RequireAdmin)
	}
	r.e.Add(method, path, h, mw...)
	r.docs.Add(method, path, op)
}

// ops registers an operational JSON route that stays available to every
// client version and during maintenance.
func (r *router) ops(method, path string, h echo.HandlerFunc, op web.Op) {
	op.Tag = "operations"
	r.e.Add(method, path, h, web.MarkAPI)
	r.docs.Add(method, path, op)
}

// page registers a browser page: HTML errors, maintenance page, no version
// check.
func (r *router) page(method, path string, h echo.HandlerFunc) {
	r.e.Add(method, path, h, web.MarkPage, r.maintenance)
	r.app.pages = append(r.app.pages, path)
}
