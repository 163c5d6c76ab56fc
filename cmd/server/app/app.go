// Package app puts the server together: it opens the database, builds
// every service with what it depends on (all of the wiring is in New),
// starts the background work (round deadlines, settlement transfers,
// resolvers, the live layer and its database listener) and serves the
// HTTP handler. cmd/server runs it; tests start it on their own database.
//
// Each service is complete when it is built. Where services call each
// other in a cycle (money confirms the intents that the pots, tips and
// payments prepare, which move money; the reviews settle the games they
// read; the games tell the tournaments, which start games, of results; the
// live hub reads the rooms whose events reach it), the call that closes it
// goes through the App's field of the service built later (cycles.go,
// liveFeed): nothing calls across a cycle before New returns, by when
// every field is set.
package app

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/gagliardetto/solana-go"

	"wager/chain"
	"wager/chain/localchain"
	"wager/cmd/server/bots"
	"wager/db"
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
	"wager/handlers"
	"wager/handlers/livepage"
	"wager/web/live"
)

// App is a running server: its services, background work and HTTP
// handler.
type App struct {
	// Services are every service, as the handlers get them.
	handlers.Services
	Config Config
	Keys   *chain.Keys
	// DemoBots are the demo players (nil without DEMO_BOTS); Services.Bots
	// is the same, as the handlers see them.
	DemoBots *bots.Bots
	// HTTP is the handler of the whole site.
	HTTP *handlers.App

	log       *slog.Logger
	announcer *eventlog.Announcer
	host      hostLoad // whether the machine's cores are saturated
	cancel    context.CancelFunc
	wg        sync.WaitGroup
	closeOnce sync.Once
	closed    bool
}

// New connects to the database, migrates it, builds the services, starts
// the background work and builds the routes. It returns an error when the
// database cannot be reached or migrated or the configuration does not fit
// the routes. Close releases everything.
func New(ctx context.Context, cfg Config, log *slog.Logger) (*App, error) {
	bdb, err := db.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		return nil, err
	}
	a := &App{Services: handlers.Services{DB: bdb}, Config: cfg, log: log}
	if err := a.build(ctx); err != nil {
		bdb.Close()
		return nil, err
	}
	if err := a.start(ctx); err != nil {
		a.Close()
		return nil, err
	}
	return a, nil
}

// build makes every service, each complete when it is built (see the
// package doc for the cycles). What depends on what is all here.
func (a *App) build(ctx context.Context) error {
	cfg, now := a.Config, domain.Clock(domain.SystemClock)
	if cfg.Clock != nil {
		now = cfg.Clock
	}
	if err := db.Migrate(ctx, a.DB); err != nil {
		return err
	}
	jwtSecret, err := a.openKeys()
	if err != nil {
		return err
	}
	client, faucet, mint, err := a.openChain(ctx, now)
	if err != nil {
		return err
	}
	if err := a.buildAccounts(ctx, now, jwtSecret); err != nil {
		return err
	}
	presence, announcer := a.buildRooms(now)
	protect := protection.NewRules(a.DB, now, cfg.Protection)
	a.Money = money.New(a.DB, client, a.Keys, mint, now, a.log, a.confirmers(), money.Deps{Faucet: faucet, Tell: a.Events,
		FeePayerDaily: cfg.FeePayerDailyLamports, FeePayerGlobalDaily: cfg.FeePayerGlobalDailyLamports, Protect: protect})
	if err := a.Money.RegisterPlatformAddresses(ctx); err != nil {
		return err
	}
	if err := a.buildGames(now, protect); err != nil {
		return err
	}
	limiter := a.buildPayments(now, protect)
	a.buildTournaments(now, protect)
	a.Audit = audit.New(a.DB)
	if cfg.DemoBots > 0 {
		a.DemoBots = bots.New(a.DB, a.Games, a.Keys, now, a.log, cfg.DemoBots)
		a.Bots = a.DemoBots // only then: a nil *bots.Bots in it would not be a nil DemoBots
	}
	opts := handlers.Options{MinSDKVersion: cfg.MinSDKVersion, SDKGraceUntil: cfg.SDKGraceUntil,
		DevFaucet: cfg.DevFaucet && a.LocalChain != nil, EmbeddedChain: cfg.EmbeddedChain(), ChainID: cfg.ChainID(),
		PublicURL: cfg.PublicURL, TrustedProxies: cfg.TrustedProxies, CountryHeader: cfg.CountryHeader,
		CORSOrigins: cfg.CORSOrigins}
	a.Views = livepage.NewGames(a.Games, a.Settlement, a.Referee, a.Ranking, opts.Explorer(), opts.EmbeddedChain, a.log)
	a.Live = live.New(a.Events, a.Views, presence, map[domain.StreamKind]live.Kind{
		domain.GameStream:       {Join: a.Views.Join, Open: a.Views.Open},
		domain.TournamentStream: {Join: joinTournament(a.Tournaments), Open: livepage.NewTournaments(a.log).Open},
	}, announcer.Instance(), a.log, live.Options{Now: now})
	a.HTTP = handlers.New(a.Services, opts, a.log)
	if unknown := limiter.UnknownOverrides(); len(unknown) > 0 {
		return fmt.Errorf("invalid configuration: ABUSE_OVERRIDES names %s, which is not a charged endpoint (write METHOD /route as in the OpenAPI document)",
			strings.Join(unknown, ", "))
	}
	a.announcer = announcer
	return nil
}

// openKeys makes the platform's keys from the master seed and returns the
// secret that signs sessions: each configured, or kept under the data
// folder (generated on first start).
func (a *App) openKeys() ([]byte, error) {
	jwtSecret := []byte(a.Config.JWTSecret)
	if len(jwtSecret) == 0 {
		var err error
		if jwtSecret, err = dataSecret(a.Config.DataDir, "jwt-secret"); err != nil {
			return nil, err
		}
	}
	seed := a.Config.MasterSeed
	if len(seed) == 0 {
		var err error
		if seed, err = dataSecret(a.Config.DataDir, "master-seed"); err != nil {
			return nil, err
		}
	}
	a.Keys = chain.NewKeys(seed)
	return jwtSecret, nil
}

// buildAccounts makes the feature flags, users and sign-in, loading the
// flags and the revoked tokens.
func (a *App) buildAccounts(ctx context.Context, now domain.Clock, jwtSecret []byte) error {
	cfg := a.Config
	a.Flags = flags.New(a.DB, now)
	if err := a.Flags.Load(ctx); err != nil {
		return fmt.Errorf("load feature flags: %w", err)
	}
	a.Users = users.New(a.DB, now)
	a.Auth = auth.New(a.DB, now, auth.Config{PublicURL: cfg.PublicURL, ChainID: cfg.ChainID(),
		AdminWallets: cfg.AdminWallets, JWTSecret: jwtSecret, HandshakesPerIP: cfg.AuthRateLimit,
		Unlimited: bots.Wallets(a.Keys, cfg.DemoBots)})
	return a.Auth.LoadRevocations(ctx)
}

// buildRooms makes the rooms' event log and what publishes through it
// (notices, the social graph): what a transaction publishes goes, after
// its commit, to this instance's live hub and, batched by the announcer
// it returns, to the other instances.
func (a *App) buildRooms(now domain.Clock) (*eventlog.Presence, *eventlog.Announcer) {
	instance := make([]byte, 8)
	rand.Read(instance)
	presence := eventlog.NewPresence(a.DB, now)
	announcer := eventlog.NewAnnouncer(a.DB, hex.EncodeToString(instance), presence, now, a.log)
	a.Events = eventlog.New(a.DB, eventlog.Sinks{liveFeed{a}, announcer})
	a.Notify = notify.New(a.DB, a.Events, now)
	a.Social = social.New(a.DB, a.Notify, a.Events, presence, now)
	return presence, announcer
}

// buildGames makes the games and what settles them: the pots, the
// markets and the integrity reviews that choose between them.
func (a *App) buildGames(now domain.Clock, protect *protection.Rules) error {
	cfg := a.Config
	finals := gamelog.NewQueue(now)
	links := integrity.NewLinks(a.DB, now, cfg.Integrity)
	a.Links = links
	a.Ranking = ranking.New(a.DB, now)
	a.Referrals = referrals.New(a.DB, a.Notify, a.Social, a.Events, now, cfg.ReferralBPS, cfg.PublicURL)
	a.Games = game.New(a.DB, now, a.log, game.Deps{Events: a.Events, Notify: a.Notify, Settle: gameSettlement{a}, Live: liveFeed{a}, SpectatorDelay: cfg.SpectatorDelay,
		Ending: []game.Participant{a.Ranking, a.Social, a.Referrals, tournamentResults{a}, finals}, Protect: protect,
		Closed:   func() bool { return a.Flags.Enabled(flags.Maintenance) },
		EscrowOf: func(gameID string) string { return a.Keys.Escrow(gameID).PublicKey().String() }})
	a.Chat = chat.New(a.DB, a.Events, now)
	a.Support = support.New(a.DB, a.Notify, now)
	a.Settlement = settlement.New(a.DB, a.Events, a.Games, a.Money, a.Chat, a.Keys, links, now, a.log, settlement.Deps{
		DonationRecorder: a.Social, Referrals: a.Referrals, BetRecorder: a.Social, Notify: a.Notify, Protect: protect})
	a.Market = market.New(a.DB, a.Events, a.Games, links, now, market.Deps{Notify: a.Notify, Achievements: a.Social, Protect: protect})
	a.Protection = protection.NewService(protect, a.Games, a.Market)
	a.Referee = integrity.NewReferee(a.DB, now, integrity.RefereeDeps{Links: links, Games: a.Games, Bets: a.Settlement, Market: a.Market,
		Notify: a.Notify, Events: a.Events, Log: finals})
	var err error
	a.GamesLog, err = gamelog.New(a.DB, finals, gamelog.Config{Origin: cfg.LogOrigin, Seed: []byte(a.Keys.Derive("games-log")),
		Payers: []gamelog.Payer{a.Settlement, a.Market}, Busy: a.host.Busy, Now: now, Log: a.log})
	if err != nil {
		return err
	}
	a.Reserves = reserves.New(a.DB, reserves.Config{Owed: []reserves.Owed{money.Owed, settlement.Owed, market.Owed, referrals.Owed},
		Liabilities: money.Liabilities, Holdings: a.Money.Holdings, Sign: a.GamesLog.SignLine, Now: now, Log: a.log})
	a.Anchors = anchors.New(a.DB, anchors.Config{Chain: a.Money.Chain(), Payer: a.Keys.FeePayer(), Tree: a.GamesLog.Tree,
		Reserves: a.Reserves.Latest, Now: now, Log: a.log})
	return nil
}

// buildPayments makes tips and the x402 payments, and returns the latter's
// abuse limiter.
func (a *App) buildPayments(now domain.Clock, protect *protection.Rules) *x402.Limiter {
	cfg := a.Config
	a.Tips = tips.New(a.DB, a.Users, a.Money, a.Chat, a.Notify, now, tips.Deps{Recorder: a.Social, Protect: protect})
	limiter := x402.NewLimiter(a.DB, now, cfg.AbuseThreshold, cfg.AbuseWindow, cfg.AbuseOverrides)
	a.X402 = x402.New(a.DB, a.Money, a.Keys, limiter, now, a.log, x402.Config{
		PriceMinor: cfg.AbusePrice, Network: x402.NetworkOf(cfg.ChainID())})
	return limiter
}

// buildTournaments makes the tournaments, whose rooms' events go through
// the event log like games'.
func (a *App) buildTournaments(now domain.Clock, protect *protection.Rules) {
	cfg := a.Config
	a.Tournaments = tournament.New(a.DB, now, a.log, tournament.Deps{Games: a.Games, Notify: a.Notify, Feed: a.Social, Tell: a.Events,
		Events: a.Events, Protect: protect, Links: a.Links, Staff: a.Referee, MaxPlayers: cfg.TournamentMaxPlayers,
		CreatePerDay: cfg.TournamentCreatePerDay, ScheduledMax: cfg.TournamentsScheduledMax,
		Unlimited: append(bots.Wallets(a.Keys, cfg.DemoBots), cfg.AdminWallets...)})
}

// start runs the background work: the live hub, the announcer and the
// database listener on every instance; the workers any instance may claim
// (WORKERS); the demo bots (DEMO_BOTS), which play once Listening says
// where the API is.
func (a *App) start(ctx context.Context) error {
	bg, cancel := context.WithCancel(context.WithoutCancel(ctx))
	a.cancel = cancel
	a.goBackground(func() { a.Live.Run(bg) })
	a.goBackground(func() { a.announcer.Run(bg) })
	if a.Config.Workers {
		// Before anything is served: a round whose deadline passed while
		// the platform was down gets its time back before a move in it can
		// be refused as late.
		if _, _, err := a.Games.RunDeadlinesOnce(bg); err != nil {
			a.log.Error("run game deadlines", "err", err)
		}
		a.goBackground(func() { a.Auth.RunCleanup(bg, time.Minute, a.log) })
		a.goBackground(func() { a.Games.RunDeadlines(bg, 200*time.Millisecond) })
		a.goBackground(func() { a.Settlement.RunTransfers(bg, time.Second) })
		// The resolvers send what may still land again as often as a
		// request driving it would (chain.DefaultResendEvery).
		a.goBackground(func() { a.Money.RunResolvers(bg, chain.DefaultResendEvery) })
		a.goBackground(func() { a.X402.RunResolvers(bg, chain.DefaultResendEvery) })
		a.goBackground(func() { a.Tournaments.RunWorker(bg, tournament.WorkEvery) })
		a.goBackground(func() { a.host.Run(bg) })
		a.goBackground(func() { a.GamesLog.Run(bg, time.Second) })
		a.goBackground(func() { a.Reserves.Run(bg, a.Config.ReservesInterval) })
		a.goBackground(func() { a.Anchors.Run(bg, a.Config.AnchorInterval) })
	}
	if a.DemoBots != nil {
		a.goBackground(func() { a.DemoBots.Run(bg) })
	}

	listener := db.NewListener(a.Config.DatabaseURL, a.log)
	listener.Handle(eventlog.Channel, func(payload string) {
		an, err := eventlog.ParseAnnouncement(payload)
		if err != nil {
			a.log.Error("room announcement", "err", err)
			return
		}
		a.announcer.Heard(an)
		if an.Instance == a.announcer.Instance() {
			return // delivered here at its commit
		}
		for s, seq := range an.Streams() {
			a.Live.Announced(s, seq)
		}
		for _, n := range an.Notices {
			a.Live.Notify(n.UserID, n.Type, n.Data)
		}
	})
	reloadFlags := func() {
		if err := a.Flags.Load(bg); err != nil && bg.Err() == nil {
			a.log.Error("reload feature flags", "err", err)
		}
	}
	listener.Handle(flags.Channel, func(string) { reloadFlags() })
	listener.Handle(auth.Revocations, a.Auth.Revoked)
	// After a reconnect: whatever was announced meanwhile is read again.
	listener.OnConnect(func() {
		reloadFlags()
		if err := a.Auth.LoadRevocations(bg); err != nil && bg.Err() == nil {
			a.log.Error("reload revoked tokens", "err", err)
		}
		a.Live.SweepNow()
	})
	a.goBackground(func() { listener.Run(bg) })
	select {
	case <-listener.Ready():
	case <-time.After(10 * time.Second):
		return fmt.Errorf("database listener did not start within 10s")
	}
	hello, cancel := context.WithTimeout(bg, 10*time.Second)
	defer cancel()
	if err := a.announcer.Hello(hello); err != nil {
		// The others find this instance by its presence row, within two
		// seconds; notices to its sockets in that time are not live.
		a.log.Warn("announce this instance", "err", err)
	}
	return nil
}

func (a *App) goBackground(fn func()) {
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		fn()
	}()
}

// openChain connects to the configured chain: the embedded one (funding
// the platform's fee payer at genesis) or RPC URLs, failing over from one
// to the next. The faucet is nil unless DEV_FAUCET is on with the
// embedded chain.
func (a *App) openChain(ctx context.Context, now domain.Clock) (*chain.Client, money.Faucet, solana.PublicKey, error) {
	if !a.Config.EmbeddedChain() {
		mint, err := solana.PublicKeyFromBase58(a.Config.USDCMint)
		if err != nil {
			return nil, nil, mint, fmt.Errorf("USDC_MINT=%q: %w", a.Config.USDCMint, err)
		}
		endpoints, err := chain.NewEndpoints(a.Config.SolanaRPCURLs)
		if err != nil {
			return nil, nil, mint, fmt.Errorf("SOLANA_RPC_URL: %w", err)
		}
		a.RPCEndpoints = endpoints
		client := endpoints.Client()
		client.Commitment = a.Config.CreditCommitment
		client.Fees = chain.Fees{MaxPrice: a.Config.MaxPriorityFee, Log: a.log}
		return client, nil, mint, nil
	}
	lc, err := localchain.New(ctx, a.DB, now, a.Keys.LocalMint().PublicKey(), a.Keys.LocalMintAuthority().PublicKey())
	if err != nil {
		return nil, nil, solana.PublicKey{}, fmt.Errorf("open the embedded chain: %w", err)
	}
	lc.FinalizeSlots = a.Config.FinalizeSlots
	a.LocalChain = lc
	client := chain.NewClient("http://embedded-chain", localchain.Transport{Chain: lc})
	client.Commitment = a.Config.CreditCommitment
	client.Fees = chain.Fees{MaxPrice: a.Config.MaxPriorityFee, Log: a.log}
	payer := a.Keys.FeePayer().PublicKey()
	if lamports, err := client.Lamports(ctx, payer); err != nil {
		return nil, nil, lc.Mint, fmt.Errorf("read the fee payer's balance: %w", err)
	} else if lamports < 10_000_000_000 {
		if _, err := lc.Airdrop(ctx, payer, 100_000_000_000); err != nil {
			return nil, nil, lc.Mint, fmt.Errorf("fund the fee payer: %w", err)
		}
	}
	var faucet money.Faucet
	if a.Config.DevFaucet {
		faucet = lc
	}
	return client, faucet, lc.Mint, nil
}

// Listening tells the app the base URL its Handler is served at, as seen
// from this process (e.g. http://127.0.0.1:8080): the demo bots play
// through the API there, as clients of the SDK. Whoever serves the handler
// calls it once the listener is open; until then the bots wait. It
// returns an error when baseURL is not an absolute http(s) URL.
func (a *App) Listening(baseURL string) error {
	if a.DemoBots == nil {
		return nil
	}
	return a.DemoBots.Connect(baseURL)
}

// LocalURL is the base URL of a listener at addr for a client in this
// process: a listener on every interface (dual-stack for "::") is reached
// on 127.0.0.1.
func LocalURL(addr net.Addr) string {
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return "http://" + addr.String()
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port)
}

// Handler returns the HTTP handler of the whole site.
func (a *App) Handler() http.Handler { return a.HTTP.Echo }

// Closed reports whether Close ran.
func (a *App) Closed() bool { return a.closed }

// Close stops the background work and closes the database. Calling it
// again does nothing.
func (a *App) Close() {
	a.closeOnce.Do(func() {
		if a.cancel != nil {
			a.cancel()
		}
		a.wg.Wait()
		a.DB.Close()
		a.closed = true
	})
}

// dataSecret returns 32 random bytes kept (hex-encoded, readable only by
// the owner) in a file under the data folder, generating them on first
// start.
func dataSecret(dir, name string) ([]byte, error) {
	path := filepath.Join(dir, name)
	if b, err := os.ReadFile(path); err == nil {
		if secret, err := hex.DecodeString(strings.TrimSpace(string(b))); err == nil && len(secret) == 32 {
			return secret, nil
		}
		return nil, fmt.Errorf("%s does not hold 64 hex characters; restore it from a backup", path)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("DATA_DIR=%s: %w", dir, err)
	}
	secret := make([]byte, 32)
	rand.Read(secret)
	if err := os.WriteFile(path, []byte(hex.EncodeToString(secret)+"\n"), 0o600); err != nil {
		return nil, fmt.Errorf("DATA_DIR=%s: %w", dir, err)
	}
	return secret, nil
}
