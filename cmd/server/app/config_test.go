package app

import (
	"fmt"
	"log/slog"
	"net"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/rpc"

	"wager/chain"
	"wager/domain/integrity"
	"wager/domain/protection"
	"wager/domain/referrals"
	"wager/domain/tournament"
)

const devnetURL = "https://api.devnet.solana.com"

// load reads the configuration from env alone.
func load(env map[string]string) (Config, error) {
	return LoadConfig(func(k string) string { return env[k] })
}

// embeddedDefaults is the configuration of an empty environment, in which
// the server runs its own chain.
func embeddedDefaults() Config {
	return Config{
		Addr:                        ":8080",
		DatabaseURL:                 "postgres://wager:wager@127.0.0.1:5432/wager?sslmode=disable",
		MinSDKVersion:               "1.0.0",
		DevFaucet:                   true,
		AbuseThreshold:              600,
		AbuseWindow:                 time.Minute,
		AbusePrice:                  10_000,
		DataDir:                     "var",
		LogFormat:                   "text",
		LogLevel:                    slog.LevelInfo,
		MetricsAddr:                 "127.0.0.1:9090",
		PublicURL:                   "http://localhost:8080",
		LogOrigin:                   "localhost:8080/games-log",
		ReservesInterval:            10 * time.Minute,
		SpectatorDelay:              5 * time.Second,
		AnchorInterval:              10 * time.Minute,
		CreditCommitment:            rpc.CommitmentConfirmed,
		FinalizeSlots:               32,
		AuthRateLimit:               120,
		MaxConnsPerIP:               1000,
		FeePayerDailyLamports:       20_000_000,
		FeePayerGlobalDailyLamports: 2_000_000_000,
		MaxPriorityFee:              chain.DefaultMaxPriorityFee,
		Workers:                     true,
		ReferralBPS:                 referrals.DefaultBPS,
		Integrity:                   integrity.Config{CapMultiple: 5},
		TournamentMaxPlayers:        256,
		TournamentCreatePerDay:      tournament.DefaultCreatePerDay,
		TournamentsScheduledMax:     tournament.DefaultScheduledMax,
		Protection:                  protection.Config{MinAge: protection.DefaultMinAge},
	}
}

// onDevnet changes the embedded chain's defaults to those of an
// environment whose SOLANA_RPC_URL is devnetURL.
func onDevnet(c *Config) {
	c.SolanaRPCURLs = []string{devnetURL}
	c.DevFaucet = false
	c.USDCMint = defaultMint("devnet")
	c.CreditCommitment = rpc.CommitmentFinalized
	c.Protection.RequireAge = true
}

// configDiff lists the fields in which got differs from want.
func configDiff(got, want Config) string {
	var diffs []string
	g, w := reflect.ValueOf(got), reflect.ValueOf(want)
	for i := range g.NumField() {
		if !reflect.DeepEqual(g.Field(i).Interface(), w.Field(i).Interface()) {
			diffs = append(diffs, fmt.Sprintf("%s: got %v, want %v", g.Type().Field(i).Name, g.Field(i), w.Field(i)))
		}
	}
	return strings.Join(diffs, "; ")
}

func TestLoadConfigDefaults(t *testing.T) {
	onDevnetDefaults := embeddedDefaults()
	onDevnet(&onDevnetDefaults)
	for _, tc := range []struct {
		name string
		env  map[string]string
		want Config
	}{
		{"embedded chain", nil, embeddedDefaults()},
		{"blank values take the defaults", map[string]string{"ADDR": " ", "DEMO_BOTS": "", "LOG_LEVEL": "\t"}, embeddedDefaults()},
		{"external chain", map[string]string{"SOLANA_RPC_URL": devnetURL}, onDevnetDefaults},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := load(tc.env)
			if err != nil {
				t.Fatal(err)
			}
			if diff := configDiff(got, tc.want); diff != "" {
				t.Error(diff)
			}
		})
	}
}

// Each variable, set to a valid value (surrounded by blanks, which do not
// count), changes what it names and, for some, the defaults of others.
func TestLoadConfigReadsEachVariable(t *testing.T) {
	wallet1, wallet2 := solana.SystemProgramID.String(), solana.TokenProgramID.String()
	seed := strings.Repeat("ab", 32)
	secret := strings.Repeat("s", 32)
	cidr := func(s string) *net.IPNet {
		_, n, err := net.ParseCIDR(s)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	for _, tc := range []struct {
		env  map[string]string
		want func(c *Config)
	}{
		{map[string]string{"ADDR": " 127.0.0.1:9000 "}, func(c *Config) {
			c.Addr, c.PublicURL, c.LogOrigin = "127.0.0.1:9000", "http://localhost:9000", "localhost:9000/games-log"
		}},
		{map[string]string{"ADDR": ":0"}, func(c *Config) {
			c.Addr, c.PublicURL, c.LogOrigin = ":0", "http://localhost:0", "localhost:0/games-log"
		}},
		{map[string]string{"ADDR": ":9000", "PUBLIC_URL": "https://arena.example"}, func(c *Config) {
			c.Addr, c.PublicURL, c.LogOrigin = ":9000", "https://arena.example", "arena.example/games-log"
		}},
		{map[string]string{"LOG_ORIGIN": "arena.example/log"}, func(c *Config) { c.LogOrigin = "arena.example/log" }},
		{map[string]string{"DATABASE_URL": "postgresql://u@db/x"}, func(c *Config) { c.DatabaseURL = "postgresql://u@db/x" }},
		{map[string]string{"ADMIN_WALLETS": " " + wallet1 + " , ," + wallet2}, func(c *Config) { c.AdminWallets = []string{wallet1, wallet2} }},
		{map[string]string{"ADMIN_WALLETS": " , "}, func(c *Config) {}},
		{map[string]string{"MIN_SDK_VERSION": "v2.3.4"}, func(c *Config) { c.MinSDKVersion = "v2.3.4" }},
		{map[string]string{"SDK_GRACE_UNTIL": "2027-01-01T02:00:00+02:00"}, func(c *Config) { c.SDKGraceUntil = time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC) }},
		{map[string]string{"SOLANA_RPC_URL": devnetURL}, onDevnet},
		{map[string]string{"SOLANA_RPC_URL": "https://rpc.example.com, https://api.mainnet-beta.solana.com"}, func(c *Config) {
			onDevnet(c)
			c.SolanaRPCURLs = []string{"https://rpc.example.com", "https://api.mainnet-beta.solana.com"}
			c.USDCMint = defaultMint("mainnet")
		}},
		{map[string]string{"SOLANA_RPC_URL": "https://rpc.example.com", "USDC_MINT": wallet2}, func(c *Config) {
			onDevnet(c)
			c.SolanaRPCURLs, c.USDCMint = []string{"https://rpc.example.com"}, wallet2
		}},
		{map[string]string{"USDC_MINT": wallet2}, func(c *Config) { c.USDCMint = wallet2 }},
		{map[string]string{"DEV_FAUCET": "false"}, func(c *Config) { c.DevFaucet = false }},
		{map[string]string{"SOLANA_RPC_URL": devnetURL, "DEV_FAUCET": "1"}, func(c *Config) { onDevnet(c); c.DevFaucet = true }},
		{map[string]string{"RESERVES_INTERVAL": "1h"}, func(c *Config) { c.ReservesInterval = time.Hour }},
		{map[string]string{"SPECTATOR_DELAY": "0"}, func(c *Config) { c.SpectatorDelay = 0 }},
		{map[string]string{"ANCHOR_INTERVAL": "30m"}, func(c *Config) { c.AnchorInterval = 30 * time.Minute }},
		{map[string]string{"ABUSE_THRESHOLD": "1", "ABUSE_WINDOW": "30s"}, func(c *Config) { c.AbuseThreshold, c.AbuseWindow = 1, 30*time.Second }},
		{map[string]string{"ABUSE_OVERRIDES": "POST /lobbies=30, GET /games/:id/state = 1200"}, func(c *Config) {
			c.AbuseOverrides = map[string]int{"POST /lobbies": 30, "GET /games/:id/state": 1200}
		}},
		{map[string]string{"ABUSE_PRICE_MINOR": "1000000000"}, func(c *Config) { c.AbusePrice = 1_000_000_000 }},
		{map[string]string{"JWT_SECRET": secret}, func(c *Config) { c.JWTSecret = secret }},
		{map[string]string{"DATA_DIR": "/srv/wager"}, func(c *Config) { c.DataDir = "/srv/wager" }},
		{map[string]string{"MASTER_SEED": seed}, func(c *Config) { c.MasterSeed = []byte(strings.Repeat("\xab", 32)) }},
		{map[string]string{"CREDIT_COMMITMENT": "finalized"}, func(c *Config) { c.CreditCommitment = rpc.CommitmentFinalized }},
		{map[string]string{"SOLANA_RPC_URL": devnetURL, "CREDIT_COMMITMENT": "confirmed"}, func(c *Config) {
			onDevnet(c)
			c.CreditCommitment = rpc.CommitmentConfirmed
		}},
		{map[string]string{"CHAIN_FINALIZE_SLOTS": "0"}, func(c *Config) { c.FinalizeSlots = 0 }},
		{map[string]string{"CHAIN_FINALIZE_SLOTS": "1000"}, func(c *Config) { c.FinalizeSlots = 1000 }},
		{map[string]string{"WORKERS": "false"}, func(c *Config) { c.Workers = false }},
		{map[string]string{"DEMO_BOTS": "50"}, func(c *Config) { c.DemoBots = 50 }},
		{map[string]string{"TOURNAMENT_MAX_PLAYERS": "2"}, func(c *Config) { c.TournamentMaxPlayers = 2 }},
		{map[string]string{"TOURNAMENT_MAX_PLAYERS": "10000"}, func(c *Config) { c.TournamentMaxPlayers = 10_000 }},
		{map[string]string{"TOURNAMENT_CREATE_PER_DAY": "1"}, func(c *Config) { c.TournamentCreatePerDay = 1 }},
		{map[string]string{"TOURNAMENTS_SCHEDULED_MAX": "1000000"}, func(c *Config) { c.TournamentsScheduledMax = 1_000_000 }},
		{map[string]string{"AUTH_RATE_LIMIT": "0"}, func(c *Config) { c.AuthRateLimit = 0 }},
		{map[string]string{"AUTH_RATE_LIMIT": "3000000000"}, func(c *Config) { c.AuthRateLimit = 3_000_000_000 }},
		{map[string]string{"TRUSTED_PROXIES": "10.0.0.0/8, 192.168.1.1,,::1"}, func(c *Config) {
			c.TrustedProxies = []*net.IPNet{cidr("10.0.0.0/8"), cidr("192.168.1.1/32"), cidr("::1/128")}
		}},
		{map[string]string{"CORS_ORIGINS": "https://App.Example, http://localhost:3000"}, func(c *Config) {
			c.CORSOrigins = []string{"https://app.example", "http://localhost:3000"}
		}},
		{map[string]string{"MAX_CONNS_PER_IP": "1"}, func(c *Config) { c.MaxConnsPerIP = 1 }},
		{map[string]string{"FEE_PAYER_DAILY_LAMPORTS": "0", "FEE_PAYER_GLOBAL_DAILY_LAMPORTS": "0"}, func(c *Config) {
			c.FeePayerDailyLamports, c.FeePayerGlobalDailyLamports = 0, 0
		}},
		{map[string]string{"MAX_PRIORITY_FEE_MICROLAMPORTS": "1000"}, func(c *Config) { c.MaxPriorityFee = chain.MinComputeUnitPrice }},
		{map[string]string{"REFERRAL_BPS": "10000, 0 ,0"}, func(c *Config) { c.ReferralBPS = [referrals.Levels]int64{10_000, 0, 0} }},
		{map[string]string{"POOL_CAP_MULTIPLE": "1000"}, func(c *Config) { c.Integrity.CapMultiple = 1000 }},
		{map[string]string{"LINK_BY_IP": "true"}, func(c *Config) { c.Integrity.LinkByIP = true }},
		{map[string]string{"REQUIRE_AGE_CONFIRMATION": "true"}, func(c *Config) { c.Protection.RequireAge = true }},
		{map[string]string{"SOLANA_RPC_URL": devnetURL, "REQUIRE_AGE_CONFIRMATION": "false"}, func(c *Config) {
			onDevnet(c)
			c.Protection.RequireAge = false
		}},
		{map[string]string{"MIN_AGE": "16"}, func(c *Config) { c.Protection.MinAge = 16 }},
		{map[string]string{"MIN_AGE": "25"}, func(c *Config) { c.Protection.MinAge = 25 }},
		{map[string]string{"TRUSTED_PROXIES": "10.0.0.0/8", "COUNTRY_HEADER": "CF-IPCountry", "RESTRICTED_COUNTRIES": "us, ,fr"}, func(c *Config) {
			c.TrustedProxies = []*net.IPNet{cidr("10.0.0.0/8")}
			c.CountryHeader = "CF-IPCountry"
			c.Protection.Restricted = []string{"US", "FR"}
		}},
		{map[string]string{"LOG_FORMAT": "json", "LOG_LEVEL": "WARN"}, func(c *Config) { c.LogFormat, c.LogLevel = "json", slog.LevelWarn }},
		{map[string]string{"LOG_LEVEL": "debug"}, func(c *Config) { c.LogLevel = slog.LevelDebug }},
		{map[string]string{"METRICS_ADDR": "off"}, func(c *Config) { c.MetricsAddr = "" }},
		{map[string]string{"METRICS_ADDR": ":9191"}, func(c *Config) { c.MetricsAddr = ":9191" }},
	} {
		t.Run(fmt.Sprint(tc.env), func(t *testing.T) {
			got, err := load(tc.env)
			if err != nil {
				t.Fatal(err)
			}
			want := embeddedDefaults()
			tc.want(&want)
			if diff := configDiff(got, want); diff != "" {
				t.Error(diff)
			}
		})
	}
}

// An invalid value is refused with an error that names the variable and
// says what it accepts; a secret is not repeated.
func TestLoadConfigRefusesInvalidValues(t *testing.T) {
	wallet := solana.SystemProgramID.String()
	proxied := func(env map[string]string) map[string]string {
		env["TRUSTED_PROXIES"], env["COUNTRY_HEADER"] = "10.0.0.0/8", "CF-IPCountry"
		return env
	}
	for _, tc := range []struct {
		env  map[string]string
		want []string // in the error
	}{
		{map[string]string{"ADDR": "8080"}, []string{`ADDR="8080"`, "host:port"}},
		{map[string]string{"ADDR": ":99999"}, []string{`ADDR=":99999"`, "port must be a number from 0 to 65535"}},
		{map[string]string{"ADDR": ":http"}, []string{`ADDR=":http"`, "port must be a number from 0 to 65535"}},
		{map[string]string{"PUBLIC_URL": "arena.example"}, []string{`PUBLIC_URL="arena.example"`, "http(s) address"}},
		{map[string]string{"LOG_ORIGIN": "arena example+log"}, []string{`LOG_ORIGIN="arena example+log"`, "without spaces or +"}},
		{map[string]string{"PUBLIC_URL": "ftp://arena.example"}, []string{"PUBLIC_URL=", "http(s) address"}},
		{map[string]string{"DATABASE_URL": "mysql://x"}, []string{`DATABASE_URL="mysql://x"`, "postgres:// URL"}},
		{map[string]string{"ADMIN_WALLETS": wallet + ",not-a-wallet"}, []string{"ADMIN_WALLETS=", `"not-a-wallet"`, "base58 Solana address"}},
		{map[string]string{"MIN_SDK_VERSION": "1.0"}, []string{`MIN_SDK_VERSION="1.0"`, "semantic version"}},
		{map[string]string{"SDK_GRACE_UNTIL": "2027-01-01"}, []string{`SDK_GRACE_UNTIL="2027-01-01"`, "RFC 3339 time"}},
		{map[string]string{"SOLANA_RPC_URL": "ftp://x"}, []string{`SOLANA_RPC_URL="ftp://x"`, "http(s) URL"}},
		{map[string]string{"SOLANA_RPC_URL": devnetURL + ",https://api.mainnet-beta.solana.com"}, []string{"SOLANA_RPC_URL=", "same cluster"}},
		{map[string]string{"SOLANA_RPC_URL": devnetURL + "," + devnetURL}, []string{"SOLANA_RPC_URL=", "listed twice"}},
		{map[string]string{"SOLANA_RPC_URL": " , "}, []string{"SOLANA_RPC_URL=", "names no URL"}},
		{map[string]string{"DEV_FAUCET": "maybe"}, []string{`DEV_FAUCET="maybe"`, "true or false"}},
		{map[string]string{"ABUSE_THRESHOLD": "0"}, []string{`ABUSE_THRESHOLD="0"`, "at least 1"}},
		{map[string]string{"ABUSE_THRESHOLD": "1.5"}, []string{`ABUSE_THRESHOLD="1.5"`, "at least 1"}},
		{map[string]string{"ABUSE_WINDOW": "10ms"}, []string{`ABUSE_WINDOW="10ms"`, "at least 1s"}},
		{map[string]string{"ANCHOR_INTERVAL": "500ms"}, []string{`ANCHOR_INTERVAL="500ms"`, "at least 1s"}},
		{map[string]string{"RESERVES_INTERVAL": "0s"}, []string{`RESERVES_INTERVAL="0s"`, "at least 1s"}},
		{map[string]string{"SPECTATOR_DELAY": "-1s"}, []string{`SPECTATOR_DELAY="-1s"`, "from 0"}},
		{map[string]string{"ABUSE_WINDOW": "1 minute"}, []string{`ABUSE_WINDOW="1 minute"`, "at least 1s"}},
		{map[string]string{"ABUSE_OVERRIDES": "POST /lobbies"}, []string{"ABUSE_OVERRIDES=", "METHOD /route=threshold"}},
		{map[string]string{"ABUSE_OVERRIDES": "FETCH /x=1"}, []string{"ABUSE_OVERRIDES=", "not an HTTP method"}},
		{map[string]string{"ABUSE_OVERRIDES": "GET games=1"}, []string{"ABUSE_OVERRIDES=", "must start with /"}},
		{map[string]string{"ABUSE_OVERRIDES": "GET /x=0"}, []string{"ABUSE_OVERRIDES=", "at least 1"}},
		{map[string]string{"ABUSE_PRICE_MINOR": "0"}, []string{`ABUSE_PRICE_MINOR="0"`, "from 1 to 1000000000"}},
		{map[string]string{"ABUSE_PRICE_MINOR": "1000000001"}, []string{"ABUSE_PRICE_MINOR=", "from 1 to 1000000000"}},
		{map[string]string{"ABUSE_PRICE_MINOR": "0.01"}, []string{"ABUSE_PRICE_MINOR=", "from 1 to 1000000000"}},
		{map[string]string{"JWT_SECRET": "short"}, []string{`JWT_SECRET="(hidden)"`, "at least 32 characters"}},
		{map[string]string{"MASTER_SEED": "abcd"}, []string{`MASTER_SEED="(hidden)"`, "64 hex characters"}},
		{map[string]string{"MASTER_SEED": strings.Repeat("zz", 32)}, []string{`MASTER_SEED="(hidden)"`, "64 hex characters"}},
		{map[string]string{"USDC_MINT": "not-base58!"}, []string{`USDC_MINT="not-base58!"`, "base58 Solana address"}},
		{map[string]string{"SOLANA_RPC_URL": "https://rpc.example.com"}, []string{`USDC_MINT=""`, "must name the USDC mint"}},
		{map[string]string{"CREDIT_COMMITMENT": "processed"}, []string{`CREDIT_COMMITMENT="processed"`, "finalized or confirmed"}},
		{map[string]string{"CHAIN_FINALIZE_SLOTS": "1001"}, []string{`CHAIN_FINALIZE_SLOTS="1001"`, "from 0 to 1000"}},
		{map[string]string{"CHAIN_FINALIZE_SLOTS": "-1"}, []string{"CHAIN_FINALIZE_SLOTS=", "from 0 to 1000"}},
		{map[string]string{"CHAIN_FINALIZE_SLOTS": "x"}, []string{"CHAIN_FINALIZE_SLOTS=", "from 0 to 1000"}},
		{map[string]string{"WORKERS": "yes"}, []string{`WORKERS="yes"`, "true or false"}},
		{map[string]string{"DEMO_BOTS": "51"}, []string{`DEMO_BOTS="51"`, "from 0 to 50"}},
		{map[string]string{"DEMO_BOTS": "-1"}, []string{"DEMO_BOTS=", "from 0 to 50"}},
		{map[string]string{"TOURNAMENT_MAX_PLAYERS": "1"}, []string{`TOURNAMENT_MAX_PLAYERS="1"`, "from 2 to 10000"}},
		{map[string]string{"TOURNAMENT_MAX_PLAYERS": "10001"}, []string{"TOURNAMENT_MAX_PLAYERS=", "from 2 to 10000"}},
		{map[string]string{"TOURNAMENT_CREATE_PER_DAY": "0"}, []string{`TOURNAMENT_CREATE_PER_DAY="0"`, "from 1 to 10000"}},
		{map[string]string{"TOURNAMENTS_SCHEDULED_MAX": "many"}, []string{`TOURNAMENTS_SCHEDULED_MAX="many"`, "from 1 to 1000000"}},
		{map[string]string{"TOURNAMENTS_SCHEDULED_MAX": "1000001"}, []string{"TOURNAMENTS_SCHEDULED_MAX=", "from 1 to 1000000"}},
		{map[string]string{"AUTH_RATE_LIMIT": "-1"}, []string{`AUTH_RATE_LIMIT="-1"`, "0 for no limit"}},
		{map[string]string{"TRUSTED_PROXIES": "10.0.0.0/33"}, []string{"TRUSTED_PROXIES=", "10.0.0.0/33", "IP addresses or CIDR ranges"}},
		{map[string]string{"TRUSTED_PROXIES": "proxy.example"}, []string{"TRUSTED_PROXIES=", "proxy.example", "IP addresses or CIDR ranges"}},
		{map[string]string{"CORS_ORIGINS": "https://app.example/path"}, []string{"CORS_ORIGINS=", "origins (scheme://host[:port])"}},
		{map[string]string{"MAX_CONNS_PER_IP": "0"}, []string{`MAX_CONNS_PER_IP="0"`, "at least 1"}},
		{map[string]string{"FEE_PAYER_DAILY_LAMPORTS": "-1"}, []string{`FEE_PAYER_DAILY_LAMPORTS="-1"`, "0 or more"}},
		{map[string]string{"FEE_PAYER_GLOBAL_DAILY_LAMPORTS": "2 SOL"}, []string{`FEE_PAYER_GLOBAL_DAILY_LAMPORTS="2 SOL"`, "0 or more"}},
		{map[string]string{"MAX_PRIORITY_FEE_MICROLAMPORTS": "999"}, []string{`MAX_PRIORITY_FEE_MICROLAMPORTS="999"`, "at least 1000"}},
		{map[string]string{"MAX_PRIORITY_FEE_MICROLAMPORTS": "-5"}, []string{"MAX_PRIORITY_FEE_MICROLAMPORTS=", "at least 1000"}},
		{map[string]string{"REFERRAL_BPS": "2000,500"}, []string{`REFERRAL_BPS="2000,500"`, "3 whole numbers of basis points"}},
		{map[string]string{"REFERRAL_BPS": "-1,0,0"}, []string{"REFERRAL_BPS=", "level 1", "from 0 to 10000"}},
		{map[string]string{"REFERRAL_BPS": "6000,3000,2000"}, []string{"REFERRAL_BPS=", "add up to 11000"}},
		{map[string]string{"POOL_CAP_MULTIPLE": "0"}, []string{`POOL_CAP_MULTIPLE="0"`, "from 1 to 1000"}},
		{map[string]string{"POOL_CAP_MULTIPLE": "1001"}, []string{"POOL_CAP_MULTIPLE=", "from 1 to 1000"}},
		{map[string]string{"LINK_BY_IP": "sometimes"}, []string{`LINK_BY_IP="sometimes"`, "true or false"}},
		{map[string]string{"REQUIRE_AGE_CONFIRMATION": "sometimes"}, []string{`REQUIRE_AGE_CONFIRMATION="sometimes"`, "true or false"}},
		{map[string]string{"MIN_AGE": "15"}, []string{`MIN_AGE="15"`, "from 16 to 25"}},
		{map[string]string{"MIN_AGE": "26"}, []string{"MIN_AGE=", "from 16 to 25"}},
		{map[string]string{"COUNTRY_HEADER": "CF-IPCountry"}, []string{`COUNTRY_HEADER="CF-IPCountry"`, "TRUSTED_PROXIES"}},
		{map[string]string{"TRUSTED_PROXIES": "10.0.0.0/8", "COUNTRY_HEADER": "CF IPCountry"}, []string{`COUNTRY_HEADER="CF IPCountry"`, "HTTP header name"}},
		{proxied(map[string]string{"RESTRICTED_COUNTRIES": "US,USA"}), []string{"RESTRICTED_COUNTRIES=", "USA", "ISO 3166-1 alpha-2"}},
		{proxied(map[string]string{"RESTRICTED_COUNTRIES": "U1"}), []string{"RESTRICTED_COUNTRIES=", "U1", "ISO 3166-1 alpha-2"}},
		{map[string]string{"RESTRICTED_COUNTRIES": "US"}, []string{"RESTRICTED_COUNTRIES=", "needs COUNTRY_HEADER"}},
		{map[string]string{"LOG_FORMAT": "xml"}, []string{`LOG_FORMAT="xml"`, "text or json"}},
		{map[string]string{"LOG_LEVEL": "loud"}, []string{`LOG_LEVEL="loud"`, "debug, info, warn or error"}},
		{map[string]string{"METRICS_ADDR": "9090"}, []string{`METRICS_ADDR="9090"`, "host:port", "off"}},
		// Every invalid variable is named, not only the first.
		{map[string]string{"ADDR": "x", "DEMO_BOTS": "x", "LOG_FORMAT": "x", "REFERRAL_BPS": "x"}, []string{"ADDR=", "DEMO_BOTS=", "LOG_FORMAT=", "REFERRAL_BPS="}},
	} {
		t.Run(fmt.Sprint(tc.env), func(t *testing.T) {
			c, err := load(tc.env)
			if err == nil {
				t.Fatalf("no error; got %+v", c)
			}
			for _, want := range tc.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("the error does not say %q: %v", want, err)
				}
			}
			for _, secret := range []string{"short", "abcd", "zzzz"} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("the error repeats a secret: %v", err)
				}
			}
		})
	}
}

// A variable read as anything but text refuses a value that is none of
// its kind, naming itself: env's parse errors are never dropped.
func TestLoadConfigRefusesGarbageInEveryTypedVariable(t *testing.T) {
	typed := 0
	for f := range reflect.TypeFor[environment]().Fields() {
		if f.Type.Kind() == reflect.String {
			continue
		}
		typed++
		name := f.Tag.Get("env")
		if _, err := load(map[string]string{name: "not-a-value"}); err == nil || !strings.Contains(err.Error(), name+"=") {
			t.Errorf("%s=not-a-value: got %v, want an error naming %s", name, err, name)
		}
	}
	if typed == 0 {
		t.Error("no variable of another type than text")
	}
}

// The age gate is on by default on a real chain and off on the embedded
// one; a restricted region needs a country header, believed only from
// trusted proxies.
func TestLoadConfigOfPlayerProtection(t *testing.T) {
	load := func(env map[string]string) (Config, error) {
		return LoadConfig(func(k string) string { return env[k] })
	}
	c, err := load(nil)
	if err != nil || c.Protection.RequireAge || c.Protection.MinAge != 18 || c.CountryHeader != "" || len(c.Protection.Restricted) != 0 {
		t.Fatalf("embedded chain defaults: %+v %v", c.Protection, err)
	}
	c, err = load(map[string]string{"SOLANA_RPC_URL": "https://api.devnet.solana.com"})
	if err != nil || !c.Protection.RequireAge {
		t.Fatalf("an external chain requires the age by default: %+v %v", c.Protection, err)
	}
	c, err = load(map[string]string{"COUNTRY_HEADER": "CF-IPCountry", "TRUSTED_PROXIES": "10.0.0.0/8",
		"RESTRICTED_COUNTRIES": "us, fr", "MIN_AGE": "21", "REQUIRE_AGE_CONFIRMATION": "true"})
	if err != nil || c.CountryHeader != "CF-IPCountry" || !reflect.DeepEqual(c.Protection.Restricted, []string{"US", "FR"}) ||
		c.Protection.MinAge != 21 || !c.Protection.RequireAge {
		t.Fatalf("configured: %+v %q %v", c.Protection, c.CountryHeader, err)
	}
	if _, err := load(map[string]string{"RESTRICTED_COUNTRIES": "US"}); err == nil || !strings.Contains(err.Error(), "COUNTRY_HEADER") {
		t.Errorf("restricted countries without a country header: %v", err)
	}
}

func TestReadAbuseOverrides(t *testing.T) {
	var got abuseOverrides
	if err := got.UnmarshalText([]byte("POST /lobbies=30, GET /games/live=1200")); err != nil ||
		!reflect.DeepEqual(got, abuseOverrides{"POST /lobbies": 30, "GET /games/live": 1200}) {
		t.Fatalf("read: %v %v", got, err)
	}
}

func TestLoadConfigNeedsTheMintOfAnExternalChain(t *testing.T) {
	_, err := LoadConfig(func(k string) string {
		return map[string]string{"SOLANA_RPC_URL": "https://rpc.example.com"}[k]
	})
	if err == nil || !strings.Contains(err.Error(), "USDC_MINT") {
		t.Fatalf("a custom SOLANA_RPC_URL without USDC_MINT: got %v, want an error naming USDC_MINT", err)
	}
}

func TestReadReferralBPS(t *testing.T) {
	good := map[string]referralBPS{"2000,500,200": {2000, 500, 200}, " 0, 0 ,0": {}, "10000,0,0": {10000, 0, 0}}
	for v, want := range good {
		var got referralBPS
		if err := got.UnmarshalText([]byte(v)); err != nil || got != want {
			t.Errorf("REFERRAL_BPS=%q: got %v, %v; want %v", v, got, err, want)
		}
	}
	for _, v := range []string{"2000,500", "2000,500,200,100", "a,b,c", "-1,0,0", "10001,0,0", "6000,3000,2000", "1.5,0,0"} {
		var got referralBPS
		if err := got.UnmarshalText([]byte(v)); err == nil {
			t.Errorf("REFERRAL_BPS=%q: no error", v)
		}
	}
}

func TestLocalURL(t *testing.T) {
	for addr, want := range map[string]string{
		"127.0.0.1:8080": "http://127.0.0.1:8080",
		"0.0.0.0:8080":   "http://127.0.0.1:8080",
		"[::]:8080":      "http://127.0.0.1:8080",
		"[::1]:9000":     "http://[::1]:9000",
		"10.1.2.3:80":    "http://10.1.2.3:80",
	} {
		tcp, err := net.ResolveTCPAddr("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		if got := LocalURL(tcp); got != want {
			t.Errorf("LocalURL(%s) = %s, want %s", addr, got, want)
		}
	}
}

// SOLANA_RPC_URL lists URLs tried in order; the cluster (and so the
// default USDC mint) is the one they name, and they may not name two.
func TestLoadConfigOfSeveralRPCURLs(t *testing.T) {
	load := func(v string) (Config, error) {
		return LoadConfig(func(k string) string { return map[string]string{"SOLANA_RPC_URL": v}[k] })
	}
	c, err := load(" https://api.devnet.solana.com , https://rpc.example.com/?api-key=k")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"https://api.devnet.solana.com", "https://rpc.example.com/?api-key=k"}; !reflect.DeepEqual(c.SolanaRPCURLs, want) ||
		c.ChainID() != "devnet" || c.USDCMint != defaultMint("devnet") || c.EmbeddedChain() {
		t.Fatalf("got %q, cluster %s, mint %s; want %q on devnet with its USDC", c.SolanaRPCURLs, c.ChainID(), c.USDCMint, want)
	}
	c, err = load("https://rpc.example.com,https://mainnet.helius-rpc.com/?api-key=k")
	if err != nil || c.ChainID() != "mainnet" || c.USDCMint != defaultMint("mainnet") {
		t.Fatalf("a custom URL before a mainnet one: cluster %s, mint %s, %v; want mainnet", c.ChainID(), c.USDCMint, err)
	}
	for _, v := range []string{
		"https://api.devnet.solana.com,https://api.mainnet-beta.solana.com", // two clusters
		"https://api.devnet.solana.com,ftp://x",
		"https://api.devnet.solana.com,https://api.devnet.solana.com",
		" , ",
	} {
		if _, err := load(v); err == nil || !strings.Contains(err.Error(), "SOLANA_RPC_URL=") {
			t.Errorf("SOLANA_RPC_URL=%q: got %v, want an error naming SOLANA_RPC_URL", v, err)
		}
	}
}
