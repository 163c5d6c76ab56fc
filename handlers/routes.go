package handlers

import (
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"wager/domain/flags"
	"wager/domain/game/rules"
	"wager/domain/media"
	"wager/handlers/api"
	"wager/web"
)

// maxBody is the largest request body the API reads (1 MiB).
const maxBody = "1M"

// notificationsPagePath is where the notifications page is routed. A
// browser opening /notifications (the JSON list's address) is served the
// page: a navigation asks for HTML and carries no bearer token, which every
// API client of that list does.
const notificationsPagePath = "/notifications/page"

// browserPages are the JSON lists whose address a browser opens as a page
// (the support queue, the review queue and the audit log are the admin's
// /admin/support, /admin/integrity and /admin/audit in the same way), by
// the path of the page.
var browserPages = map[string]string{"/notifications": notificationsPagePath, "/admin/support": supportQueuePagePath,
	"/admin/integrity": integrityPagePath, "/admin/audit": auditPagePath}

func pagesForBrowsers(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if page, ok := browserPages[r.URL.Path]; ok && r.Method == http.MethodGet && r.Header.Get(echo.HeaderAuthorization) == "" &&
			strings.Contains(r.Header.Get(echo.HeaderAccept), echo.MIMETextHTML) {
			r.URL.Path = page
		}
		return next(c)
	}
}

// routes builds the Echo server: global middleware, then every route.
func (a *App) routes() *echo.Echo {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = web.ErrorHandler(a.log, a.renderErrorPage)
	e.IPExtractor = echo.ExtractIPDirect()
	if len(a.TrustedProxies) > 0 {
		trust := []echo.TrustOption{echo.TrustLoopback(false), echo.TrustLinkLocal(false), echo.TrustPrivateNet(false)}
		for _, n := range a.TrustedProxies {
			trust = append(trust, echo.TrustIPRange(n))
		}
		e.IPExtractor = echo.ExtractIPFromXFFHeader(trust...)
	}

	policy := web.VersionPolicy{APIVersion: APIVersion, MinSDK: a.MinSDKVersion,
		GraceUntil: a.SDKGraceUntil, Now: a.now}
	e.Pre(web.CORS(a.CORSOrigins), web.HeadAsGet, pagesForBrowsers)
	e.Use(
		web.SecurityHeaders,
		middleware.RequestIDWithConfig(middleware.RequestIDConfig{Generator: web.RequestIDs()}),
		web.Observe(a.log, a.metrics),
		web.Recover(a.log),
		web.VersionHeaders(policy),
		middleware.BodyLimitWithConfig(middleware.BodyLimitConfig{Limit: maxBody,
			Skipper: func(c echo.Context) bool { return uploadRoutes[c.Path()] }}),
		web.CanonicalIDs,
		web.Country(a.CountryHeader, a.TrustedProxies),
	)

	a.Docs = a.apiDocument()
	r := &router{
		e:       e,
		app:     a,
		docs:    a.Docs,
		version: web.CheckSDKVersion(policy),
		authn:   func(mode web.Auth) echo.MiddlewareFunc { return web.Authenticate(a.auth, mode) },
		maintenance: web.Maintenance(func() bool { return a.flags.Enabled(flags.Maintenance) },
			web.IsAdmin, api.MaintenanceRetry),
		abuse: (&web.AbuseControl{X402: a.x402, Log: a.log,
			Enabled: func() bool { return a.flags.Enabled(flags.AbuseControls) }, Exempt: a.isBot}).For,
	}

	j, p := a.api, a.pages
	a.operationRoutes(r)
	j.auth.Routes(r)
	j.users.Routes(r)
	j.games.Routes(r)
	j.donations.Routes(r)
	j.bets.Routes(r)
	j.market.Routes(r)
	j.games.ChallengeRoutes(r)
	a.liveRoutes(r)
	j.chat.Routes(r)
	j.social.Routes(r)
	j.tips.Routes(r)
	j.ranking.Routes(r)
	j.support.Routes(r)
	j.referrals.Routes(r)
	j.integrity.Routes(r)
	p.integrity.pageRoutes(r)
	j.protection.Routes(r)
	p.protection.pageRoutes(r)
	j.payments.Routes(r)
	j.tournaments.Routes(r)
	j.tournaments.ScheduleRoutes(r)
	j.transparency.Routes(r)
	j.wallet.Routes(r)
	j.admin.Routes(r)
	j.audit.Routes(r)
	p.audit.pageRoutes(r)
	a.pageRoutes(r)
	return e
}

// apiDocument starts the OpenAPI document that the routes add their
// operations to: the API's description, its tags and its shared schemas.
func (a *App) apiDocument() *web.OpenAPI {
	docs := web.NewOpenAPI("Wager Arena API", APIVersion,
		"Head-to-head games for USDC stakes on Solana, with spectators, chat and donations. "+
			"Every id is a string, and a path parameter takes exactly the string a response gave. "+
			"Long lists take ?limit= (1-200, default 50) and ?before=<the id of the last item seen>; leaderboards take ?offset= instead. "+
			"Every GET route also answers HEAD. Origins listed in CORS_ORIGINS may call the API from a browser with a bearer token (never cookies). "+
			"The live WebSocket protocol (GET /ws) is described by the AsyncAPI document at /asyncapi.json.")
	docs.Tags = tagDescriptions
	docs.Schemas = settingsSchemas()
	maps.Copy(docs.Schemas, playSchemas())
	docs.Components = append(docs.Components, rules.RPSRound{}, rules.C4Move{}) // GameHistory's items
	// The live socket's event and notice data, so that clients generated
	// from this document have their types (the AsyncAPI document maps
	// the names to them).
	for _, m := range []map[string]any{a.Protocol.Events, a.Protocol.Notices, a.Protocol.TournamentEvents} {
		for _, name := range slices.Sorted(maps.Keys(m)) {
			docs.Components = append(docs.Components, m[name])
		}
	}
	return docs
}

// pageRoutes registers the browser pages.
func (a *App) pageRoutes(r *router) {
	p := a.pages
	r.page(http.MethodGet, "/", p.home.homePage)
	r.page(http.MethodGet, "/docs", a.docsPage)
	r.page(http.MethodGet, "/u/:username", p.users.profilePage)
	r.page(http.MethodGet, "/fragments/live", p.home.liveFragment)
	r.page(http.MethodGet, "/play", p.games.playPage)
	r.page(http.MethodPost, "/play", p.games.playSubmit)
	r.page(http.MethodPost, "/play/join/:id", p.games.playJoin)
	r.page(http.MethodGet, "/play/wait/:id", p.games.playWait)
	r.page(http.MethodPost, "/play/bot", p.games.playBot)
	r.page(http.MethodGet, "/play/challenge/:id", p.games.playChallengeWait)
	r.page(http.MethodPost, "/play/challenge/:id/cancel", p.games.playChallengeCancel)
	r.page(http.MethodPost, "/play/leave/:id", p.games.playLeave)
	r.page(http.MethodGet, "/game/:id", p.games.gamePage)
	r.page(http.MethodGet, "/tv", p.games.tvPage)
	p.tournaments.pageRoutes(r)
	r.page(http.MethodPost, "/game/:id/move", p.games.gameMove)
	r.page(http.MethodPost, "/game/:id/berserk", p.games.gameBerserk)
	r.page(http.MethodPost, "/game/:id/chat", p.games.gameChat)
	r.page(http.MethodGet, "/game/:id/market/mine", p.market.gameMarketMine)
	r.page(http.MethodGet, notificationsPagePath, p.social.notificationsPage)
	r.page(http.MethodPost, "/notifications/page/read-all", p.social.notificationsRead(true))
	r.page(http.MethodPost, "/notifications/page/:id/read", p.social.notificationsRead(false))
	r.page(http.MethodGet, "/me", p.social.mePage)
	r.page(http.MethodGet, "/leaderboards", p.ranking.leaderboardsPage)
	r.page(http.MethodGet, "/transparency", p.transparency.transparencyPage)
	r.page(http.MethodGet, "/friends", p.social.friendsPage)
	r.page(http.MethodGet, "/referrals", p.referrals.referralsPage)
	r.page(http.MethodPost, "/referrals/page/claim", p.referrals.claimReferralsPage)
	r.page(http.MethodPost, "/friends/page/:id/ask", p.social.friendsAction("ask"))
	r.page(http.MethodPost, "/friends/page/:id/accept", p.social.friendsAction("accept"))
	r.page(http.MethodPost, "/friends/page/:id/remove", p.social.friendsAction("remove"))
	r.page(http.MethodPost, "/game/:id/rematch", p.games.gameRematch(false))
	r.page(http.MethodPost, "/game/:id/rematch/withdraw", p.games.gameRematch(true))
	p.support.pageRoutes(r)
	r.page(http.MethodGet, "/settings", p.users.settingsPage)
	r.page(http.MethodGet, "/wallet", p.wallet.walletPage)
	r.page(http.MethodGet, "/wallet/recall", p.wallet.recallPage)
	r.page(http.MethodPost, "/settings/profile", p.users.settingsProfile)
	r.page(http.MethodPost, "/settings/avatar", p.users.settingsImage(media.Avatar))
	r.page(http.MethodPost, "/settings/cover", p.users.settingsImage(media.Cover))
	r.signInPage(http.MethodGet, "/admin", p.admin.adminPage) // admins work during maintenance
	r.signInPage(http.MethodPost, "/admin/flags/:name", p.admin.adminFlag)
	r.signInPage(http.MethodGet, "/login", p.auth.loginPage)
	r.signInPage(http.MethodPost, "/logout", p.auth.logout)
}

// tagDescriptions describe the tags of the OpenAPI document.
var tagDescriptions = map[string]string{
	"operations":   "Health, versions, feature flags and the API's own documents: never refused for an old SDK or during maintenance.",
	"auth":         "Signing in with a Solana wallet's signature, and signing out.",
	"users":        "Profiles, images, blocks and who a user is.",
	"games":        "Game types, lobbies and matchmaking, challenges, rematches, a game's state, events and moves.",
	"spectate":     "Watching: live games, the WebSocket, donations and betting pools.",
	"market":       "A game's prediction market: orders, the book, trades, positions and redemption.",
	"chat":         "Game chat and direct messages.",
	"social":       "Friends, notifications, achievements and the activity feed.",
	"tips":         "Tips from one wallet to another, on chain.",
	"leaderboards": "Rankings by winnings and by rating.",
	"referrals":    "Referral codes, the referral tree and its rewards.",
	"support":      "Support tickets and their messages.",
	"payments":     "HTTP 402: paying the x402 charge of a request past its abuse threshold.",
	"wallet":       "Platform balance, deposits, transfers, withdrawals and the wallet's history.",
	"transparency": "What anyone can check without trusting the platform: the public log of games (signed checkpoints, hash tiles as golang.org/x/mod/sumdb/tlog reads them, each game's record with its inclusion proof), its anchors on Solana, and the proof of reserves (a Merkle-sum tree of what is owed, and the USDC held on chain).",
	"tournaments":  "Tournaments (arenas): for a set time their players are paired again and again into free games, scored, and paid prizes from the entry fees at the end.",
	"protection":   "Player protection: deposit, loss and stake limits, time-outs and self-exclusion, the age confirmation and the session's reality check.",
	"admin":        "Staff only: feature flags, reconciliation, support queue, integrity reviews, players' protection and the audit log.",
	"dev":          "The embedded development chain (DEV_FAUCET=true only).",
}

// settingsSchemas are the named schemas of game settings: one per game
// type with the limits its rules enforce, and GameSettings, any of them.
func settingsSchemas() map[string]any {
	out := map[string]any{}
	var variants []any
	mapping := map[string]any{}
	for _, info := range rules.Available() {
		s, ok := rules.SettingsSchema(info.GameType)
		if !ok {
			continue
		}
		name := strings.ToUpper(info.GameType[:1]) + info.GameType[1:] + "Settings" // RpsSettings
		out[name] = s
		ref := "#/components/schemas/" + name
		variants = append(variants, map[string]any{"$ref": ref})
		mapping[info.GameType] = ref
	}
	out["GameSettings"] = map[string]any{"oneOf": variants,
		"discriminator": map[string]any{"propertyName": "gameType", "mapping": mapping},
		"description": "A game type's settings, one of the game types' settings objects, told apart by gameType; every setting is " +
			"optional (the defaults apply). Answers carry every member."}
	return out
}

// playSchemas are the named schemas of what a game's free-form JSON
// holds: GameMove, a move as the game types' rules accept it, and
// GameHistory, a finished game's revealed rounds or moves.
func playSchemas() map[string]any {
	column := func(description string) map[string]any {
		return map[string]any{"type": "integer", "minimum": 0, "maximum": rules.C4Columns - 1, "description": description}
	}
	return map[string]any{
		"GameMove": map[string]any{"description": "A move, by the game type: rps, the choice; connect4, the column, as an object or alone.",
			"oneOf": []any{
				map[string]any{"type": "string", "enum": []any{"rock", "paper", "scissors"}, "description": "rps: the choice"},
				map[string]any{"type": "object", "description": "connect4: the column", "required": []string{"column"},
					"properties": map[string]any{"column": column("0 at the left")}, "additionalProperties": false},
				column("connect4: the column alone"),
			}},
		// The items are said in words: a union of two objects told apart by
		// no property makes generated types that tools deriving JSON
		// Schemas from them (the MCP SDKs) cannot describe.
		"GameHistory": map[string]any{"type": "array", "description": "A finished game's record, oldest first: every revealed round (rps) or every move (connect4).",
			"items": map[string]any{"type": "object", "description": "rps: a revealed round, as " + web.SchemaName(reflect.TypeOf(rules.RPSRound{})) +
				"; connect4: a move, as " + web.SchemaName(reflect.TypeOf(rules.C4Move{}))}},
	}
}

// uploadRoutes take multipart bodies up to the image limit instead of the
// JSON limit.
var uploadRoutes = map[string]bool{
	"/users/me/avatar": true, "/users/me/cover": true, "/settings/avatar": true, "/settings/cover": true,
}

// limitFor returns the body limit of an upload route (the global limit
// skips them): room for the multipart framing around a 2 MiB image, whose
// own size media.Sanitize checks exactly. It comes first so that nothing
// reads a body before it is limited.
func limitFor(path string) []echo.MiddlewareFunc {
	if uploadRoutes[path] {
		return []echo.MiddlewareFunc{middleware.BodyLimit("2200K")}
	}
	return nil
}

// router registers routes with the middleware their kind needs and
// documents the JSON ones.
type router struct {
	e           *echo.Echo
	app         *App
	docs        *web.OpenAPI
	version     echo.MiddlewareFunc
	maintenance echo.MiddlewareFunc
	authn       func(web.Auth) echo.MiddlewareFunc
	// abuse is the route's abuse control (402 past its threshold), nil
	// for routes never charged.
	abuse func(method, path string, auth web.Auth) echo.MiddlewareFunc
}

// add registers h behind mw. The middleware is wrapped around the handler
// once, here: Echo v4 would wrap a route's middleware again on every
// request (a closure each).
func (r *router) add(method, path string, h echo.HandlerFunc, mw ...echo.MiddlewareFunc) {
	for i := len(mw) - 1; i >= 0; i-- {
		h = mw[i](h)
	}
	r.e.Add(method, path, h)
}

// JSON registers an API route: version check, maintenance, then the
// authentication the operation declares, then abuse control.
func (r *router) JSON(method, path string, h echo.HandlerFunc, op web.Op) {
	if op.Tag == "" {
		panic("handlers: route " + path + " has no tag")
	}
	mw := append(limitFor(path), web.MarkAPI, r.version, r.authn(op.Auth), r.maintenance)
	op.Errors = append(op.Errors, http.StatusBadRequest, http.StatusUpgradeRequired, http.StatusServiceUnavailable)
	switch op.Auth {
	case web.AuthRequired:
		mw = append(mw, web.RequireUser)
	case web.AuthAdmin:
		mw = append(mw, web.RequireAdmin)
	}
	if charge := r.abuse(method, path, op.Auth); charge != nil {
		mw = append(mw, charge)
		op.Errors = append(op.Errors, http.StatusPaymentRequired)
	}
	r.add(method, path, h, mw...)
	r.docs.Add(method, path, op)
}

// Alias registers another address of a JSON route documented elsewhere,
// with the same middleware.
func (r *router) Alias(method, path string, h echo.HandlerFunc, auth web.Auth) {
	mw := append(limitFor(path), web.MarkAPI, r.version, r.authn(auth), r.maintenance)
	if charge := r.abuse(method, path, auth); charge != nil {
		mw = append(mw, charge)
	}
	r.add(method, path, h, mw...)
	r.docs.Alias(method, path)
}

// Ops registers an operational JSON route that stays available to every
// client version and during maintenance.
func (r *router) Ops(method, path string, h echo.HandlerFunc, op web.Op) {
	op.Tag = "operations"
	r.add(method, path, h, web.MarkAPI)
	r.docs.Add(method, path, op)
}

// SignIn registers a sign-in API route: like JSON, but without the
// maintenance gate, because its handler lets admin wallets through.
func (r *router) SignIn(method, path string, h echo.HandlerFunc, op web.Op) {
	op.Errors = append(op.Errors, http.StatusBadRequest, http.StatusUpgradeRequired, http.StatusServiceUnavailable)
	op.Header = append(op.Header, web.Param{Name: "X-App-Id", Required: true, Description: "the calling application"})
	r.add(method, path, h, web.MarkAPI, r.version)
	r.docs.Add(method, path, op)
}

// live registers the WebSocket endpoint: maintenance and authentication
// like a JSON route, but no version check (browsers cannot set headers on
// a WebSocket).
func (r *router) live(method, path string, h echo.HandlerFunc, op web.Op) {
	op.Errors = append(op.Errors, http.StatusServiceUnavailable)
	r.add(method, path, h, web.MarkAPI, r.authn(op.Auth), r.maintenance, web.RequireUser)
	r.docs.Add(method, path, op)
}

// Asset registers a public non-JSON resource that browsers load directly
// (no version check: an <img> sends no SDK header).
func (r *router) Asset(method, path string, h echo.HandlerFunc, op web.Op) {
	r.add(method, path, h)
	r.docs.Add(method, path, op)
}

// Files registers a public tree of non-JSON resources, undocumented.
func (r *router) Files(path string, h echo.HandlerFunc) { r.add(http.MethodGet, path, h) }

// page registers a browser page: HTML errors, the session cookie (with
// CSRF on state changes), the maintenance page, no version check.
func (r *router) page(method, path string, h echo.HandlerFunc) {
	mw := append(limitFor(path), web.MarkPage, r.authn(web.AuthOptional), r.maintenance)
	r.add(method, path, h, mw...)
	r.app.pagePaths = append(r.app.pagePaths, path)
}

// signInPage registers the sign-in pages, which stay open during
// maintenance so that admins can sign in.
func (r *router) signInPage(method, path string, h echo.HandlerFunc) {
	r.add(method, path, h, web.MarkPage, r.authn(web.AuthOptional))
	r.app.pagePaths = append(r.app.pagePaths, path)
}
