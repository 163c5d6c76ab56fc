// Command rpcfaults serves a Solana JSON-RPC proxy that injects faults
// (chain/rpcfaults) in front of a target RPC, and prints what it did on
// exit:
//
//	go run ./cmd/rpcfaults -target http://localhost:8080/dev/solana-rpc -listen :8899 \
//	  -drop-send 0.33 -rate-429 0.08 -rate-503 0.06 -max-delay 150ms -hide-status 0.5 -seed 1
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"wager/chain/rpcfaults"
)

func main() {
	if err := run(context.Background(), os.Args, os.Stdout); err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "rpcfaults:", err)
		os.Exit(1)
	}
}

// run serves the proxy until ctx is done or SIGINT/SIGTERM arrives, then
// writes its stats to stdout. It returns an error for bad flags or when it
// cannot listen.
func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	target := fs.String("target", "", "the JSON-RPC URL to proxy, such as http://localhost:8080/dev/solana-rpc (required)")
	listen := fs.String("listen", ":8899", "listen address")
	var f rpcfaults.Faults
	fs.Float64Var(&f.DropSend, "drop-send", 0, "share of sendTransaction calls answered with their signature and not forwarded")
	fs.Float64Var(&f.Rate429, "rate-429", 0, "share of calls answered 429")
	fs.DurationVar(&f.RetryAfter, "retry-after", time.Second, "Retry-After of a 429")
	fs.Float64Var(&f.Rate503, "rate-503", 0, "share of calls answered 503")
	fs.Float64Var(&f.TimeoutRate, "timeout-rate", 0, "share of calls that hang until the client gives up")
	fs.Float64Var(&f.LoseAnswer, "lose-answer", 0, "share of calls forwarded whose answer is lost: they hang until the client gives up")
	fs.DurationVar(&f.MaxDelay, "max-delay", 0, "each call is delayed by a random time up to this")
	fs.Float64Var(&f.HideStatus, "hide-status", 0, "share of signatures whose status is reported null while fresh")
	fs.DurationVar(&f.HideFor, "hide-for", 3*time.Second, "how long a hidden status stays hidden after the proxy first saw its signature")
	fs.Float64Var(&f.NeverFinalize, "never-finalize", 0, "share of signatures reported confirmed, never finalized")
	seed := fs.Uint64("seed", 1, "seed of the fault schedule")
	verbose := fs.Bool("v", false, "log every fault injected")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *target == "" {
		return errors.New("-target is required")
	}
	p, err := rpcfaults.New(*target, f, rand.New(rand.NewPCG(*seed, *seed)))
	if err != nil {
		return err
	}
	if *verbose {
		p.Log = slog.New(slog.NewTextHandler(stdout, nil))
	}

	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", *listen, err)
	}
	fmt.Fprintf(stdout, "rpcfaults: listening on %s, forwarding to %s (seed %d)\n", ln.Addr(), *target, *seed)
	// Calls hanging on purpose end with ctx: their context derives from it.
	srv := &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second, BaseContext: func(net.Listener) context.Context { return ctx }}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		srv.Close()
	}
	<-served
	return p.Stats().Write(stdout)
}
