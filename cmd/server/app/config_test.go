package app

import (
	"net"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestLoadConfigDefaults(t *testing.T) {
	c, err := LoadConfig(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	if c.Addr != ":8080" || c.DatabaseURL != DefaultDatabaseURL || c.MinSDKVersion != "1.0.0" ||
		!c.SDKGraceUntil.IsZero() || len(c.SolanaRPCURLs) != 0 || !c.DevFaucet ||
		c.AbuseThreshold != 600 || c.AbuseWindow != time.Minute || len(c.AdminWallets) != 0 ||
		c.FeePayerDailyLamports != 20_000_000 || c.FeePayerGlobalDailyLamports != 2_000_000_000 ||
		c.TournamentCreatePerDay != 5 || c.TournamentsScheduledMax != 200 {
		t.Fatalf("defaults: got %+v", c)
	}
	c, err = LoadConfig(func(k string) string {
		return map[string]string{"SOLANA_RPC_URL": "https://api.devnet.solana.com"}[k]
	})
	if err != nil || c.DevFaucet {
		t.Fatalf("DEV_FAUCET defaults to false with an external chain: got %v, %v", c.DevFaucet, err)
	}
}

func TestLoadConfigNamesInvalidVariables(t *testing.T) {
	for name, value := range map[string]string{
		"ADDR":                            "8080",
		"DATABASE_URL":                    "mysql://x",
		"ADMIN_WALLETS":                   "not-a-wallet",
		"MIN_SDK_VERSION":                 "1.0",
		"SDK_GRACE_UNTIL":                 "tomorrow",
		"SOLANA_RPC_URL":                  "ftp://x",
		"DEV_FAUCET":                      "maybe",
		"ABUSE_THRESHOLD":                 "0",
		"ABUSE_WINDOW":                    "10ms",
		"JWT_SECRET":                      "short",
		"LOG_FORMAT":                      "xml",
		"REFERRAL_BPS":                    "2000,500",
		"FEE_PAYER_DAILY_LAMPORTS":        "-1",
		"FEE_PAYER_GLOBAL_DAILY_LAMPORTS": "2 SOL",
		"REQUIRE_AGE_CONFIRMATION":        "sometimes",
		"MIN_AGE":                         "12",
		"COUNTRY_HEADER":                  "CF-IPCountry", // without TRUSTED_PROXIES nobody could send it
		"RESTRICTED_COUNTRIES":            "USA",
		"CORS_ORIGINS":                    "https://app.example/path",
		"TOURNAMENT_CREATE_PER_DAY":       "0",
		"TOURNAMENTS_SCHEDULED_MAX":       "many",
	} {
		_, err := LoadConfig(func(k string) string {
			if k == name {
				return value
			}
			return ""
		})
		if err == nil || !strings.Contains(err.Error(), name+"=") {
			t.Errorf("%s=%q: got %v, want an error naming %s", name, value, err, name)
		}
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

func TestParseAbuseOverrides(t *testing.T) {
	got, err := parseAbuseOverrides("POST /lobbies=30, GET /games/live=1200")
	if err != nil || !reflect.DeepEqual(got, map[string]int{"POST /lobbies": 30, "GET /games/live": 1200}) {
		t.Fatalf("parse: %v %v", got, err)
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

func TestParseReferralBPS(t *testing.T) {
	good := map[string][3]int64{"2000,500,200": {2000, 500, 200}, " 0, 0 ,0": {}, "10000,0,0": {10000, 0, 0}}
	for v, want := range good {
		if got, err := parseReferralBPS(v); err != nil || got != want {
			t.Errorf("parseReferralBPS(%q) = %v, %v; want %v", v, got, err, want)
		}
	}
	for _, v := range []string{"2000,500", "2000,500,200,100", "a,b,c", "-1,0,0", "10001,0,0", "6000,3000,2000", "1.5,0,0"} {
		if _, err := parseReferralBPS(v); err == nil {
			t.Errorf("parseReferralBPS(%q): no error", v)
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
