package main

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestSpendingCapWindow(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	paid := int64(0) // automatic 402 payments
	c := &spendingCap{perCall: 100, perHour: 250, now: func() time.Time { return now }, paidByClient: func() int64 { return paid }}

	steps := []struct {
		what    string
		advance time.Duration
		amount  int64
		paid    int64
		refused string // part of the refusal, "" when allowed
	}{
		{"nothing costs nothing", 0, 0, 0, ""},
		{"over the cap per call", 0, 101, 0, "per call"},
		{"at the cap per call", 0, 100, 0, ""},
		{"second", 10 * time.Minute, 100, 0, ""},
		{"third would pass the hour", 10 * time.Minute, 100, 0, "per hour"},
		{"automatic payments count", 0, 50, 1, "per hour"},
		{"the first left the window", 41 * time.Minute, 100, 0, ""},
	}
	for _, s := range steps {
		now = now.Add(s.advance)
		paid = s.paid
		release, err := c.reserve("a test", s.amount)
		switch {
		case s.refused == "" && err != nil:
			t.Fatalf("%s: refused %v, want allowed", s.what, err)
		case s.refused != "" && (err == nil || !strings.Contains(err.Error(), s.refused)):
			t.Fatalf("%s: got %v, want a refusal %q", s.what, err, s.refused)
		case s.refused != "":
			var r *spendRefused
			if !errors.As(err, &r) || release != nil {
				t.Fatalf("%s: %T %v", s.what, err, err)
			}
		}
	}
	if got := c.lastHour(); got != 200 {
		t.Fatalf("last hour: %d, want 200", got)
	}
	// A refused call gives its reservation back.
	release, err := c.reserve("a test", 50)
	if err != nil {
		t.Fatal(err)
	}
	release()
	if got := c.lastHour(); got != 200 {
		t.Fatalf("after a release: %d, want 200", got)
	}
}

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
