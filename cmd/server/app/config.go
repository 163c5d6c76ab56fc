package app

import (
	"cmp"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/caarlos0/env/v11"
	"github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/rpc"

	"wager/chain"
	"wager/domain"
	"wager/domain/integrity"
	"wager/domain/protection"
	"wager/domain/referrals"
	"wager/domain/tournament"
	"wager/web"
)

// Config is the server's configuration, read from the environment (names
// and defaults in ../shared/API.md "Running").
type Config struct {
	Addr           string
	DatabaseURL    string
	AdminWallets   []string
	MinSDKVersion  string
	SDKGraceUntil  time.Time // zero: the grace period never ends
	SolanaRPCURLs  []string  // tried in this order (SOLANA_RPC_URL); none: the embedded local chain
	DevFaucet      bool
	AbuseThreshold int
	AbuseWindow    time.Duration
	// AbuseOverrides maps "METHOD /route" to its own threshold
	// (ABUSE_OVERRIDES); AbusePrice is what a charged request costs in USDC
	// minor units (ABUSE_PRICE_MINOR).
	AbuseOverrides map[string]int
	AbusePrice     int64
	JWTSecret      string // empty: generated and kept under DataDir
	DataDir        string
	LogFormat      string // "text" or "json"
	LogLevel       slog.Level
	MetricsAddr    string // the operations listener (metrics, profiler); empty: none (METRICS_ADDR=off or set empty)
	PublicURL      string // the site's address, stated in sign-in messages
	LogOrigin      string // the public log of games' name (LOG_ORIGIN): PUBLIC_URL's host and /games-log by default
	// ReservesInterval is how often a snapshot of the reserves is taken
	// (RESERVES_INTERVAL).
	ReservesInterval time.Duration
	// AnchorInterval is the least time between two anchors of the public
	// log on Solana (ANCHOR_INTERVAL).
	AnchorInterval time.Duration
	// SpectatorDelay is how late spectators of a staked Connect Four game
	// receive its moves (SPECTATOR_DELAY); 0: not late.
	SpectatorDelay time.Duration
	MasterSeed     []byte // derives every platform key; empty: kept under DataDir
	USDCMint       string // the USDC mint on an external chain
	// CreditCommitment is the commitment at which the chain must report a
	// transaction before what it moves is recorded (CREDIT_COMMITMENT).
	CreditCommitment rpc.CommitmentType
	// FinalizeSlots is how many slots of 400 ms after a transaction the
	// embedded chain reports it finalized (CHAIN_FINALIZE_SLOTS).
	FinalizeSlots int
	DemoBots      int // demo players that keep free games going (make run: 5)
	// AuthRateLimit is how many sign-in challenges one client address may
	// ask for in a minute (AUTH_RATE_LIMIT; 0: no limit).
	AuthRateLimit int
	// TrustedProxies are the proxies whose X-Forwarded-For names the
	// client (TRUSTED_PROXIES); none by default: the peer is the client.
	TrustedProxies []*net.IPNet
	// CORSOrigins are the origins whose browser pages may call the API
	// with a bearer token (CORS_ORIGINS); none by default.
	CORSOrigins []string
	// MaxConnsPerIP bounds the open connections of one client address
	// (MAX_CONNS_PER_IP).
	MaxConnsPerIP int
	// FeePayerDailyLamports bounds the SOL the platform's fee payer spends
	// for one user in a day (FEE_PAYER_DAILY_LAMPORTS).
	FeePayerDailyLamports int64
	// FeePayerGlobalDailyLamports bounds the SOL the fee payer spends for
	// all users together in a day (FEE_PAYER_GLOBAL_DAILY_LAMPORTS).
	FeePayerGlobalDailyLamports int64
	// MaxPriorityFee caps the price per compute unit, in micro-lamports, of
	// the transactions the fee payer pays for
	// (MAX_PRIORITY_FEE_MICROLAMPORTS).
	MaxPriorityFee uint64
	Workers        bool // run deadline, settlement, withdrawal and payment-resolving workers
	// ReferralBPS are the parts of a player's share of a staked game's fee
	// that their referrers at levels 1, 2 and 3 earn, in basis points
	// (REFERRAL_BPS).
	ReferralBPS [referrals.Levels]int64
	// Integrity: pools and markets capped at PoolCapMultiple times the
	// player pot (POOL_CAP_MULTIPLE); accounts linked by a shared sign-in
	// address too (LINK_BY_IP).
	Integrity integrity.Config
	// TournamentMaxPlayers is the largest maxPlayers a new tournament may
	// ask for (TOURNAMENT_MAX_PLAYERS).
	TournamentMaxPlayers int
	// TournamentCreatePerDay bounds the arenas one player creates in 24
	// hours (TOURNAMENT_CREATE_PER_DAY), and TournamentsScheduledMax those
	// scheduled or running at once (TOURNAMENTS_SCHEDULED_MAX).
	TournamentCreatePerDay, TournamentsScheduledMax int
	// Protection: the age gate (REQUIRE_AGE_CONFIRMATION, MIN_AGE) and the
	// restricted countries (RESTRICTED_COUNTRIES).
	Protection protection.Config
	// CountryHeader names the header in which a trusted proxy tells the
	// client's country (COUNTRY_HEADER; empty: none).
	CountryHeader string
	// Clock is the time of every service (nil: the system clock). It is
	// not read from the environment: tests set it to move time.
	Clock domain.Clock
}

// EmbeddedChain reports whether the server runs its own local chain.
func (c Config) EmbeddedChain() bool { return len(c.SolanaRPCURLs) == 0 }

// ChainID names the cluster in sign-in messages (and picks the default
// USDC mint): the one the RPC URLs name, or custom when none does.
// LoadConfig refuses URLs that name different clusters.
func (c Config) ChainID() string {
	if c.EmbeddedChain() {
		return "localnet"
	}
	for _, u := range c.SolanaRPCURLs {
		if cluster := clusterOf(u); cluster != "" {
			return cluster
		}
	}
	return "custom"
}

// clusterOf is the public cluster an RPC URL names ("" for none).
func clusterOf(rpcURL string) string {
	for _, cluster := range []string{"devnet", "testnet", "mainnet"} {
		if strings.Contains(rpcURL, cluster) {
			return cluster
		}
	}
	return ""
}

// defaultMint is Circle's USDC mint on the public clusters; the embedded
// chain makes its own.
func defaultMint(cluster string) string {
	switch cluster {
	case "mainnet":
		return "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v"
	case "devnet":
		return "4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU"
	}
	return ""
}

// LoadConfig reads the configuration through getenv; a value of blanks
// counts as unset. It returns an error naming every variable whose value
// is invalid and saying what it accepts.
func LoadConfig(getenv func(string) string) (Config, error) {
	environ, err := readEnvironment(getenv)
	if err != nil {
		return Config{}, fmt.Errorf("read the environment: %w", err)
	}
	// Defaults that the domain packages define: an unset variable leaves them.
	e := environment{
		MaxPriorityFee:          chain.DefaultMaxPriorityFee,
		ReferralBPS:             referrals.DefaultBPS,
		TournamentCreatePerDay:  tournament.DefaultCreatePerDay,
		TournamentsScheduledMax: tournament.DefaultScheduledMax,
		MinAge:                  protection.DefaultMinAge,
	}
	p := problems{environ: environ, failed: map[string]bool{}}
	p.record(env.ParseWithOptions(&e, env.Options{Environment: environ, FuncMap: parsers}))
	c := e.config()
	p.checkServer(c)
	p.checkChain(c)
	p.checkLimits(c)
	p.checkProtection(c)
	if len(p.errs) > 0 {
		return Config{}, fmt.Errorf("invalid configuration: %w", errors.Join(p.errs...))
	}
	return c, nil
}

// environment is the configuration as the environment states it, one
// field per variable (see README.md), read by github.com/caarlos0/env. A
// variable whose default depends on others has none here: its field stays
// empty or nil when unset, and config fills it in.
type environment struct {
	Addr      string `env:"ADDR" envDefault:":8080"`
	PublicURL string `env:"PUBLIC_URL"` // default: http://localhost at ADDR's port
	LogOrigin string `env:"LOG_ORIGIN"` // default: PUBLIC_URL's host and /games-log
	// DatabaseURL's default is the local database that db/setup-postgres.sh
	// prepares (make run does it).
	DatabaseURL             string         `env:"DATABASE_URL" envDefault:"postgres://wager:wager@127.0.0.1:5432/wager?sslmode=disable"`
	AdminWallets            walletList     `env:"ADMIN_WALLETS"`
	MinSDKVersion           string         `env:"MIN_SDK_VERSION" envDefault:"1.0.0"`
	SDKGraceUntil           time.Time      `env:"SDK_GRACE_UNTIL"`
	SolanaRPCURLs           rpcURLList     `env:"SOLANA_RPC_URL"`
	DevFaucet               *bool          `env:"DEV_FAUCET"` // default: true on the embedded chain
	AbuseThreshold          int            `env:"ABUSE_THRESHOLD" envDefault:"600"`
	AbuseWindow             time.Duration  `env:"ABUSE_WINDOW" envDefault:"1m"`
	ReservesInterval        time.Duration  `env:"RESERVES_INTERVAL" envDefault:"10m"`
	AnchorInterval          time.Duration  `env:"ANCHOR_INTERVAL" envDefault:"10m"`
	SpectatorDelay          time.Duration  `env:"SPECTATOR_DELAY" envDefault:"5s"`
	AbuseOverrides          abuseOverrides `env:"ABUSE_OVERRIDES"`
	AbusePrice              int64          `env:"ABUSE_PRICE_MINOR" envDefault:"10000"`
	JWTSecret               string         `env:"JWT_SECRET"`
	DataDir                 string         `env:"DATA_DIR" envDefault:"var"`
	LogFormat               string         `env:"LOG_FORMAT" envDefault:"text"`
	LogLevel                slog.Level     `env:"LOG_LEVEL" envDefault:"info"`
	MetricsAddr             string         `env:"METRICS_ADDR" envDefault:"127.0.0.1:9090"`
	MasterSeed              masterSeed     `env:"MASTER_SEED"`
	USDCMint                string         `env:"USDC_MINT"`         // default: the cluster's, see defaultMint
	CreditCommitment        string         `env:"CREDIT_COMMITMENT"` // default: finalized on an external chain
	FinalizeSlots           int            `env:"CHAIN_FINALIZE_SLOTS" envDefault:"32"`
	DemoBots                int            `env:"DEMO_BOTS" envDefault:"0"`
	AuthRateLimit           int            `env:"AUTH_RATE_LIMIT" envDefault:"120"`
	TrustedProxies          ipNetList      `env:"TRUSTED_PROXIES"`
	CORSOrigins             originList     `env:"CORS_ORIGINS"`
	MaxConnsPerIP           int            `env:"MAX_CONNS_PER_IP" envDefault:"1000"`
	FeePayerDaily           int64          `env:"FEE_PAYER_DAILY_LAMPORTS" envDefault:"20000000"`
	FeePayerGlobal          int64          `env:"FEE_PAYER_GLOBAL_DAILY_LAMPORTS" envDefault:"2000000000"`
	MaxPriorityFee          uint64         `env:"MAX_PRIORITY_FEE_MICROLAMPORTS"` // default: chain.DefaultMaxPriorityFee
	Workers                 bool           `env:"WORKERS" envDefault:"true"`
	ReferralBPS             referralBPS    `env:"REFERRAL_BPS"` // default: referrals.DefaultBPS
	PoolCapMultiple         int64          `env:"POOL_CAP_MULTIPLE" envDefault:"5"`
	LinkByIP                bool           `env:"LINK_BY_IP" envDefault:"false"`
	RequireAge              *bool          `env:"REQUIRE_AGE_CONFIRMATION"` // default: true on an external chain
	MinAge                  int            `env:"MIN_AGE"`                  // default: protection.DefaultMinAge
	CountryHeader           string         `env:"COUNTRY_HEADER"`
	Restricted              countryList    `env:"RESTRICTED_COUNTRIES"`
	TournamentMax           int            `env:"TOURNAMENT_MAX_PLAYERS" envDefault:"256"`
	TournamentCreatePerDay  int            `env:"TOURNAMENT_CREATE_PER_DAY"` // default: tournament.DefaultCreatePerDay
	TournamentsScheduledMax int            `env:"TOURNAMENTS_SCHEDULED_MAX"` // default: tournament.DefaultScheduledMax
}

// parsers are env's parsers for the types it reads otherwise: an int is
// as wide as strconv.Atoi reads it, where env would take 32 bits.
var parsers = map[reflect.Type]env.ParserFunc{
	reflect.TypeFor[int](): func(v string) (any, error) { return strconv.Atoi(v) },
}

// readEnvironment reads through getenv the variables that environment
// names, without surrounding blanks.
func readEnvironment(getenv func(string) string) (map[string]string, error) {
	fields, err := env.GetFieldParams(&environment{})
	if err != nil {
		return nil, err
	}
	environ := make(map[string]string, len(fields))
	for _, f := range fields {
		environ[f.Key] = strings.TrimSpace(getenv(f.Key))
	}
	return environ, nil
}

// config is the configuration e states, with the defaults that depend on
// other variables.
func (e *environment) config() Config {
	c := Config{
		Addr:                        e.Addr,
		DatabaseURL:                 e.DatabaseURL,
		AdminWallets:                e.AdminWallets,
		MinSDKVersion:               e.MinSDKVersion,
		SDKGraceUntil:               e.SDKGraceUntil.UTC(),
		SolanaRPCURLs:               e.SolanaRPCURLs,
		AbuseThreshold:              e.AbuseThreshold,
		AbuseWindow:                 e.AbuseWindow,
		AbuseOverrides:              e.AbuseOverrides,
		AbusePrice:                  e.AbusePrice,
		JWTSecret:                   e.JWTSecret,
		DataDir:                     e.DataDir,
		LogFormat:                   e.LogFormat,
		LogLevel:                    e.LogLevel,
		MetricsAddr:                 e.MetricsAddr,
		PublicURL:                   e.PublicURL,
		LogOrigin:                   e.LogOrigin,
		ReservesInterval:            e.ReservesInterval,
		AnchorInterval:              e.AnchorInterval,
		SpectatorDelay:              e.SpectatorDelay,
		MasterSeed:                  e.MasterSeed,
		USDCMint:                    e.USDCMint,
		CreditCommitment:            rpc.CommitmentType(e.CreditCommitment),
		FinalizeSlots:               e.FinalizeSlots,
		DemoBots:                    e.DemoBots,
		AuthRateLimit:               e.AuthRateLimit,
		TrustedProxies:              e.TrustedProxies,
		CORSOrigins:                 e.CORSOrigins,
		MaxConnsPerIP:               e.MaxConnsPerIP,
		FeePayerDailyLamports:       e.FeePayerDaily,
		FeePayerGlobalDailyLamports: e.FeePayerGlobal,
		MaxPriorityFee:              e.MaxPriorityFee,
		Workers:                     e.Workers,
		ReferralBPS:                 e.ReferralBPS,
		Integrity:                   integrity.Config{CapMultiple: e.PoolCapMultiple, LinkByIP: e.LinkByIP},
		TournamentMaxPlayers:        e.TournamentMax,
		TournamentCreatePerDay:      e.TournamentCreatePerDay,
		TournamentsScheduledMax:     e.TournamentsScheduledMax,
		Protection:                  protection.Config{MinAge: e.MinAge, Restricted: e.Restricted},
		CountryHeader:               e.CountryHeader,
	}
	embedded := c.EmbeddedChain()
	c.DevFaucet = flagOr(e.DevFaucet, embedded)
	c.Protection.RequireAge = flagOr(e.RequireAge, !embedded)
	if c.PublicURL == "" {
		_, port, _ := net.SplitHostPort(c.Addr)
		c.PublicURL = "http://localhost:" + port
	}
	if c.LogOrigin == "" {
		if u, err := url.Parse(c.PublicURL); err == nil {
			c.LogOrigin = u.Host + "/games-log"
		}
	}
	if c.USDCMint == "" {
		c.USDCMint = defaultMint(c.ChainID())
	}
	if c.CreditCommitment == "" {
		c.CreditCommitment = rpc.CommitmentConfirmed
		if !embedded {
			c.CreditCommitment = rpc.CommitmentFinalized
		}
	}
	if c.MetricsAddr == "off" {
		c.MetricsAddr = ""
	}
	return c
}

// flagOr is the flag set, or def when it is unset.
func flagOr(set *bool, def bool) bool {
	if set == nil {
		return def
	}
	return *set
}

// problems collects what is wrong with the environment.
type problems struct {
	environ map[string]string
	failed  map[string]bool // env could not parse these: their check reports them
	errs    []error
}

// refusal is why a parser of this package refuses a value, in words that
// say what the variable accepts; it is reported as it is.
type refusal struct{ error }

// refuse is the refusal that format and args say.
func refuse(format string, args ...any) error { return refusal{fmt.Errorf(format, args...)} }

// record takes env's errors: a refusal is reported, and the variable of
// any other parse error (a number, flag, duration, time or level that is
// none) is left to its check, which says what it accepts.
func (p *problems) record(err error) {
	var all env.AggregateError
	if !errors.As(err, &all) {
		if err != nil {
			p.errs = append(p.errs, err)
		}
		return
	}
	for _, err := range all.Errors {
		var parse env.ParseError
		var refused refusal
		switch {
		case !errors.As(err, &parse):
			p.errs = append(p.errs, err)
		case errors.As(parse.Err, &refused):
			p.add(variableOf(parse.Name), refused.Error())
		default:
			p.failed[variableOf(parse.Name)] = true
		}
	}
}

// variableOf is the variable that environment's field reads.
func variableOf(field string) string {
	f, _ := reflect.TypeFor[environment]().FieldByName(field)
	name, _, _ := strings.Cut(f.Tag.Get("env"), ",")
	return name
}

// add reports the variable name, with its value unless it is a secret,
// and want: what is wrong or what it accepts.
func (p *problems) add(name, want string) {
	value := p.environ[name]
	if name == "JWT_SECRET" || name == "MASTER_SEED" {
		value = "(hidden)"
	}
	p.errs = append(p.errs, fmt.Errorf("%s=%q: %s", name, value, want))
}

// check reports the variable name, saying want, unless env could parse
// it and ok holds.
func (p *problems) check(name string, ok bool, want string) {
	if !ok || p.failed[name] {
		p.add(name, want)
	}
}

// parses reports the variable name, saying want, if env could not parse
// it.
func (p *problems) parses(name, want string) { p.check(name, true, want) }

// within reports whether n is from lo to hi.
func within[T cmp.Ordered](n, lo, hi T) bool { return lo <= n && n <= hi }

// checkServer checks the variables of the site, its listeners and logs.
func (p *problems) checkServer(c Config) {
	if _, port, err := net.SplitHostPort(c.Addr); err != nil {
		p.add("ADDR", "must be host:port, for example :8080")
	} else if n, err := strconv.Atoi(port); err != nil || !within(n, 0, 65535) {
		p.add("ADDR", "port must be a number from 0 to 65535")
	} else { // PUBLIC_URL's default is at ADDR's port
		p.check("PUBLIC_URL", isHTTPURL(c.PublicURL), "must be the site's http(s) address, such as https://arena.example")
	}
	p.check("LOG_ORIGIN", c.LogOrigin != "" && !strings.ContainsAny(c.LogOrigin, "+ \t\n") && utf8.ValidString(c.LogOrigin),
		"must be the log's name without spaces or +, such as arena.example/games-log")
	u, err := url.Parse(c.DatabaseURL)
	p.check("DATABASE_URL", err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql"), "must be a postgres:// URL")
	_, semver := web.ParseSemver(c.MinSDKVersion)
	p.check("MIN_SDK_VERSION", semver, "must be a semantic version such as 1.0.0")
	p.parses("SDK_GRACE_UNTIL", "must be an RFC 3339 time such as 2027-01-01T00:00:00Z, or empty")
	p.check("JWT_SECRET", c.JWTSecret == "" || len(c.JWTSecret) >= 32, "must be at least 32 characters")
	p.check("LOG_FORMAT", c.LogFormat == "text" || c.LogFormat == "json", "must be text or json")
	p.parses("LOG_LEVEL", "must be debug, info, warn or error")
	_, _, err = net.SplitHostPort(c.MetricsAddr)
	p.check("METRICS_ADDR", c.MetricsAddr == "" || err == nil, "must be host:port, such as 127.0.0.1:9090, or off (or empty) for none")
	p.parses("WORKERS", "must be true or false")
}

// checkChain checks the variables of the chain and of what the platform
// spends on it.
func (p *problems) checkChain(c Config) {
	if c.USDCMint != "" {
		_, err := solana.PublicKeyFromBase58(c.USDCMint)
		p.check("USDC_MINT", err == nil, "must be a base58 Solana address")
	} else if !c.EmbeddedChain() {
		p.add("USDC_MINT", "must name the USDC mint of the chain at SOLANA_RPC_URL (known by default only for devnet and mainnet URLs)")
	}
	p.check("CREDIT_COMMITMENT", c.CreditCommitment == rpc.CommitmentConfirmed || c.CreditCommitment == rpc.CommitmentFinalized,
		"must be finalized or confirmed")
	p.check("CHAIN_FINALIZE_SLOTS", within(c.FinalizeSlots, 0, 1000), "must be a whole number of slots from 0 to 1000")
	p.parses("DEV_FAUCET", "must be true or false")
	p.check("FEE_PAYER_DAILY_LAMPORTS", c.FeePayerDailyLamports >= 0,
		"must be a whole number of lamports (1 SOL = 1000000000), 0 or more")
	p.check("FEE_PAYER_GLOBAL_DAILY_LAMPORTS", c.FeePayerGlobalDailyLamports >= 0,
		"must be a whole number of lamports (1 SOL = 1000000000), 0 or more")
	p.check("MAX_PRIORITY_FEE_MICROLAMPORTS", c.MaxPriorityFee >= chain.MinComputeUnitPrice,
		fmt.Sprintf("must be a whole number of micro-lamports per compute unit, at least %d", chain.MinComputeUnitPrice))
}

// checkLimits checks the bounds on what callers ask of the platform.
func (p *problems) checkLimits(c Config) {
	p.check("ABUSE_THRESHOLD", c.AbuseThreshold >= 1, "must be a whole number of requests, at least 1")
	p.check("ANCHOR_INTERVAL", c.AnchorInterval >= time.Second, "must be a duration of at least 1s, such as 10m")
	p.check("RESERVES_INTERVAL", c.ReservesInterval >= time.Second, "must be a duration of at least 1s, such as 10m")
	p.check("SPECTATOR_DELAY", within(c.SpectatorDelay, 0, time.Minute), "must be a duration from 0 (not late) to 1m, such as 5s")
	p.check("ABUSE_WINDOW", c.AbuseWindow >= time.Second, "must be a duration of at least 1s, such as 1m or 30s")
	p.check("ABUSE_PRICE_MINOR", within(c.AbusePrice, 1, 1_000_000_000),
		"must be a whole number of USDC minor units from 1 to 1000000000 (1 USDC = 1000000)")
	p.check("AUTH_RATE_LIMIT", c.AuthRateLimit >= 0,
		"must be a whole number of sign-in requests a minute per client address, 0 for no limit")
	p.check("MAX_CONNS_PER_IP", c.MaxConnsPerIP >= 1, "must be a whole number of connections, at least 1")
	p.check("DEMO_BOTS", within(c.DemoBots, 0, 50), "must be a whole number of demo players from 0 to 50")
	p.check("TOURNAMENT_MAX_PLAYERS", within(c.TournamentMaxPlayers, 2, 10_000), "must be a whole number of players from 2 to 10000")
	p.check("TOURNAMENT_CREATE_PER_DAY", within(c.TournamentCreatePerDay, 1, 10_000),
		"must be a whole number of arenas one player may create in 24 hours, from 1 to 10000")
	p.check("TOURNAMENTS_SCHEDULED_MAX", within(c.TournamentsScheduledMax, 1, 1_000_000),
		"must be a whole number of arenas scheduled or running at once, from 1 to 1000000")
}

// checkProtection checks the variables of player protection and of the
// integrity of pools and markets.
func (p *problems) checkProtection(c Config) {
	p.check("POOL_CAP_MULTIPLE", within(c.Integrity.CapMultiple, 1, 1000),
		"must be a whole number from 1 to 1000: how many times the player pot one player's pool, and the market's pairs in USDC, may hold")
	p.parses("LINK_BY_IP", "must be true or false")
	p.parses("REQUIRE_AGE_CONFIRMATION", "must be true or false")
	p.check("MIN_AGE", within(c.Protection.MinAge, 16, 25), "must be a whole number of years from 16 to 25")
	if c.CountryHeader != "" {
		if strings.Trim(strings.ToLower(c.CountryHeader), "abcdefghijklmnopqrstuvwxyz0123456789-") != "" {
			p.add("COUNTRY_HEADER", "must be an HTTP header name, such as CF-IPCountry")
		} else if len(c.TrustedProxies) == 0 {
			p.add("COUNTRY_HEADER", "is believed only from TRUSTED_PROXIES: set them to the proxies that set this header")
		}
	}
	if len(c.Protection.Restricted) > 0 && c.CountryHeader == "" {
		p.add("RESTRICTED_COUNTRIES", "needs COUNTRY_HEADER: without it no request has a country")
	}
}

// isHTTPURL reports whether s is an absolute http(s) URL.
func isHTTPURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// commaList is the items of a comma-separated list, without blanks.
func commaList(s string) []string {
	var items []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			items = append(items, item)
		}
	}
	return items
}

// walletList is ADMIN_WALLETS: base58 Solana addresses separated by commas.
type walletList []string

// UnmarshalText reads the list; it refuses the first item that is no
// address.
func (l *walletList) UnmarshalText(text []byte) error {
	var wallets walletList
	for _, item := range commaList(string(text)) {
		if _, err := solana.PublicKeyFromBase58(item); err != nil {
			return refuse("%q is not a base58 Solana address: give addresses separated by commas", item)
		}
		wallets = append(wallets, item)
	}
	*l = wallets
	return nil
}

// rpcURLList is SOLANA_RPC_URL: http(s) URLs separated by commas, tried
// in that order.
type rpcURLList []string

// UnmarshalText reads the list. URLs that name different public clusters
// are refused: failing over from one to the other would change chains.
func (l *rpcURLList) UnmarshalText(text []byte) error {
	var urls rpcURLList
	cluster := ""
	for _, item := range commaList(string(text)) {
		if !isHTTPURL(item) {
			return refuse("%q must be an http(s) URL: give http(s) URLs separated by commas, or nothing for the embedded chain", item)
		}
		if slices.Contains(urls, item) {
			return refuse("%q is listed twice", item)
		}
		if c := clusterOf(item); c != "" && cluster != "" && c != cluster {
			return refuse("the URLs name both %s and %s: every URL must reach the same cluster", cluster, c)
		} else if c != "" {
			cluster = c
		}
		urls = append(urls, item)
	}
	if len(urls) == 0 {
		return refuse("names no URL: give http(s) URLs separated by commas, or nothing for the embedded chain")
	}
	*l = urls
	return nil
}

// ipNetList is TRUSTED_PROXIES: IP addresses or CIDR ranges separated by
// commas.
type ipNetList []*net.IPNet

// UnmarshalText reads the list; an address is a range of one. It refuses
// the first item that is neither.
func (l *ipNetList) UnmarshalText(text []byte) error {
	var nets ipNetList
	for _, item := range commaList(string(text)) {
		cidr := item
		if !strings.Contains(cidr, "/") {
			if ip := net.ParseIP(cidr); ip != nil && ip.To4() != nil {
				cidr += "/32"
			} else {
				cidr += "/128"
			}
		}
		_, n, err := net.ParseCIDR(cidr)
		if err != nil {
			return refuse("%q must be IP addresses or CIDR ranges separated by commas", item)
		}
		nets = append(nets, n)
	}
	*l = nets
	return nil
}

// originList is CORS_ORIGINS: origins separated by commas.
type originList []string

// UnmarshalText reads the list as web.ParseOrigins does.
func (l *originList) UnmarshalText(text []byte) error {
	origins, err := web.ParseOrigins(string(text))
	if err != nil {
		return refuse("must be origins (scheme://host[:port]) separated by commas: %v", err)
	}
	*l = origins
	return nil
}

// countryList is RESTRICTED_COUNTRIES: ISO 3166-1 alpha-2 codes separated
// by commas, in any case.
type countryList []string

// UnmarshalText reads the list, in upper case; it refuses the first item
// that is no code.
func (l *countryList) UnmarshalText(text []byte) error {
	var codes countryList
	for _, item := range commaList(string(text)) {
		cc := strings.ToUpper(item)
		if len(cc) != 2 || strings.Trim(cc, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") != "" {
			return refuse("%q must be ISO 3166-1 alpha-2 codes separated by commas, such as US,FR", item)
		}
		codes = append(codes, cc)
	}
	*l = codes
	return nil
}

// masterSeed is MASTER_SEED: 32 bytes in hex.
type masterSeed []byte

// UnmarshalText reads the seed without repeating it.
func (s *masterSeed) UnmarshalText(text []byte) error {
	seed, err := hex.DecodeString(string(text))
	if err != nil || len(seed) != 32 {
		return refuse("must be 64 hex characters (32 bytes)")
	}
	*s = seed
	return nil
}

// referralBPS is REFERRAL_BPS: three comma-separated basis points for
// referral levels 1, 2 and 3.
type referralBPS [referrals.Levels]int64

// UnmarshalText reads the three levels. Together they may not pass 10000,
// so that a player's referrers never earn more than the player's share of
// the fee and the treasury never pays out more than it took.
func (b *referralBPS) UnmarshalText(text []byte) error {
	parts := strings.Split(string(text), ",")
	if len(parts) != referrals.Levels {
		return refuse("must be %d whole numbers of basis points separated by commas, such as 2000,500,200", referrals.Levels)
	}
	var out referralBPS
	var sum int64
	for i, part := range parts {
		n, err := strconv.ParseInt(strings.TrimSpace(part), 10, 64)
		if err != nil || !within(n, 0, 10_000) {
			return refuse("level %d: %q must be a whole number of basis points from 0 to 10000", i+1, strings.TrimSpace(part))
		}
		out[i], sum = n, sum+n
	}
	if sum > 10_000 {
		return refuse("the three levels add up to %d basis points; at most 10000 (the whole share)", sum)
	}
	*b = out
	return nil
}

// abuseOverrides is ABUSE_OVERRIDES: comma-separated
// "METHOD /route=threshold" entries, such as
// "POST /lobbies=30,GET /games/live=1200", keyed by "METHOD /route".
type abuseOverrides map[string]int

// UnmarshalText reads the entries; it refuses the first bad one, saying
// what is wrong with it.
func (o *abuseOverrides) UnmarshalText(text []byte) error {
	out := abuseOverrides{}
	for _, item := range commaList(string(text)) {
		endpoint, n, ok := strings.Cut(item, "=")
		method, path, ok2 := strings.Cut(strings.TrimSpace(endpoint), " ")
		path = strings.TrimSpace(path)
		threshold, err := strconv.Atoi(strings.TrimSpace(n))
		switch {
		case !ok || !ok2:
			return refuse("entry %q must be METHOD /route=threshold, such as POST /lobbies=30", item)
		case !validMethod[method]:
			return refuse("entry %q: %q is not an HTTP method (GET, POST, PUT, PATCH, DELETE)", item, method)
		case !strings.HasPrefix(path, "/") || strings.ContainsAny(path, " ?#"):
			return refuse("entry %q: the route must start with / and be written as in the API, such as /games/:id/state", item)
		case err != nil || threshold < 1:
			return refuse("entry %q: the threshold must be a whole number of requests, at least 1", item)
		}
		out[method+" "+path] = threshold
	}
	*o = out
	return nil
}

var validMethod = map[string]bool{http.MethodGet: true, http.MethodPost: true, http.MethodPut: true,
	http.MethodPatch: true, http.MethodDelete: true}
