package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
)

// config is how the server is started: flags, with environment variables
// as their defaults.
type config struct {
	URL       string // the wager server's base URL
	WalletKey string // base58 ed25519 secret key; empty: read-only tools only
	AppID     string // X-App-Id
	// MaxSpendMinor and MaxSpendHourMinor cap what the money tools and
	// automatic 402 payments may spend, per call and per rolling hour.
	MaxSpendMinor     int64
	MaxSpendHourMinor int64
	HTTPAddr          string // listen address for streamable HTTP; empty: stdio
	HTTPToken         string // bearer token HTTP clients must send; empty: none
	SolanaRPC         string // RPC URL of the server's Solana cluster: verify_game checks the log's anchors there; empty: not checked
}

// Defaults of the spending caps: 1 USDC per call, 5 USDC per hour.
const (
	defaultMaxSpendMinor     = 1_000_000
	defaultMaxSpendHourMinor = 5_000_000
)

// usage is what -h says before the flags: the secrets come from the
// environment only, never from a flag (a flag shows in the process list).
const usage = `wager-mcp: an MCP server of the Wager API for agents, over stdio (or streamable HTTP with -http).

Environment only:
  WAGER_WALLET_KEY  the agent's wallet, a base58 ed25519 secret key: without it only the read-only tools work
  WAGER_MCP_TOKEN   the bearer token HTTP clients must send (-http); required off a loopback address

Flags (each defaults to the environment variable named after it):
`

// loadConfig reads the flags in args over the environment. It returns an
// error for an unknown flag or a bad number.
func loadConfig(args []string, getenv func(string) string) (config, error) {
	or := func(k, def string) string {
		if v := getenv(k); v != "" {
			return v
		}
		return def
	}
	perCall, err := envInt(getenv, "WAGER_MAX_SPEND_MINOR", defaultMaxSpendMinor)
	if err != nil {
		return config{}, err
	}
	perHour, err := envInt(getenv, "WAGER_MAX_SPEND_HOUR_MINOR", defaultMaxSpendHourMinor)
	if err != nil {
		return config{}, err
	}
	cfg := config{WalletKey: getenv("WAGER_WALLET_KEY"), HTTPToken: getenv("WAGER_MCP_TOKEN")}
	fs := flag.NewFlagSet("mcp", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&cfg.URL, "url", or("WAGER_URL", "http://localhost:8080"), "base URL of the wager server (WAGER_URL)")
	fs.StringVar(&cfg.AppID, "app-id", or("WAGER_APP_ID", "wager-mcp"), "X-App-Id sent to the server (WAGER_APP_ID)")
	fs.Int64Var(&cfg.MaxSpendMinor, "max-spend-minor", perCall, "most USDC minor units one call may spend (WAGER_MAX_SPEND_MINOR)")
	fs.Int64Var(&cfg.MaxSpendHourMinor, "max-spend-hour-minor", perHour, "most USDC minor units spent per rolling hour (WAGER_MAX_SPEND_HOUR_MINOR)")
	fs.StringVar(&cfg.SolanaRPC, "solana-rpc", getenv("WAGER_SOLANA_RPC"),
		"RPC URL of the server's Solana cluster: verify_game also checks the public log's anchor on chain there (WAGER_SOLANA_RPC)")
	fs.StringVar(&cfg.HTTPAddr, "http", getenv("WAGER_MCP_HTTP"), "serve streamable HTTP on this address (e.g. :8090) instead of stdio (WAGER_MCP_HTTP)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(nil)
			fmt.Fprint(fs.Output(), usage)
			fs.PrintDefaults()
		}
		return config{}, err
	}
	if fs.NArg() > 0 {
		return config{}, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if cfg.MaxSpendMinor < 0 || cfg.MaxSpendHourMinor < 0 {
		return config{}, errors.New("spending caps must be 0 or more")
	}
	return cfg, nil
}

func envInt(getenv func(string) string, k string, def int64) (int64, error) {
	v := getenv(k)
	if v == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %q is not a whole number", k, v)
	}
	return n, nil
}
