// Package handlers wires the server: configuration, services, the route
// table, and thin Echo handlers for JSON and pages over the domain
// services.
package handlers

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/uptrace/bun"

	"wager/db"
	"wager/domain"
	"wager/domain/auth"
	"wager/domain/flags"
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
	Echo   *echo.Echo
	Docs   *web.OpenAPI

	pages []string // paths of the browser pages

	log     *slog.Logger
	now     domain.Clock
	metrics *web.Metrics
	started time.Time

	cancel context.CancelFunc
	wg     sync.WaitGroup
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
	secret, err := jwtSecret(cfg)
	if err != nil {
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

	bg, cancel := context.WithCancel(context.WithoutCancel(ctx))
	a.cancel = cancel
	listener := db.NewListener(cfg.DatabaseURL, log)
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

	a.Echo = a.routes()
	return a, nil
}

func (a *App) goBackground(fn func()) {
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		fn()
	}()
}

// Handler returns the HTTP handler of the whole site.
func (a *App) Handler() http.Handler { return a.Echo }

// Close stops the background workers and closes the database.
func (a *App) Close() {
	a.cancel()
	a.wg.Wait()
	a.DB.Close()
}

// jwtSecret returns JWT_SECRET, or the secret kept under the data folder,
// generating it on first start.
func jwtSecret(cfg Config) ([]byte, error) {
	if cfg.JWTSecret != "" {
		return []byte(cfg.JWTSecret), nil
	}
	path := filepath.Join(cfg.DataDir, "jwt-secret")
	if b, err := os.ReadFile(path); err == nil && len(b) >= 32 {
		return b, nil
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("DATA_DIR=%s: %w", cfg.DataDir, err)
	}
	raw := make([]byte, 32)
	rand.Read(raw)
	secret := []byte(hex.EncodeToString(raw))
	if err := os.WriteFile(path, secret, 0o600); err != nil {
		return nil, fmt.Errorf("DATA_DIR=%s: %w", cfg.DataDir, err)
	}
	return secret, nil
}
