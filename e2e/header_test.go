package e2e

import (
	"testing"

	"github.com/playwright-community/playwright-go"
)

func TestTheHeaderBalanceFollowsMoneyLive(t *testing.T) {
	s := startServer(t, nil)
	wallet := newPage(t, s)
	signInWithDevWallet(t, wallet)
	// A second tab of the same browser stays on the home page: only its
	// live socket can tell it about money moved in the first.
	home, err := wallet.Context().NewPage()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := home.Goto("/"); err != nil {
		t.Fatal(err)
	}
	wantText(t, home.GetByTestId("nav-balance"), "Balance: 0.00 USDC", "the header's balance before anything")
	visible(t, home.GetByTestId("nav-avatar"), "the header's avatar (the initial)")

	if _, err := wallet.Goto("/wallet"); err != nil {
		t.Fatal(err)
	}
	click(t, wallet, "faucet")
	wantStatus(t, wallet, "Added 100.00 test USDC", "faucet status")
	fill(t, wallet, "deposit-amount", "2.5")
	click(t, wallet, "deposit-submit")
	wantStatus(t, wallet, "Deposited 2.50 USDC", "deposit status")
	wantText(t, home.GetByTestId("nav-balance"), "Balance: 2.50 USDC", "the other tab's header after the deposit, without a reload")
	wantText(t, wallet.GetByTestId("nav-balance"), "Balance: 2.50 USDC", "the wallet page's own header")

	fill(t, wallet, "withdraw-amount", "1")
	click(t, wallet, "withdraw-submit")
	wantStatus(t, wallet, "Withdrew 1.00 USDC", "withdrawal status")
	wantText(t, home.GetByTestId("nav-balance"), "Balance: 1.50 USDC", "the other tab's header after the withdrawal")

	// The balance links to the wallet.
	if err := home.GetByTestId("nav-balance").Click(); err != nil {
		t.Fatal(err)
	}
	wantText(t, home.GetByTestId("balance-available"), "1.50", "the wallet page behind the header's balance")
}

func TestAdminLinkRefusalInWordsAndMaintenanceThatAsksFirst(t *testing.T) {
	adminAddress, adminKey := devKey(t)
	s := startServer(t, map[string]string{"ADMIN_WALLETS": adminAddress})
	admin, player := newPage(t, s), newPage(t, s)
	usePreset(t, admin, adminKey)
	signInWithDevWallet(t, admin)
	signInWithDevWallet(t, player)

	// Only the admin has the link.
	wantText(t, admin.GetByTestId("nav-admin"), "Admin", "the admin's header link")
	count(t, player.GetByTestId("nav-admin"), 0, "a player's header has no Admin link")

	// A player who opens the admin page reads why, and where to go.
	if _, err := player.Goto("/admin"); err != nil {
		t.Fatal(err)
	}
	wantText(t, player.GetByTestId("error-title"), "This page is for administrators", "the refusal's title")
	wantText(t, player.GetByTestId("error-detail"),
		"This page is for administrators, and you are signed in with an account that is not one.", "the refusal")
	wantText(t, player.GetByTestId("error-action"), "Back to the live games", "the way on")
	if err := expect.Locator(player.GetByTestId("error-page")).Not().ToContainText("ADMIN_ONLY"); err != nil {
		t.Errorf("the refusal shows its code: %v", err)
	}

	// The admin page fits a phone: its table scrolls in its own box.
	if err := admin.SetViewportSize(390, 844); err != nil {
		t.Fatal(err)
	}
	if err := admin.GetByTestId("nav-admin").Click(); err != nil {
		t.Fatal(err)
	}
	visible(t, admin.GetByTestId("books-table"), "the reconciliation table")
	if wide, err := admin.Evaluate(`document.documentElement.scrollWidth > window.innerWidth`); err != nil || wide != false {
		t.Errorf("the admin page scrolls sideways at 390 px (%v, %v)", wide, err)
	}
	screenshot(t, admin, "admin-phone")

	// Maintenance asks first; Cancel changes nothing.
	click(t, admin, "toggle-maintenance-mode")
	contains(t, admin.GetByTestId("confirm-maintenance"), "Switch maintenance mode on?", "the confirmation")
	contains(t, admin.GetByTestId("confirm-maintenance"), "no one can start a new game", "what maintenance does")
	click(t, admin, "confirm-maintenance-cancel")
	count(t, admin.GetByTestId("confirm-maintenance"), 0, "the confirmation is gone after Cancel")
	if err := expect.Locator(admin.GetByTestId("toggle-maintenance-mode")).ToHaveAttribute("aria-pressed", "false"); err != nil {
		t.Fatalf("Cancel switched maintenance on: %v", err)
	}
	count(t, admin.GetByTestId("maintenance-banner"), 0, "no banner before maintenance")

	click(t, admin, "toggle-maintenance-mode")
	click(t, admin, "confirm-maintenance-on")
	t.Cleanup(func() { s.App.Flags.Set(t.Context(), "maintenance-mode", false, "test") })
	contains(t, admin.GetByTestId("flag-change").First(), "maintenance-mode turned on", "the change is listed")

	const banner = "The site is in maintenance: only administrators can use it until maintenance mode is switched off."
	if _, err := admin.Goto("/docs"); err != nil {
		t.Fatal(err)
	}
	contains(t, admin.GetByTestId("maintenance-banner"), banner, "the banner on another page")
	if _, err := player.Goto("/"); err != nil {
		t.Fatal(err)
	}
	contains(t, player.GetByTestId("maintenance-banner"), banner, "the banner on the player's maintenance page")
	wantText(t, player.GetByTestId("error-next"), "Please come back in a few minutes.", "what the player can do")

	// Switching it off takes one click, and the banner goes.
	if _, err := admin.Goto("/admin"); err != nil {
		t.Fatal(err)
	}
	click(t, admin, "toggle-maintenance-mode")
	contains(t, admin.GetByTestId("flag-change").First(), "maintenance-mode turned off", "maintenance is off")
	if _, err := admin.Goto("/docs"); err != nil {
		t.Fatal(err)
	}
	count(t, admin.GetByTestId("maintenance-banner"), 0, "no banner after maintenance")
	if _, err := player.Goto("/", playwright.PageGotoOptions{WaitUntil: playwright.WaitUntilStateLoad}); err != nil {
		t.Fatal(err)
	}
	count(t, player.GetByTestId("maintenance-banner"), 0, "the player's page is back")
}
