package livepage

import (
	"slices"
	"testing"

	"wager/domain/game"
	"wager/domain/ranking"
	"wager/views"
)

func TestEveryResultReadsRight(t *testing.T) {
	alice, bob := "id-alice", "id-bob"
	players := []game.Seat{{UserID: alice, Username: "alice", Seat: 0}, {UserID: bob, Username: "bob", Seat: 1}}
	won := func(reason string, s game.Settlement) game.Meta {
		return game.Meta{Status: game.StatusCompleted, Players: players,
			Result: &game.Result{WinnerID: &alice, Reason: reason, Settlement: s}}
	}
	nobody := func(status, reason string, s game.Settlement) game.Meta {
		return game.Meta{Status: status, Players: players, Result: &game.Result{Reason: reason, Draw: true, Settlement: s}}
	}
	staked := game.Settlement{PotMinor: 2_000_000, PlayerPotMinor: 2_000_000, FeeMinor: 20_000, PayoutMinor: 1_980_000}
	withDonations := game.Settlement{PotMinor: 2_500_000, PlayerPotMinor: 2_000_000, SpectatorPotMinor: 500_000}
	for _, tc := range []struct {
		name                      string
		meta                      game.Meta
		heading, winner, how, pay string
	}{
		{"rps won on rounds, staked", won("score", staked), "", "alice", "alice won 2 rounds to 1.",
			"alice receives 1.98 USDC: the pot of 2.00 USDC less the platform's fee of 0.02 USDC."},
		{"free game won by resignation", won("resign", game.Settlement{}), "", "alice", "bob resigned.",
			"A free game: no stakes, no fee."},
		{"won on time", won("timeout", staked), "", "alice", "bob ran out of time.",
			"alice receives 1.98 USDC: the pot of 2.00 USDC less the platform's fee of 0.02 USDC."},
		{"four in a row", won("connect4", game.Settlement{}), "", "alice", "alice connected four in a row.",
			"A free game: no stakes, no fee."},
		{"full board with donations", nobody(game.StatusCompleted, "board-full", withDonations), "Draw", "",
			"The board filled up without four in a row.",
			"Each player's stake of 1.00 USDC went back to them, and the donations (0.50 USDC) to the donors."},
		{"cancelled, staked", nobody(game.StatusCancelled, "abandoned", game.Settlement{PotMinor: 200_000, PlayerPotMinor: 200_000}),
			"Cancelled", "", "Nobody moved before the time ran out.", "Each player's stake of 0.10 USDC went back to them."},
		{"cancelled, free", nobody(game.StatusCancelled, "abandoned", game.Settlement{}), "Cancelled", "",
			"Nobody moved before the time ran out.", "A free game: no stakes, no fee."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := resultWords(tc.meta, map[string]int{alice: 2, bob: 1})
			if r.Heading != tc.heading || r.Winner != tc.winner || r.How != tc.how || r.Money != tc.pay {
				t.Errorf("got heading %q winner %q\n  how %q\n  money %q\nwant heading %q winner %q\n  how %q\n  money %q",
					r.Heading, r.Winner, r.How, r.Money, tc.heading, tc.winner, tc.how, tc.pay)
			}
		})
	}
}

// Each player reads the result in the first person, with what the game
// did to their rating; a game that was not rated shows no rating.
func TestEachPlayerReadsTheResultInTheFirstPerson(t *testing.T) {
	alice, bob := "id-alice", "id-bob"
	players := []game.Seat{{UserID: alice, Username: "alice"}, {UserID: bob, Username: "bob", Seat: 1}}
	won := game.Meta{Status: game.StatusCompleted, Players: players, Result: &game.Result{WinnerID: &alice, Reason: "score"}}
	changes := []ranking.Change{
		{UserID: alice, Before: 1500, After: 1662.31, Provisional: true},
		{UserID: bob, Before: 1712.4, After: 1704.2},
	}
	for _, tc := range []struct {
		name    string
		meta    game.Meta
		changes []ranking.Change
		want    []views.PlayerResult
	}{
		{"a rated win", won, changes, []views.PlayerResult{
			{UserID: alice, Outcome: "You won", Rating: "Your rating: 1662 (+162, provisional)"},
			{UserID: bob, Outcome: "You lost", Rating: "Your rating: 1704 (-8)"}}},
		{"a draw", game.Meta{Status: game.StatusCompleted, Players: players, Result: &game.Result{Draw: true}},
			[]ranking.Change{{UserID: bob, Before: 1500, After: 1500}}, []views.PlayerResult{
				{UserID: alice, Outcome: "Draw"}, {UserID: bob, Outcome: "Draw", Rating: "Your rating: 1500 (+0)"}}},
		{"a cancelled game is not rated", game.Meta{Status: game.StatusCancelled, Players: players, Result: &game.Result{}}, nil,
			[]views.PlayerResult{{UserID: alice, Outcome: "Cancelled"}, {UserID: bob, Outcome: "Cancelled"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := playerResults(tc.meta, tc.changes); !slices.Equal(got, tc.want) {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}
