package main

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"wager/chain/rpcfaults"
	"wager/e2e/faults"
)

func TestStateCountsByKindThenState(t *testing.T) {
	moves := []faults.Movement{
		{Kind: "deposit", Status: "confirmed"}, {Kind: "tip", Status: "confirmed"}, {Kind: "deposit", Status: "failed"},
		{Kind: "deposit", Status: "confirmed"}, {Kind: "deposit", Status: "submitted"}, {Kind: "sweep", Status: "confirmed"},
	}
	want := []StateCount{{"deposit", "confirmed", 2}, {"deposit", "failed", 1}, {"deposit", "submitted", 1},
		{"sweep", "confirmed", 1}, {"tip", "confirmed", 1}}
	if got := stateCounts(moves); !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if got := stateCounts(nil); len(got) != 0 {
		t.Errorf("no movements: got %+v", got)
	}
}

func TestRPCUsePerMovement(t *testing.T) {
	s := rpcfaults.Stats{Methods: map[string]rpcfaults.Calls{
		"sendTransaction":      {Calls: 30, Dropped: 10, TooMany: 2},
		"getSignatureStatuses": {Calls: 90, Hidden: 7, Unavailable: 3},
	}}
	u := rpcUse(s, 20)
	if u.Calls != 120 || u.Movements != 20 || u.PerMovement != 6 {
		t.Errorf("calls %d, movements %d, per movement %v; want 120, 20, 6", u.Calls, u.Movements, u.PerMovement)
	}
	want := []MethodCalls{{"getSignatureStatuses", 90, 4.5}, {"sendTransaction", 30, 1.5}}
	if !reflect.DeepEqual(u.ByMethod, want) {
		t.Errorf("by method: got %+v, want %+v", u.ByMethod, want)
	}
	if f := u.Faults; f.Dropped != 10 || f.TooMany != 2 || f.Unavailable != 3 || f.Hidden != 7 {
		t.Errorf("faults: %+v", f)
	}
	if z := rpcUse(s, 0); z.PerMovement != 0 || z.ByMethod[0].PerMovement != 0 {
		t.Errorf("no movement: %+v, want 0 per movement, not a division by zero", z)
	}
}

func TestFeeSummary(t *testing.T) {
	for _, c := range []struct {
		name string
		fees []int64
		want FeeSummary
	}{
		{"none", nil, FeeSummary{}},
		{"one", []int64{5000}, FeeSummary{1, 5000, 5000, 5000, 5000}},
		// p50 of an even count is the lower middle (nearest rank).
		{"four", []int64{10000, 5000, 5000, 6000}, FeeSummary{4, 26000, 6500, 5000, 10000}},
		{"odd", []int64{7000, 5000, 5001}, FeeSummary{3, 17001, 5667, 5001, 7000}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := feeSummary(c.fees)
			got.MeanLamports = float64(int64(got.MeanLamports + 0.5))
			if got != c.want {
				t.Errorf("got %+v, want %+v", got, c.want)
			}
		})
	}
}

func TestFaultsTableShowsEveryFigure(t *testing.T) {
	rep := &Report{Scenario: "rpc-faults", Faults: &FaultsResult{Seed: 3, FinalizeSlots: 10, DurationSeconds: 120, DrainSeconds: 14,
		GamesPerMinute: 200, IntentsPerMinute: 50, GamesStarted: 400, GamesCompleted: 398, Started: 100,
		Ended: map[string]int{"final": 99, "failed (409)": 1}, ByState: []StateCount{{"deposit", "confirmed", 25}},
		Unfinished: []string{"intent x (deposit) submitted"}, RPC: rpcUse(rpcfaults.Stats{Methods: map[string]rpcfaults.Calls{"sendTransaction": {Calls: 50}}}, 25),
		Fees: feeSummary([]int64{5000, 7000})}}
	var b bytes.Buffer
	if err := faultsTable(rep).Write(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"seed 3", "400 / 398 / 0", "ended final", "deposit confirmed", "not final at the end", "intent x (deposit) submitted",
		"2.0 (50 calls, 25 movements)", "6000 / 5000 / 7000 (2 transactions, 12000 in all)"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the table lacks %q:\n%s", want, b.String())
		}
	}
}
