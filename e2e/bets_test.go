package e2e

import (
	"fmt"
	"testing"

	"github.com/playwright-community/playwright-go"

	"wager/e2e/apiclient"
)

// wantTexts waits until the locator's elements read exactly texts.
func wantTexts(t *testing.T, loc playwright.Locator, texts []string, what string) {
	t.Helper()
	if err := expect.Locator(loc).ToHaveText(texts,
		playwright.LocatorAssertionsToHaveTextOptions{Timeout: playwright.Float(moneyTimeout)}); err != nil {
		t.Fatalf("%s: want %q: %v", what, texts, err)
	}
}

// TestTwoSpectatorsBetOnAGameLive: two spectators bet from their wallets on
// different players and each sees the other's bet in the pools without
// reloading; the first reveal closes betting on both pages; the winner's
// bettor finds the payout on the game page and in the wallet history.
func TestTwoSpectatorsBetOnAGameLive(t *testing.T) {
	s := startServer(t, nil)
	p1, p2, b1, b2 := newPage(t, s), newPage(t, s), newPage(t, s), newPage(t, s)
	name1 := signInWithDevWallet(t, p1)
	name2 := signInWithDevWallet(t, p2)
	signInWithDevWallet(t, b1)
	signInWithDevWallet(t, b2)
	depositFromFaucet(t, p1, "1.00")
	depositFromFaucet(t, p2, "1.00")
	faucet := apiclient.New(s.URL, nil)
	for _, b := range []playwright.Page{b1, b2} {
		address, err := b.Evaluate(`JSON.parse(localStorage.getItem("wager.devWallet.v1")).address`)
		if err != nil {
			t.Fatal(err)
		}
		if err := faucet.Do(t.Context(), "POST", "/dev/faucet", map[string]any{"address": address, "amountMinor": 5_000_000}, nil); err != nil {
			t.Fatal(err)
		}
	}

	gameURL := startStakedTable(t, p1, p2, "1", "60") // pools of up to 10 USDC
	for _, b := range []playwright.Page{b1, b2} {
		if _, err := b.Goto(gameURL); err != nil {
			t.Fatal(err)
		}
		wantTexts(t, b.GetByTestId("bet-pool-odds"), []string{"no bets yet", "no bets yet"}, "odds before any bet")
	}
	count(t, p1.GetByTestId("bet-form"), 0, "a player has no bet form")

	bet := func(b playwright.Page, on, amount, done string) {
		t.Helper()
		if _, err := b.GetByTestId("bet-on").SelectOption(playwright.SelectOptionValues{Labels: &[]string{on}}); err != nil {
			t.Fatal(err)
		}
		fill(t, b, "bet-amount", amount)
		click(t, b, "bet-submit")
		wantText(t, b.GetByTestId("bet-status"), done, "the bet is confirmed")
	}
	wantText(t, b1.GetByTestId("my-bets-empty"), "No bets yet: yours show here as soon as they are in the pool.", "no bets of one's own yet")
	bet(b1, name1, "1", "Your bet on "+name1+" is in the pool.")
	wantTexts(t, b1.GetByTestId("my-bet"), []string{"1.00 USDC on " + name1 + " · open"}, "the new bet under \"Your bets\" without a reload")
	count(t, b1.GetByTestId("my-bets-empty"), 0, "the empty state goes with the first bet")
	wantTexts(t, b2.GetByTestId("bet-pool-total"), []string{"1.00", "0.00"}, "the other spectator sees the first bet live")
	wantTexts(t, b2.GetByTestId("bet-pool-odds"), []string{"pays 0.99x", "no bets yet"}, "odds after the first bet")
	bet(b2, name2, "3", "Your bet on "+name2+" is in the pool.")
	// 4 USDC in all, 0.04 fee: 3.96 shared by the winner's pool.
	for _, b := range []playwright.Page{b1, b2, p1} {
		wantTexts(t, b.GetByTestId("bet-pool-total"), []string{"1.00", "3.00"}, "both pools live")
		wantTexts(t, b.GetByTestId("bet-pool-odds"), []string{"pays 3.96x", "pays 1.32x"}, "the odds of both pools")
	}

	screenshot(t, b1, "game-bets")

	// The first reveal closes betting on both spectators' pages.
	click(t, p1, "move-rock")
	click(t, p2, "move-scissors")
	for _, b := range []playwright.Page{b1, b2} {
		wantText(t, b.GetByTestId("bets-closed"), "Betting closed", "betting closes at the first reveal")
		count(t, b.GetByTestId("bet-form"), 0, "the bet form goes at the first reveal")
	}

	// p1 wins every round.
	result := p1.GetByTestId("result")
	for round := 2; ; round++ {
		if round > 30 {
			t.Fatal("no result after 30 rounds")
		}
		next := p1.Locator(fmt.Sprintf(`[data-testid=round-number]:text-is("%d"), [data-testid=result]`, round))
		visible(t, next.First(), "the next round or the end")
		if n, _ := result.Count(); n > 0 {
			break
		}
		click(t, p1, "move-rock")
		click(t, p2, "move-scissors")
	}
	visible(t, b1.GetByTestId("result"), "the bettor sees the result")

	if _, err := b1.Reload(); err != nil {
		t.Fatal(err)
	}
	wantTexts(t, b1.GetByTestId("my-bet"), []string{"1.00 USDC on " + name1 + " · won 3.96 USDC"}, "the winning bet on the game page")
	if _, err := b2.Reload(); err != nil {
		t.Fatal(err)
	}
	wantTexts(t, b2.GetByTestId("my-bet"), []string{"3.00 USDC on " + name2 + " · lost"}, "the losing bet on the game page")

	if _, err := b1.Goto("/wallet"); err != nil {
		t.Fatal(err)
	}
	row := b1.GetByTestId("history-row").Filter(playwright.LocatorFilterOptions{Has: b1.GetByTestId("history-kind").GetByText("Bet winnings", playwright.LocatorGetByTextOptions{Exact: playwright.Bool(true)})})
	wantText(t, row.GetByTestId("history-amount"), "+3.96", "the payout in the wallet history")
}
