// Command server runs the game platform: the JSON API, the pages and the
// live event stream, configured from the environment.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"wager/cmd/server/app"
	"wager/handlers"
	"wager/web"
)

func main() {
	if err := run(context.Background(), os.Args, getenv, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "server:", err)
		os.Exit(1)
	}
}

// getenv is os.Getenv, except that a variable set to the empty string
// where empty means "none" reads as "off" (an unset one takes its
// default).
func getenv(name string) string {
	if v, set := os.LookupEnv(name); set && v == "" && name == "METRICS_ADDR" {
		return "off"
	}
	return os.Getenv(name)
}

// run starts the server and blocks until ctx is done or SIGINT/SIGTERM
// arrives, then stops it gracefully. With -openapi FILE it writes the API's
// OpenAPI document to FILE ("-": stdout) instead, touching nothing else,
// and with -asyncapi FILE the live socket's AsyncAPI document.
func run(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	if len(args) > 1 {
		fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
		openapi := fs.String("openapi", "", "write the OpenAPI document of the API (with the development routes) to this file, - for stdout, and exit")
		asyncapi := fs.String("asyncapi", "", "write the AsyncAPI document of the live socket to this file, - for stdout, and exit")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		if *openapi != "" {
			return writeOpenAPI(*openapi, stdout)
		}
		if *asyncapi != "" {
			return writeDocument(handlers.Documents(handlers.Options{DevFaucet: true, EmbeddedChain: true, ChainID: "localnet"}).Protocol.Document(), *asyncapi, stdout)
		}
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()

	cfg, err := app.LoadConfig(getenv)
	if err != nil {
		return err
	}
	opts := &slog.HandlerOptions{Level: cfg.LogLevel}
	var log *slog.Logger
	if cfg.LogFormat == "json" {
		log = slog.New(slog.NewJSONHandler(stdout, opts))
	} else {
		log = slog.New(slog.NewTextHandler(stdout, opts))
	}

	a, err := app.New(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer a.Close()

	if cfg.MetricsAddr != "" {
		ops, err := net.Listen("tcp", cfg.MetricsAddr)
		if err != nil {
			return fmt.Errorf("listen on METRICS_ADDR=%s: %w", cfg.MetricsAddr, err)
		}
		log.Info("operations listening (metrics, profiler)", "addr", ops.Addr().String())
		opsSrv := &http.Server{Handler: a.HTTP.Operations(), ReadHeaderTimeout: 10 * time.Second}
		go web.Serve(ctx, opsSrv, ops, log)
	}
	raiseOpenFileLimit(log)
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on ADDR=%s: %w", cfg.Addr, err)
	}
	ln = web.LimitPerIP(ln, cfg.MaxConnsPerIP)
	log.Info("listening", "addr", ln.Addr().String(), "program", args[0])
	if err := a.Listening(app.LocalURL(ln.Addr())); err != nil {
		return err
	}
	srv := &http.Server{
		Handler: a.Handler(),
		// A client has 10 s to send its request's header and 30 s for the
		// whole request (a 2 MB upload included); an answer may take 60 s
		// (a submit waits up to 45 s for the chain). A WebSocket sets its
		// own deadlines once upgraded. Idle keep-alive connections close
		// after 120 s.
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       120 * time.Second,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	return web.Serve(ctx, srv, ln, log)
}

// writeOpenAPI writes the document GET /openapi.json serves on the
// embedded chain with DEV_FAUCET=true (so it lists the development routes
// too), indented, to path or, for "-", to stdout.
func writeOpenAPI(path string, stdout io.Writer) error {
	return writeDocument(handlers.Document(handlers.Options{DevFaucet: true, EmbeddedChain: true, ChainID: "localnet"}).Document(), path, stdout)
}

// writeDocument writes a document, indented, to path or, for "-", to
// stdout.
func writeDocument(doc any, path string, stdout io.Writer) error {
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	if path == "-" {
		_, err = stdout.Write(b)
		return err
	}
	return os.WriteFile(path, b, 0o644)
}
