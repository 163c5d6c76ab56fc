package main

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"wager.example.com/sdk/api"
)

// An agent whose player took a time-out, or reached a limit, is told by
// the tool error what stopped it and until when, not just that it failed.
func TestToolErrorsSayWhichLimitStoppedThemAndUntilWhen(t *testing.T) {
	url := startWager(t, nil)
	key, other := depositor(t, url, 5_000_000), depositor(t, url, 5_000_000)
	a, b := connect(t, url, key, 10_000_000, 100_000_000), connect(t, url, other, 10_000_000, 100_000_000)
	player := sdkClient(t, url, key)

	// A game lost, then a daily loss limit at what was lost: the next
	// stake is refused until the loss leaves the day.
	lost := time.Now()
	if g := callOK[findGameOutput](t, a, "find_or_create_game", map[string]any{"stakeMinor": 1_000_000}); g.Status != "queued" {
		t.Fatalf("a queues: %+v", g)
	}
	g := callOK[findGameOutput](t, b, "find_or_create_game", map[string]any{"stakeMinor": 1_000_000})
	if g.Status != "matched" {
		t.Fatalf("b joins: %+v", g)
	}
	callOK[map[string]any](t, a, "submit_move", map[string]any{"gameId": g.GameID, "resign": true})
	day := int64(1_000_000)
	if _, err := player.API.PutUsersMeLimitsWithResponse(t.Context(), nil, api.LimitsRequest{LossMinor: &api.LimitWindowsRequest{Day: &day}}); err != nil {
		t.Fatal(err)
	}
	msg := a.callErr(t, "find_or_create_game", map[string]any{"stakeMinor": 500_000})
	m := regexp.MustCompile(`^LIMIT_EXCEEDED \(HTTP 409\): .*; limit: lossMinor\.day; resetsAt: (\S+)$`).FindStringSubmatch(msg)
	if m == nil {
		t.Fatalf("the tool error past a loss limit: %q", msg)
	}
	at, err := time.Parse(time.RFC3339, m[1])
	if err != nil || at.Before(lost.Add(24*time.Hour-time.Minute)) || at.After(time.Now().Add(24*time.Hour)) {
		t.Errorf("resetsAt %s: want 24 hours after the stake (%v)", m[1], err)
	}

	// A time-out: the end it names.
	hours := int64(48)
	r, err := player.API.PostUsersMeExclusionWithResponse(t.Context(), nil, api.ProtectionExclusionRequest{Kind: "timeout", Hours: &hours})
	if err != nil || r.JSON201 == nil || r.JSON201.Until == nil {
		t.Fatalf("time-out: %v", err)
	}
	until := r.JSON201.Until.UTC().Format(time.RFC3339)
	if msg := a.callErr(t, "find_or_create_game", map[string]any{"stakeMinor": 500_000}); !strings.HasPrefix(msg, "SELF_EXCLUDED (HTTP 403): ") ||
		!strings.HasSuffix(msg, "; until: "+until) {
		t.Errorf("the tool error during a time-out: %q, want the code and until %s", msg, until)
	}
	// Free games go on.
	if g := callOK[findGameOutput](t, a, "find_or_create_game", map[string]any{"stakeMinor": 0}); g.Status != "queued" && g.Status != "matched" {
		t.Errorf("a free game during the time-out: %+v", g)
	}
}
