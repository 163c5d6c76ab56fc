package e2e

import (
	"regexp"
	"strings"
	"testing"

	"github.com/gagliardetto/solana-go"
	"github.com/playwright-community/playwright-go"

	"wager/e2e/apiclient"
)

// TestAnAdminVoidsAHeldGameAndBothBettorsSeeTheirRefund: two spectators
// bet more on a staked game than its stakes, and a player resigns. Both
// bettors' pages say the result is under review; the admin finds the game
// in the integrity queue with its bettors and voids it; each bettor sees
// the bet refunded on the game page and the balance in the header grow.
func TestAnAdminVoidsAHeldGameAndBothBettorsSeeTheirRefund(t *testing.T) {
	adminAddress, adminKey := devKey(t)
	s := startServer(t, map[string]string{"ADMIN_WALLETS": adminAddress})
	admin, b1, b2 := newPage(t, s), newPage(t, s), newPage(t, s)
	usePreset(t, admin, adminKey)
	signInWithDevWallet(t, admin)
	signInWithDevWallet(t, b1)
	signInWithDevWallet(t, b2)

	// Two players (through the API) sit at a table staked at 1 USDC each.
	ctx := t.Context()
	players, names, gameID := stakedTable(t, s)
	faucet := apiclient.New(s.URL, nil)
	gameURL := s.URL + "/game/" + gameID

	// The spectators bet 2 and 1.5 USDC from their wallets: 3.5 USDC on a
	// game whose players staked 2.
	for _, b := range []playwright.Page{b1, b2} {
		address, err := b.Evaluate(`JSON.parse(localStorage.getItem("wager.devWallet.v1")).address`)
		if err != nil {
			t.Fatal(err)
		}
		faucetTo(t, faucet, address.(string), 5_000_000)
		if _, err := b.Goto(gameURL); err != nil {
			t.Fatal(err)
		}
	}
	betFromPage(t, b1, names[0], "2")
	betFromPage(t, b2, names[1], "1.5")

	// The first player resigns: the winner is paid, the bets are held.
	if err := players[0].Do(ctx, "POST", "/games/"+gameID+"/actions", map[string]string{"type": "resign"}, nil); err != nil {
		t.Fatal(err)
	}
	for _, b := range []playwright.Page{b1, b2} {
		if _, err := b.Reload(); err != nil {
			t.Fatal(err)
		}
		wantText(t, b.GetByTestId("result-review"), "The result is under review: the game ended by resignation or on time with more bet or traded on it than its stakes, "+
			"so its bets and market are held until an admin pays them as the game ended or refunds them. The players' payout is not held.",
			"the bettor is told the result is under review")
	}
	wantTexts(t, b1.GetByTestId("my-bet"), []string{"2.00 USDC on " + names[0] + " · held for review"}, "the first bet, held")
	wantText(t, b1.GetByTestId("nav-balance"), "Balance: 0.00 USDC", "nothing paid while held")

	// The admin voids it from the queue.
	if _, err := admin.Goto("/admin"); err != nil {
		t.Fatal(err)
	}
	click(t, admin, "admin-integrity-link")
	held := admin.GetByTestId("integrity-case")
	wantText(t, held.GetByTestId("integrity-ending"), names[1]+" won; the other player resigned.", "how the held game ended")
	b1Name, b2Name := usernameOf(t, b1), usernameOf(t, b2)
	wantTexts(t, held.GetByTestId("integrity-bettors").Locator("li"), []string{b1Name + " bet 2.00 USDC on " + names[0],
		b2Name + " bet 1.50 USDC on " + names[1]}, "the bettors in the case")
	screenshot(t, admin, "admin-integrity-queue")
	const reason = "The first player resigned at once with 3.5 USDC bet on a 2 USDC pot."
	fill(t, admin, "integrity-reason", reason)
	click(t, admin, "integrity-void")
	wantText(t, admin.GetByTestId("integrity-confirm-question"), "Void game "+gameID+"? Every bet will be refunded in full and every share pays 0.5 USDC.",
		"the void asks for a confirmation")
	click(t, admin, "integrity-confirm")
	wantText(t, admin.GetByTestId("integrity-done"), "Voided game "+gameID+": every bet was refunded in full and every share pays 0.5 USDC. Your reason: "+reason,
		"what the void did")
	wantText(t, admin.GetByTestId("integrity-empty"), "Nothing is held for review.", "the queue is empty again")

	// Each bettor sees the refund: the header's balance live, the bet and
	// the review's end on the game page.
	wantText(t, b1.GetByTestId("nav-balance"), "Balance: 2.00 USDC", "the first bettor's refund in the header, live")
	wantText(t, b2.GetByTestId("nav-balance"), "Balance: 1.50 USDC", "the second bettor's refund in the header, live")
	for i, b := range []playwright.Page{b1, b2} {
		if _, err := b.Reload(); err != nil {
			t.Fatal(err)
		}
		want := []string{"2.00 USDC on " + names[0] + " · refunded"}
		if i == 1 {
			want = []string{"1.50 USDC on " + names[1] + " · refunded"}
		}
		wantTexts(t, b.GetByTestId("my-bet"), want, "the refunded bet on the game page")
		wantText(t, b.GetByTestId("result-review"), "The bets and the market on this game were held for review, and voided: every bet was refunded in full and every share paid 0.5 USDC.",
			"the review's end on the game page")
	}
}

// TestAnAdminWithAStakeLeavesTheHeldGameToAnother: the attack an outside
// review made, in the browser. An admin bets 1.50 USDC on a player of a
// staked game, a fan bets on the other player, that player tips the fan
// 0.01 USDC, and the first player resigns: the bets are held. The admin
// with the bet reads that they may not decide the case, and why, and has
// no button to; another admin reads the tip that links the fan to the
// player in a sentence, types a reason, confirms the release and reads
// the decision.
func TestAnAdminWithAStakeLeavesTheHeldGameToAnother(t *testing.T) {
	stakedAddress, stakedKey := devKey(t)
	otherAddress, otherKey := devKey(t)
	s := startServer(t, map[string]string{"ADMIN_WALLETS": stakedAddress + "," + otherAddress})
	staked, other := newPage(t, s), newPage(t, s)
	usePreset(t, staked, stakedKey)
	usePreset(t, other, otherKey)
	signInWithDevWallet(t, staked)
	signInWithDevWallet(t, other)

	ctx := t.Context()
	players, names, gameID := stakedTable(t, s)
	faucet := apiclient.New(s.URL, nil)
	faucetTo(t, faucet, stakedAddress, 5_000_000)
	if _, err := staked.Goto("/game/" + gameID); err != nil {
		t.Fatal(err)
	}
	betFromPage(t, staked, names[0], "1.5")

	fanKey := solana.NewWallet().PrivateKey
	fan := apiclient.New(s.URL, fanKey)
	if err := fan.Login(ctx); err != nil {
		t.Fatal(err)
	}
	var fanMe struct{ Username string }
	if err := fan.Do(ctx, "GET", "/users/me", nil, &fanMe); err != nil {
		t.Fatal(err)
	}
	faucetTo(t, faucet, fanKey.PublicKey().String(), 2_000_000)
	if err := fan.PrepareSignSubmit(ctx, "/games/"+gameID+"/bets/prepare", "/games/"+gameID+"/bets/submit",
		map[string]any{"onUserId": players[1].UserID, "amountMinor": 1_000_000}, nil); err != nil {
		t.Fatalf("the fan's bet: %v", err)
	}
	faucetTo(t, faucet, players[1].Key.PublicKey().String(), 100_000)
	if err := players[1].PrepareSignSubmit(ctx, "/tips/prepare", "/tips/broadcast",
		map[string]any{"toUserId": fan.UserID, "amountMinor": 10_000}, nil); err != nil {
		t.Fatalf("the player's tip to the fan: %v", err)
	}
	if err := players[0].Do(ctx, "POST", "/games/"+gameID+"/actions", map[string]string{"type": "resign"}, nil); err != nil {
		t.Fatal(err)
	}

	// The admin with the bet may not decide it, and is told why.
	if _, err := staked.Goto("/admin/integrity"); err != nil {
		t.Fatal(err)
	}
	mine := staked.GetByTestId("integrity-case")
	wantText(t, mine.GetByTestId("integrity-conflict"), "You may not decide this case: you bet 1.50 USDC on this game. "+
		"Another member of staff, an admin without a stake in it, must decide it.", "why the admin with the bet may not decide the case")
	count(t, staked.GetByTestId("integrity-release"), 0, "release buttons for the admin with the bet")
	count(t, staked.GetByTestId("integrity-void"), 0, "void buttons for the admin with the bet")
	screenshot(t, staked, "admin-integrity-conflict")
	wantAccessible(t, staked, "the case as the admin with the bet sees it")

	// Another admin reads the link, gives a reason and confirms.
	if _, err := other.Goto("/admin/integrity"); err != nil {
		t.Fatal(err)
	}
	theirs := other.GetByTestId("integrity-case")
	count(t, theirs.GetByTestId("integrity-conflict"), 0, "a conflict for the admin without a stake")
	tipped := regexp.MustCompile("^" + regexp.QuoteMeta(names[1]+" tipped "+fanMe.Username+" 0.01 USDC on ") + `\d{1,2} [A-Z][a-z]{2} \d{4}, \d{2}:\d{2} UTC$`)
	if err := expect.Locator(theirs.GetByTestId("integrity-link-evidence")).ToHaveText(tipped); err != nil {
		t.Fatalf("the link's evidence: want %s: %v", tipped, err)
	}
	wantAccessible(t, other, "the case with its decision's form")
	const reason = "Resigned after a fair first round; the tip came from the winner to a fan, who bet on him."
	fill(t, other, "integrity-reason", reason)
	click(t, other, "integrity-release")
	wantText(t, other.GetByTestId("integrity-confirm-question"), "Release game "+gameID+"? Its bets and market will be paid as the game ended.",
		"the release asks for a confirmation")
	wantText(t, other.GetByTestId("integrity-confirm-reason"), "Your reason: "+reason, "the confirmation repeats the reason")
	screenshot(t, other, "admin-integrity-confirm")
	wantAccessible(t, other, "the confirmation")
	click(t, other, "integrity-confirm")
	wantText(t, other.GetByTestId("integrity-done"), "Released game "+gameID+": its bets and market were paid as the game ended. Your reason: "+reason,
		"what the release did")
	wantText(t, other.GetByTestId("integrity-empty"), "Nothing is held for review.", "the queue is empty again")
}

// wantAccessible fails the test for each serious axe-core violation on
// the page as it is now.
func wantAccessible(t *testing.T, page playwright.Page, what string) {
	t.Helper()
	for _, v := range axeViolations(t, page) {
		t.Errorf("%s: axe %s (%s): %s\n  %s", what, v.ID, v.Impact, v.Help, strings.Join(v.Targets(), "\n  "))
	}
}

// usernameOf reads the signed-in user's name from the page's header.
func usernameOf(t *testing.T, page playwright.Page) string {
	t.Helper()
	name, err := page.GetByTestId("nav-user").TextContent()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(name)
}

// stakedTable sits two players, signed in through the API with a deposit
// of 1 USDC each, at an rps table staked at 1 USDC a player, and returns
// them, their names and the game.
func stakedTable(t *testing.T, s *server) ([2]*apiclient.Client, [2]string, string) {
	t.Helper()
	ctx := t.Context()
	var players [2]*apiclient.Client
	var names [2]string
	faucet := apiclient.New(s.URL, nil)
	for i := range players {
		key := solana.NewWallet().PrivateKey
		c := apiclient.New(s.URL, key)
		if err := c.Login(ctx); err != nil {
			t.Fatal(err)
		}
		faucetTo(t, faucet, key.PublicKey().String(), 1_000_000)
		if err := c.Deposit(ctx, 1_000_000); err != nil {
			t.Fatal(err)
		}
		var me struct{ Username string }
		if err := c.Do(ctx, "GET", "/users/me", nil, &me); err != nil {
			t.Fatal(err)
		}
		players[i], names[i] = c, me.Username
	}
	var lobby struct{ ID string }
	if err := players[0].Do(ctx, "POST", "/lobbies", map[string]any{"gameType": "rps", "stakeMinor": 1_000_000,
		"settings": map[string]int{"rounds": 3, "roundSeconds": 60}}, &lobby); err != nil {
		t.Fatal(err)
	}
	var joined struct{ GameID string }
	for _, p := range players {
		if err := p.Do(ctx, "POST", "/lobbies/"+lobby.ID+"/join-queue", nil, &joined); err != nil {
			t.Fatal(err)
		}
	}
	return players, names, joined.GameID
}

// faucetTo puts usdc on chain at address.
func faucetTo(t *testing.T, faucet *apiclient.Client, address string, usdc int64) {
	t.Helper()
	if err := faucet.Do(t.Context(), "POST", "/dev/faucet", map[string]any{"address": address, "amountMinor": usdc}, nil); err != nil {
		t.Fatal(err)
	}
}

// betFromPage bets amount USDC on the player named on from the game page
// b shows, and waits for the bet to be in the pool.
func betFromPage(t *testing.T, b playwright.Page, on, amount string) {
	t.Helper()
	if _, err := b.GetByTestId("bet-on").SelectOption(playwright.SelectOptionValues{Labels: &[]string{on}}); err != nil {
		t.Fatal(err)
	}
	fill(t, b, "bet-amount", amount)
	click(t, b, "bet-submit")
	wantText(t, b.GetByTestId("bet-status"), "Your bet on "+on+" is in the pool.", "the bet is confirmed")
}
