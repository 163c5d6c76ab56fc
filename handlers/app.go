// Package handlers wires the server: configuration, services, the route
// table, and thin Echo handlers for JSON and pages over the domain
// services.
package handlers

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/gagliardetto/solana-go"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/uptrace/bun"

	"wager/chain"
	"wager/chain/localchain"
	"wager/db"
	"wager/domain"
	"wager/domain/auth"
	"wager/domain/bots"
	"wager/domain/chat"
	"wager/domain/flags"
	"wager/domain/game"
	"wager/domain/game/rules"
	"wager/domain/money"
	"wager/domain/payments"
	"wager/domain/pot"
	"wager/domain/users"
	"wager/web"
)

// APIVersion is the version of the API contract this server implements.
const APIVersion = "1.0.0"

// App is a running server: its services, background workers and HTTP
// handler.
type App struct {
	Config Config
	DB     *bun.DB
	Flags  *flags.Service
	Users  *users.Service
	Auth   *auth.Service
	Money  *money.Service
	Games  *game.Service
	Chat   *chat.Service
	Pot    *pot.Service
	Hub    *web.Hub
	Keys   *chain.Keys
	// LocalChain is the embedded chain (nil with SOLANA_RPC_URL).
	LocalChain *localchain.Chain
	Echo       *echo.Echo
	Docs       *web.OpenAPI
	// Payments holds the abuse counters and the 402 payment flow.
	Payments *payments.Service

	pages []string // paths of the browser pages

	log     *slog.Logger
	now     domain.Clock
	metrics *web.Metrics
	started time.Time

	cancel    context.CancelFunc
	wg        sync.WaitGroup
	closeOnce sync.Once
	closed    bool
}

// New connects to the database, migrates it, starts the background workers
// and builds the routes. It returns an error when the database cannot be
// reached or migrated. Close releases everything.
func New(ctx context.Context, cfg Config, log *slog.Logger) (*App, error) {
	bdb, err := db.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		return nil, err
	}
	if err := db.Migrate(ctx, bdb); err != nil {
		bdb.Close()
		return nil, err
	}
	a := &App{
		Config:  cfg,
		DB:      bdb,
		log:     log,
		now:     domain.SystemClock,
		metrics: web.NewMetrics(),
		started: time.Now(),
	}
	secret := []byte(cfg.JWTSecret)
	if len(secret) == 0 {
		if secret, err = dataSecret(cfg.DataDir, "jwt-secret"); err != nil {
			bdb.Close()
			return nil, err
		}
	}
	seed := cfg.MasterSeed
	if len(seed) == 0 {
		if seed, err = dataSecret(cfg.DataDir, "master-seed"); err != nil {
			bdb.Close()
			return nil, err
		}
	}
	a.Keys = chain.NewKeys(seed)
	if err := a.openChain(ctx); err != nil {
		bdb.Close()
		return nil, err
	}
	a.Flags = flags.New(bdb, a.now)
	a.Users = users.New(bdb, a.now)
	a.Auth = auth.New(bdb, a.now, auth.Config{PublicURL: cfg.PublicURL, ChainID: cfg.ChainID(),
		AdminWallets: cfg.AdminWallets, JWTSecret: secret})
	if err := a.Flags.Load(ctx); err != nil {
		bdb.Close()
		return nil, fmt.Errorf("load feature flags: %w", err)
	}

	// Settlement needs the games and the games need settlement: the
	// service is wired once both exist.
	var settle game.Settler = func(ctx context.Context, tx bun.Tx, g game.Game, players []string, o rules.Outcome) (map[string]any, error) {
		return a.Pot.Settle(ctx, tx, g, players, o)
	}
	a.Games = game.New(bdb, a.now, log, settle)
	a.Chat = chat.New(bdb, a.now)
	a.Pot = pot.New(bdb, a.Games, a.Money, a.Chat, a.Keys, a.now, log)
	a.Payments = a.newPayments()
	instance := make([]byte, 8)
	rand.Read(instance)
	a.Hub = web.NewHub(a.Games, hex.EncodeToString(instance), log)
	a.Hub.SetRenderer(web.AudienceHTML, a.renderLive)
	// The routes are built (and the abuse overrides checked against them)
	// before anything starts working.
	a.Echo = a.routes()
	if err := a.checkAbuseOverrides(); err != nil {
		bdb.Close()
		return nil, err
	}

	bg, cancel := context.WithCancel(context.WithoutCancel(ctx))
	a.cancel = cancel
	a.goBackground(func() { a.Hub.Run(bg) })
	a.goBackground(func() { a.every(bg, game.ViewerRefresh, "refresh spectator counts", a.Hub.Refresh) })
	if cfg.Workers {
		a.startWorkers(bg)
	}
	if cfg.DemoBots > 0 {
		b := bots.New(bdb, a.Games, a.Keys, a.now, log, cfg.DemoBots)
		a.goBackground(func() { b.Run(bg) })
	}
	listener := db.NewListener(cfg.DatabaseURL, log)
	listener.Handle(game.EventsChannel, a.Hub.GameChanged)
	listener.Handle(game.NoticesChannel, func(payload string) {
		var n game.Notice
		if json.Unmarshal([]byte(payload), &n) == nil {
			frame, _ := json.Marshal(map[string]any{"type": "notice", "notice": n.Type, "data": n.Data})
			a.Hub.Notify(n.UserID, frame)
		}
	})
	reloadFlags := func() {
		if err := a.Flags.Load(bg); err != nil && bg.Err() == nil {
			log.Error("reload feature flags", "err", err)
		}
	}
	listener.Handle(flags.Channel, func(string) { reloadFlags() })
	listener.OnConnect(reloadFlags)
	a.goBackground(func() { listener.Run(bg) })
	select {
	case <-listener.Ready():
	case <-time.After(10 * time.Second):
		a.Close()
		return nil, fmt.Errorf("database listener did not start within 10s")
	}
	return a, nil
}

func (a *App) goBackground(fn func()) {
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		fn()
	}()
}

// startWorkers runs the work any instance may claim: round and turn
// deadlines, settlement transfers, unresolved withdrawals, submitted
// intents and inline payments.
func (a *App) startWorkers(ctx context.Context) {
	a.goBackground(func() {
		a.every(ctx, 200*time.Millisecond, "expire game deadlines", func(ctx context.Context) error {
			_, err := a.Games.ExpireDue(ctx)
			return err
		})
	})
	a.goBackground(func() {
		a.every(ctx, time.Second, "settlement transfers", func(ctx context.Context) error {
			_, err := a.Pot.ProcessTransfers(ctx)
			return err
		})
	})
	a.goBackground(func() { a.every(ctx, 15*time.Second, "resolve withdrawals", a.Money.ResolvePendingWithdrawals) })
	a.goBackground(func() { a.every(ctx, 15*time.Second, "resolve submitted intents", a.Money.ResolveSubmittedIntents) })
	a.goBackground(func() { a.every(ctx, 15*time.Second, "resolve inline payments", a.Payments.ResolveSettling) })
	a.goBackground(func() { a.every(ctx, time.Minute, "prune abuse counters", a.Payments.Limiter.Prune) })
}

// openChain connects the money service to the configured chain: the
// embedded one (funding the platform's fee payer at genesis) or an RPC URL.
func (a *App) openChain(ctx context.Context) error {
	var client *chain.Client
	var faucet money.Faucet
	mint := solana.PublicKey{}
	if a.Config.EmbeddedChain() {
		lc, err := localchain.New(ctx, a.DB, a.now, a.Keys.LocalMint().PublicKey(), a.Keys.LocalMintAuthority().PublicKey())
		if err != nil {
			return err
		}
		a.LocalChain, faucet, mint = lc, lc, lc.Mint
		client = chain.NewClient("http://embedded-chain", localchain.Transport{Chain: lc})
		payer := a.Keys.FeePayer().PublicKey()
		if lamports, err := client.Lamports(ctx, payer); err != nil {
			return err
		} else if lamports < 10_000_000_000 {
			if _, err := lc.Airdrop(ctx, payer, 100_000_000_000); err != nil {
				return err
			}
		}
	} else {
		client = chain.NewClient(a.Config.SolanaRPCURL, nil)
		mint = solana.MustPublicKeyFromBase58(a.Config.USDCMint)
	}
	if !a.Config.DevFaucet {
		faucet = nil
	}
	a.Money = money.New(a.DB, client, a.Keys, mint, a.now, a.log, faucet)
	return nil
}

// every runs fn every interval until ctx is done, logging its errors.
func (a *App) every(ctx context.Context, interval time.Duration, what string, fn func(context.Context) error) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := fn(ctx); err != nil && ctx.Err() == nil {
				a.log.Error(what, "err", err)
			}
		}
	}
}

// Handler returns the HTTP handler of the whole site.
func (a *App) Handler() http.Handler { return a.Echo }

// Close stops the background workers and closes the database. Calling it
// again does nothing.
func (a *App) Close() {
	a.closeOnce.Do(func() {
		a.cancel()
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
