package handlers_test

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"testing"
	"time"

	"wager/domain/tournament"
)

func (ar *arena) void(t *testing.T, staff player, game, reason string) response {
	t.Helper()
	return ar.a.do(t, request{method: http.MethodPost, path: "/admin/tournaments/" + ar.id + "/games/" + game + "/void", header: staff.auth,
		body: jsonBody(map[string]string{"reason": reason})})
}

// A void re-scores exactly, over random arenas: games won at random, some
// of them voided at random moments while the arena runs; after each void
// every player's line is what their games in order score without the
// voided games they won (the streaks across them too), and a voided
// game's loser keeps what they had. Later pairings see the new scores.
func TestAVoidRescoresExactly(t *testing.T) {
	adminWallet := newWallet(t)
	clk := newTestClock()
	a := newTestAppAt(t, map[string]string{"WORKERS": "false", "JWT_SECRET": testSecret, "ADMIN_WALLETS": adminWallet.address()}, clk.now)
	staff := a.admin(t, adminWallet)
	for seed := range uint64(4) {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 0x701d))
			ps := make([]player, 4+rng.IntN(3))
			for i := range ps {
				ps[i] = a.newPlayer(t)
			}
			players := byID(ps...)
			ar := newArena(t, a, clk, ps[0], nil)
			ar.mustJoin(t, ps...)
			ar.start(t)
			type played struct {
				game, winner string
				voided       bool
			}
			var history []played
			for range 14 {
				// A random game in progress is won by a random one of its players.
				games := ar.get(t).games()
				for g, us := range games {
					winner := us[rng.IntN(2)]
					ar.win(t, players[winner], players)
					history = append(history, played{game: g, winner: winner})
					clk.advance(time.Second) // a player's games end one after another
					break
				}
				if len(history) > 0 && rng.IntN(3) == 0 {
					k := rng.IntN(len(history))
					if r := ar.void(t, staff, history[k].game, "fixed by a second account"); r.Code != http.StatusOK {
						t.Fatalf("void: %d %s", r.Code, r.Body)
					}
					history[k].voided = true
				}
				ar.work(t)
			}
			// The model: each player's games in order.
			for _, line := range ar.get(t).Standings {
				var want tournament.Record
				for _, h := range history {
					ps := map[string]bool{}
					for _, u := range gamePlayers(t, a, h.game) {
						ps[u] = true
					}
					if !ps[line.UserID] {
						continue
					}
					won := h.winner == line.UserID
					if h.voided && won {
						continue
					}
					o := tournament.Loss
					if won {
						o = tournament.Win
					}
					want = want.After(tournament.Result{Outcome: o})
				}
				if line.Score != want.Score || line.Wins != want.Wins || line.Losses != want.Losses || line.Games != want.Games ||
					line.OnFire != want.OnFire() {
					t.Errorf("%s: %+v, the model says %+v", line.Username, line, want)
				}
			}
		})
	}
}

// gamePlayers are a game's players.
func gamePlayers(t *testing.T, a *testApp, game string) []string {
	t.Helper()
	var out []string
	for _, p := range a.do(t, request{path: "/games/" + game}).json(t)["players"].([]any) {
		out = append(out, p.(map[string]any)["userId"].(string))
	}
	return out
}

// After the prizes are paid, a void changes the standings and shows what
// the prizes would be; nobody's balance moves. Players cannot void, and a
// void needs a reason and a game of the arena.
func TestAVoidAfterThePrizesShowsTheDifference(t *testing.T) {
	adminWallet, insiderWallet := newWallet(t), newWallet(t)
	clk := newTestClock()
	a := newTestAppAt(t, map[string]string{"WORKERS": "false", "JWT_SECRET": testSecret,
		"ADMIN_WALLETS": adminWallet.address() + "," + insiderWallet.address()}, clk.now)
	staff, insider := a.admin(t, adminWallet), a.admin(t, insiderWallet)
	ann, bob := a.depositor(t, 1_000_000), a.depositor(t, 1_000_000)
	ar := newArena(t, a, clk, ann, map[string]any{"entryFeeMinor": 500_000, "prizeSplitBps": []int{10_000}, "durationMinutes": 1})
	ar.mustJoin(t, ann, bob)
	ar.start(t)
	game := ar.gameOf(t, ann)
	ar.win(t, ann, byID(ann, bob))
	ar.void(t, bob, game, "mine").wantError(t, http.StatusForbidden, "ADMIN_ONLY")
	// A member of staff who plays in an arena may not void its games:
	// their rank would gain.
	free := newArena(t, a, clk, ann, nil)
	free.mustJoin(t, insider, bob)
	free.start(t)
	freeGame := free.gameOf(t, bob)
	free.win(t, bob, byID(insider, bob))
	free.void(t, insider, freeGame, "I would rank higher").wantError(t, http.StatusForbidden, "CONFLICT_OF_INTEREST")
	ar.void(t, staff, game, "").wantError(t, http.StatusBadRequest, "VALIDATION_ERROR")
	clk.advance(2 * time.Minute)
	ar.work(t) // the end: ann is paid the pool less 1%
	d := ar.get(t)
	if d.Status != "finished" || len(d.Prizes) != 1 || d.Prizes[0].UserID != ann.id {
		t.Fatalf("the finish: %+v", d)
	}
	annPaid := d.Prizes[0].AmountMinor
	balance := func(p player) float64 {
		return a.do(t, request{path: "/wallets/me/balance", header: p.auth}).json(t)["availableMinor"].(float64)
	}
	annBefore, bobBefore := balance(ann), balance(bob)

	r := ar.void(t, staff, game, "won against a linked account")
	if r.Code != http.StatusOK {
		t.Fatalf("void: %d %s", r.Code, r.Body)
	}
	var v tournament.Void
	if err := jsonDecode(r.Body.Bytes(), &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Rescored) != 1 || v.Rescored[0].UserID != ann.id || v.Rescored[0].Before.Score != 2 || v.Rescored[0].After.Score != 0 {
		t.Fatalf("rescored: %+v", v.Rescored)
	}
	// Tied at 0, the two would share the prize: half each, rounded down.
	half := annPaid / 2
	want := map[string][2]int64{ann.id: {annPaid, half}, bob.id: {0, half}}
	if len(v.PrizeChanges) != 2 {
		t.Fatalf("prize changes: %+v", v.PrizeChanges)
	}
	for _, c := range v.PrizeChanges {
		if w := want[c.UserID]; c.PaidMinor != w[0] || c.WouldMinor != w[1] {
			t.Errorf("%s: paid %d, would be %d; want %v", c.Username, c.PaidMinor, c.WouldMinor, w)
		}
	}
	if balance(ann) != annBefore || balance(bob) != bobBefore {
		t.Error("the void moved money after the prizes were paid")
	}
	if again := ar.void(t, staff, game, "twice"); again.Code != http.StatusOK || again.json(t)["reason"] != "won against a linked account" {
		t.Fatalf("a second void: %d %s", again.Code, again.Body)
	}
	if lines := a.do(t, request{path: "/admin/tournaments/" + ar.id + "/voids", header: staff.auth}).list(t); len(lines) != 1 {
		t.Fatalf("the arena's voids: %v", lines)
	}
	checkBooks(t, a)
}
