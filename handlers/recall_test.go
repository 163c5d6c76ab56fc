package handlers_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"wager/domain/game"
	"wager/domain/money"
)

// recall reads p's GET /users/me/games/recall.
func (a *testApp) recall(t *testing.T, p player) []game.Recalled {
	t.Helper()
	r := a.do(t, request{path: "/users/me/games/recall", header: p.auth})
	if r.Code != http.StatusOK {
		t.Fatalf("recall: %d %s", r.Code, r.Body)
	}
	var out []game.Recalled
	if err := json.Unmarshal(r.Body.Bytes(), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// Game recall answers the last ten staked games, newest first, each with
// its stake, what it paid, the balance before and after that add up, and
// every step; free games are not in it, nor other players' games.
func TestGameRecallAddsUp(t *testing.T) {
	a := newTestApp(t, noWorkers)
	p1, p2 := a.depositor(t, 5_000_000), a.depositor(t, 5_000_000)
	const stake = 200_000
	var games []string
	winners := map[string]string{}
	for i := range 12 {
		lobby := a.lobby(t, p1, `{"gameType": "rps", "stakeMinor": 200000, "settings": {"rounds": 1}}`)
		a.join(t, p1, lobby)
		g := a.join(t, p2, lobby)["gameId"].(string)
		loser, winner := p1, p2
		if i%3 == 0 {
			loser, winner = p2, p1
		}
		if r := a.act(t, loser, g, `{"type": "resign"}`); r.Code != http.StatusOK {
			t.Fatalf("resign: %d %s", r.Code, r.Body)
		}
		games, winners[g] = append(games, g), winner.id
		if i == 5 { // a free game between: not recalled
			free := a.lobby(t, p1, `{"gameType": "rps", "stakeMinor": 0, "settings": {"rounds": 1}}`)
			a.join(t, p1, free)
			a.act(t, p2, a.join(t, p2, free)["gameId"].(string), `{"type": "resign"}`)
		}
	}
	_, payout := game.Payout(2 * stake)

	got := a.recall(t, p1)
	if len(got) != game.RecallGames {
		t.Fatalf("recall has %d games, want %d", len(got), game.RecallGames)
	}
	now := a.ledger(t, money.Available(p1.id)) + a.ledger(t, money.Locked(p1.id))
	for i, r := range got {
		if want := games[len(games)-1-i]; r.GameID != want {
			t.Fatalf("game %d of the recall is %s, want %s (newest first)", i, r.GameID, want)
		}
		wantPaid := int64(0)
		if winners[r.GameID] == p1.id {
			wantPaid = payout
		}
		if r.StakeMinor != stake || r.PayoutMinor != wantPaid || r.Status != "completed" || r.GameType != "rps" {
			t.Errorf("game %s: %+v, want stake %d paid %d", r.GameID, r, stake, wantPaid)
		}
		if r.BalanceAfterMinor != r.BalanceBeforeMinor-stake+wantPaid {
			t.Errorf("game %s: before %d - stake %d + paid %d is not after %d", r.GameID, r.BalanceBeforeMinor, stake, wantPaid, r.BalanceAfterMinor)
		}
		// Nothing else moved the balance between the games.
		if i == 0 && r.BalanceAfterMinor != now {
			t.Errorf("the newest game's balance after is %d, the balance now %d", r.BalanceAfterMinor, now)
		}
		if i > 0 && r.BalanceAfterMinor != got[i-1].BalanceBeforeMinor {
			t.Errorf("game %s ends at %d, the next begins at %d", r.GameID, r.BalanceAfterMinor, got[i-1].BalanceBeforeMinor)
		}
		if len(r.Steps) < 2 || r.Steps[0].Seq != 1 || r.Steps[len(r.Steps)-1].Name != "game:completed" {
			t.Errorf("game %s steps: %+v", r.GameID, r.Steps)
		}
	}
	// The other player's recall is theirs: the same games, their money.
	for _, r := range a.recall(t, p2) {
		if (winners[r.GameID] == p2.id) != (r.PayoutMinor == payout) {
			t.Errorf("p2's recall of %s: %+v", r.GameID, r)
		}
	}
	if got := a.recall(t, a.newPlayer(t)); len(got) != 0 {
		t.Errorf("a new player recalls %d games", len(got))
	}
	a.do(t, request{path: "/users/me/games/recall"}).wantError(t, http.StatusUnauthorized, "UNAUTHORIZED")
}
