package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/gagliardetto/solana-go"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	wager "wager.example.com/sdk"
	"wager.example.com/sdk/verify"
)

// serverVersion is this MCP server's version, told to MCP clients.
const serverVersion = "1.0.0"

// server is the MCP server of one wallet (or none: read-only) on one
// wager server.
type server struct {
	mcp    *mcp.Server
	client *wager.Client
	// verifier checks games in the public log; it keeps the last
	// checkpoint it saw, to prove the log only grew since.
	verifier *verify.Verifier
	wallet   bool // signed in with a wallet: the play and money tools work
	// cap bounds the money tools and the SDK's automatic 402 payments
	// together.
	cap *wager.SpendingCap

	mu     sync.Mutex  // guards queued and entries
	queued *queueEntry // where find_or_create_game queued the user; nil: nowhere
	// entries give the entry fees that join_tournament paid back to the
	// cap, by tournament, when withdraw_tournament has them refunded.
	entries map[string]func()
	// rooms stops the socket join_tournament holds in each arena's room
	// (an arena pairs only entrants with one), by tournament.
	rooms map[string]*context.CancelFunc
}

// queueEntry is a lobby queue the user waits in and the reservation of
// its stake against the spending cap.
type queueEntry struct {
	lobby   string
	stake   int64
	release func() // gives the stake back to the cap
}

// newServer returns the MCP server with every tool, calling the wager
// server of cfg as cfg's wallet. It returns an error for a wallet key
// that is not a base58 ed25519 secret key or a bad URL.
func newServer(cfg config, now func() time.Time, opts ...wager.Option) (*server, error) {
	spendCap := wager.NewSpendingCap(cfg.MaxSpendMinor, cfg.MaxSpendHourMinor, now)
	options := []wager.Option{wager.WithAppID(cfg.AppID), wager.WithClock(now),
		wager.WithSpendingCap(spendCap),
		wager.WithHTTPClient(&http.Client{Timeout: 90 * time.Second})}
	s := &server{cap: spendCap, entries: map[string]func(){}, rooms: map[string]*context.CancelFunc{}}
	if cfg.WalletKey != "" {
		key, err := solana.PrivateKeyFromBase58(strings.TrimSpace(cfg.WalletKey))
		if err != nil {
			return nil, fmt.Errorf("WAGER_WALLET_KEY is not a base58 ed25519 secret key: %w", err)
		}
		options = append(options, wager.WithWallet(key))
		s.wallet = true
	}
	c, err := wager.New(cfg.URL, append(options, opts...)...)
	if err != nil {
		return nil, err
	}
	s.client = c
	s.verifier = &verify.Verifier{URL: cfg.URL, RPC: cfg.SolanaRPC}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: "wager", Title: "Wager: head-to-head games for USDC", Version: serverVersion},
		&mcp.ServerOptions{Instructions: instructions(cfg)})
	s.addTools()
	s.addTournamentTools()
	return s, nil
}

func instructions(cfg config) string {
	mode := "A wallet is configured: every tool works."
	if cfg.WalletKey == "" {
		mode = "No wallet is configured: only service_check_maintenance, list_live_games, get_game, verify_game, list_tournaments and get_tournament work."
	}
	return fmt.Sprintf("Tools of the Wager platform at %s: real-money head-to-head games (rock-paper-scissors and more) on Solana, "+
		"with spectators' donations, betting pools and a prediction market per game. Money is in USDC minor units "+
		"(1 USDC = 1000000). %s Money tools spend at most %d per call and %d per hour; over that they refuse and move nothing. "+
		"You are an agent: call declare_bot once before you play, so that people see they play a bot. "+
		"To play: find_or_create_game, then get_game_state or watch_game, then submit_move each round. "+
		"Tournaments (arenas): list_tournaments, join_tournament (its entry fee counts against the cap), then get_tournament "+
		"again and again and play the game in you.currentGameId until the tournament finishes.",
		cfg.URL, mode, cfg.MaxSpendMinor, cfg.MaxSpendHourMinor)
}

// errNoWallet answers the play and money tools without a wallet.
var errNoWallet = errors.New("WALLET_REQUIRED: this tool acts as a user and needs a wallet; start the MCP server with WAGER_WALLET_KEY set to a base58 ed25519 secret key")

func (s *server) needWallet() error {
	if !s.wallet {
		return errNoWallet
	}
	return nil
}

// toolError turns an error of the API into the text of a tool error: the
// API's code, status and message (and the reasons of a validation error,
// and for player protection's refusals the limit and when it resets, or
// when the exclusion ends), so that the agent can tell what to do.
func toolError(err error) error {
	var pre *wager.PaymentRequiredError
	var up *wager.UpgradeRequiredError
	var ae *wager.APIError
	switch {
	case errors.As(err, &pre):
		if pre.Paid {
			return fmt.Errorf("PAYMENT_REQUIRED (HTTP 402): %s; a payment of %d USDC minor units was made but refused: %s", pre.Err.Message, pre.AmountMinor, pre.Reason)
		}
		return fmt.Errorf("PAYMENT_REQUIRED (HTTP 402): %s; %d USDC minor units were asked and not paid: %s", pre.Err.Message, pre.AmountMinor, pre.Reason)
	case errors.As(err, &up):
		return fmt.Errorf("SDK_VERSION_OUTDATED (HTTP 426): %s; the server needs SDK %s", up.Err.Message, up.MinSDKVersion)
	case errors.As(err, &ae):
		msg := fmt.Sprintf("%s (HTTP %d): %s", ae.Code, ae.Status, ae.Message)
		if ae.Code == "" {
			msg = fmt.Sprintf("HTTP %d: %s", ae.Status, ae.Message)
		}
		if len(ae.Fields) > 0 {
			names := make([]string, 0, len(ae.Fields))
			for k := range ae.Fields {
				names = append(names, k)
			}
			sort.Strings(names)
			for _, k := range names {
				msg += fmt.Sprintf("; %s: %s", k, ae.Fields[k])
			}
		}
		if ae.RetryAfter > 0 {
			msg += fmt.Sprintf("; retry after %d seconds", int(ae.RetryAfter.Seconds()))
		}
		return errors.New(msg + protectionDetails(err) + refusalDetails(err))
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("SERVICE_UNREACHABLE: the wager server did not answer: %v", err)
	}
	return err
}

// protectionDetails are the members of player protection's refusals, for
// an agent: the limit and when it resets, when an exclusion ends, the
// restricted country ("" for other errors).
func protectionDetails(err error) string {
	var limit *wager.LimitExceededError
	var excluded *wager.SelfExcludedError
	var region *wager.RegionRestrictedError
	switch {
	case errors.As(err, &limit) && limit.ResetsAt != nil:
		return fmt.Sprintf("; limit: %s; resetsAt: %s", limit.Limit, limit.ResetsAt.UTC().Format(time.RFC3339))
	case errors.As(err, &limit):
		return fmt.Sprintf("; limit: %s; resetsAt: none (waiting does not free it)", limit.Limit)
	case errors.As(err, &excluded) && excluded.Until != nil:
		return "; until: " + excluded.Until.UTC().Format(time.RFC3339)
	case errors.As(err, &excluded):
		return "; until: never (a permanent self-exclusion)"
	case errors.As(err, &region):
		return "; country: " + region.Country
	}
	return ""
}

// refusalDetails are the members of a refused join that say what to do:
// how much money was missing, or why a tournament is closed ("" for
// other errors).
func refusalDetails(err error) string {
	var poor *wager.InsufficientFundsError
	var closed *wager.TournamentClosedError
	switch {
	case errors.As(err, &poor) && poor.NeededMinor > 0:
		return fmt.Sprintf("; neededMinor: %d; availableMinor: %d", poor.NeededMinor, poor.AvailableMinor)
	case errors.As(err, &closed) && closed.Reason != "":
		return "; reason: " + closed.Reason
	}
	return ""
}

// refused reports whether err is the API's refusal of a request (a 4xx
// answer), or the SDK's refusal to sign what the API prepared, after
// which nothing was spent.
func refused(err error) bool {
	var ae *wager.APIError
	var pre *wager.PaymentRequiredError
	if errors.As(err, &pre) && pre.Paid {
		return false
	}
	return errors.Is(err, wager.ErrTransactionRefused) || (errors.As(err, &ae) && ae.Status >= 400 && ae.Status < 500)
}
