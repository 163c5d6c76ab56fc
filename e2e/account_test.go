package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/playwright-community/playwright-go"
)

// signInWithDevWallet signs the page in with the browser's built-in dev
// wallet and returns the username the site shows.
func signInWithDevWallet(t *testing.T, page playwright.Page) string {
	t.Helper()
	if _, err := page.Goto("/login"); err != nil {
		t.Fatal(err)
	}
	if err := page.GetByTestId("dev-wallet").Click(); err != nil {
		t.Fatalf("click the dev wallet: %v", err)
	}
	user := page.GetByTestId("nav-user")
	if err := expect.Locator(user).ToBeVisible(); err != nil {
		status, _ := page.GetByTestId("wallet-status").TextContent()
		t.Fatalf("not signed in (wallet status %q): %v", status, err)
	}
	name, err := user.TextContent()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(name)
}

func TestDevWalletLoginProfileAndLogout(t *testing.T) {
	s := startServer(t, nil)
	page := newPage(t, s)

	name := signInWithDevWallet(t, page)
	if err := expect.Locator(page.GetByTestId("previous-sign-in")).ToHaveText("Welcome: this is the first sign-in of this account."); err != nil {
		t.Errorf("the first sign-in: %v", err)
	}
	u, err := s.App.Users.ByUsername(t.Context(), name)
	if err != nil {
		t.Fatalf("the nav shows %q, which is no user: %v", name, err)
	}
	// The dev wallet keeps its key: signing in again is the same account.
	address := u.WalletAddress
	if stored, err := page.Evaluate(`JSON.parse(localStorage.getItem("wager.devWallet.v1")).address`); err != nil || stored != address {
		t.Fatalf("dev wallet address in localStorage: got %v (%v), want %s", stored, err, address)
	}

	// Edit the profile: errors inline, then a successful save.
	if _, err := page.Goto("/settings"); err != nil {
		t.Fatal(err)
	}
	if err := page.Locator("#username").Fill("x"); err != nil {
		t.Fatal(err)
	}
	if err := page.GetByTestId("save-profile").Click(); err != nil {
		t.Fatal(err)
	}
	if err := expect.Locator(page.GetByTestId("username-error")).ToContainText("3 to 20 characters"); err != nil {
		t.Errorf("inline username error: %v", err)
	}
	if err := page.Locator("#username").Fill("browser_bob"); err != nil {
		t.Fatal(err)
	}
	if err := page.Locator("#displayName").Fill("Bob from the browser"); err != nil {
		t.Fatal(err)
	}
	if err := page.Locator("#bio").Fill("Rock, always rock. <script>alert(1)</script>"); err != nil {
		t.Fatal(err)
	}
	if err := page.GetByTestId("save-profile").Click(); err != nil {
		t.Fatal(err)
	}
	// A rename reloads the page so that the nav shows the new name.
	if err := expect.Locator(page.GetByTestId("nav-user")).ToHaveText("browser_bob"); err != nil {
		t.Errorf("nav after rename: %v", err)
	}
	if _, err := page.Goto("/u/browser_bob"); err != nil {
		t.Fatal(err)
	}
	if err := expect.Locator(page.GetByTestId("profile-name")).ToHaveText("Bob from the browser"); err != nil {
		t.Errorf("profile name: %v", err)
	}
	if err := expect.Locator(page.GetByTestId("profile-bio")).ToHaveText("Rock, always rock. <script>alert(1)</script>"); err != nil {
		t.Errorf("bio shown as typed: %v", err)
	}
	screenshot(t, page, "profile")

	// Log out: the nav offers sign-in again and settings need a login.
	if err := page.GetByTestId("logout").Click(); err != nil {
		t.Fatal(err)
	}
	if err := expect.Locator(page.GetByTestId("nav-login")).ToBeVisible(); err != nil {
		t.Errorf("after logout: %v", err)
	}
	if _, err := page.Goto("/settings"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(page.URL(), "/login?next=") {
		t.Errorf("settings after logout went to %s, want the login page", page.URL())
	}

	// Signing in again with the same browser wallet is the same account,
	// and the page says when the previous sign-in was (once: the next page
	// does not).
	if again := signInWithDevWallet(t, page); again != "browser_bob" {
		t.Errorf("second sign-in: got %q, want browser_bob", again)
	}
	back, err := s.App.Users.ByUsername(t.Context(), "browser_bob")
	if err != nil || back.PreviousSignInAt == nil {
		t.Fatalf("after the second sign-in: %+v, %v", back, err)
	}
	// In the browser's own time zone and words.
	want, err := page.Evaluate(`(iso) => new Date(iso).toLocaleString(undefined, { dateStyle: "long", timeStyle: "short" })`,
		back.PreviousSignInAt.Format(time.RFC3339Nano))
	if err != nil {
		t.Fatal(err)
	}
	if err := expect.Locator(page.GetByTestId("previous-sign-in")).ToHaveText("Welcome back. Your previous sign-in was on " + want.(string) + "."); err != nil {
		t.Errorf("the second sign-in: %v", err)
	}
	if _, err := page.Reload(); err != nil {
		t.Fatal(err)
	}
	if err := expect.Locator(page.GetByTestId("previous-sign-in")).ToHaveCount(0); err != nil {
		t.Errorf("the previous sign-in is said again on the next page: %v", err)
	}
}

func TestOutdatedWalletScriptShowsAnUpgradeNotice(t *testing.T) {
	s := startServer(t, map[string]string{"MIN_SDK_VERSION": "9.0.0"})
	page := newPage(t, s)
	if _, err := page.Goto("/login"); err != nil {
		t.Fatal(err)
	}
	if err := page.GetByTestId("dev-wallet").Click(); err != nil {
		t.Fatal(err)
	}
	if err := expect.Locator(page.GetByTestId("wallet-status")).ToContainText("out of date"); err != nil {
		t.Fatalf("no upgrade notice: %v", err)
	}
}
