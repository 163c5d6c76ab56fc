package handlers

import (
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"wager/domain/flags"
	"wager/domain/game"
	"wager/domain/game/rules"
	"wager/domain/market"
	"wager/domain/media"
	"wager/domain/money"
	"wager/domain/settlement"
	"wager/web"
)

// maxBody is the largest request body the API reads (1 MiB).
const maxBody = "1M"

// feePayerBudgets says, in the description of every operation whose
// network fee the platform pays, when it stops paying.
const feePayerBudgets = "The platform pays the network fee up to FEE_PAYER_DAILY_LAMPORTS (0.02 SOL) of fees and rent per user per UTC day, " +
	"and up to FEE_PAYER_GLOBAL_DAILY_LAMPORTS (2 SOL) for all users together: past either, 429 RATE_LIMITED until the next UTC day (Retry-After)."

// maintenanceRetry is the Retry-After of a maintenance answer.
const maintenanceRetry = 60 * time.Second

// routes builds the Echo server: global middleware, then every route.
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

	a.Docs = web.NewOpenAPI("Wager Arena API", APIVersion,
		"Head-to-head games for USDC stakes on Solana, with spectators, chat and donations. "+
			"Every id is a string, and a path parameter takes exactly the string a response gave. "+
			"Long lists take ?limit= (1-200, default 50) and ?before=<the id of the last item seen>; leaderboards take ?offset= instead. "+
			"Every GET route also answers HEAD. Origins listed in CORS_ORIGINS may call the API from a browser with a bearer token (never cookies). "+
			"The live WebSocket protocol (GET /ws) is described by the AsyncAPI document at /asyncapi.json.")
	a.Docs.Tags = tagDescriptions
	a.Docs.Schemas = settingsSchemas()
	// The live socket's event and notice data, so that clients generated
	// from this document have their types (the AsyncAPI document maps
	// the names to them).
	for _, m := range []map[string]any{a.Protocol.Events, a.Protocol.Notices, a.Protocol.TournamentEvents} {
		for _, name := range slices.Sorted(maps.Keys(m)) {
			a.Docs.Components = append(a.Docs.Components, m[name])
		}
	}
	r := &router{
		e:       e,
		app:     a,
		docs:    a.Docs,
		version: web.CheckSDKVersion(policy),
		authn:   func(mode web.Auth) echo.MiddlewareFunc { return web.Authenticate(a.Auth, mode) },
		maintenance: web.Maintenance(func() bool { return a.Flags.Enabled(flags.Maintenance) },
			web.IsAdmin, maintenanceRetry),
		abuse: (&web.AbuseControl{Payments: a.Payments, Log: a.log,
			Enabled: func() bool { return a.Flags.Enabled(flags.AbuseControls) }, Exempt: a.isBot}).For,
	}

	// Operational endpoints: never 426, never 503 for maintenance.
	r.ops(http.MethodGet, "/health", a.health, web.Op{Summary: "Service health",
		Description: "Checks the database. 503 with status \"degraded\" when it is unreachable.",
		Response:    Health{}, Errors: []int{http.StatusServiceUnavailable}})
	r.ops(http.MethodGet, "/version", a.version, web.Op{Summary: "API and minimum SDK version", Response: Version{}})
	r.ops(http.MethodGet, "/feature-flags", a.featureFlags, web.Op{Summary: "Feature flags by name",
		Response: map[string]bool{}})
	r.ops(http.MethodGet, "/openapi.json", a.openAPI, web.Op{Summary: "This API as an OpenAPI 3.1 document",
		Description: "gzip-encoded for clients that accept it.", Response: map[string]any{}, ETag: true})
	r.ops(http.MethodGet, "/asyncapi.json", a.asyncAPI, web.Op{Summary: "The live socket (GET /ws) as an AsyncAPI 3.0 document",
		Description: "Every client message and every frame: joined, resumed, each game event with its data, each personal notice, resync, error. " +
			"gzip-encoded for clients that accept it.", Response: map[string]any{}, ETag: true})
	e.GET("/static/*", serveStatic)

	// Sign-in: open to admin wallets during maintenance (the handlers check).
	r.signIn(http.MethodPost, "/auth/handshake", a.handshake, web.Op{Tag: "auth",
		Summary: "Get a sign-in message for a wallet", Request: HandshakeRequest{}, Response: HandshakeResponse{},
		Description: "Header X-App-Id is required. The message is single-use and expires after 5 minutes; any unexpired, unused challenge of the wallet can be signed. " +
			"At most 10 a minute for one wallet from one client address (asking in someone else's name uses up nothing of theirs) and AUTH_RATE_LIMIT (120) a minute per client address: past either, 429 RATE_LIMITED with Retry-After.",
		Errors: []int{http.StatusTooManyRequests}})
	r.signIn(http.MethodPost, "/auth/login-wallet", a.loginWallet, web.Op{Tag: "auth",
		Summary: "Sign in with the wallet's signature of the message", Request: LoginRequest{}, Response: LoginResponse{},
		Description: "Header X-App-Id is required. Any failure is 401 UNAUTHORIZED.", Errors: []int{http.StatusUnauthorized}})

	r.json(http.MethodPost, "/auth/logout", a.logoutToken, web.Op{Tag: "auth", Auth: web.AuthRequired, Status: http.StatusNoContent,
		Summary:     "Sign the access token out",
		Description: "Every instance refuses the token from then on (401)."})
	r.signIn(http.MethodPost, "/session", a.createSession, web.Op{Tag: "auth",
		Summary: "Browser sign-in: like /auth/login-wallet for app id \"web\", answered with a session cookie",
		Request: LoginRequest{}, Response: SessionAnswer{}, Errors: []int{http.StatusUnauthorized, http.StatusForbidden}})

	// Users.
	r.json(http.MethodGet, "/users/search", a.searchUsers, web.Op{Tag: "users", Auth: web.AuthOptional,
		Summary: "Find users whose username starts with a prefix (at most 20)", Response: []UserProfile{},
		Query: []web.Param{{Name: "username", Required: true, Description: "at least 2 characters, any case", MinLength: 2}}})
	r.json(http.MethodGet, "/users/me", a.me, web.Op{Tag: "users", Auth: web.AuthRequired,
		Summary: "The signed-in user's profile", Response: MyProfile{}})
	// Documented at /usernames/{username}: /users/username/{username} would
	// be ambiguous with /users/{id}/... in the document.
	r.json(http.MethodGet, "/usernames/:username", a.userByUsername, web.Op{Tag: "users", Auth: web.AuthNone,
		Summary: "Public profile by username", Description: "Also served at /users/username/{username}.",
		Response: UserProfile{}, Errors: []int{http.StatusNotFound}})
	r.alias(http.MethodGet, "/users/username/:username", a.userByUsername, web.AuthNone)
	r.json(http.MethodGet, "/users/:id", a.userByID, web.Op{Tag: "users", Auth: web.AuthNone,
		Summary: "Public profile by id", Response: UserProfile{}, Errors: []int{http.StatusNotFound}})
	r.json(http.MethodPatch, "/users/me/profile", a.updateProfile, web.Op{Tag: "users", Auth: web.AuthRequired,
		Summary: "Change username, display name or bio", Request: ProfileRequest{}, Response: UserProfile{},
		Errors: []int{http.StatusConflict}})
	for _, kind := range []media.Kind{media.Avatar, media.Cover} {
		r.json(http.MethodPost, "/users/me/"+string(kind), a.uploadImage(kind), web.Op{Tag: "users", Auth: web.AuthRequired,
			Summary:     "Upload the " + string(kind) + " image (multipart field \"file\")",
			Description: "PNG, JPEG or WebP, recognised by content; at most 2 MB. Re-encoded so that only pixels are kept.",
			Upload:      &web.Upload{Field: "file", Types: []string{"image/png", "image/jpeg", "image/webp"}},
			Response:    UserProfile{}, Errors: []int{http.StatusRequestEntityTooLarge}})
	}
	r.asset(http.MethodGet, "/images/:id", a.image, web.Op{Tag: "users", Summary: "A profile image (PNG or JPEG bytes)",
		Description: "Content never changes for an id: cached for a year.", Errors: []int{http.StatusNotFound},
		Produces: []string{"image/png", "image/jpeg"}})

	// Games.
	r.json(http.MethodGet, "/games/available", a.availableGames, web.Op{Tag: "games", Auth: web.AuthNone,
		Summary: "Game types with their settings", Response: []rules.Info{}})
	r.json(http.MethodGet, "/games/metrics", a.gameMetrics, web.Op{Tag: "games", Auth: web.AuthNone,
		Summary: "Real-time platform metrics", Response: game.Metrics{}})
	r.json(http.MethodGet, "/games/live", a.liveGames, web.Op{Tag: "spectate", Auth: web.AuthOptional,
		Summary: "Active games, most watched first", Response: []game.LiveGame{}})
	r.json(http.MethodGet, "/spectate/live-players", a.livePlayers, web.Op{Tag: "spectate", Auth: web.AuthOptional,
		Summary: "Everyone playing right now, one entry per user", Response: []game.LivePlayer{}})
	r.json(http.MethodPost, "/lobbies", a.createLobby, moneyIn(web.Op{Tag: "games", Auth: web.AuthRequired, Status: http.StatusCreated,
		Summary: "Open a lobby (a table of one game type and stake)", Request: LobbyRequest{}, Response: game.Lobby{}}))
	r.json(http.MethodGet, "/lobbies", a.listLobbies, web.Op{Tag: "games", Auth: web.AuthOptional,
		Summary: "The newest lobbies with their queue lengths", Response: []game.Lobby{}})
	r.json(http.MethodPost, "/lobbies/:id/join-queue", a.joinQueue, moneyIn(web.Op{Tag: "games", Auth: web.AuthRequired,
		Summary:     "Join the lobby's matchmaking queue",
		Description: "Answers queued, or matched with the new game's id when someone was waiting. Stakes are locked from both platform balances.",
		Response:    game.JoinResult{}, Errors: []int{http.StatusNotFound, http.StatusConflict}}))
	r.json(http.MethodDelete, "/lobbies/:id/join-queue", a.leaveQueue, web.Op{Tag: "games", Auth: web.AuthRequired,
		Summary: "Leave the lobby's queue", Response: StatusAnswer{}, Errors: []int{http.StatusNotFound}})
	r.json(http.MethodGet, "/games/:id", a.gameMetadata, web.Op{Tag: "games", Auth: web.AuthNone,
		Summary:     "Public game metadata; result and history once completed",
		Description: "Includes the escrow address, the pot, and the settlement's on-chain transfers, so anyone can check the payout on chain.",
		Response:    GameDetail{}, Errors: []int{http.StatusNotFound}, ETag: true})
	r.json(http.MethodPost, "/games/:id/donations/prepare", a.prepareDonation, moneyIn(web.Op{Tag: "spectate", Auth: web.AuthRequired,
		Summary:     "Prepare a donation from your wallet into the game's escrow",
		Description: "Spectators of an active game only (403 for its players); at least 10000 minor units. Sign the transaction and submit it.",
		Request:     DonationRequest{}, Response: money.Prepared{}, Errors: []int{http.StatusForbidden, http.StatusConflict, http.StatusNotFound}}))
	r.json(http.MethodPost, "/games/:id/donations/submit", a.submitDonation, web.Op{Tag: "spectate", Auth: web.AuthRequired,
		Summary: "Submit the signed donation; answers once it is confirmed and in the pot",
		Description: "The room gets game:donation, game:pot and a system chat message. A donation that lands after the game ended " +
			"answers refunded: true and is refunded on chain to the wallet that paid it, never to the platform balance. " +
			"Submitting the same intent again moves nothing more. " + feePayerBudgets,
		Request: SubmitRequest{}, Response: settlement.DonationResult{}, Errors: []int{http.StatusConflict, http.StatusNotFound, http.StatusTooManyRequests}})
	r.json(http.MethodPost, "/games/:id/bets/prepare", a.prepareBet, moneyIn(web.Op{Tag: "spectate", Auth: web.AuthRequired,
		Summary: "Prepare a bet on a player from your wallet into the game's escrow",
		Description: "Open to signed-in non-players while the game is active and its first round is not decided " +
			"(rps: the first reveal; connect four: the first move); after that 409 BETTING_CLOSED.",
		Request: BetRequest{}, Response: money.Prepared{}, Errors: []int{http.StatusBadRequest, http.StatusForbidden, http.StatusConflict, http.StatusNotFound}}))
	r.json(http.MethodPost, "/games/:id/bets/submit", a.submitBet, web.Op{Tag: "spectate", Auth: web.AuthRequired,
		Summary: "Submit the signed bet; answers once it is confirmed and in the pool",
		Description: "The room gets game:bet with the new pool totals. A bet that cannot join its pool when it lands (betting " +
			"closed, the pool's cap, a link to a player, a player protection refusal) answers refunded: true and is refunded on " +
			"chain to the wallet that paid it, never to the platform balance. Submitting the same intent again moves nothing more. " +
			feePayerBudgets,
		Request: SubmitRequest{}, Response: settlement.BetResult{}, Errors: []int{http.StatusConflict, http.StatusNotFound, http.StatusTooManyRequests}})
	r.json(http.MethodGet, "/games/:id/bets", a.gameBets, web.Op{Tag: "spectate", Auth: web.AuthNone,
		Summary: "The game's betting pools and bets, newest first", Response: settlement.Bets{}, Errors: []int{http.StatusNotFound}})
	orderErrors := []int{http.StatusBadRequest, http.StatusForbidden, http.StatusConflict, http.StatusNotFound}
	r.json(http.MethodPost, "/games/:id/market/orders/buy", a.buyShares, moneyIn(web.Op{Tag: "market", Auth: web.AuthRequired, Status: http.StatusCreated,
		Summary: "Buy shares of a player in the game's prediction market",
		Description: "A limit order: locks priceMinor x shares of your available balance (409 INSUFFICIENT_FUNDS), matches at the " +
			"resting orders' prices (sells of the same player, and buys of the other player when the prices sum to 1000000 or more: " +
			"a new pair is minted), and the rest stays on the book (GTC) or is cancelled (IOC). Players of the game may not trade (403); " +
			"the market trades while the game is active (409 GAME_NOT_ACTIVE). The room gets game:market.",
		Request: market.OrderRequest{}, Response: market.Placed{}, Errors: orderErrors}))
	r.json(http.MethodPost, "/games/:id/market/orders/sell", a.sellShares, web.Op{Tag: "market", Auth: web.AuthRequired, Status: http.StatusCreated,
		Summary: "Sell shares of a player you hold in the game's prediction market",
		Description: "A limit order: locks the shares (409 INSUFFICIENT_SHARES), matches buys of the same player at or above the price " +
			"and sells of the other player when the prices sum to 1000000 or less (the pair is merged and both sellers paid).",
		Request: market.OrderRequest{}, Response: market.Placed{}, Errors: orderErrors})
	r.json(http.MethodDelete, "/games/:id/market/orders/:orderId", a.cancelOrder, web.Op{Tag: "market", Auth: web.AuthRequired,
		Summary: "Cancel your open order and release what it locks", Response: market.Order{},
		Description: "Another user's order -> 404; an order filled or cancelled already -> 409 CONFLICT.",
		Errors:      []int{http.StatusConflict, http.StatusNotFound}})
	r.json(http.MethodGet, "/games/:id/market", a.gameMarket, web.Op{Tag: "market", Auth: web.AuthNone,
		Summary:  "The game's prediction market: prices per player, the book, the last trade and, once resolved, what shares pay",
		Response: market.View{}, Errors: []int{http.StatusNotFound}})
	r.json(http.MethodGet, "/games/:id/market/positions", a.marketPositions, web.Op{Tag: "market", Auth: web.AuthRequired,
		Summary: "What you hold in the game's market, by player", Response: []market.Position{}, Errors: []int{http.StatusNotFound}})
	r.json(http.MethodGet, "/games/:id/market/orders", a.marketOrders, web.Op{Tag: "market", Auth: web.AuthRequired,
		Summary: "Your orders in the game's market, open ones first, then newest first", Response: []market.Order{},
		Errors: []int{http.StatusBadRequest, http.StatusNotFound},
		Query:  []web.Param{web.PageLimit, web.PageBefore("an order's id: only the orders listed after it (the last id of the previous page)")}})
	r.json(http.MethodGet, "/games/:id/market/trades", a.marketTrades, web.Op{Tag: "market", Auth: web.AuthNone,
		Summary: "The game's trades, newest first, for price charts", Response: []market.Trade{},
		Description: "Each trade as its taker saw it: the player whose shares the taker bought or sold and the price per share; " +
			"the other player's price is 1000000 less it.",
		Errors: []int{http.StatusBadRequest, http.StatusNotFound},
		Query:  []web.Param{web.PageLimit, web.PageBefore("a trade's id: only older ones (the last id of the previous page)")}})
	r.json(http.MethodPost, "/games/:id/market/redeem", a.redeemShares, web.Op{Tag: "market", Auth: web.AuthRequired,
		Summary: "Redeem your shares in the resolved market to your available balance",
		Description: "Pays once: a share of the winner 1000000, of the loser 0, each 500000 after a draw or a cancellation; " +
			"again -> redeemedMinor 0. Before the game is over -> 409 CONFLICT.",
		Response: market.Redeemed{}, Errors: []int{http.StatusConflict, http.StatusNotFound}})
	r.json(http.MethodGet, "/games/:id/pot", a.gamePot, web.Op{Tag: "spectate", Auth: web.AuthNone,
		Summary: "The game's pot: stakes, donations, and what the winner would get", Response: settlement.Pot{}, Errors: []int{http.StatusNotFound}})
	r.json(http.MethodGet, "/games/:id/donations", a.gameDonations, web.Op{Tag: "spectate", Auth: web.AuthNone,
		Summary: "The game's donations, newest first", Response: []settlement.Donation{}, Errors: []int{http.StatusBadRequest, http.StatusNotFound},
		Query: []web.Param{web.PageLimit,
			web.PageBefore("a donation's signature: only older ones (the last signature of the previous page)")}})
	r.json(http.MethodGet, "/games/:id/state", a.gameState, web.Op{Tag: "games", Auth: web.AuthRequired,
		Summary:     "Game state, the same for players and spectators",
		Description: "Round, timer, scores, revealed history, who has submitted. Hidden choices never appear before their reveal. 409 GAME_NOT_ACTIVE when the game is not active.",
		Response:    web.OneOf{rules.RPSView{}, rules.C4View{}}, Errors: []int{http.StatusNotFound, http.StatusConflict}})
	r.json(http.MethodGet, "/games/:id/events", a.gameEvents, web.Op{Tag: "games", Auth: web.AuthRequired,
		Summary: "The game's events after a seq (for clients that poll instead of using /ws)", Response: EventsPage{},
		Query: []web.Param{{Name: "after", Description: "the last seq you have; 0 for all", Type: "integer", Min: web.Bound(0)}}})
	r.json(http.MethodPost, "/games/:id/actions", a.gameAction, web.Op{Tag: "games", Auth: web.AuthRequired,
		Summary:     "Submit an action (players only)",
		Description: "{type: move, move: ...} or {type: resign}. 403 NOT_A_PLAYER; 409 ALREADY_MOVED, NOT_YOUR_TURN, GAME_NOT_ACTIVE; 400 INVALID_MOVE.",
		Request:     game.Action{}, Response: game.ActResult{}, Errors: []int{http.StatusForbidden, http.StatusConflict, http.StatusNotFound}})
	r.json(http.MethodGet, "/users/me/current-game", a.currentGame(func(c echo.Context) string { return web.IdentityOf(c).UserID }),
		web.Op{Tag: "games", Auth: web.AuthRequired, Summary: "Your active game; 204 when none", Response: game.CurrentGame{},
			Responses: map[int]any{http.StatusNoContent: nil}})
	r.json(http.MethodGet, "/users/:id/current-game", a.currentGame(func(c echo.Context) string { return c.Param("id") }),
		web.Op{Tag: "games", Auth: web.AuthOptional, Summary: "A user's active game; 204 when none", Response: game.CurrentGame{},
			Responses: map[int]any{http.StatusNoContent: nil}})
	for _, m := range []string{http.MethodPost, http.MethodDelete, http.MethodGet} {
		summary := map[string]string{http.MethodPost: "Ask for (or accept) a rematch", http.MethodDelete: "Withdraw your rematch request",
			http.MethodGet: "Rematch state"}[m]
		op := web.Op{Tag: "games", Auth: web.AuthRequired, Summary: summary,
			Response: game.Rematch{}, Errors: []int{http.StatusForbidden, http.StatusConflict}}
		if m == http.MethodPost { // a staked rematch locks the stakes
			op = moneyIn(op)
		}
		r.json(m, "/games/:id/rematch", a.rematch, op)
	}
	r.json(http.MethodPost, "/games/:id/rematch/lobby", a.rematchLobby, web.Op{Tag: "games", Auth: web.AuthRequired,
		Summary: "Tell the room you opened a lobby for the rematch", Request: RematchLobbyRequest{}, Response: StatusAnswer{}})
	r.json(http.MethodPost, "/challenges", a.createChallenge, moneyIn(web.Op{Tag: "games", Auth: web.AuthRequired, Status: http.StatusCreated,
		Summary: "Challenge a user to a game (expires after 5 minutes)",
		Description: "The user gets a challenge notification. 403 FORBIDDEN when either of you blocked the other. At most 10 of your challenges may be pending at once (not yet accepted, declined, cancelled or expired): " +
			"the 11th is 409 CONFLICT until you cancel one or one is answered or expires.",
		Request: ChallengeRequest{}, Response: game.Challenge{}, Errors: []int{http.StatusForbidden, http.StatusNotFound, http.StatusConflict}}))
	r.json(http.MethodGet, "/challenges", a.listChallenges, web.Op{Tag: "games", Auth: web.AuthRequired,
		Summary: "Your pending challenges, sent and received", Response: []game.Challenge{}})
	for _, answer := range []string{"accept", "decline"} {
		op := web.Op{Tag: "games", Auth: web.AuthRequired,
			Summary: answer + " a challenge sent to you", Response: game.Challenge{}, Errors: []int{http.StatusNotFound, http.StatusConflict}}
		if answer == "accept" { // a staked challenge locks the stakes
			op = moneyIn(op)
		}
		r.json(http.MethodPost, "/challenges/:id/"+answer, a.respondChallenge(answer), op)
	}
	r.json(http.MethodDelete, "/challenges/:id", a.respondChallenge("cancel"), web.Op{Tag: "games", Auth: web.AuthRequired,
		Summary: "Cancel a challenge you sent", Response: game.Challenge{}, Errors: []int{http.StatusConflict}})
	r.live(http.MethodGet, "/ws", a.liveSocket, web.Op{Tag: "spectate", Auth: web.AuthRequired, Status: http.StatusSwitchingProtocols,
		Errors:  []int{http.StatusTooManyRequests},
		Summary: "Live events over WebSocket",
		Description: "Authenticate with Authorization: Bearer, ?token=<jwt> or the session cookie. Send {type: join-game, gameId, lastSeq?}; receive joined (with the state) then {type: event, event, gameId, seq, data}. leave-game leaves. Personal notices arrive as {type: notice, notice, data}; notice balance carries {availableMinor, lockedMinor} each time your platform balance changes (a stake locked, a payout or refund, a deposit, a withdrawal or its reversal). " +
			"A page's socket (?format=html) gets HTML fragments to swap out of band instead (the header's balance). " +
			"At most 20 sockets per user, opened at most 1 a second after the first 20: past that, 429 RATE_LIMITED before the upgrade. " +
			"A socket that sends more than 20 messages a second (bursts of 40), or one message over 4 KiB, is closed (1008, 1009); the user's other sockets are not."})

	a.chatRoutes(r)
	a.socialRoutes(r)
	a.tipRoutes(r)
	a.rankingRoutes(r)
	a.supportRoutes(r)
	a.referralRoutes(r)
	a.integrityRoutes(r)
	a.protectionRoutes(r)
	a.paymentRoutes(r)
	a.tournamentRoutes(r)
	// Wallet.
	r.json(http.MethodGet, "/wallets/me/balance", a.walletBalance, web.Op{Tag: "wallet", Auth: web.AuthRequired,
		Summary: "Platform balance, deposit address and on-chain holdings", Response: money.Balance{},
		Description: "The platform balance is always answered. The wallet's on-chain holdings wait at most " + money.ChainReadWait.String() +
			" for the Solana network: onChain is null when it did not answer in time, never an error."})
	r.json(http.MethodPost, "/wallets/transfer/prepare", a.prepareTransfer, moneyIn(web.Op{Tag: "wallet", Auth: web.AuthRequired,
		Summary: "Prepare a USDC transfer from your wallet (to depositAddress: a deposit)",
		Description: "Answers an unsigned transaction with the platform as fee payer. Sign it with your wallet and submit it before expiresAt. " +
			"When the recipient of a plain transfer has no USDC account yet, your wallet pays its rent (0.00203928 SOL; 409 INSUFFICIENT_FUNDS without it). " +
			"A deposit, and a plain transfer to another wallet, is at least 10000 minor units (0.01 USDC): less is 400 naming amountMinor. " +
			"A plain transfer to any other address of the platform (its vault, fee payer or a game's escrow) is 400.",
		Request: TransferRequest{}, Response: money.Prepared{}, Errors: []int{http.StatusConflict}}))
	r.json(http.MethodPost, "/wallets/transfer/submit", a.submitTransfer, web.Op{Tag: "wallet", Auth: web.AuthRequired,
		Summary: "Submit the signed transfer; answers once it is confirmed",
		Description: "Submitting the same intent again answers the same receipt and moves nothing more. 409 when it expired or the network refused it; 503 when the outcome is not known yet (submit again). " +
			feePayerBudgets,
		Request: SubmitRequest{}, Response: money.Receipt{}, Errors: []int{http.StatusNotFound, http.StatusConflict, http.StatusTooManyRequests, http.StatusServiceUnavailable}})
	r.json(http.MethodPost, "/wallets/withdraw", a.withdraw, web.Op{Tag: "wallet", Auth: web.AuthRequired,
		Summary: "Withdraw from your platform balance to your wallet",
		Description: "Send Idempotency-Key (at most 255 characters) to make retries safe; a key names one amount (409 for another). " +
			"200 when confirmed, 202 while pending: the platform sends it again until it lands, and one the network refuses or that expires " +
			"ends failed, its amount back on your balance, once it can no longer land (within some 90 s). At least 100000 minor units (0.1 USDC). The platform opens your wallet's USDC account if it is missing, " +
			"once per user and for a withdrawal of at least 1000000 (1 USDC); after that a missing account is 409 CONFLICT. " +
			"Its fee (and that rent) count towards FEE_PAYER_DAILY_LAMPORTS (0.02 SOL) per user per UTC day: past it, 429 RATE_LIMITED. " +
			"They count towards FEE_PAYER_GLOBAL_DAILY_LAMPORTS (2 SOL, for all users together) too, but that one never refuses a withdrawal.",
		Request: WithdrawRequest{}, Response: money.Withdrawal{}, Errors: []int{http.StatusConflict, http.StatusTooManyRequests},
		Responses: map[int]any{http.StatusAccepted: money.Withdrawal{}},
		Header:    []web.Param{{Name: "Idempotency-Key", MaxLength: 255, Description: "makes retries safe"}}})
	r.json(http.MethodGet, "/wallets/me/transactions", a.walletHistory, web.Op{Tag: "wallet", Auth: web.AuthRequired,
		Summary: "Your wallet history, newest first", Response: ActivityPage{},
		Query: []web.Param{web.PageLimit, web.PageBefore("nextBefore of the previous page")}})
	if a.DevFaucet {
		r.json(http.MethodPost, "/dev/faucet", a.faucet, web.Op{Tag: "dev", Auth: web.AuthNone,
			Summary: "Test USDC and SOL on the embedded chain (DEV_FAUCET=true only)", Request: FaucetRequest{},
			Response: money.FaucetResult{}})
		r.asset(http.MethodPost, "/dev/solana-rpc", echo.WrapHandler(a.LocalChain), web.Op{Tag: "dev",
			Summary:     "The embedded chain's Solana JSON-RPC (DEV_FAUCET=true only)",
			Description: "For standard Solana client libraries: getLatestBlockhash, sendTransaction, getSignatureStatuses, getAccountInfo, getBalance, getTokenAccountBalance, getMinimumBalanceForRentExemption, requestAirdrop, getHealth, getVersion."})
	}

	// Admin.
	r.json(http.MethodGet, "/admin/reconciliation", a.reconciliation, web.Op{Tag: "admin", Auth: web.AuthAdmin,
		Summary:  "Ledger totals and chain balance against ledger balance for every platform address",
		Response: money.Reconciliation{},
		Description: "The chain reads wait at most " + money.ChainReadWait.String() + " together for the Solana network: an address not read by then " +
			"has chainMinor null and is listed in unreadAddresses, and balanced is false. A network that does not answer is never an error here."})
	r.json(http.MethodGet, "/admin/feature-flags", a.adminListFlags, web.Op{Tag: "admin", Auth: web.AuthAdmin,
		Summary: "Feature flags with who changed them and when", Response: AdminFlags{}})
	r.json(http.MethodPut, "/admin/feature-flags/:name", a.adminSetFlag, web.Op{Tag: "admin", Auth: web.AuthAdmin,
		Summary: "Turn a feature flag on or off", Request: SetFlagRequest{}, Response: flags.Flag{},
		Description: "Recorded in the audit log (flag.set).", Errors: []int{http.StatusNotFound}})
	a.auditRoutes(r)

	// Pages.
	r.page(http.MethodGet, "/", a.homePage)
	r.page(http.MethodGet, "/docs", a.docsPage)
	r.page(http.MethodGet, "/u/:username", a.profilePage)
	r.page(http.MethodGet, "/fragments/live", a.liveFragment)
	r.page(http.MethodGet, "/play", a.playPage)
	r.page(http.MethodPost, "/play", a.playSubmit)
	r.page(http.MethodPost, "/play/join/:id", a.playJoin)
	r.page(http.MethodGet, "/play/wait/:id", a.playWait)
	r.page(http.MethodPost, "/play/bot", a.playBot)
	r.page(http.MethodGet, "/play/challenge/:id", a.playChallengeWait)
	r.page(http.MethodPost, "/play/challenge/:id/cancel", a.playChallengeCancel)
	r.page(http.MethodPost, "/play/leave/:id", a.playLeave)
	r.page(http.MethodGet, "/game/:id", a.gamePage)
	r.page(http.MethodGet, "/tv", a.tvPage)
	a.tournamentPageRoutes(r)
	r.page(http.MethodPost, "/game/:id/move", a.gameMove)
	r.page(http.MethodPost, "/game/:id/chat", a.gameChat)
	r.page(http.MethodGet, "/game/:id/market/mine", a.gameMarketMine)
	r.page(http.MethodGet, notificationsPagePath, a.notificationsPage)
	r.page(http.MethodPost, "/notifications/page/read-all", a.notificationsRead(true))
	r.page(http.MethodPost, "/notifications/page/:id/read", a.notificationsRead(false))
	r.page(http.MethodGet, "/me", a.mePage)
	r.page(http.MethodGet, "/leaderboards", a.leaderboardsPage)
	r.page(http.MethodGet, "/friends", a.friendsPage)
	r.page(http.MethodGet, "/referrals", a.referralsPage)
	r.page(http.MethodPost, "/referrals/page/claim", a.claimReferralsPage)
	r.page(http.MethodPost, "/friends/page/:id/ask", a.friendsAction("ask"))
	r.page(http.MethodPost, "/friends/page/:id/accept", a.friendsAction("accept"))
	r.page(http.MethodPost, "/friends/page/:id/remove", a.friendsAction("remove"))
	r.page(http.MethodPost, "/game/:id/rematch", a.gameRematch(false))
	r.page(http.MethodPost, "/game/:id/rematch/withdraw", a.gameRematch(true))
	a.supportPageRoutes(r)
	r.page(http.MethodGet, "/settings", a.settingsPage)
	r.page(http.MethodGet, "/wallet", a.walletPage)
	r.page(http.MethodPost, "/settings/profile", a.settingsProfile)
	r.page(http.MethodPost, "/settings/avatar", a.settingsImage(media.Avatar))
	r.page(http.MethodPost, "/settings/cover", a.settingsImage(media.Cover))
	r.signInPage(http.MethodGet, "/admin", a.adminPage) // admins work during maintenance
	r.signInPage(http.MethodPost, "/admin/flags/:name", a.adminFlag)
	r.signInPage(http.MethodGet, "/login", a.loginPage)
	r.signInPage(http.MethodPost, "/logout", a.logout)
	return e
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
	for _, info := range rules.Available() {
		s, ok := rules.SettingsSchema(info.GameType)
		if !ok {
			continue
		}
		name := strings.ToUpper(info.GameType[:1]) + info.GameType[1:] + "Settings" // RpsSettings
		out[name] = s
		variants = append(variants, map[string]any{"$ref": "#/components/schemas/" + name})
	}
	out["GameSettings"] = map[string]any{"oneOf": variants,
		"description": "A game type's settings, every member optional (the defaults apply): one of the game types' settings objects. " +
			"Answers carry every member."}
	return out
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

// json registers an API route: version check, maintenance, then the
// authentication the operation declares, then abuse control.
func (r *router) json(method, path string, h echo.HandlerFunc, op web.Op) {
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

// alias registers another address of a JSON route documented elsewhere,
// with the same middleware.
func (r *router) alias(method, path string, h echo.HandlerFunc, auth web.Auth) {
	mw := append(limitFor(path), web.MarkAPI, r.version, r.authn(auth), r.maintenance)
	if charge := r.abuse(method, path, auth); charge != nil {
		mw = append(mw, charge)
	}
	r.add(method, path, h, mw...)
	r.docs.Alias(method, path)
}

// ops registers an operational JSON route that stays available to every
// client version and during maintenance.
func (r *router) ops(method, path string, h echo.HandlerFunc, op web.Op) {
	op.Tag = "operations"
	r.add(method, path, h, web.MarkAPI)
	r.docs.Add(method, path, op)
}

// signIn registers a sign-in API route: like json, but without the
// maintenance gate, because its handler lets admin wallets through.
func (r *router) signIn(method, path string, h echo.HandlerFunc, op web.Op) {
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

// asset registers a public non-JSON resource that browsers load directly
// (no version check: an <img> sends no SDK header).
func (r *router) asset(method, path string, h echo.HandlerFunc, op web.Op) {
	r.add(method, path, h)
	r.docs.Add(method, path, op)
}

// page registers a browser page: HTML errors, the session cookie (with
// CSRF on state changes), the maintenance page, no version check.
func (r *router) page(method, path string, h echo.HandlerFunc) {
	mw := append(limitFor(path), web.MarkPage, r.authn(web.AuthOptional), r.maintenance)
	r.add(method, path, h, mw...)
	r.app.pages = append(r.app.pages, path)
}

// signInPage registers the sign-in pages, which stay open during
// maintenance so that admins can sign in.
func (r *router) signInPage(method, path string, h echo.HandlerFunc) {
	r.add(method, path, h, web.MarkPage, r.authn(web.AuthOptional))
	r.app.pages = append(r.app.pages, path)
}
