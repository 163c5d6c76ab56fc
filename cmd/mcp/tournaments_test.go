package main

import (
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"wager.example.com/sdk/api"
)

// newTournament schedules a tournament an hour ahead with an entry fee,
// as a new user; agents may enter it unless people is set.
func newTournament(t *testing.T, url, name string, fee int64, people ...bool) string {
	t.Helper()
	c := sdkClient(t, url, newWallet(t))
	agents := len(people) == 0 || !people[0]
	r, err := c.API.PostTournamentsWithResponse(t.Context(), nil, api.TournamentNewTournament{Name: name, GameType: "rps",
		EntryFeeMinor: fee, StartsAt: time.Now().Add(time.Hour), DurationMinutes: 10, AgentsAllowed: &agents})
	if err != nil {
		t.Fatalf("create tournament %s: %v", name, err)
	}
	return r.JSON201.Id
}

// The attack of an agent that joins tournaments whose entry fees pass the
// spending cap, one at a time or over the hour: each join is checked
// against the cap before anything is locked, and refused over it with
// nothing moved. Joining again while in pays nothing and counts
// nothing; a refund before the start gives the fee back to the cap.
func TestTournamentEntryFeesAreCapped(t *testing.T) {
	url := startWager(t, nil)
	key := depositor(t, url, 1_000_000)
	a := connect(t, url, key, 150_000, 250_000)
	costly := newTournament(t, url, "Costly", 200_000)
	first, second, third := newTournament(t, url, "First", 100_000), newTournament(t, url, "Second", 100_000), newTournament(t, url, "Third", 100_000)

	state := func(when string, available, spent int64) {
		t.Helper()
		got := callOK[balanceOutput](t, a, "get_balance", map[string]any{})
		if got.Balance.AvailableMinor != available || got.Spending.SpentLastHourMinor != spent {
			t.Fatalf("%s: available %d, spent last hour %d; want %d and %d", when, got.Balance.AvailableMinor,
				got.Spending.SpentLastHourMinor, available, spent)
		}
	}
	entrants := func(id string) int64 {
		return callOK[tournamentOutput](t, a, "get_tournament", map[string]any{"tournamentId": id}).PlayerCount
	}

	// A fee over the cap per call.
	if msg := a.callErr(t, "join_tournament", map[string]any{"tournamentId": costly}); !strings.HasPrefix(msg, "SPENDING_CAP") ||
		!strings.Contains(msg, "per call") || !strings.Contains(msg, "nothing was spent") {
		t.Fatalf("a fee over the cap per call: %q", msg)
	}
	if n := entrants(costly); n != 0 {
		t.Fatalf("the refused entry is in the tournament: %d players", n)
	}
	state("after a refused fee", 1_000_000, 0)

	// Within the caps; again while in pays and counts nothing.
	if e := callOK[api.TournamentEntry](t, a, "join_tournament", map[string]any{"tournamentId": first}); e.LockedMinor != 100_000 || e.Status != "joined" {
		t.Fatalf("join within the caps: %+v", e)
	}
	if e := callOK[api.TournamentEntry](t, a, "join_tournament", map[string]any{"tournamentId": first}); e.LockedMinor != 0 {
		t.Fatalf("join again: %+v, want nothing locked", e)
	}
	callOK[api.TournamentEntry](t, a, "join_tournament", map[string]any{"tournamentId": second})
	state("after two entries", 800_000, 200_000)

	// A third passes the hour's cap.
	if msg := a.callErr(t, "join_tournament", map[string]any{"tournamentId": third}); !strings.HasPrefix(msg, "SPENDING_CAP") ||
		!strings.Contains(msg, "per hour") {
		t.Fatalf("a fee over the cap per hour: %q", msg)
	}
	if n := entrants(third); n != 0 {
		t.Fatalf("the refused entry is in the tournament: %d players", n)
	}
	state("after a fee over the hour's cap", 800_000, 200_000)

	// A refund before the start makes room again.
	if e := callOK[api.TournamentEntry](t, a, "withdraw_tournament", map[string]any{"tournamentId": second}); e.RefundedMinor != 100_000 || e.Status != "withdrawn" {
		t.Fatalf("withdraw before the start: %+v", e)
	}
	state("after the refund", 900_000, 100_000)
	callOK[api.TournamentEntry](t, a, "join_tournament", map[string]any{"tournamentId": third})
	state("after the third entry", 800_000, 200_000)
}

// An agent that lists, reads and joins tournaments: list_tournaments
// shows them, get_tournament its own line once in; refusals carry their
// codes (full, not enough money, player protection's limit with when it
// resets) and give the cap back.
func TestTournamentTools(t *testing.T) {
	url := startWager(t, nil)
	key := depositor(t, url, 1_000_000)
	a := connect(t, url, key, 1_000_000, 5_000_000)
	readOnly := connect(t, url, nil, 1_000_000, 5_000_000)
	open := newTournament(t, url, "Open", 100_000)

	list := callOK[tournamentsOutput](t, readOnly, "list_tournaments", map[string]any{})
	if !slices.ContainsFunc(list.Tournaments, func(x api.Tournament) bool { return x.Id == open && x.EntryFeeMinor == 100_000 }) {
		t.Fatalf("list_tournaments: %+v, want the open tournament", list)
	}
	if got := callOK[tournamentsOutput](t, readOnly, "list_tournaments", map[string]any{"status": "finished"}); len(got.Tournaments) != 0 {
		t.Errorf("finished tournaments on a new service: %+v", got)
	}
	if msg := readOnly.callErr(t, "join_tournament", map[string]any{"tournamentId": open}); !strings.Contains(msg, "WALLET_REQUIRED") {
		t.Errorf("join without a wallet: %q", msg)
	}
	if msg := readOnly.callErr(t, "get_tournament", map[string]any{"tournamentId": "nope"}); !strings.HasPrefix(msg, "VALIDATION_ERROR") {
		t.Errorf("get_tournament of no id: %q", msg)
	}

	// An arena for people: the agent does not enter it, and nothing is
	// spent.
	people := newTournament(t, url, "People only", 100_000, true)
	if msg := a.callErr(t, "join_tournament", map[string]any{"tournamentId": people}); !strings.HasPrefix(msg, "AGENTS_NOT_ALLOWED") {
		t.Errorf("join an arena for people: %q", msg)
	}
	if got := callOK[tournamentOutput](t, a, "get_tournament", map[string]any{"tournamentId": people}); got.PlayerCount != 0 || got.AgentsAllowed {
		t.Errorf("the arena for people after the agent's try: %d players, agentsAllowed %v", got.PlayerCount, got.AgentsAllowed)
	}

	if me := callOK[api.MyProfile](t, a, "declare_bot", map[string]any{}); !me.Bot {
		t.Errorf("declare_bot: %+v", me)
	}
	callOK[api.TournamentEntry](t, a, "join_tournament", map[string]any{"tournamentId": open})
	got := callOK[tournamentOutput](t, a, "get_tournament", map[string]any{"tournamentId": open})
	if got.Status != "scheduled" || got.PlayerCount != 1 || got.You == nil || got.You.UserId != a.srv.client.UserID() || got.You.Games != 0 {
		t.Fatalf("get_tournament once in: %+v (you %+v)", got.TournamentDetail, got.You)
	}
	if got := callOK[tournamentOutput](t, readOnly, "get_tournament", map[string]any{"tournamentId": open}); got.You != nil || len(got.Standings) != 1 {
		t.Errorf("get_tournament without a wallet: %+v", got)
	}

	// Full: a tournament of two with two in it.
	two := int64(2)
	c := sdkClient(t, url, newWallet(t))
	r, err := c.API.PostTournamentsWithResponse(t.Context(), nil, api.TournamentNewTournament{Name: "Pair", GameType: "rps",
		StartsAt: time.Now().Add(time.Hour), DurationMinutes: 10, MaxPlayers: &two})
	if err != nil {
		t.Fatal(err)
	}
	pair := r.JSON201.Id
	for range 2 {
		if _, err := sdkClient(t, url, newWallet(t)).JoinTournament(t.Context(), pair); err != nil {
			t.Fatal(err)
		}
	}
	if msg := a.callErr(t, "join_tournament", map[string]any{"tournamentId": pair}); !strings.HasPrefix(msg, "CONFLICT (HTTP 409)") ||
		!strings.HasSuffix(msg, "; reason: full") {
		t.Errorf("join a full tournament: %q", msg)
	}

	// Not enough money: the cap is given back.
	poor := connect(t, url, newWallet(t), 1_000_000, 5_000_000)
	if msg := poor.callErr(t, "join_tournament", map[string]any{"tournamentId": open}); !strings.HasPrefix(msg, "INSUFFICIENT_FUNDS (HTTP 409)") ||
		!strings.HasSuffix(msg, "; neededMinor: 100000; availableMinor: 0") {
		t.Errorf("join without the fee: %q", msg)
	}
	if spent := poor.srv.cap.SpentLastHour(); spent != 0 {
		t.Errorf("a refused entry counts %d against the cap", spent)
	}

	// A maximum stake under the fee: an entry is a stake.
	maxStake := int64(50_000)
	if _, err := sdkClient(t, url, key).API.PutUsersMeLimitsWithResponse(t.Context(), nil, api.LimitsRequest{StakeMaxMinor: &maxStake}); err != nil {
		t.Fatal(err)
	}
	other := newTournament(t, url, "Other", 100_000)
	msg := a.callErr(t, "join_tournament", map[string]any{"tournamentId": other})
	if !regexp.MustCompile(`^LIMIT_EXCEEDED \(HTTP 409\): .*; limit: stakeMaxMinor; resetsAt: none`).MatchString(msg) {
		t.Errorf("join over the maximum stake: %q", msg)
	}
	if spent := a.srv.cap.SpentLastHour(); spent != 100_000 {
		t.Errorf("after a refused entry the cap counts %d, want the first entry's 100000", spent)
	}
}
