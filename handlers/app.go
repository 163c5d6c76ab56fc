// Package handlers holds the thin Echo handlers of the JSON API and the
// pages, and the presenters that turn domain values into view models. The
// route table is routes.go; each feature area has its JSON handlers and
// its pages side by side (games.go and games_pages.go), as methods on the
// feature's own struct (gameHandlers) that holds only the services they
// call. New gives each feature its services, once; App itself serves the
// operational routes and the documents.
package handlers

import (
	"context"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/http/pprof"
	"net/url"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/uptrace/bun"

	"wager/chain"
	"wager/chain/localchain"
	"wager/domain"
	"wager/domain/audit"
	"wager/domain/auth"
	"wager/domain/chat"
	"wager/domain/eventlog"
	"wager/domain/flags"
	"wager/domain/game"
	"wager/domain/integrity"
	"wager/domain/market"
	"wager/domain/money"
	"wager/domain/notify"
	"wager/domain/protection"
	"wager/domain/ranking"
	"wager/domain/referrals"
	"wager/domain/settlement"
	"wager/domain/social"
	"wager/domain/support"
	"wager/domain/tips"
	"wager/domain/tournament"
	"wager/domain/users"
	"wager/domain/x402"
	"wager/web"
	"wager/web/live"
)

// APIVersion is the version of the API contract this server implements.
const APIVersion = "1.0.0"

// Services are what the handlers call: every service of the server.
type Services struct {
	DB       *bun.DB // the handlers read it only for the health check
	Flags    *flags.Service
	Users    *users.Service
	Auth     *auth.Service
	Money    *money.Service
	Rooms    *eventlog.Log
	Games    *game.Service
	Chat     *chat.Service
	Pot      *settlement.Service
	Market   *market.Service
	Payments *x402.Service
	Notify   *notify.Service
	Social   *social.Service
	Tips     *tips.Service
	Ranking  *ranking.Service
	Support  *support.Service
	// Referrals runs referral codes and rewards.
	Referrals *referrals.Service
	// Guard answers the integrity rules of bets and trades; Reviews
	// settles finished games and runs the review queue.
	Guard   *integrity.Guard
	Reviews *integrity.Reviews
	// Protection answers the player protection rules of every money-in
	// path and runs players' limits, exclusions, age and session.
	Protection *protection.Service
	Live       *live.Hub
	Views      *LiveViews
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
// area's handlers are methods on a struct of their own that holds only the
// services they call (features).
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
	Views *LiveViews

	flags    *flags.Service // GET /feature-flags, the maintenance gate and the abuse controls' switch
	auth     *auth.Service  // who calls, on every route
	payments *x402.Service  // the abuse controls' charges
	bots     DemoBots       // never charged by the abuse controls
	chrome   *chrome        // the docs and error pages' header
	features features

	openapiDoc, asyncapiDoc servedDocument
	reference               docsReference

	pages   []string // paths of the browser pages
	log     *slog.Logger
	now     domain.Clock
	metrics *web.Metrics
	budget  *feePayerBudget
	started time.Time
}

// features are the handlers of each feature area, each given the services
// it calls.
type features struct {
	admin       *adminHandlers
	audit       *auditHandlers
	auth        *authHandlers
	bets        *betHandlers
	chat        *chatHandlers
	donations   *donationHandlers
	games       *gameHandlers
	home        *homeHandlers
	integrity   *integrityHandlers
	market      *marketHandlers
	payments    *paymentHandlers
	protection  *protectionHandlers
	ranking     *rankingHandlers
	referrals   *referralHandlers
	social      *socialHandlers
	support     *supportHandlers
	tips        *tipHandlers
	tournaments *tournamentHandlers
	users       *userHandlers
	wallet      *walletHandlers
}

// New builds the handlers and their routes.
func New(s Services, o Options, log *slog.Logger) *App {
	a := &App{Options: o, DB: s.DB, Live: s.Live, Views: s.Views, flags: s.Flags, auth: s.Auth, payments: s.Payments,
		bots: s.Bots, log: log, now: domain.SystemClock, metrics: web.NewMetrics(), started: time.Now()}
	a.chrome = &chrome{flags: s.Flags, money: s.Money, users: s.Users, notify: s.Notify, protection: s.Protection, log: log}
	a.features = newFeatures(s, o, a.chrome, log, a.now)
	a.Protocol = a.LiveProtocol()
	a.Echo = a.routes()
	if s.DB != nil {
		a.metrics.Database(s.DB.DB, "main")
	}
	if s.RPCEndpoints != nil {
		a.metrics.RPCEndpoints(s.RPCEndpoints)
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

// newFeatures gives each feature area's handlers the services they call.
func newFeatures(s Services, o Options, ch *chrome, log *slog.Logger, now domain.Clock) features {
	games := &gameHandlers{games: s.Games, pot: s.Pot, users: s.Users, rooms: s.Rooms, hub: s.Live, gameViews: s.Views,
		chat: s.Chat, market: s.Market, tournaments: s.Tournaments, bots: s.Bots, chrome: ch}
	games.details = domain.SeqCache[*cachedDetail]{Latest: s.Live.LatestSeq, MaxAge: game.ReadCacheAge, Size: 10_000}
	return features{
		admin:       &adminHandlers{flags: s.Flags, money: s.Money, users: s.Users, protection: s.Protection, log: log, chrome: ch},
		audit:       &auditHandlers{audit: s.Audit, chrome: ch},
		auth:        &authHandlers{auth: s.Auth, flags: s.Flags, embeddedChain: o.EmbeddedChain, publicURL: o.PublicURL, chrome: ch},
		bets:        &betHandlers{users: s.Users, pot: s.Pot},
		chat:        &chatHandlers{chat: s.Chat},
		donations:   &donationHandlers{users: s.Users, pot: s.Pot},
		games:       games,
		home:        &homeHandlers{games: s.Games, social: s.Social, chrome: ch},
		integrity:   &integrityHandlers{users: s.Users, guard: s.Guard, reviews: s.Reviews, chrome: ch},
		market:      &marketHandlers{market: s.Market},
		payments:    &paymentHandlers{users: s.Users, payments: s.Payments, flags: s.Flags},
		protection:  &protectionHandlers{users: s.Users, protection: s.Protection, chrome: ch},
		ranking:     &rankingHandlers{ranking: s.Ranking, chrome: ch},
		referrals:   &referralHandlers{referrals: s.Referrals, chrome: ch},
		social:      &socialHandlers{users: s.Users, social: s.Social, notify: s.Notify, chrome: ch},
		support:     &supportHandlers{support: s.Support, chrome: ch},
		tips:        &tipHandlers{users: s.Users, tips: s.Tips},
		tournaments: &tournamentHandlers{tournaments: s.Tournaments, now: now, chrome: ch},
		users: &userHandlers{users: s.Users, auth: s.Auth, social: s.Social, ranking: s.Ranking, protection: s.Protection,
			chrome: ch},
		wallet: &walletHandlers{users: s.Users, money: s.Money, localChain: s.LocalChain, devFaucet: o.DevFaucet,
			chainID: o.ChainID, explorer: o.Explorer(), chrome: ch},
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
func (a *App) Pages() []string { return a.pages }

// Explorer links transactions and addresses to the Solana Explorer on the
// server's cluster.
type Explorer struct {
	ChainID   string // localnet, devnet, testnet, mainnet or custom
	RPC       bool   // the embedded chain's RPC is served at /dev/solana-rpc
	PublicURL string
}

// Explorer returns the explorer links of the configured cluster.
func (o Options) Explorer() Explorer {
	return Explorer{ChainID: o.ChainID, RPC: o.DevFaucet, PublicURL: o.PublicURL}
}

// URL links a transaction signature or an address ("tx" or "address") to
// the Solana Explorer: the embedded chain through its public RPC endpoint,
// devnet and testnet by name, mainnet plain. It is "" when there is nothing
// to link to (an unnamed cluster, or the embedded chain without its RPC
// endpoint).
func (e Explorer) URL(kind, id string) string {
	if id == "" {
		return ""
	}
	base := "https://explorer.solana.com/" + kind + "/" + url.PathEscape(id)
	switch e.ChainID {
	case "localnet":
		if !e.RPC {
			return ""
		}
		return base + "?cluster=custom&customUrl=" + url.QueryEscape(e.PublicURL+"/dev/solana-rpc")
	case "devnet", "testnet":
		return base + "?cluster=" + e.ChainID
	case "mainnet":
		return base
	}
	return ""
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
	s := Services{Payments: x402.New(nil, nil, nil, limiter, domain.SystemClock, slog.New(slog.DiscardHandler), x402.Config{})}
	return New(s, o, slog.New(slog.DiscardHandler))
}
