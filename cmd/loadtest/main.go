// Command loadtest drives a Wager Arena server with many signed-in
// wallets and measures it: live-game fan-out to spectator sockets, bots
// playing concurrent games, and the public read endpoints against a bare
// Echo handler. It prints one table and can write every figure as JSON.
//
// The server under test should run with AUTH_RATE_LIMIT=0: loadtest signs
// in thousands of wallets from one address.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/gorilla/websocket"
)

// config is the parsed command line.
type config struct {
	URL        string
	Scenario   string
	JSONPath   string
	AppID      string
	MetricsURL string
	LocalIPs   []net.IP
	Timeout    time.Duration
	Drain      time.Duration

	SetupConcurrency int
	DialConcurrency  int
	SocketsPerUser   int

	Games      int
	Spectators int
	Moves      int
	Think      time.Duration

	SpectatorsPerGame int
	Duration          time.Duration
	Rounds            int
	RoundSeconds      int
	Jitter            float64
	FindMax           bool
	P99Limit          time.Duration
	Step              time.Duration
	MaxSteps          int

	Concurrency int
	LiveGames   int
	Bare        bool
	Warmup      time.Duration

	Players   int
	ArenaLead time.Duration
	Berserk   float64

	ServerPID  int
	CPU        bool
	PgDatabase string

	RPCFaults        bool
	DatabaseURL      string
	Seed             uint64
	FinalizeSlots    int
	GamesPerMinute   int
	IntentsPerMinute int
}

// scenarioDefaults are the defaults that differ by scenario, applied to
// flags not given on the command line.
var scenarioDefaults = map[string]map[string]string{
	"fanout": {"games": "100", "think": "200ms"},
	"play":   {"games": "100", "think": "2s", "duration": "60s"},
	"reads":  {"duration": "20s"},
	"arena":  {"think": "2s", "duration": "3m"},
	// -rpc-faults
	"rpc-faults": {"duration": "2m", "drain": "3m", "timeout": "90s"},
}

const usageText = `loadtest drives a Wager Arena server and measures it.

Usage: go run ./cmd/loadtest -scenario fanout|play|reads|arena [flags]
       go run ./cmd/loadtest -rpc-faults [-duration 2m] [flags]

Run the server under test with AUTH_RATE_LIMIT=0: loadtest signs in many
wallets (fresh ed25519 keys, app id -app-id) from one address, and the
server otherwise limits handshakes per client IP. A server that caps
connections per client IP (MAX_CONNS_PER_IP) sees one client per local
address: spread sockets over several with -local-ips.

Scenarios:
  fanout  -games G free rps games watched by -spectators S sockets in total,
          spread evenly; each game makes -moves M moves, -think apart (both
          players choose rock, so drawn rounds repeat), then resigns.
          Measures the time to connect and join every socket, the server's
          memory and goroutines per socket (-metrics), delivery latency from
          a move's request being sent to each spectator receiving the events
          it caused, and the share of events delivered.
  play    -games G games played by 2G bots choosing at random, each waiting
          -think between its moves, watched by -spectators-per-game sockets,
          for -duration; a finished game is followed by a new one. Measures
          moves/s, move POST latency, game-start latency, delivery latency
          and share, and errors by kind. -find-max raises the move rate step
          by step until delivery p99 passes -p99-limit or errors appear.
  reads   GET /games/live, GET /games/:id and GET /games/:id/state at
          -concurrency for -duration each, with -live-games active games,
          compared with a bare Echo handler serving fixed answers of the
          same shape (-bare); the two take turns, five slices of -duration
          each, so that both are measured in the same seconds.
  arena   one free rps arena of -players players (run the server with
          TOURNAMENT_MAX_PLAYERS at least that), starting -arena-lead after
          it is created and lasting -duration (whole minutes), its room
          followed by one socket. Each tournament:pairing frame starts its
          game, played with -think between moves, -rounds, -round-seconds;
          with -berserk, that share of the players goes berserk before its
          first move of each game. Measures, per game end (the answer to the move that ended it), the
          time to the player's next pairing frame; pairings per second; and
          the tournament:standings frames the socket receives (the API
          promises at most one a second).

-rpc-faults starts its own servers instead of using -url: it builds
cmd/server, creates two databases on the PostgreSQL of -database-url (a
role with CREATEDB; dropped at the end) and runs e2e/faults' arrangement:
a chain instance on the embedded chain (-finalize-slots), a fault-injecting
proxy in front of its RPC (a third of sends dropped, 8 % 429, 6 % 503,
delays, statuses hidden; -seed) and an API instance behind it with
CREDIT_COMMITMENT=finalized. For -duration it plays -games-per-minute free
one-round games and starts -intents-per-minute money movements in turn:
deposits, withdrawals, tips and donations, each retried on 503 until final.
Then it waits up to -drain for the server to finish every movement and
reports movements by final state, time to final, the proxy's RPC calls per
movement and the fee of every transaction the platform paid for.

CPU (play, -cpu): the user and system time of the server's process and of
every process named postgres on this machine, read from /proc at the start
and the end of the measured span, in all and per accepted move and per
completed game. Run nothing else heavy beside it.

Figures: delivery latency runs from the moment a player's action request
was written to the moment a spectator socket read each event that action
caused (matched by the action answer's seq); delivered counts, for every
game room a socket joined, the events after its joined state up to the
game's last seq. A socket that gets {"type":"resync"} rejoins with its last
seq; one the server closes reconnects and rejoins the same way; both are
counted. Room events (spectator counts, chat) count as delivered but carry
no latency.

Exit status: 0 when the run completed (whatever the figures), 1 when setup
failed (sign-in, creating games, connecting), 2 for bad flags, 130 when
interrupted before the measurement.

Flags:
`

// parseFlags reads the command line into a config.
func parseFlags(args []string, stderr io.Writer) (config, error) {
	var c config
	var localIPs string
	fs := flag.NewFlagSet("loadtest", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usageText)
		fs.PrintDefaults()
	}
	fs.StringVar(&c.URL, "url", "http://localhost:8080", "base URL of the server under test")
	fs.StringVar(&c.Scenario, "scenario", "", "fanout, play, reads or arena (required)")
	fs.StringVar(&c.JSONPath, "json", "", "also write every figure as JSON to this file")
	fs.StringVar(&c.AppID, "app-id", "loadtest", "X-App-Id the wallets sign in and call with")
	fs.StringVar(&c.MetricsURL, "metrics", "", "the server's Prometheus endpoint, e.g. http://127.0.0.1:9090/metrics (fanout: memory per socket); empty = skip")
	fs.StringVar(&localIPs, "local-ips", "", "local addresses to spread connections over: a list and/or ranges, e.g. 127.0.0.1-127.0.0.20")
	fs.DurationVar(&c.Timeout, "timeout", 30*time.Second, "limit of one HTTP request or WebSocket handshake")
	fs.DurationVar(&c.Drain, "drain", 10*time.Second, "after the last move, how long to wait for spectators to catch up")
	fs.IntVar(&c.SetupConcurrency, "setup-concurrency", 32, "concurrent sign-ins and game creations")
	fs.IntVar(&c.DialConcurrency, "dial-concurrency", 64, "sockets connecting and joining at once")
	fs.IntVar(&c.SocketsPerUser, "sockets-per-user", 10, "spectator sockets per spectator user (the server allows at most 20)")
	fs.IntVar(&c.Games, "games", 0, "fanout, play: games (default 100)")
	fs.IntVar(&c.Spectators, "spectators", 1000, "fanout: spectator sockets in total")
	fs.IntVar(&c.Moves, "moves", 20, "fanout: moves per game before the resign")
	fs.DurationVar(&c.Think, "think", 0, "time between moves: fanout a game's (default 200ms), play each player's (default 2s)")
	fs.IntVar(&c.SpectatorsPerGame, "spectators-per-game", 1, "play: sockets following each game")
	fs.DurationVar(&c.Duration, "duration", 0, "play: how long the bots play (default 60s); reads: per endpoint (default 20s)")
	fs.IntVar(&c.Rounds, "rounds", 3, "play: rounds per game (odd, 1-9)")
	fs.IntVar(&c.RoundSeconds, "round-seconds", 30, "play: round timer (3-120)")
	fs.Float64Var(&c.Jitter, "jitter", 0.2, "play: think times vary by up to this fraction either way")
	fs.BoolVar(&c.FindMax, "find-max", false, "play: ramp the move rate up in -step steps (think time divided by 1, 1.5, 2, 3...) until delivery p99 passes -p99-limit or errors appear; -duration is ignored")
	fs.DurationVar(&c.P99Limit, "p99-limit", 100*time.Millisecond, "play -find-max: spectator delivery p99 a step may reach")
	fs.DurationVar(&c.Step, "step", 20*time.Second, "play -find-max: length of one step")
	fs.IntVar(&c.MaxSteps, "max-steps", 10, "play -find-max: steps at most")
	fs.IntVar(&c.Concurrency, "concurrency", 64, "reads: concurrent connections")
	fs.IntVar(&c.LiveGames, "live-games", 100, "reads: active games to create first")
	fs.BoolVar(&c.Bare, "bare", true, "reads: also measure the bare Echo reference handler, started as a process of its own")
	fs.IntVar(&c.Players, "players", 500, "arena: players in the arena")
	fs.Float64Var(&c.Berserk, "berserk", 0, "arena: the share of players (0 to 1) who go berserk before their first move of each game")
	fs.DurationVar(&c.ArenaLead, "arena-lead", 30*time.Second, "arena: from creating the arena to its start (signing in comes before; joining must fit)")
	fs.IntVar(&c.ServerPID, "server-pid", 0, "play, reads, arena: the server's process, for its CPU time; 0 = the process listening on -url's port when it is on this machine")
	fs.StringVar(&c.PgDatabase, "pg-database", "", "with -cpu: count only the PostgreSQL backends of this database (its name in DATABASE_URL), leaving out the cluster's other work and its background processes; empty = every postgres process")
	fs.BoolVar(&c.CPU, "cpu", true, "play, reads, arena: read the CPU time of the server, of every local PostgreSQL process and (reads) of the bare reference from /proc (Linux, server on this machine)")
	fs.DurationVar(&c.Warmup, "warmup", 2*time.Second, "reads: unmeasured load before each endpoint; play: the start of the run left out of the figures (every table starts its first game at once)")
	fs.BoolVar(&c.RPCFaults, "rpc-faults", false, "run two servers of its own behind a fault-injecting Solana RPC proxy and move money through them (see above); -scenario and -url are not used")
	fs.StringVar(&c.DatabaseURL, "database-url", "postgres://wager:wager@127.0.0.1:5432/wager?sslmode=disable", "-rpc-faults: PostgreSQL URL of a role with CREATEDB, for the two servers' databases")
	fs.Uint64Var(&c.Seed, "seed", 1, "-rpc-faults: seed of the proxy's schedule of faults")
	fs.IntVar(&c.FinalizeSlots, "finalize-slots", 10, "-rpc-faults: the embedded chain reports finalized this many 400 ms slots after confirmed")
	fs.IntVar(&c.GamesPerMinute, "games-per-minute", 200, "-rpc-faults: free one-round games started a minute")
	fs.IntVar(&c.IntentsPerMinute, "intents-per-minute", 50, "-rpc-faults: money movements started a minute")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if c.RPCFaults {
		c.Scenario = "rpc-faults"
	}
	defaults, ok := scenarioDefaults[c.Scenario]
	if !ok {
		return c, fmt.Errorf("-scenario must be fanout, play, reads or arena (or give -rpc-faults), not %q", c.Scenario)
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	for name, v := range defaults {
		if !set[name] {
			if err := fs.Set(name, v); err != nil {
				return c, err
			}
		}
	}
	ips, err := parseLocalIPs(localIPs)
	if err != nil {
		return c, fmt.Errorf("-local-ips: %w", err)
	}
	c.LocalIPs = ips
	c.URL = strings.TrimRight(c.URL, "/")
	return c, c.check()
}

func (c config) check() error {
	var bad []string
	need := func(ok bool, msg string) {
		if !ok {
			bad = append(bad, msg)
		}
	}
	need(strings.HasPrefix(c.URL, "http://") || strings.HasPrefix(c.URL, "https://"), "-url must be http:// or https://")
	need(c.SetupConcurrency > 0 && c.DialConcurrency > 0, "concurrencies must be positive")
	need(c.SocketsPerUser > 0, "-sockets-per-user must be positive")
	need(c.Timeout > 0, "-timeout must be positive")
	switch c.Scenario {
	case "fanout":
		need(c.Games > 0 && c.Spectators > 0, "-games and -spectators must be positive")
		need(c.Moves >= 0, "-moves must be 0 or more")
	case "play":
		need(c.Games > 0, "-games must be positive")
		need(c.SpectatorsPerGame >= 0, "-spectators-per-game must be 0 or more")
		need(c.Think > 0 && c.Duration > 0, "-think and -duration must be positive")
		need(c.Rounds%2 == 1 && c.Rounds >= 1 && c.Rounds <= 9, "-rounds must be odd, 1-9")
		need(c.RoundSeconds >= 3 && c.RoundSeconds <= 120, "-round-seconds must be 3-120")
		need(c.Jitter >= 0 && c.Jitter < 1, "-jitter must be in [0, 1)")
		need(!c.FindMax || (c.Step > 0 && c.MaxSteps > 0 && c.P99Limit > 0), "-step, -max-steps and -p99-limit must be positive")
	case "arena":
		need(c.Players >= 2, "-players must be 2 or more")
		need(c.Think > 0 && c.ArenaLead > 0, "-think and -arena-lead must be positive")
		need(c.Berserk >= 0 && c.Berserk <= 1, "-berserk must be from 0 to 1")
		need(c.Duration >= time.Minute && c.Duration <= 180*time.Minute, "-duration must be 1m to 180m (whole minutes)")
		need(c.Rounds%2 == 1 && c.Rounds >= 1 && c.Rounds <= 9, "-rounds must be odd, 1-9")
		need(c.RoundSeconds >= 3 && c.RoundSeconds <= 120, "-round-seconds must be 3-120")
		need(c.Jitter >= 0 && c.Jitter < 1, "-jitter must be in [0, 1)")
	case "reads":
		need(c.Concurrency > 0 && c.LiveGames > 0 && c.Duration > 0, "-concurrency, -live-games and -duration must be positive")
	case "rpc-faults":
		need(c.Duration > 0 && c.Drain >= 0, "-duration must be positive and -drain not negative")
		need(c.GamesPerMinute > 0 && c.IntentsPerMinute > 0, "-games-per-minute and -intents-per-minute must be positive")
		need(c.FinalizeSlots >= 0 && c.FinalizeSlots <= 1000, "-finalize-slots must be 0-1000")
	}
	if len(bad) > 0 {
		return errors.New(strings.Join(bad, "; "))
	}
	return nil
}

// runner holds what every scenario shares.
type runner struct {
	cfg    config
	dial   *dialer
	http   *http.Client
	ws     *websocket.Dialer
	errs   *Errors
	report *Report
	stderr io.Writer
}

// progress writes a status line to stderr (stdout carries the table).
func (r *runner) progress(format string, args ...any) {
	fmt.Fprintf(r.stderr, "loadtest %6.1fs  %s\n", now().Seconds(), fmt.Sprintf(format, args...))
}

// errSetup marks a failure before or during setup: the run measured
// nothing.
var errSetup = errors.New("setup failed")

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 1 && args[0] == serveBareArg {
		if err := serveBare(os.Stdin, stdout); err != nil {
			fmt.Fprintf(stderr, "loadtest: %v\n", err)
			return 1
		}
		return 0
	}
	cfg, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "loadtest: %v\n", err)
		return 2
	}
	if cfg.SocketsPerUser > 20 {
		fmt.Fprintf(stderr, "loadtest: warning: -sockets-per-user %d is over the server's 20 sockets per user\n", cfg.SocketsPerUser)
	}
	limit, err := raiseFileLimit()
	if err != nil {
		fmt.Fprintf(stderr, "loadtest: %v\n", err)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() { <-ctx.Done(); stop() }() // a second signal kills the process

	d := newDialer(cfg.LocalIPs)
	r := &runner{
		cfg:  cfg,
		dial: d,
		http: newHTTPClient(d, 4096, cfg.Timeout),
		ws: &websocket.Dialer{NetDialContext: d.DialContext, HandshakeTimeout: cfg.Timeout,
			ReadBufferSize: 2048, WriteBufferSize: 512},
		errs:   &Errors{},
		report: &Report{Scenario: cfg.Scenario, URL: cfg.URL, StartedAt: time.Now().UTC(), FileLimit: limit},
		stderr: stderr,
	}
	var table func(*Report) Table
	switch cfg.Scenario {
	case "fanout":
		err, table = r.fanout(ctx), fanoutTable
	case "play":
		err, table = r.play(ctx), playTable
	case "reads":
		err, table = r.reads(ctx), readsTable
	case "arena":
		err, table = r.arena(ctx), arenaTable
	case "rpc-faults":
		err, table = r.rpcFaults(ctx), faultsTable
	}
	if err != nil {
		fmt.Fprintf(stderr, "loadtest: %v\n", err)
		if ctx.Err() != nil {
			return 130
		}
		return 1
	}
	r.report.Seconds = now().Seconds()
	r.report.Errors = r.errs.All()
	r.report.Interrupted = ctx.Err() != nil
	if err := table(r.report).Write(stdout); err != nil {
		fmt.Fprintf(stderr, "loadtest: writing the table: %v\n", err)
	}
	if cfg.JSONPath != "" {
		if err := writeJSON(cfg.JSONPath, r.report); err != nil {
			fmt.Fprintf(stderr, "loadtest: %v\n", err)
		}
	}
	return 0
}

// setupError wraps a setup failure with what was being done.
func setupError(what string, err error) error {
	return fmt.Errorf("%w: %s: %w", errSetup, what, err)
}

// afterRun is a context for work after the measurement (reading final
// positions, resigning, closing): it outlives an interrupt, briefly.
func afterRun() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 60*time.Second)
}
