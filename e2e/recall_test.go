package e2e

import (
	"strconv"
	"strings"
	"testing"

	"wager/e2e/apiclient"
)

// usdcMinor reads an amount as the pages write it ("1.98 USDC") in minor
// units.
func usdcMinor(t *testing.T, text string) int64 {
	t.Helper()
	whole, frac, _ := strings.Cut(strings.TrimSuffix(strings.TrimSpace(text), " USDC"), ".")
	n, err := strconv.ParseInt(whole+(frac + "000000")[:6], 10, 64)
	if err != nil || len(frac) > 6 {
		t.Fatalf("%q is no amount in USDC", text)
	}
	return n
}

// playStaked has winner and loser play a staked one-round game that the
// loser resigns.
func playStaked(t *testing.T, winner, loser *apiclient.Client, stake int64) {
	t.Helper()
	var lobby struct{ ID string }
	if err := winner.Do(t.Context(), "POST", "/lobbies", map[string]any{"gameType": "rps", "stakeMinor": stake,
		"settings": map[string]int{"rounds": 1}}, &lobby); err != nil {
		t.Fatal(err)
	}
	if err := winner.Do(t.Context(), "POST", "/lobbies/"+lobby.ID+"/join-queue", nil, nil); err != nil {
		t.Fatal(err)
	}
	var joined struct{ GameID string }
	if err := loser.Do(t.Context(), "POST", "/lobbies/"+lobby.ID+"/join-queue", nil, &joined); err != nil || joined.GameID == "" {
		t.Fatalf("match: %+v %v", joined, err)
	}
	if err := loser.Do(t.Context(), "POST", "/games/"+joined.GameID+"/actions", map[string]any{"type": "resign"}, nil); err != nil {
		t.Fatal(err)
	}
}

// The recall page, one click from the wallet, shows each staked game's
// balance before, stake, payout and balance after, in USDC, and they add
// up: before - stake + paid = after, and each game starts where the one
// before it ended.
func TestTheRecallPageBalancesAddUp(t *testing.T) {
	s := startServer(t, nil)
	me := newArenaPerson(t, s)
	if err := me.api.Do(t.Context(), "POST", "/dev/faucet", map[string]any{"address": me.api.Key.PublicKey().String(), "amountMinor": 3_000_000}, nil); err != nil {
		t.Fatal(err)
	}
	if err := me.api.Deposit(t.Context(), 3_000_000); err != nil {
		t.Fatal(err)
	}
	other := apiDepositor(t, s, 3_000_000)
	playStaked(t, me.api, other, 500_000)
	playStaked(t, other, me.api, 250_000)
	playStaked(t, me.api, other, 1_000_000)

	page := me.page
	goTo(t, page, "/wallet")
	click(t, page, "recall-link")
	games := page.GetByTestId("recall-game")
	if err := expect.Locator(games).ToHaveCount(3); err != nil {
		t.Fatalf("the recall page: %v", err)
	}
	read := func(i int, id string) int64 {
		t.Helper()
		text, err := games.Nth(i).GetByTestId(id).TextContent()
		if err != nil {
			t.Fatal(err)
		}
		return usdcMinor(t, text)
	}
	wantResults := []string{"Won: 1.98 USDC paid to you", "Lost: your stake went to the winner", "Won: 0.99 USDC paid to you"}
	wantStakes := []int64{1_000_000, 250_000, 500_000}
	for i := range 3 {
		before, stake, paid, after := read(i, "recall-before"), read(i, "recall-stake"), read(i, "recall-paid"), read(i, "recall-after")
		if stake != wantStakes[i] || before-stake+paid != after {
			t.Errorf("game %d: before %d - stake %d + paid %d != after %d (stake want %d)", i, before, stake, paid, after, wantStakes[i])
		}
		if i > 0 && after != read(i-1, "recall-before") {
			t.Errorf("game %d ends at %d, the next begins at %d", i, after, read(i-1, "recall-before"))
		}
		wantText(t, games.Nth(i).GetByTestId("recall-result"), wantResults[i], "the result of game "+string(rune('1'+i)))
	}
	if first := read(2, "recall-before"); first != 3_000_000 {
		t.Errorf("the first game begins at %d, the deposit was 3000000", first)
	}
	if err := expect.Locator(page.GetByTestId("recall-other")).ToHaveCount(0); err != nil {
		t.Errorf("nothing else moved the balance, yet: %v", err)
	}
	// Every step, one click away.
	if err := games.Nth(0).Locator("summary").Click(); err != nil {
		t.Fatal(err)
	}
	if err := expect.Locator(games.Nth(0).GetByTestId("recall-step").Last()).ToContainText("game:completed"); err != nil {
		t.Errorf("the steps of the newest game: %v", err)
	}
}
