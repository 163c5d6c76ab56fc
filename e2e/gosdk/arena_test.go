package wager_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	wager "wager.example.com/sdk"
	"wager.example.com/sdk/api"
	"wager/db/dbtest"
	"wager/e2e/testserver"
)

// startServerAt is startServer with every service reading clk.
func startServerAt(t *testing.T, clk *testserver.Clock) *server {
	t.Helper()
	s := testserver.StartClocked(t, map[string]string{"DATABASE_URL": dbtest.Fresh(t)}, clk.Now)
	return &server{App: s.App, URL: s.URL}
}

// waitFor polls ok until it holds, failing the test when it does not
// within limit (a bound for a stalled server, not a measure).
func waitFor(t *testing.T, limit time.Duration, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(limit); !ok(); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within %v", what, limit)
		}
	}
}

// available returns the client's available platform balance.
func available(t *testing.T, c *wager.Client) int64 {
	t.Helper()
	r, err := c.API.GetWalletsMeBalanceWithResponse(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return r.JSON200.AvailableMinor
}

// Two bots of the SDK's example play a paid one-minute arena to its end:
// each joins (its fee locked), is paired again and again through the
// room, plays every game with FollowGame and Move, and gets the finished
// tournament back with itself in the standings; the prizes are paid to
// their balances. A spectator follows the room across broken sockets and
// receives every event once, in order, to tournament:finished. Joins the
// tournament refuses come back typed: full, over, not enough money, not
// entered.
func TestBotsPlayAnArenaToItsEnd(t *testing.T) {
	clk := &testserver.Clock{}
	s := startServerAt(t, clk)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()

	const fee = 100_000
	bots := []*wager.Client{s.newClient(t), s.newClient(t)}
	for _, c := range bots {
		fund(t, c, 1_000_000)
		if _, err := c.Deposit(ctx, 2*fee); err != nil {
			t.Fatalf("deposit: %v", err)
		}
	}
	organizer := s.newClient(t)
	two := int64(2)
	created, err := organizer.API.PostTournamentsWithResponse(ctx, nil, api.TournamentNewTournament{Name: "SDK arena", GameType: "rps",
		Settings: wager.Settings(map[string]any{"rounds": 1, "roundSeconds": 120}), EntryFeeMinor: fee,
		StartsAt: clk.Now().Add(time.Minute), DurationMinutes: 1, MaxPlayers: &two})
	if err != nil {
		t.Fatalf("create the arena: %v", err)
	}
	arena := created.JSON201
	if list, err := organizer.Tournaments(ctx, ""); err != nil || !slices.ContainsFunc(list, func(x api.Tournament) bool { return x.Id == arena.Id }) {
		t.Fatalf("Tournaments: %v %v, want the new arena", list, err)
	}

	killer := &connKiller{}
	spectator := s.newClient(t, wager.WithWebSocketDialer(&websocket.Dialer{NetDialContext: killer.dial, HandshakeTimeout: 10 * time.Second}))
	follow, err := spectator.FollowTournament(ctx, arena.Id)
	if err != nil {
		t.Fatalf("FollowTournament: %v", err)
	}
	followed := collect(follow.Events)

	results := make([]*api.TournamentDetail, len(bots))
	errs := make([]error, len(bots))
	var played sync.WaitGroup
	for i, c := range bots {
		played.Go(func() { results[i], errs[i] = playArena(ctx, c, arena.Id) })
	}
	detail := func() *api.TournamentDetail {
		d, err := organizer.Tournament(ctx, arena.Id)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	waitFor(t, 30*time.Second, "two players in the arena", func() bool { return detail().PlayerCount == 2 })

	tournamentRefusals(t, ctx, s, organizer, arena.Id, clk, fee)

	// The start; the spectator's socket breaks while the bots play.
	clk.AdvanceTo(arena.StartsAt.Add(time.Second))
	waitFor(t, 60*time.Second, "two games played by each bot", func() bool {
		d := detail()
		n := 0
		for _, st := range d.Standings {
			if st.Games >= 2 {
				n++
			}
		}
		return n == 2
	})
	killer.breakAll()
	// The end: the games running then finish, and so does the arena.
	clk.AdvanceTo(arena.EndsAt.Add(time.Second))
	played.Wait()

	prizes := checkBotsFinished(t, bots, results, errs)
	// Pool 200000, 1% fee: the prizes share 198000 (what floors leave
	// goes to the platform), paid to available balances.
	if prizes <= 0 || prizes > 198_000 {
		t.Errorf("prizes paid %d, want up to 198000", prizes)
	}
	if got := available(t, bots[0]) + available(t, bots[1]); got != 2*fee+prizes {
		t.Errorf("the bots' available balances: %d together, want %d (their deposits less the fees, plus the prizes)", got, 2*fee+prizes)
	}
	var closed *wager.TournamentClosedError
	if _, err := bots[0].JoinTournament(ctx, arena.Id); !errors.As(err, &closed) || closed.Reason != wager.TournamentOver || closed.Status != "finished" {
		t.Errorf("joining a finished arena: %v, want a *TournamentClosedError that says over", err)
	}

	select {
	case <-followed.done:
	case <-ctx.Done():
		t.Fatal("the spectator's events did not end with tournament:finished")
	}
	if err := follow.Err(); err != nil {
		t.Fatalf("the spectator's follow: %v", err)
	}
	if follow.Reconnects() < 1 {
		t.Errorf("Reconnects: %d, want at least 1", follow.Reconnects())
	}
	watched := followed.events()
	have, after, pairings := checkFollowedRecord(t, ctx, spectator, arena.Id, watched)
	// Followed once it is over: the finished tournament, and the end.
	followAfterTheEnd(t, ctx, spectator, arena.Id, watched[len(watched)-1].Seq)
	t.Logf("%d events after seq %d, %d pairings, %d reconnects; standings %+v; prizes %+v", len(have), after, pairings,
		follow.Reconnects(), results[0].Standings, results[0].Prizes)
}

// checkBotsFinished checks what PlayArena returned to each bot: the
// finished arena with the bot in its standings, 2 games or more played and
// none running. It returns the prizes the arena paid in all.
func checkBotsFinished(t *testing.T, bots []*wager.Client, results []*api.TournamentDetail, errs []error) int64 {
	t.Helper()
	for i, c := range bots {
		got := results[i]
		if errs[i] != nil || got == nil {
			t.Fatalf("bot %d: %v", i, errs[i])
		}
		if got.Status != "finished" {
			t.Errorf("bot %d: the arena ended %s, want finished", i, got.Status)
		}
		j := slices.IndexFunc(got.Standings, func(s api.TournamentStanding) bool { return s.UserId == c.UserID() })
		if j < 0 || got.Standings[j].Games < 2 || got.Standings[j].CurrentGameId != nil {
			t.Errorf("bot %d in the final standings %+v: want it there with 2 games or more, in none now", i, got.Standings)
		}
	}
	var prizes int64
	for _, p := range results[0].Prizes {
		prizes += p.AmountMinor
	}
	return prizes
}

// tournamentRefusals checks that the refusals of joins come back typed:
// the arena arenaID is full; another one costs more than a new player
// has; withdrawing from one you are not in.
func tournamentRefusals(t *testing.T, ctx context.Context, s *server, organizer *wager.Client, arenaID string, clk *testserver.Clock, fee int64) {
	t.Helper()
	late := s.newClient(t)
	_, err := late.JoinTournament(ctx, arenaID)
	var closed *wager.TournamentClosedError
	if !errors.As(err, &closed) || closed.Reason != wager.TournamentFull || closed.Err.Status != 409 {
		t.Errorf("joining a full arena: %v, want a *TournamentClosedError that says full", err)
	}
	other, err := organizer.API.PostTournamentsWithResponse(ctx, nil, api.TournamentNewTournament{Name: "Later", GameType: "rps",
		EntryFeeMinor: fee, StartsAt: clk.Now().Add(time.Hour), DurationMinutes: 5})
	if err != nil {
		t.Fatal(err)
	}
	_, err = late.JoinTournament(ctx, other.JSON201.Id)
	var poor *wager.InsufficientFundsError
	if !errors.As(err, &poor) || poor.NeededMinor != fee || poor.AvailableMinor != 0 {
		t.Errorf("joining without the fee: %v, want an *InsufficientFundsError of %d needed, 0 available", err, fee)
	}
	if _, err = late.WithdrawTournament(ctx, other.JSON201.Id); !errors.As(err, &closed) || closed.Reason != wager.TournamentNotEntered {
		t.Errorf("withdrawing from an arena one is not in: %v, want not-entered", err)
	}
}

// checkFollowedRecord checks that the spectator's events, watched, start
// with the joined arena and then are the tournament's record, in order,
// to tournament:finished with its prizes after two pairings or more. It
// returns the events after the first as seq and name, that first seq, and
// how many pairings there were.
func checkFollowedRecord(t *testing.T, ctx context.Context, spectator *wager.Client, arenaID string, watched []wager.TournamentEvent) (have []string,
	after int64, pairings int) {
	t.Helper()
	first := watched[0]
	if p, err := first.Payload(); err != nil || first.Name != wager.EventTournamentJoined || p.(*api.TournamentDetail).Id != arenaID {
		t.Fatalf("the first event: %s %v, want joined-tournament with the arena", first.Name, err)
	}
	after = first.Seq
	r, err := spectator.API.GetTournamentsByIdEventsWithResponse(ctx, arenaID, &api.GetTournamentsByIdEventsParams{After: &after})
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, e := range r.JSON200.Events {
		want = append(want, eventKey(e.Seq, e.Event))
	}
	for _, e := range watched[1:] {
		have = append(have, eventKey(e.Seq, e.Name))
		p, err := e.Payload()
		if err != nil {
			t.Errorf("event %d %s: %v", e.Seq, e.Name, err)
		}
		if _, ok := p.(*api.TournamentPaired); ok {
			pairings++
		}
	}
	if !slices.Equal(have, want) {
		t.Fatalf("events followed:\n%v\nwant the record after seq %d:\n%v", have, after, want)
	}
	last, _ := watched[len(watched)-1].Payload()
	if fin, ok := last.(*api.TournamentFinished); !ok || len(fin.Prizes) == 0 || pairings < 2 {
		t.Errorf("the last event %+v after %d pairings: want tournament:finished with its prizes, after 2 pairings or more", last, pairings)
	}
	return have, after, pairings
}

// followAfterTheEnd follows the finished arena again: the finished
// tournament at the last seq, and the end.
func followAfterTheEnd(t *testing.T, ctx context.Context, spectator *wager.Client, arenaID string, lastSeq int64) {
	t.Helper()
	again, err := spectator.FollowTournament(ctx, arenaID)
	if err != nil {
		t.Fatal(err)
	}
	var after2 []wager.TournamentEvent
	for ev := range again.Events {
		after2 = append(after2, ev)
	}
	if len(after2) != 1 || after2[0].Name != wager.EventTournamentJoined || after2[0].Seq != lastSeq {
		t.Errorf("following a finished arena: %+v, want only joined-tournament at the last seq", after2)
	} else if p, _ := after2[0].Payload(); p.(*api.TournamentDetail).Status != "finished" {
		t.Errorf("following a finished arena: joined with status %s", p.(*api.TournamentDetail).Status)
	}
}

// A bot whose first arena game nobody played (both bots let its round run
// out) is paused by the server; PlayArena sees it in the standings, joins
// again, and plays on to the end.
func TestArenaBotsReturnAfterAGameNobodyPlayed(t *testing.T) {
	clk := &testserver.Clock{}
	s := startServerAt(t, clk)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	organizer := s.newClient(t)
	created, err := organizer.API.PostTournamentsWithResponse(ctx, nil, api.TournamentNewTournament{Name: "Wake up", GameType: "rps",
		Settings: wager.Settings(map[string]any{"rounds": 1, "roundSeconds": 3}), StartsAt: clk.Now().Add(time.Minute), DurationMinutes: 1})
	if err != nil {
		t.Fatal(err)
	}
	arena := created.JSON201
	bots := []*wager.Client{s.newClient(t), s.newClient(t)}
	results := make([]*api.TournamentDetail, len(bots))
	errs := make([]error, len(bots))
	var played sync.WaitGroup
	for i, c := range bots {
		skipped := false
		play := func(ctx context.Context, gameID string) error {
			if !skipped {
				skipped = true
				return nil // not there: the round runs out
			}
			return playRPS(c)(ctx, gameID)
		}
		played.Go(func() { results[i], errs[i] = c.PlayArena(ctx, arena.Id, play) })
	}
	detail := func() *api.TournamentDetail {
		d, err := organizer.Tournament(ctx, arena.Id)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	waitFor(t, 30*time.Second, "two players in the arena", func() bool { return detail().PlayerCount == 2 })
	clk.AdvanceTo(arena.StartsAt.Add(time.Second))
	waitFor(t, 60*time.Second, "a game played after the one nobody played", func() bool {
		n := 0
		for _, st := range detail().Standings {
			if st.Games >= 2 {
				n++
			}
		}
		return n == 2
	})
	clk.AdvanceTo(arena.EndsAt.Add(time.Second))
	played.Wait()
	for i, c := range bots {
		if errs[i] != nil || results[i] == nil || results[i].Status != "finished" {
			t.Fatalf("bot %d: %+v %v, want the finished arena", i, results[i], errs[i])
		}
		j := slices.IndexFunc(results[i].Standings, func(s api.TournamentStanding) bool { return s.UserId == c.UserID() })
		// Paused at the end says nothing of the return: the clock's jump
		// to the end can time out a game the bots were paired into just
		// before it, before they moved.
		if st := results[i].Standings[j]; st.Games < 2 || st.Losses < 1 {
			t.Errorf("bot %d's final line %+v: want the game nobody played as a loss and a game after it", i, st)
		}
	}
}

// playArena plays the rock, paper, scissors arena id to its end and
// returns it as it ended (as the SDK's Example_arena does).
func playArena(ctx context.Context, c *wager.Client, id string) (*api.TournamentDetail, error) {
	return c.PlayArena(ctx, id, playRPS(c))
}

// playRPS plays a game of rock, paper, scissors to its end, a move at
// random in each round.
func playRPS(c *wager.Client) wager.GamePlayer {
	moves := []string{"rock", "paper", "scissors"}
	return func(ctx context.Context, gameID string) error {
		f, err := c.FollowGame(ctx, gameID)
		var ae *wager.APIError
		if errors.As(err, &ae) && ae.Code == "GAME_NOT_ACTIVE" {
			return nil // over already
		}
		if err != nil {
			return err
		}
		for ev := range f.Events { // closes after game:completed
			if ev.Name == wager.EventJoined || ev.Name == "game:rps:round:start" {
				c.Move(ctx, gameID, moves[rand.IntN(len(moves))]) // a second move in a round is refused: no harm
			}
		}
		return f.Err()
	}
}
