package main

import (
	"testing"
	"time"
)

func TestLoadConfig(t *testing.T) {
	env := map[string]string{"WAGER_URL": "http://wager:8080", "WAGER_MAX_SPEND_MINOR": "20000", "WAGER_WALLET_KEY": "key", "WAGER_MCP_TOKEN": "tok"}
	cfg, err := loadConfig([]string{"-http", ":8090", "-max-spend-hour-minor", "30000"}, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	want := config{URL: "http://wager:8080", WalletKey: "key", HTTPToken: "tok", AppID: "wager-mcp", MaxSpendMinor: 20000, MaxSpendHourMinor: 30000, HTTPAddr: ":8090"}
	if cfg != want {
		t.Fatalf("got %+v, want %+v", cfg, want)
	}
	cfg, err = loadConfig(nil, func(string) string { return "" })
	if err != nil || cfg.URL != "http://localhost:8080" || cfg.MaxSpendMinor != defaultMaxSpendMinor || cfg.MaxSpendHourMinor != defaultMaxSpendHourMinor || cfg.HTTPAddr != "" {
		t.Fatalf("defaults: %+v %v", cfg, err)
	}
	for _, bad := range [][]string{{"-max-spend-minor", "x"}, {"-max-spend-minor", "-1"}, {"-nope"}, {"extra"}} {
		if _, err := loadConfig(bad, func(string) string { return "" }); err == nil {
			t.Errorf("%v: no error", bad)
		}
	}
	if _, err := newServer(config{URL: "http://localhost:8080", WalletKey: "not a key"}, time.Now); err == nil {
		t.Error("a bad wallet key: no error")
	}
}
