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
	"net"
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
	if err := run(ctx, os.Args[1:], os.Getenv, nil); err != nil {
		fmt.Fprintln(os.Stderr, "mcp:", err)
		os.Exit(1)
	}
}

// run serves MCP until ctx ends (HTTP) or stdin closes (stdio); over
// HTTP, listening (when not nil) is told the address once it listens.
// Logs go to stderr: over stdio, stdout carries the protocol. It returns
// an error for a bad configuration, or an HTTP address it cannot serve.
func run(ctx context.Context, args []string, getenv func(string) string, listening func(net.Addr)) error {
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
	ln, err := listenHTTP(cfg.HTTPAddr, cfg.HTTPToken)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: s.httpHandler(cfg.HTTPToken), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Shutdown(shutdown)
	}()
	log.Info("serving MCP over streamable HTTP", "addr", ln.Addr().String(), "wager", cfg.URL, "token", cfg.HTTPToken != "")
	if listening != nil {
		listening(ln.Addr())
	}
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// listenHTTP listens on addr for MCP over HTTP. Without a token it listens
// only on a loopback address: the tools act with the wallet, and anyone
// who reaches the address could use them. It returns an error naming
// WAGER_MCP_TOKEN for any other address, or the error of listening.
func listenHTTP(addr, token string) (net.Listener, error) {
	if token == "" && !loopback(addr) {
		return nil, fmt.Errorf("refusing to serve MCP over HTTP on %q without a token: the tools act with the wallet, so "+
			"set WAGER_MCP_TOKEN (clients then send \"Authorization: Bearer <token>\"), or listen on a loopback address such as 127.0.0.1:8090", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	return ln, nil
}

// loopback reports whether addr (host:port) names only this machine: a
// loopback IP or "localhost". An empty host means every interface.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
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
