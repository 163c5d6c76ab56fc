package app

import (
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

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

// DefaultDatabaseURL is the local database that db/setup-postgres.sh
// prepares (make run does it).
const DefaultDatabaseURL = "postgres://wager:wager@127.0.0.1:5432/wager?sslmode=disable"

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
	MasterSeed     []byte // derives every platform key; empty: kept under DataDir
	USDCMint       string // the USDC mint on an external chain
	// CreditCommitment is the commitment at which the chain must report a
	// transaction before what it moves is recorded (CREDIT_COMMITMENT).
	CreditCommitment rpc.CommitmentType
	// FinalizeSlots is how many slots of 400 ms after a transaction the
	// embedded chain reports it finalized (CHAIN_FINALIZE_SLOTS).
	FinalizeSlots int
	DemoBots      int // demo players that keep free games going (make run: 4)
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

// LoadConfig reads the configuration through getenv. It returns an error
// naming every variable whose value is invalid.
func LoadConfig(getenv func(string) string) (Config, error) {
	env := func(name, def string) string {
		if v := strings.TrimSpace(getenv(name)); v != "" {
			return v
		}
		return def
	}
	var errs []error
	bad := func(name, value, want string) {
		errs = append(errs, fmt.Errorf("%s=%q: %s", name, value, want))
	}

	c := Config{
		Addr:          env("ADDR", ":8080"),
		DatabaseURL:   env("DATABASE_URL", DefaultDatabaseURL),
		MinSDKVersion: env("MIN_SDK_VERSION", "1.0.0"),
		JWTSecret:     env("JWT_SECRET", ""),
		DataDir:       env("DATA_DIR", "var"),
		LogFormat:     env("LOG_FORMAT", "text"),
		MetricsAddr:   env("METRICS_ADDR", "127.0.0.1:9090"),
	}
	if _, port, err := net.SplitHostPort(c.Addr); err != nil {
		bad("ADDR", c.Addr, "must be host:port, for example :8080")
	} else if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
		bad("ADDR", c.Addr, "port must be a number from 0 to 65535")
	} else {
		c.PublicURL = env("PUBLIC_URL", "http://localhost:"+port)
	}
	if u, err := url.Parse(c.PublicURL); c.PublicURL != "" && (err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "") {
		bad("PUBLIC_URL", c.PublicURL, "must be the site's http(s) address, such as https://arena.example")
	}
	if u, err := url.Parse(c.DatabaseURL); err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		bad("DATABASE_URL", c.DatabaseURL, "must be a postgres:// URL")
	}
	for _, w := range strings.Split(getenv("ADMIN_WALLETS"), ",") {
		if w = strings.TrimSpace(w); w == "" {
			continue
		}
		if _, err := solana.PublicKeyFromBase58(w); err != nil {
			bad("ADMIN_WALLETS", w, "must be base58 Solana addresses separated by commas")
			continue
		}
		c.AdminWallets = append(c.AdminWallets, w)
	}
	if _, ok := web.ParseSemver(c.MinSDKVersion); !ok {
		bad("MIN_SDK_VERSION", c.MinSDKVersion, "must be a semantic version such as 1.0.0")
	}
	if v := env("SDK_GRACE_UNTIL", ""); v != "" {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			bad("SDK_GRACE_UNTIL", v, "must be an RFC 3339 time such as 2027-01-01T00:00:00Z, or empty")
		}
		c.SDKGraceUntil = t.UTC()
	}
	if v := env("SOLANA_RPC_URL", ""); v != "" {
		urls, err := parseRPCURLs(v)
		if err != nil {
			bad("SOLANA_RPC_URL", v, err.Error())
		}
		c.SolanaRPCURLs = urls
	}
	faucetDefault := strconv.FormatBool(c.EmbeddedChain())
	if v := env("DEV_FAUCET", faucetDefault); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			bad("DEV_FAUCET", v, "must be true or false")
		}
		c.DevFaucet = b
	}
	if v := env("ABUSE_THRESHOLD", "600"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			bad("ABUSE_THRESHOLD", v, "must be a whole number of requests, at least 1")
		}
		c.AbuseThreshold = n
	}
	if v := env("ABUSE_WINDOW", "1m"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Second {
			bad("ABUSE_WINDOW", v, "must be a duration of at least 1s, such as 1m or 30s")
		}
		c.AbuseWindow = d
	}
	if v := env("ABUSE_OVERRIDES", ""); v != "" {
		overrides, err := parseAbuseOverrides(v)
		if err != nil {
			bad("ABUSE_OVERRIDES", v, err.Error())
		}
		c.AbuseOverrides = overrides
	}
	if v := env("ABUSE_PRICE_MINOR", "10000"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 || n > 1_000_000_000 {
			bad("ABUSE_PRICE_MINOR", v, "must be a whole number of USDC minor units from 1 to 1000000000 (1 USDC = 1000000)")
		}
		c.AbusePrice = n
	}
	if c.JWTSecret != "" && len(c.JWTSecret) < 32 {
		bad("JWT_SECRET", "(hidden)", "must be at least 32 characters")
	}
	if v := env("MASTER_SEED", ""); v != "" {
		seed, err := hex.DecodeString(v)
		if err != nil || len(seed) != 32 {
			bad("MASTER_SEED", "(hidden)", "must be 64 hex characters (32 bytes)")
		}
		c.MasterSeed = seed
	}
	c.USDCMint = env("USDC_MINT", defaultMint(c.ChainID()))
	if _, err := solana.PublicKeyFromBase58(c.USDCMint); c.USDCMint != "" && err != nil {
		bad("USDC_MINT", c.USDCMint, "must be a base58 Solana address")
	} else if c.USDCMint == "" && !c.EmbeddedChain() {
		bad("USDC_MINT", "", "must name the USDC mint of the chain at SOLANA_RPC_URL (known by default only for devnet and mainnet URLs)")
	}
	commitment := rpc.CommitmentConfirmed
	if !c.EmbeddedChain() {
		commitment = rpc.CommitmentFinalized
	}
	switch v := env("CREDIT_COMMITMENT", string(commitment)); v {
	case string(rpc.CommitmentConfirmed), string(rpc.CommitmentFinalized):
		c.CreditCommitment = rpc.CommitmentType(v)
	default:
		bad("CREDIT_COMMITMENT", v, "must be finalized or confirmed")
	}
	if v := env("CHAIN_FINALIZE_SLOTS", "32"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > 1000 {
			bad("CHAIN_FINALIZE_SLOTS", v, "must be a whole number of slots from 0 to 1000")
		}
		c.FinalizeSlots = n
	}
	if v := env("WORKERS", "true"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			bad("WORKERS", v, "must be true or false")
		}
		c.Workers = b
	}
	if v := env("DEMO_BOTS", "0"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > 50 {
			bad("DEMO_BOTS", v, "must be a whole number of demo players from 0 to 50")
		}
		c.DemoBots = n
	}
	if v := env("TOURNAMENT_MAX_PLAYERS", "256"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 2 || n > 10_000 {
			bad("TOURNAMENT_MAX_PLAYERS", v, "must be a whole number of players from 2 to 10000")
		}
		c.TournamentMaxPlayers = n
	}
	if v := env("TOURNAMENT_CREATE_PER_DAY", strconv.Itoa(tournament.DefaultCreatePerDay)); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 10_000 {
			bad("TOURNAMENT_CREATE_PER_DAY", v, "must be a whole number of arenas one player may create in 24 hours, from 1 to 10000")
		}
		c.TournamentCreatePerDay = n
	}
	if v := env("TOURNAMENTS_SCHEDULED_MAX", strconv.Itoa(tournament.DefaultScheduledMax)); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1_000_000 {
			bad("TOURNAMENTS_SCHEDULED_MAX", v, "must be a whole number of arenas scheduled or running at once, from 1 to 1000000")
		}
		c.TournamentsScheduledMax = n
	}
	if v := env("AUTH_RATE_LIMIT", "120"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			bad("AUTH_RATE_LIMIT", v, "must be a whole number of sign-in requests a minute per client address, 0 for no limit")
		}
		c.AuthRateLimit = n
	}
	for _, p := range strings.Split(getenv("TRUSTED_PROXIES"), ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		if !strings.Contains(p, "/") {
			if ip := net.ParseIP(p); ip != nil && ip.To4() != nil {
				p += "/32"
			} else {
				p += "/128"
			}
		}
		_, n, err := net.ParseCIDR(p)
		if err != nil {
			bad("TRUSTED_PROXIES", p, "must be IP addresses or CIDR ranges separated by commas")
			continue
		}
		c.TrustedProxies = append(c.TrustedProxies, n)
	}
	if v := env("CORS_ORIGINS", ""); v != "" {
		origins, err := web.ParseOrigins(v)
		if err != nil {
			bad("CORS_ORIGINS", v, "must be origins (scheme://host[:port]) separated by commas: "+err.Error())
		}
		c.CORSOrigins = origins
	}
	if v := env("MAX_CONNS_PER_IP", "1000"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			bad("MAX_CONNS_PER_IP", v, "must be a whole number of connections, at least 1")
		}
		c.MaxConnsPerIP = n
	}
	if v := env("FEE_PAYER_DAILY_LAMPORTS", "20000000"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			bad("FEE_PAYER_DAILY_LAMPORTS", v, "must be a whole number of lamports (1 SOL = 1000000000), 0 or more")
		}
		c.FeePayerDailyLamports = n
	}
	if v := env("FEE_PAYER_GLOBAL_DAILY_LAMPORTS", "2000000000"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			bad("FEE_PAYER_GLOBAL_DAILY_LAMPORTS", v, "must be a whole number of lamports (1 SOL = 1000000000), 0 or more")
		}
		c.FeePayerGlobalDailyLamports = n
	}
	if v := env("MAX_PRIORITY_FEE_MICROLAMPORTS", strconv.Itoa(chain.DefaultMaxPriorityFee)); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil || n < chain.MinComputeUnitPrice {
			bad("MAX_PRIORITY_FEE_MICROLAMPORTS", v, fmt.Sprintf("must be a whole number of micro-lamports per compute unit, at least %d", chain.MinComputeUnitPrice))
		}
		c.MaxPriorityFee = n
	}
	if v := env("REFERRAL_BPS", "2000,500,200"); v != "" {
		bps, err := parseReferralBPS(v)
		if err != nil {
			bad("REFERRAL_BPS", v, err.Error())
		}
		c.ReferralBPS = bps
	}
	if v := env("POOL_CAP_MULTIPLE", "5"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 || n > 1000 {
			bad("POOL_CAP_MULTIPLE", v, "must be a whole number from 1 to 1000: how many times the player pot one player's pool, and the market's pairs in USDC, may hold")
		}
		c.Integrity.CapMultiple = n
	}
	if v := env("LINK_BY_IP", "false"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			bad("LINK_BY_IP", v, "must be true or false")
		}
		c.Integrity.LinkByIP = b
	}
	if v := env("REQUIRE_AGE_CONFIRMATION", strconv.FormatBool(!c.EmbeddedChain())); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			bad("REQUIRE_AGE_CONFIRMATION", v, "must be true or false")
		}
		c.Protection.RequireAge = b
	}
	if v := env("MIN_AGE", strconv.Itoa(protection.DefaultMinAge)); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 16 || n > 25 {
			bad("MIN_AGE", v, "must be a whole number of years from 16 to 25")
		}
		c.Protection.MinAge = n
	}
	c.CountryHeader = env("COUNTRY_HEADER", "")
	if c.CountryHeader != "" {
		if strings.Trim(strings.ToLower(c.CountryHeader), "abcdefghijklmnopqrstuvwxyz0123456789-") != "" {
			bad("COUNTRY_HEADER", c.CountryHeader, "must be an HTTP header name, such as CF-IPCountry")
		} else if len(c.TrustedProxies) == 0 {
			bad("COUNTRY_HEADER", c.CountryHeader, "is believed only from TRUSTED_PROXIES: set them to the proxies that set this header")
		}
	}
	for _, cc := range strings.Split(getenv("RESTRICTED_COUNTRIES"), ",") {
		if cc = strings.ToUpper(strings.TrimSpace(cc)); cc == "" {
			continue
		}
		if len(cc) != 2 || strings.Trim(cc, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") != "" {
			bad("RESTRICTED_COUNTRIES", cc, "must be ISO 3166-1 alpha-2 codes separated by commas, such as US,FR")
			continue
		}
		c.Protection.Restricted = append(c.Protection.Restricted, cc)
	}
	if len(c.Protection.Restricted) > 0 && c.CountryHeader == "" {
		bad("RESTRICTED_COUNTRIES", getenv("RESTRICTED_COUNTRIES"), "needs COUNTRY_HEADER: without it no request has a country")
	}
	if c.LogFormat != "text" && c.LogFormat != "json" {
		bad("LOG_FORMAT", c.LogFormat, "must be text or json")
	}
	if v := env("LOG_LEVEL", "info"); c.LogLevel.UnmarshalText([]byte(v)) != nil {
		bad("LOG_LEVEL", v, "must be debug, info, warn or error")
	}
	if c.MetricsAddr == "off" {
		c.MetricsAddr = ""
	} else if _, _, err := net.SplitHostPort(c.MetricsAddr); err != nil {
		bad("METRICS_ADDR", c.MetricsAddr, "must be host:port, such as 127.0.0.1:9090, or off (or empty) for none")
	}
	if len(errs) > 0 {
		return Config{}, fmt.Errorf("invalid configuration: %w", errors.Join(errs...))
	}
	return c, nil
}

// parseRPCURLs reads SOLANA_RPC_URL: http(s) URLs separated by commas,
// tried in that order. URLs that name different public clusters are
// refused: failing over from one to the other would change chains.
func parseRPCURLs(v string) ([]string, error) {
	var urls []string
	cluster := ""
	for _, item := range strings.Split(v, ",") {
		if item = strings.TrimSpace(item); item == "" {
			continue
		}
		if u, err := url.Parse(item); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("%q must be an http(s) URL: give http(s) URLs separated by commas, or nothing for the embedded chain", item)
		}
		if slices.Contains(urls, item) {
			return nil, fmt.Errorf("%q is listed twice", item)
		}
		if c := clusterOf(item); c != "" && cluster != "" && c != cluster {
			return nil, fmt.Errorf("the URLs name both %s and %s: every URL must reach the same cluster", cluster, c)
		} else if c != "" {
			cluster = c
		}
		urls = append(urls, item)
	}
	if len(urls) == 0 {
		return nil, errors.New("names no URL: give http(s) URLs separated by commas, or nothing for the embedded chain")
	}
	return urls, nil
}

// parseReferralBPS reads REFERRAL_BPS: three comma-separated basis points
// for referral levels 1, 2 and 3. Together they may not pass 10000, so
// that a player's referrers never earn more than the player's share of
// the fee and the treasury never pays out more than it took.
func parseReferralBPS(v string) ([referrals.Levels]int64, error) {
	var out [referrals.Levels]int64
	parts := strings.Split(v, ",")
	if len(parts) != referrals.Levels {
		return out, fmt.Errorf("must be %d whole numbers of basis points separated by commas, such as 2000,500,200", referrals.Levels)
	}
	var sum int64
	for i, p := range parts {
		n, err := strconv.ParseInt(strings.TrimSpace(p), 10, 64)
		if err != nil || n < 0 || n > 10_000 {
			return out, fmt.Errorf("level %d: %q must be a whole number of basis points from 0 to 10000", i+1, strings.TrimSpace(p))
		}
		out[i], sum = n, sum+n
	}
	if sum > 10_000 {
		return out, fmt.Errorf("the three levels add up to %d basis points; at most 10000 (the whole share)", sum)
	}
	return out, nil
}

// parseAbuseOverrides reads ABUSE_OVERRIDES: comma-separated
// "METHOD /route=threshold" entries, such as
// "POST /lobbies=30,GET /games/live=1200". It returns an error saying what
// is wrong with the first bad entry.
func parseAbuseOverrides(v string) (map[string]int, error) {
	out := map[string]int{}
	for _, item := range strings.Split(v, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		endpoint, n, ok := strings.Cut(item, "=")
		method, path, ok2 := strings.Cut(strings.TrimSpace(endpoint), " ")
		path = strings.TrimSpace(path)
		threshold, err := strconv.Atoi(strings.TrimSpace(n))
		switch {
		case !ok || !ok2:
			return nil, fmt.Errorf("entry %q must be METHOD /route=threshold, such as POST /lobbies=30", item)
		case !validMethod[method]:
			return nil, fmt.Errorf("entry %q: %q is not an HTTP method (GET, POST, PUT, PATCH, DELETE)", item, method)
		case !strings.HasPrefix(path, "/") || strings.ContainsAny(path, " ?#"):
			return nil, fmt.Errorf("entry %q: the route must start with / and be written as in the API, such as /games/:id/state", item)
		case err != nil || threshold < 1:
			return nil, fmt.Errorf("entry %q: the threshold must be a whole number of requests, at least 1", item)
		}
		out[method+" "+path] = threshold
	}
	return out, nil
}

var validMethod = map[string]bool{http.MethodGet: true, http.MethodPost: true, http.MethodPut: true,
	http.MethodPatch: true, http.MethodDelete: true}
