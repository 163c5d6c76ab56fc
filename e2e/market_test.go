package e2e

import (
	"fmt"
	"testing"

	"github.com/playwright-community/playwright-go"
)

// depositFromFaucet gives the signed-in page test USDC on chain and
// deposits amount of it to the platform balance, through the wallet page.
func depositFromFaucet(t *testing.T, page playwright.Page, amount string) {
	t.Helper()
	if _, err := page.Goto("/wallet"); err != nil {
		t.Fatal(err)
	}
	click(t, page, "faucet")
	wantText(t, page.GetByTestId("balance-onchain"), "100.00", "on chain after the faucet")
	fill(t, page, "deposit-amount", amount)
	click(t, page, "deposit-submit")
	wantText(t, page.GetByTestId("balance-available"), amount, "available after the deposit")
}

// startStakedTable has p1, whose balance covers stake, open a
// rock-paper-scissors table for stake (USDC) with the given seconds per
// round, and p2 join it; it returns the game's address once both pages
// are on it. Bets and markets are for staked games.
func startStakedTable(t *testing.T, p1, p2 playwright.Page, stake, seconds string) string {
	t.Helper()
	if _, err := p1.Goto("/play"); err != nil {
		t.Fatal(err)
	}
	fill(t, p1, "stake", stake)
	fill(t, p1, "round-seconds", seconds)
	click(t, p1, "play-submit")
	visible(t, p1.GetByTestId("waiting"), "p1 waits for an opponent")
	if _, err := p2.Goto("/play"); err != nil {
		t.Fatal(err)
	}
	joinTableOf(t, p1, p2)
	visible(t, p2.GetByTestId("move-controls"), "p2 sees the move controls")
	// p1's waiting page goes to the game by itself. Until it is there, a
	// test's own navigation of p1 would be interrupted by that one.
	if err := p1.WaitForURL(p2.URL()); err != nil {
		t.Fatalf("p1 is not taken to the game: %v", err)
	}
	return p2.URL()
}

// TestTwoTradersMeetInAGamesMarket: two spectators trade a game's shares
// against each other from the game page: the first one's buy waits on the
// book, the second one's buy of the other player mints the pair; both see
// the book, the prices, the chart and their own shares change without a
// reload. When the game ends the market resolves, and the holder of the
// winner's shares redeems them and finds the balance grown.
func TestTwoTradersMeetInAGamesMarket(t *testing.T) {
	s := startServer(t, nil)
	p1, p2, b1, b2 := newPage(t, s), newPage(t, s), newPage(t, s), newPage(t, s)
	name1 := signInWithDevWallet(t, p1)
	name2 := signInWithDevWallet(t, p2)
	signInWithDevWallet(t, b1)
	signInWithDevWallet(t, b2)
	depositFromFaucet(t, b1, "10.00")
	depositFromFaucet(t, b2, "10.00")
	depositFromFaucet(t, p1, "1.00")
	depositFromFaucet(t, p2, "1.00")

	// Stakes of 1 USDC: the market takes up to 10 pairs of shares.
	gameURL := startStakedTable(t, p1, p2, "1", "60")
	for _, b := range []playwright.Page{b1, b2} {
		if _, err := b.Goto(gameURL); err != nil {
			t.Fatal(err)
		}
		wantText(t, b.GetByTestId("market-summary"), "Trading is open until the game ends; at most 10 pairs of shares can be outstanding (0 now).", "the market before any order")
		wantText(t, b.GetByTestId("market-mine-empty"), "No shares or orders yet.", "nothing of one's own yet")
	}
	count(t, p1.GetByTestId("market-form"), 0, "a player has no order form")

	order := func(b playwright.Page, side, of, price, shares, preview, done string) {
		t.Helper()
		if _, err := b.GetByTestId("market-side").SelectOption(playwright.SelectOptionValues{Values: &[]string{side}}); err != nil {
			t.Fatal(err)
		}
		if _, err := b.GetByTestId("market-outcome-select").SelectOption(playwright.SelectOptionValues{Labels: &[]string{of}}); err != nil {
			t.Fatal(err)
		}
		fill(t, b, "market-price", price)
		fill(t, b, "market-shares", shares)
		wantText(t, b.GetByTestId("market-preview"), preview, "what the order costs and pays, before it is sent")
		click(t, b, "market-submit")
		wantText(t, b.GetByTestId("market-status"), done, "the order's outcome")
	}
	order(b1, "buy", name1, "0.6", "10", "Costs at most 6.00 USDC; pays 10.00 USDC if "+name1+" wins.",
		"No match yet. 10 wait on the book at 0.60.")
	// The other trader's page shows the bid, and its complement as an ask
	// of the other player, live.
	ladders := b2.GetByTestId("market-outcome")
	wantText(t, ladders.Nth(0).GetByTestId("market-bid"), "0.60", "the first player's best bid, live")
	wantText(t, ladders.Nth(1).GetByTestId("market-ask"), "0.40", "the second player's best ask: the complement")
	bid := ladders.Nth(0).GetByTestId("market-bid-level")
	wantTexts(t, bid.GetByTestId("market-level-price"), []string{"0.60"}, "the first player's ladder: the price")
	wantTexts(t, bid.GetByTestId("market-level-shares"), []string{"10"}, "the first player's ladder: the shares")
	wantTexts(t, b1.GetByTestId("market-order-text"), []string{"Buy 10 of " + name1 + " at 0.60 · open"}, "the buyer's open order")

	// A buy of the second player at 0.45 mints ten pairs with it: 0.40 each.
	order(b2, "buy", name2, "0.45", "10", "Costs at most 4.50 USDC; pays 10.00 USDC if "+name2+" wins.",
		"Bought 10 of 10 shares of "+name2+".")
	for _, b := range []playwright.Page{b1, b2} {
		ladders := b.GetByTestId("market-outcome")
		wantText(t, ladders.Nth(0).GetByTestId("market-last"), "0.60", "the first player's last price")
		wantText(t, ladders.Nth(1).GetByTestId("market-last"), "0.40", "the second player's last price")
		wantText(t, ladders.Nth(0).GetByTestId("market-volume"), "10", "shares traded")
		hidden(t, b.GetByText("No trades yet: the chart starts with the first."), "the chart has its first trade")
	}
	wantTexts(t, b1.GetByTestId("market-position"), []string{"10 shares of " + name1 + " · worth 6.00 USDC at the last price · cost 6.00 USDC"},
		"the first trader's shares, without a reload")
	wantTexts(t, b2.GetByTestId("market-position"), []string{"10 shares of " + name2 + " · worth 4.00 USDC at the last price · cost 4.00 USDC"},
		"the second trader's shares, without a reload")
	wantTexts(t, b1.GetByTestId("market-order-text"), []string{"Buy 10 of " + name1 + " at 0.60 · filled"}, "the filled order")
	screenshot(t, b2, "game-market")

	// An order that waits on the book can be taken back.
	order(b2, "buy", name1, "0.3", "5", "Costs at most 1.50 USDC; pays 5.00 USDC if "+name1+" wins.",
		"No match yet. 5 wait on the book at 0.30.")
	wantText(t, b1.GetByTestId("market-outcome").Nth(0).GetByTestId("market-bid"), "0.30", "the new bid on the other page")
	wantText(t, b2.GetByTestId("market-order-text").First(), "Buy 5 of "+name1+" at 0.30 · open", "the open order")
	click(t, b2, "market-cancel")
	wantText(t, b2.GetByTestId("market-order-text").First(), "Buy 5 of "+name1+" at 0.30 · cancelled", "the cancelled order")
	wantText(t, b1.GetByTestId("market-outcome").Nth(0).GetByTestId("market-bid"), "–", "the bid is gone from the other page")
	wantText(t, b2.GetByTestId("nav-balance"), "Balance: 6.00 USDC", "the cancel released the 1.5 locked")

	// p1 wins every round.
	result := p1.GetByTestId("result")
	for round := 1; ; round++ {
		if round > 30 {
			t.Fatal("no result after 30 rounds")
		}
		click(t, p1, "move-rock")
		click(t, p2, "move-scissors")
		next := p1.Locator(fmt.Sprintf(`[data-testid=round-number]:text-is("%d"), [data-testid=result]`, round+1))
		visible(t, next.First(), "the next round or the end")
		if n, _ := result.Count(); n > 0 {
			break
		}
	}
	wantText(t, b1.GetByTestId("market-summary"), "Resolved: each share of "+name1+" pays 1 USDC, the others nothing.", "the market resolves live")
	count(t, b1.GetByTestId("market-form"), 0, "no order form once resolved")
	wantTexts(t, b2.GetByTestId("market-position"), []string{"10 shares of " + name2 + " · pay 0.00 USDC"}, "the loser's holder")
	wantText(t, b1.GetByTestId("market-redeem"), "Redeem 10.00 USDC", "the winner's holder can redeem")
	click(t, b1, "market-redeem")
	wantText(t, b1.GetByTestId("market-mine-status"), "Redeemed 10.00 USDC to your balance.", "redeemed")
	wantText(t, b1.GetByTestId("nav-balance"), "Balance: 14.00 USDC", "10 deposited, 6 paid, 10 redeemed")
	if _, err := b1.Goto("/wallet"); err != nil {
		t.Fatal(err)
	}
	wantText(t, b1.GetByTestId("balance-available"), "14.00", "the wallet page after redeeming")
}
