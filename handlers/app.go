// Package handlers is the HTTP side of the server. App builds the Echo
// server, its middleware and route table (routes.go), and serves the
// operational routes and the API's documents. The JSON API is package
// handlers/api, registered here; the docs page's reference is rendered by
// handlers/reference. This package holds the pages: per feature area
// (games_pages.go) a struct holding only the services its pages call
// (gamePages), the presenters that turn domain values into view models,
// and the error pages; and the live socket's route (/ws). What every
// page shows around its content is package handlers/header.
// The live page projection, what the live hub renders onto pages from
// room events, is package handlers/livepage: the game and arena pages
// share its presenters. New gives every feature's API and pages their
// services, once.
package handlers

import (
	"context"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/http/pprof"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/uptrace/bun"

	"wager/chain"
	"wager/chain/localchain"
	"wager/domain"
	"wager/domain/anchors"
	"wager/domain/audit"
	"wager/domain/auth"
	"wager/domain/chat"
	"wager/domain/eventlog"
	"wager/domain/flags"
	"wager/domain/game"
	"wager/domain/gamelog"
	"wager/domain/integrity"
	"wager/domain/market"
	"wager/domain/money"
	"wager/domain/notify"
	"wager/domain/protection"
	"wager/domain/ranking"
	"wager/domain/referrals"
	"wager/domain/reserves"
	"wager/domain/settlement"
	"wager/domain/social"
	"wager/domain/support"
	"wager/domain/tips"
	"wager/domain/tournament"
	"wager/domain/users"
	"wager/domain/x402"
	"wager/handlers/api"
	"wager/handlers/header"
	"wager/handlers/livepage"
	"wager/web"
	"wager/web/live"
)

// APIVersion is the version of the API contract this server implements.
const APIVersion = "1.0.0"

// Services are what the handlers call: every service of the server.
type Services struct {
	DB         *bun.DB // the handlers read it only for the health check
	Flags      *flags.Service
	Users      *users.Service
	Auth       *auth.Service
	Money      *money.Service
	Events     *eventlog.Log
	Games      *game.Service
	Chat       *chat.Service
	Settlement *settlement.Service
	GamesLog   *gamelog.Log
	Reserves   *reserves.Service
	Anchors    *anchors.Service
	Market     *market.Service
	X402       *x402.Service
	Notify     *notify.Service
	Social     *social.Service
	Tips       *tips.Service
	Ranking    *ranking.Service
	Support    *support.Service
	// Referrals runs referral codes and rewards.
	Referrals *referrals.Service
	// Links answers the integrity rules of bets and trades (linked
	// accounts, caps); Referee settles finished games and runs the review
	// queue.
	Links   *integrity.Links
	Referee *integrity.Referee
	// Protection answers the player protection rules of every money-in
	// path and runs players' limits, exclusions, age and session.
	Protection *protection.Service
	Live       *live.Hub
	Views      *livepage.Games
	// Bots are the demo players (nil: none run).
	Bots DemoBots
	// LocalChain is the embedded chain (nil with an external one).
	LocalChain *localchain.Chain
	// RPCEndpoints are the external chain's RPC URLs, shown on /metrics
	// (nil with the embedded chain).
	RPCEndpoints *chain.Endpoints
	// Audit reads the admin audit log (the services write it).
	Audit *audit.Service
	// Tournaments runs the arenas.
	Tournaments *tournament.Service
}

// DemoBots are the demo players, as the handlers see them.
type DemoBots interface {
	// Opponent finds a demo bot for a person to play.
	Opponent(ctx context.Context) (users.User, error)
	// IsBot reports whether a user is one of the demo bots: they play
	// through the API, and abuse controls do not charge them.
	IsBot(userID string) bool
}

// isBot reports whether a user is one of the demo bots running here.
func (a *App) isBot(userID string) bool { return a.bots != nil && a.bots.IsBot(userID) }

// Options are the parts of the configuration the handlers show or obey.
type Options struct {
	MinSDKVersion string
	SDKGraceUntil time.Time // zero: the grace period never ends
	DevFaucet     bool      // POST /dev/faucet and the embedded chain's RPC are served
	EmbeddedChain bool      // the dev wallet is offered
	ChainID       string    // localnet, devnet, testnet, mainnet or custom
	PublicURL     string
	// TrustedProxies are the proxies whose X-Forwarded-For names the
	// client; without them the peer address is the client's.
	TrustedProxies []*net.IPNet
	// CountryHeader names the header in which a trusted proxy tells the
	// client's country (empty: none).
	CountryHeader string
	// CORSOrigins may call the API from browsers, with bearer tokens.
	CORSOrigins []string
}

// App is the HTTP side of the server: every route and its handler. Its own
// handlers are the operational routes and the documents; each feature
// area's API and pages are methods on structs of their own that hold only
// the services they call (api, pages).
type App struct {
	Options
	Echo *echo.Echo
	Docs *web.OpenAPI
	// Protocol describes the live socket (GET /asyncapi.json).
	Protocol *web.AsyncAPI
	// DB is the database GET /health pings.
	DB *bun.DB
	// Live serves the live socket (GET /ws).
	Live *live.Hub
	// Views are the game pages' projection of a game's events.
	Views *livepage.Games

	flags  *flags.Service // GET /feature-flags, the maintenance gate and the abuse controls' switch
	auth   *auth.Service  // who calls, on every route
	x402   *x402.Service  // the abuse controls' charges
	bots   DemoBots       // never charged by the abuse controls
	header *header.Header // the docs and error pages' header
	api    apiHandlers
	pages  pageHandlers

	openapiDoc, asyncapiDoc servedDocument
	reference               docsReference

	pagePaths []string // of the browser pages
	log       *slog.Logger
	now       domain.Clock
	metrics   *web.Metrics
	budget    *feePayerBudget
	started   time.Time
}

// apiHandlers are the JSON API of each feature area, each given the
// services it calls.
type apiHandlers struct {
	admin        *api.Admin
	audit        *api.Audit
	auth         *api.Auth
	bets         *api.Bets
	chat         *api.Chat
	donations    *api.Donations
	games        *api.Games
	integrity    *api.Integrity
	market       *api.Market
	payments     *api.Payments
	protection   *api.Protection
	ranking      *api.Ranking
	referrals    *api.Referrals
	social       *api.Social
	support      *api.Support
	tips         *api.Tips
	tournaments  *api.Tournaments
	transparency *api.Transparency
	users        *api.Users
	wallet       *api.Wallet
}

// pageHandlers are the pages of each feature area, each given the
// services it calls.
type pageHandlers struct {
	admin        *adminPages
	audit        *auditPages
	auth         *authPages
	games        *gamePages
	home         *homePages
	integrity    *integrityPages
	market       *marketPages
	protection   *protectionPages
	ranking      *rankingPages
	referrals    *referralPages
	social       *socialPages
	support      *supportPages
	tournaments  *tournamentPages
	users        *userPages
	wallet       *walletPages
	transparency *transparencyPages
}

// New builds the handlers and their routes.
func New(s Services, o Options, log *slog.Logger) *App {
	a := &App{Options: o, DB: s.DB, Live: s.Live, Views: s.Views, flags: s.Flags, auth: s.Auth, x402: s.X402,
		bots: s.Bots, log: log, now: domain.SystemClock, metrics: web.NewMetrics(), started: time.Now()}
	a.header = header.New(s.Flags, s.Money, s.Users, s.Notify, s.Protection, log)
	a.api = newAPI(s, o, log)
	a.pages = newPages(s, o, a.header, log, a.now)
	a.Protocol = a.LiveProtocol()
	a.Echo = a.routes()
	if s.DB != nil {
		a.metrics.Database(s.DB.DB, "main")
	}
	if s.RPCEndpoints != nil {
		a.metrics.RPCEndpoints(s.RPCEndpoints)
	}
	if s.Reserves != nil {
		a.metrics.Registry.MustRegister(newReservesCollector(s.Reserves, log))
	}
	if s.Money != nil && s.Money.FeePayerGlobalDaily() > 0 {
		a.budget = &feePayerBudget{db: s.DB, money: s.Money, log: log}
		a.budget.left.Store(math.Float64bits(math.NaN()))
		a.metrics.Gauge("fee_payer_global_budget_left_lamports",
			"Lamports left today (UTC) of FEE_PAYER_GLOBAL_DAILY_LAMPORTS, what the fee payer may still spend for all users together; 0 once spent.",
			a.budget.read)
	}
	return a
}

// newAPI gives each feature area's JSON handlers the services they call.
func newAPI(s Services, o Options, log *slog.Logger) apiHandlers {
	return apiHandlers{
		admin:        &api.Admin{Flags: s.Flags, Money: s.Money, Log: log},
		audit:        &api.Audit{Audit: s.Audit},
		auth:         &api.Auth{Auth: s.Auth, Flags: s.Flags, PublicURL: o.PublicURL},
		bets:         &api.Bets{Users: s.Users, Settlement: s.Settlement},
		chat:         &api.Chat{Chat: s.Chat},
		donations:    &api.Donations{Users: s.Users, Settlement: s.Settlement},
		games:        api.NewGames(s.Users, s.Settlement, s.Games, s.Events, s.Live),
		integrity:    &api.Integrity{Users: s.Users, Links: s.Links, Referee: s.Referee},
		market:       &api.Market{Market: s.Market},
		payments:     &api.Payments{Users: s.Users, Flags: s.Flags, X402: s.X402},
		protection:   &api.Protection{Users: s.Users, Protection: s.Protection},
		ranking:      &api.Ranking{Ranking: s.Ranking},
		referrals:    &api.Referrals{Referrals: s.Referrals},
		social:       &api.Social{Social: s.Social, Notify: s.Notify},
		support:      &api.Support{Support: s.Support},
		tips:         &api.Tips{Users: s.Users, Tips: s.Tips},
		tournaments:  &api.Tournaments{Tournaments: s.Tournaments},
		transparency: &api.Transparency{Log: s.GamesLog, Reserves: s.Reserves, Anchors: s.Anchors},
		users:        &api.Users{Users: s.Users, Auth: s.Auth, Protection: s.Protection},
		wallet:       &api.Wallet{Users: s.Users, Money: s.Money, LocalChain: s.LocalChain, DevFaucet: o.DevFaucet},
	}
}

// newPages gives each feature area's pages the services they call.
func newPages(s Services, o Options, ch *header.Header, log *slog.Logger, now domain.Clock) pageHandlers {
	return pageHandlers{
		admin: &adminPages{flags: s.Flags, money: s.Money, reserves: s.Reserves, users: s.Users, protection: s.Protection, log: log, header: ch},
		audit: &auditPages{audit: s.Audit, header: ch},
		auth:  &authPages{auth: s.Auth, flags: s.Flags, embeddedChain: o.EmbeddedChain, header: ch},
		games: &gamePages{users: s.Users, games: s.Games, chat: s.Chat, market: s.Market, tournaments: s.Tournaments,
			gamesLog: s.GamesLog, bots: s.Bots, gameViews: s.Views, header: ch},
		home:        &homePages{games: s.Games, social: s.Social, header: ch},
		integrity:   &integrityPages{referee: s.Referee, header: ch},
		market:      &marketPages{market: s.Market},
		protection:  &protectionPages{protection: s.Protection, header: ch},
		ranking:     &rankingPages{ranking: s.Ranking, header: ch},
		referrals:   &referralPages{referrals: s.Referrals, header: ch},
		social:      &socialPages{users: s.Users, social: s.Social, notify: s.Notify, header: ch},
		support:     &supportPages{support: s.Support, header: ch},
		tournaments: &tournamentPages{tournaments: s.Tournaments, now: now, header: ch},
		users:       &userPages{users: s.Users, auth: s.Auth, social: s.Social, ranking: s.Ranking, header: ch},
		wallet:      &walletPages{users: s.Users, money: s.Money, games: s.Games, chainID: o.ChainID, devFaucet: o.DevFaucet, explorer: o.Explorer(), header: ch},
		transparency: &transparencyPages{log: s.GamesLog, reserves: s.Reserves, anchors: s.Anchors, explorer: o.Explorer(),
			publicURL: o.PublicURL, header: ch},
	}
}

// feePayerBudget is the fee payer's global budget left today, for /metrics.
type feePayerBudget struct {
	db    *bun.DB
	money *money.Service
	log   *slog.Logger
	// left is the budget last read (math.Float64bits; NaN before the
	// first read).
	left atomic.Uint64
}

// read reads the fee payer's global budget left today from
// the database, which every instance charges. A scrape while every
// connection of the pool is taken shows the value last read instead of
// queueing for one behind the requests (and holding up the scrape's other
// metrics, the pool's among them).
func (b *feePayerBudget) read() float64 {
	if b.db != nil {
		if st := b.db.Stats(); st.Idle == 0 && st.MaxOpenConnections > 0 && st.InUse >= st.MaxOpenConnections {
			return math.Float64frombits(b.left.Load())
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	left, _, err := b.money.FeePayerBudgetLeft(ctx)
	if err != nil {
		b.log.Error("metrics: the fee payer's budget left", "err", err)
		return math.NaN()
	}
	b.left.Store(math.Float64bits(float64(left)))
	return float64(left)
}

// Pages returns the paths of the browser pages (the other routes are JSON
// or assets).
func (a *App) Pages() []string { return a.pagePaths }

// Explorer returns the explorer links of the configured cluster.
func (o Options) Explorer() livepage.Explorer {
	return livepage.Explorer{ChainID: o.ChainID, RPC: o.DevFaucet, PublicURL: o.PublicURL}
}

// Operations returns the handler of the operations listener
// (METRICS_ADDR): Prometheus metrics at /metrics and Go's profiler at
// /debug/pprof/. It is never served on the public address.
func (a *App) Operations() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", a.metrics.Handler())
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}

// Document builds the route table without any service behind it and
// returns its OpenAPI document: the one GET /openapi.json serves with the
// same options, for writing it out without a database, a chain or a
// listening server. The routes are registered, never called.
func Document(o Options) *web.OpenAPI { return Documents(o).Docs }

// Documents returns the handlers of o, without services, for their
// documents: Docs (the OpenAPI document) and Protocol (the AsyncAPI one).
func Documents(o Options) *App {
	if o.MinSDKVersion == "" {
		o.MinSDKVersion = "1.0.0"
	}
	limiter := x402.NewLimiter(nil, domain.SystemClock, 1, time.Minute, nil)
	s := Services{X402: x402.New(nil, nil, nil, limiter, domain.SystemClock, slog.New(slog.DiscardHandler), x402.Config{})}
	return New(s, o, slog.New(slog.DiscardHandler))
}
