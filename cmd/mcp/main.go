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
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp }, nil)
	srv := &http.Server{Addr: cfg.HTTPAddr, Handler: h, ReadHeaderTimeout: 10 * time.Second}
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
