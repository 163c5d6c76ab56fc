package main

import (
	"strings"
	"testing"

	"github.com/gagliardetto/solana-go"
)

// depositor returns a new wallet with usdc minor units of platform balance.
func depositor(t *testing.T, url string, usdc int64) solana.PrivateKey {
	t.Helper()
	key := newWallet(t)
	fund(t, url, key, usdc+1_000_000)
	if _, err := sdkClient(t, url, key).Deposit(t.Context(), usdc); err != nil {
		t.Fatalf("deposit: %v", err)
	}
	return key
}

// TestStakeChangesAreCapped is the attack of an agent that queues within
// the caps and then asks for a bigger stake, or another lobby: every stake
// it is queued for is checked against the caps, so what is locked never
// passes them, and the spending shown is what was really committed.
func TestStakeChangesAreCapped(t *testing.T) {
	url := startWager(t, nil)
	a := connect(t, url, depositor(t, url, 10_000_000), 1_000_000, 2_000_000)    // 1 USDC a call, 2 an hour
	b := connect(t, url, depositor(t, url, 10_000_000), 10_000_000, 100_000_000) // the opponent
	find := func(ag agent, stake int64, settings map[string]any) findGameOutput {
		t.Helper()
		args := map[string]any{"stakeMinor": stake}
		if settings != nil {
			args["settings"] = settings
		}
		return callOK[findGameOutput](t, ag, "find_or_create_game", args)
	}
	// state checks a's platform balance and the spending it is shown.
	state := func(when string, available, locked, spent int64) {
		t.Helper()
		got := callOK[balanceOutput](t, a, "get_balance", map[string]any{})
		if got.Balance.AvailableMinor != available || got.Balance.LockedMinor != locked || got.Spending.SpentLastHourMinor != spent {
			t.Fatalf("%s: available %d, locked %d, spent last hour %d; want %d, %d, %d", when, got.Balance.AvailableMinor,
				got.Balance.LockedMinor, got.Spending.SpentLastHourMinor, available, locked, spent)
		}
	}
	// play has b join a's queue at stake and settings, and a resign the
	// game: a loses the stake.
	play := func(stake int64, settings map[string]any) {
		t.Helper()
		g := find(b, stake, settings)
		if g.Status != "matched" {
			t.Fatalf("b at a's stake %d: %+v, want matched with a", stake, g)
		}
		if r := callOK[map[string]any](t, a, "submit_move", map[string]any{"gameId": g.GameID, "resign": true}); r["accepted"] != true {
			t.Fatalf("a resigns: %v", r)
		}
	}

	if q := find(a, 0, nil); q.Status != "queued" {
		t.Fatalf("a free game: %+v", q)
	}
	// Queued for a free game, a asks for 8 USDC: over the cap per call.
	if res := a.call(t, "find_or_create_game", map[string]any{"stakeMinor": 8_000_000}); !res.IsError ||
		!strings.Contains(text(res), "SPENDING_CAP") {
		t.Errorf("a stake of 8 USDC while queued: %s, want a SPENDING_CAP refusal", text(res))
	}
	if g := find(b, 8_000_000, nil); g.Status == "matched" {
		t.Errorf("b found a waiting at 8 USDC: %+v", g)
	}
	state("after the refused 8 USDC", 10_000_000, 0, 0)

	// Within the cap; the same stake at another lobby counts once; a
	// smaller one gives the bigger one back.
	if q := find(a, 1_000_000, nil); q.Status != "queued" {
		t.Fatalf("1 USDC: %+v", q)
	}
	state("queued at 1 USDC", 10_000_000, 0, 1_000_000)
	if q := find(a, 1_000_000, map[string]any{"rounds": 5}); q.Status != "queued" {
		t.Fatalf("1 USDC at another lobby: %+v", q)
	}
	state("queued at 1 USDC at another lobby", 10_000_000, 0, 1_000_000)
	if q := find(a, 600_000, nil); q.Status != "queued" {
		t.Fatalf("0.6 USDC: %+v", q)
	}
	state("moved to 0.6 USDC", 10_000_000, 0, 600_000)
	play(600_000, nil)
	state("after losing 0.6 USDC", 9_400_000, 0, 600_000)

	// The stake of a game that started stays counted; the next one counts
	// on top of it, at one lobby or another.
	find(a, 1_000_000, nil)
	find(a, 1_000_000, map[string]any{"rounds": 7})
	state("queued at 1 USDC after a game", 9_400_000, 0, 1_600_000)
	play(1_000_000, map[string]any{"rounds": 7})
	state("after losing 1 USDC", 8_400_000, 0, 1_600_000)

	// 0.4 USDC is left of the hour: more is refused, a smaller stake is
	// taken, and a bigger one is refused while queued for it.
	if msg := a.callErr(t, "find_or_create_game", map[string]any{"stakeMinor": 500_000}); !strings.Contains(msg, "per hour") {
		t.Fatalf("0.5 USDC with 0.4 left: %q, want a refusal per hour", msg)
	}
	if q := find(a, 400_000, nil); q.Status != "queued" {
		t.Fatalf("0.4 USDC: %+v", q)
	}
	if msg := a.callErr(t, "find_or_create_game", map[string]any{"stakeMinor": 1_000_000}); !strings.Contains(msg, "per hour") {
		t.Fatalf("1 USDC while queued at 0.4: %q, want a refusal per hour", msg)
	}
	state("queued at 0.4 USDC", 8_400_000, 0, 2_000_000)
	play(400_000, nil)
	state("after losing 0.4 USDC: the whole hour's cap and no more", 8_000_000, 0, 2_000_000)
}
