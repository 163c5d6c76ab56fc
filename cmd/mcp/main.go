// Command mcp is an MCP server that lets AI agents use the platform
// through its JSON API: check maintenance, list and watch games, find an
// opponent and play, chat, read the balance, donate, bet and trade in a
// game's prediction market, within a spending cap set at start-up.
//
// It speaks MCP over stdio by default, or over streamable HTTP with
// -http. See README.md, "MCP server for agents".
package main

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv); err != nil {
		fmt.Fprintln(os.Stderr, "mcp:", err)
		os.Exit(1)
	}
}

// run serves MCP until ctx ends (HTTP) or stdin closes (stdio). Logs go
// to stderr: over stdio, stdout carries the protocol.
func run(ctx context.Context, args []string, getenv func(string) string) error {
	cfg, err := loadConfig(args, getenv)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	s, err := newServer(cfg, time.Now)
	if err != nil {
		return err
	}
	if cfg.WalletKey == "" {
		log.Warn("WAGER_WALLET_KEY is not set: only the read-only tools work")
	}
	if cfg.HTTPAddr == "" {
		return s.mcp.Run(ctx, &mcp.StdioTransport{})
	}
	if cfg.HTTPToken == "" {
		log.Warn("WAGER_MCP_TOKEN is not set: whoever reaches the HTTP address can use the tools (and the wallet)")
	}
	srv := &http.Server{Addr: cfg.HTTPAddr, Handler: s.httpHandler(cfg.HTTPToken), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Shutdown(shutdown)
	}()
	log.Info("serving MCP over streamable HTTP", "addr", cfg.HTTPAddr, "wager", cfg.URL)
	if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// httpHandler serves MCP over streamable HTTP. Browsers' cross-origin
// requests are refused, and with a token every request must carry it as
// "Authorization: Bearer <token>" (401 otherwise): the tools act with the
// wallet.
func (s *server) httpHandler(token string) http.Handler {
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp },
		&mcp.StreamableHTTPOptions{SessionTimeout: time.Hour})
	protected := http.NewCrossOriginProtection().Handler(h)
	if token == "" {
		return protected
	}
	want := []byte("Bearer " + token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
			w.Header().Set("WWW-Authenticate", "Bearer")
			http.Error(w, "missing or wrong bearer token", http.StatusUnauthorized)
			return
		}
		protected.ServeHTTP(w, r)
	})
}
