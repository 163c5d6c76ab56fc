package app_test

import (
	"testing"
	"time"

	"wager.example.com/sdk/api"
	"wager/cmd/server/bots"
	"wager/e2e/testserver"
)

// With DEMO_BOTS, a free 10-minute arena is always scheduled or running,
// and the bots that play among themselves are in it: a newcomer joins it
// at once, is paired when it starts, and the bots play their arena games
// through the API to the end; the next arena is scheduled meanwhile.
func TestDemoBotsKeepAnArenaAndPlayInIt(t *testing.T) {
	clk := &testserver.Clock{}
	srv := testserver.StartClocked(t, map[string]string{"DEMO_BOTS": "3"}, clk.Now)
	ctx := t.Context()
	newcomer := newClient(t, srv.URL)

	// A demo arena is scheduled, with the two bots that play among
	// themselves in it (the third stays free for people).
	var arena api.Tournament
	waitFor(t, 30*time.Second, "a scheduled demo arena with two bots in it", func() bool {
		r, err := newcomer.API.GetTournamentsWithResponse(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range *r.JSON200 {
			if x.Name == bots.ArenaName && x.Status == "scheduled" && x.EntryFeeMinor == 0 && x.PlayerCount == 2 {
				arena = x
				return true
			}
		}
		return false
	})
	if d := arena.EndsAt.Sub(arena.StartsAt); d != bots.ArenaMinutes*time.Minute {
		t.Errorf("the demo arena lasts %v", d)
	}
	if _, err := newcomer.API.PostTournamentsByIdJoinWithResponse(ctx, arena.Id, nil); err != nil {
		t.Fatalf("the newcomer joins: %v", err)
	}
	// Its socket in the arena's room, as its arena page would hold: the
	// arena pairs only entrants with one.
	room, err := newcomer.FollowTournament(ctx, arena.Id)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for range room.Events {
		}
	}()

	// It starts: three players, one game and one waiting.
	clk.AdvanceTo(arena.StartsAt.Add(time.Second))
	detail := func() *api.TournamentDetail {
		r, err := newcomer.API.GetTournamentsByIdWithResponse(ctx, arena.Id, nil)
		if err != nil {
			t.Fatal(err)
		}
		return r.JSON200
	}
	waitFor(t, 60*time.Second, "the arena to run with a game", func() bool {
		d := detail()
		for _, s := range d.Standings {
			if s.CurrentGameId != nil {
				return d.Status == "running"
			}
		}
		return false
	})
	// The newcomer resigns each game it is paired in; the bots play theirs
	// to the end. Soon a game between the two bots has finished.
	botGame := func(d *api.TournamentDetail) bool {
		for _, s := range d.Standings {
			if s.Username != "" && s.UserId != newcomer.UserID() && s.Wins > 0 {
				for _, o := range d.Standings {
					if o.UserId != s.UserId && o.UserId != newcomer.UserID() && o.Losses > 0 {
						return true
					}
				}
			}
		}
		return false
	}
	waitFor(t, 90*time.Second, "the bots to finish an arena game between them", func() bool {
		d := detail()
		for _, s := range d.Standings {
			if s.UserId == newcomer.UserID() && s.CurrentGameId != nil {
				newcomer.API.PostGamesByIdActionsWithResponse(ctx, *s.CurrentGameId, nil, api.GameAction{Type: "resign"})
			}
		}
		return botGame(d)
	})
	// The next arena is scheduled while this one runs.
	waitFor(t, 15*time.Second, "the next demo arena", func() bool {
		r, _ := newcomer.API.GetTournamentsWithResponse(ctx, nil)
		for _, x := range *r.JSON200 {
			if x.Name == bots.ArenaName && x.Status == "scheduled" && !x.StartsAt.Before(arena.EndsAt) {
				return true
			}
		}
		return false
	})
	// The end: the arena finishes once its last game is over.
	clk.AdvanceTo(arena.EndsAt.Add(time.Second))
	waitFor(t, 60*time.Second, "the arena to finish", func() bool {
		d := detail()
		for _, s := range d.Standings {
			if s.UserId == newcomer.UserID() && s.CurrentGameId != nil {
				newcomer.API.PostGamesByIdActionsWithResponse(ctx, *s.CurrentGameId, nil, api.GameAction{Type: "resign"})
			}
		}
		return d.Status == "finished"
	})
}

// waitFor polls ok until it holds, failing the test when it does not
// within limit.
func waitFor(t *testing.T, limit time.Duration, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(limit); !ok(); time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within %v", what, limit)
		}
	}
}
