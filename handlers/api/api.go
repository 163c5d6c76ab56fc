// Package api holds the handlers of the JSON API: per feature area a
// struct (Games, Wallet, ...) whose fields are the services its handlers
// call, with the request and response bodies of its routes and a Routes
// method that registers and documents them. The pages, the live socket
// and the server's own routes are package handlers', which builds these
// structs from its Services and registers their routes.
package api

import (
	"time"

	"github.com/labstack/echo/v4"

	"wager/web"
)

// Router registers routes with the middleware their kind needs and
// documents them in the OpenAPI document (handlers' router).
type Router interface {
	// JSON registers an API route: version check, maintenance, then the
	// authentication the operation declares, then abuse control.
	JSON(method, path string, h echo.HandlerFunc, op web.Op)
	// Alias registers another address of a JSON route documented
	// elsewhere, with the same middleware.
	Alias(method, path string, h echo.HandlerFunc, auth web.Auth)
	// Ops registers an operational JSON route that stays available to
	// every client version and during maintenance.
	Ops(method, path string, h echo.HandlerFunc, op web.Op)
	// SignIn registers a sign-in route: like JSON, but without the
	// maintenance gate, because its handler lets admin wallets through.
	SignIn(method, path string, h echo.HandlerFunc, op web.Op)
	// Asset registers a public non-JSON resource.
	Asset(method, path string, h echo.HandlerFunc, op web.Op)
	// Files registers a public tree of non-JSON resources under a path
	// ending in /*, whose names OpenAPI cannot describe (several path
	// segments): the operation that leads to them describes them.
	Files(path string, h echo.HandlerFunc)
}

// MaintenanceRetry is the Retry-After of a maintenance answer.
const MaintenanceRetry = 60 * time.Second

// feePayerBudgets says, in the description of every operation whose
// network fee the platform pays, when it stops paying.
const feePayerBudgets = "The platform pays the network fee up to FEE_PAYER_DAILY_LAMPORTS (0.02 SOL) of fees and rent per user per UTC day, " +
	"and up to FEE_PAYER_GLOBAL_DAILY_LAMPORTS (2 SOL) for all users together: past either, 429 RATE_LIMITED until the next UTC day (Retry-After)."
