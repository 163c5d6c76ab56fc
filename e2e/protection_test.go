package e2e

import (
	"testing"
	"time"

	"github.com/gagliardetto/solana-go"
	"github.com/playwright-community/playwright-go"

	"wager/domain/protection"
	"wager/e2e/apiclient"
	"wager/views"
)

// apiDepositor is a player driven through the JSON API with usdc on its
// platform balance.
func apiDepositor(t *testing.T, s *server, usdc int64) *apiclient.Client {
	t.Helper()
	key, err := solana.NewRandomPrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	c := apiclient.New(s.URL, key)
	if err := c.Login(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := c.Do(t.Context(), "POST", "/dev/faucet", map[string]any{"address": key.PublicKey().String(), "amountMinor": usdc}, nil); err != nil {
		t.Fatal(err)
	}
	if err := c.Deposit(t.Context(), usdc); err != nil {
		t.Fatal(err)
	}
	return c
}

// stakedAPIGame starts a staked game between two API players and returns
// its page's path and the first player's username.
func stakedAPIGame(t *testing.T, s *server) (string, string) {
	t.Helper()
	p1, p2 := apiDepositor(t, s, 2_000_000), apiDepositor(t, s, 2_000_000)
	var lobby struct{ ID string }
	if err := p1.Do(t.Context(), "POST", "/lobbies", map[string]any{"gameType": "rps", "stakeMinor": 1_000_000,
		"settings": map[string]int{"rounds": 3, "roundSeconds": 120}}, &lobby); err != nil {
		t.Fatal(err)
	}
	if err := p1.Do(t.Context(), "POST", "/lobbies/"+lobby.ID+"/join-queue", nil, nil); err != nil {
		t.Fatal(err)
	}
	var joined struct{ GameID string }
	if err := p2.Do(t.Context(), "POST", "/lobbies/"+lobby.ID+"/join-queue", nil, &joined); err != nil || joined.GameID == "" {
		t.Fatalf("match: %+v %v", joined, err)
	}
	var me struct{ Username string }
	if err := p1.Do(t.Context(), "GET", "/users/me", nil, &me); err != nil {
		t.Fatal(err)
	}
	return "/game/" + joined.GameID, me.Username
}

// devWalletFunds gives the page's dev wallet usdc on chain.
func devWalletFunds(t *testing.T, s *server, page playwright.Page, usdc int64) {
	t.Helper()
	address, err := page.Evaluate(`JSON.parse(localStorage.getItem("wager.devWallet.v1")).address`)
	if err != nil {
		t.Fatal(err)
	}
	if err := apiclient.New(s.URL, nil).Do(t.Context(), "POST", "/dev/faucet", map[string]any{"address": address, "amountMinor": usdc}, nil); err != nil {
		t.Fatal(err)
	}
}

func goTo(t *testing.T, page playwright.Page, path string) {
	t.Helper()
	if _, err := page.Goto(path); err != nil {
		t.Fatal(err)
	}
}

// A player sets a daily deposit limit on the Responsible play page; a
// deposit over it is refused on the wallet page in words: the limit, what
// is used, what fits now and when the rest may go in.
func TestADepositOverTheLimitIsRefusedInWords(t *testing.T) {
	s := startServer(t, nil)
	page := newPage(t, s)
	name := signInWithDevWallet(t, page)
	u, err := s.App.Users.ByUsername(t.Context(), name)
	if err != nil {
		t.Fatal(err)
	}
	devWalletFunds(t, s, page, 10_000_000)

	goTo(t, page, "/settings")
	click(t, page, "responsible-play-link")
	fill(t, page, "limit-input-depositMinor.day", "2")
	click(t, page, "save-limits")
	wantText(t, page.GetByTestId("protection-saved"), "Your limits are saved. Tighter limits apply now; looser ones wait 24 hours, as listed below.", "saved")
	wantText(t, page.GetByTestId("limit-depositMinor.day").GetByTestId("limit-current"), "2.00 USDC", "the new limit")
	check(t, page, "responsible-play", views.ResponsiblePlayPath, nil) // axe, the phone's width, screenshots
	if err := page.SetViewportSize(1280, 800); err != nil {
		t.Fatal(err)
	}

	goTo(t, page, "/wallet")
	fill(t, page, "deposit-amount", "1.5")
	click(t, page, "deposit-submit")
	wantStatus(t, page, "Deposited 1.50 USDC", "a deposit under the limit")
	var at time.Time
	if err := s.App.DB.NewRaw(`SELECT max(t.created_at) FROM ledger_transactions AS t JOIN ledger_entries AS e ON e.transaction_id = t.id
		WHERE e.account_id = ? AND t.kind = 'deposit'`, "user:"+u.ID+":available").Scan(t.Context(), &at); err != nil {
		t.Fatal(err)
	}
	fill(t, page, "deposit-amount", "1")
	click(t, page, "deposit-submit")
	wantStatus(t, page, "Your daily deposit limit is 2.00 USDC, and you have deposited 1.50 USDC in the last 24 hours, so 0.50 USDC is left. "+
		"This deposit of 1.00 USDC would go past the limit. You can deposit up to 0.50 USDC now, or this amount from "+
		protection.FormatTime(at.Add(24*time.Hour))+".", "a deposit over the limit")
	if err := expect.Locator(page.GetByTestId("wallet-status")).ToHaveAttribute("data-state", "error"); err != nil {
		t.Errorf("error state: %v", err)
	}
	wantText(t, page.GetByTestId("balance-available"), "1.50", "nothing more was deposited")
	screenshot(t, page, "wallet-deposit-limit")
}

// A player takes a 24-hour time-out: every form that puts money in (the
// deposit, a staked table, a bet, a donation, a market buy, a tip) says it
// is refused and until when, the banner says so on every page, and the
// withdrawal still works.
func TestATimeOutRefusesEveryMoneyFormUntilItEnds(t *testing.T) {
	s := startServer(t, nil)
	gamePath, player := stakedAPIGame(t, s)
	page := newPage(t, s)
	name := signInWithDevWallet(t, page)
	u, err := s.App.Users.ByUsername(t.Context(), name)
	if err != nil {
		t.Fatal(err)
	}
	devWalletFunds(t, s, page, 10_000_000)
	goTo(t, page, "/wallet")
	fill(t, page, "deposit-amount", "5")
	click(t, page, "deposit-submit")
	wantStatus(t, page, "Deposited 5.00 USDC", "the deposit before the time-out")

	goTo(t, page, views.ResponsiblePlayPath)
	if err := expect.Locator(page.GetByTestId("timeout-form")).ToContainText("a time-out cannot be undone: nobody, not even support, can end it or make it shorter"); err != nil {
		t.Errorf("the time-out form does not say plainly that it cannot be undone: %v", err)
	}
	// Without the box ticked the browser does not send it; the box is
	// required.
	if err := expect.Locator(page.GetByTestId("timeout-confirm")).ToHaveAttribute("required", ""); err != nil {
		t.Errorf("the confirmation is not required: %v", err)
	}
	if err := page.GetByTestId("timeout-confirm").Check(); err != nil {
		t.Fatal(err)
	}
	click(t, page, "start-timeout")
	visible(t, page.GetByTestId("protection-saved"), "the time-out started")
	x, err := s.App.Protection.Running(t.Context(), u.ID)
	if err != nil || x == nil || x.Kind != "timeout" {
		t.Fatalf("the running exclusion: %+v %v", x, err)
	}
	until := protection.FormatTime(*x.Until)
	wantText(t, page.GetByTestId("exclusion-status"), "Your time-out runs until "+until+". It cannot be shortened; you can only make it longer.", "the page says until when")
	banner := "You are taking a time-out until " + until + ". Deposits, stakes, tournament entries, bets, market buys, donations and tips are closed until then. " +
		"Withdrawals, selling shares, cancelling orders, redeeming, chat and free games still work. Responsible play"
	wantText(t, page.GetByTestId("protection-banner"), banner, "the banner")
	refusal := "time-out until " + until

	// The wallet: a deposit is refused, a withdrawal goes out.
	goTo(t, page, "/wallet")
	wantText(t, page.GetByTestId("protection-banner"), banner, "the banner on the wallet page")
	fill(t, page, "deposit-amount", "1")
	click(t, page, "deposit-submit")
	wantStatus(t, page, "You are taking a "+refusal, "a deposit during the time-out")
	fill(t, page, "withdraw-amount", "1")
	click(t, page, "withdraw-submit")
	wantStatus(t, page, "Withdrew 1.00 USDC", "a withdrawal during the time-out")
	wantText(t, page.GetByTestId("balance-available"), "4.00", "after the withdrawal")

	// A staked table.
	goTo(t, page, "/play")
	fill(t, page, "stake", "1")
	click(t, page, "play-submit")
	if err := expect.Locator(page.GetByTestId("play-error")).ToContainText(refusal); err != nil {
		t.Errorf("a staked table during the time-out: %v", err)
	}

	// A bet, a donation and a market buy on a staked game.
	goTo(t, page, gamePath)
	if _, err := page.GetByTestId("bet-on").SelectOption(playwright.SelectOptionValues{Labels: &[]string{player}}); err != nil {
		t.Fatal(err)
	}
	fill(t, page, "bet-amount", "1")
	click(t, page, "bet-submit")
	wantStatusOf(t, page, "bet-status", refusal, "a bet")
	fill(t, page, "donate-amount", "1")
	click(t, page, "donate-submit")
	wantStatusOf(t, page, "donate-status", refusal, "a donation")
	fill(t, page, "market-price", "0.5")
	fill(t, page, "market-shares", "2")
	click(t, page, "market-submit")
	wantStatusOf(t, page, "market-status", refusal, "a market buy")
	screenshot(t, page, "game-time-out")

	// A tip from the player's profile.
	goTo(t, page, "/u/"+player)
	click(t, page, "tip-button")
	fill(t, page, "tip-amount", "1")
	click(t, page, "tip-submit")
	wantStatusOf(t, page, "tip-status", refusal, "a tip")
}

// wantStatusOf waits until the status line testID contains text.
func wantStatusOf(t *testing.T, page playwright.Page, testID, text, what string) {
	t.Helper()
	if err := expect.Locator(page.GetByTestId(testID)).ToContainText(text,
		playwright.LocatorAssertionsToContainTextOptions{Timeout: playwright.Float(moneyTimeout)}); err != nil {
		t.Errorf("%s during the time-out: %v", what, err)
	}
}

// Every sessionReminderMinutes the page says how long the player has
// played and what they won or lost since signing in, with "Keep playing"
// and "Take a break". The browser's clock is moved, not waited for.
func TestTheRealityCheckComesAfterTheChosenMinutes(t *testing.T) {
	s := startServer(t, nil)
	page := newPage(t, s)
	signInWithDevWallet(t, page)
	goTo(t, page, views.ResponsiblePlayPath)
	fill(t, page, "reminder-input", "1")
	click(t, page, "save-limits")
	visible(t, page.GetByTestId("protection-saved"), "the reminder is saved")

	if err := page.Clock().Install(); err != nil {
		t.Fatal(err)
	}
	goTo(t, page, "/play")
	dialog := page.GetByTestId("reality-check")
	if err := expect.Locator(dialog).ToBeHidden(); err != nil {
		t.Fatalf("the reality check before a minute: %v", err)
	}
	if err := page.Clock().RunFor("01:05"); err != nil {
		t.Fatal(err)
	}
	visible(t, dialog, "the reality check after a minute")
	wantText(t, dialog.GetByTestId("reality-text"), "You have been playing for 1 minute since you signed in, and you have neither won nor lost.", "what it says")
	screenshot(t, page, "reality-check")
	click(t, page, "reality-keep")
	if err := expect.Locator(dialog).ToBeHidden(); err != nil {
		t.Errorf("Keep playing closes it: %v", err)
	}
	if err := page.Clock().RunFor("01:00"); err != nil {
		t.Fatal(err)
	}
	wantText(t, dialog.GetByTestId("reality-text"), "You have been playing for 2 minutes since you signed in, and you have neither won nor lost.", "the next reminder")
	click(t, page, "reality-break")
	if err := page.WaitForURL("**" + views.ResponsiblePlayPath); err != nil {
		t.Errorf("Take a break goes to the Responsible play page: %v (at %s)", err, page.URL())
	}
}
