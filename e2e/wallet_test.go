package e2e

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/playwright-community/playwright-go"

	"wager/domain/money"
)

// moneyTimeout bounds how long a money movement may take to show: it waits
// for the embedded chain to confirm.
const moneyTimeout = 30_000.0

// wantText waits until the locator's text is exactly text.
func wantText(t *testing.T, loc playwright.Locator, text, what string) {
	t.Helper()
	if err := expect.Locator(loc).ToHaveText(text,
		playwright.LocatorAssertionsToHaveTextOptions{Timeout: playwright.Float(moneyTimeout)}); err != nil {
		status := ""
		if page, err := loc.Page(); err == nil {
			status, _ = page.GetByTestId("wallet-status").TextContent()
		}
		t.Fatalf("%s: want %q (wallet status %q): %v", what, text, status, err)
	}
}

// wantStatus waits until the wallet page's status line contains text.
func wantStatus(t *testing.T, page playwright.Page, text any, what string) {
	t.Helper()
	if err := expect.Locator(page.GetByTestId("wallet-status")).ToContainText(text,
		playwright.LocatorAssertionsToContainTextOptions{Timeout: playwright.Float(moneyTimeout)}); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func click(t *testing.T, page playwright.Page, testID string) {
	t.Helper()
	if err := page.GetByTestId(testID).Click(); err != nil {
		t.Fatalf("click %s: %v", testID, err)
	}
}

func fill(t *testing.T, page playwright.Page, testID, value string) {
	t.Helper()
	if err := page.GetByTestId(testID).Fill(value); err != nil {
		t.Fatalf("fill %s: %v", testID, err)
	}
}

func TestWalletFaucetDepositWithdraw(t *testing.T) {
	start := time.Now()
	s := startServer(t, nil)
	page := newPage(t, s)

	// The page needs a login.
	if _, err := page.Goto("/wallet"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(page.URL(), "/login?next=%2Fwallet") {
		t.Errorf("anonymous /wallet went to %s, want the login page", page.URL())
	}

	name := signInWithDevWallet(t, page)
	u, err := s.App.Users.ByUsername(t.Context(), name)
	if err != nil {
		t.Fatal(err)
	}
	if err := page.GetByRole("link", playwright.PageGetByRoleOptions{Name: "Wallet", Exact: playwright.Bool(true)}).Click(); err != nil {
		t.Fatalf("nav link to the wallet: %v", err)
	}
	walletBeforeAnything(t, s, page, u.WalletAddress)
	walletFaucetDepositAndWithdrawal(t, s, page)
	walletStandardAndLegacyDeposits(t, page, u.WalletAddress)

	// A fresh load shows the same figures, rendered by the server.
	if _, err := page.Reload(); err != nil {
		t.Fatal(err)
	}
	wantText(t, page.GetByTestId("balance-available"), "2.00", "available after a reload")
	if err := expect.Locator(page.GetByTestId("history-row")).ToHaveCount(3); err != nil {
		t.Errorf("history after a reload: %v", err)
	}

	// The page's script reads the JSON API with the session cookie too.
	got, err := page.Evaluate(`async () => {
		const b = await wagerWallet.apiGet("/wallets/me/balance");
		const h = await wagerWallet.apiGet("/wallets/me/transactions?limit=5");
		return [b.availableMinor, b.onChain.usdcMinor, h.length, h[0].kind];
	}`)
	if want := []any{2_000_000, 98_000_000, 3, "deposit"}; fmt.Sprint(got) != fmt.Sprint(want) || err != nil {
		t.Errorf("GET with the session cookie: got %v (%v), want %v", got, err, want)
	}

	b, err := s.App.Money.BalanceOf(t.Context(), u)
	if err != nil {
		t.Fatal(err)
	}
	if b.AvailableMinor != 2_000_000 || b.OnChain == nil || b.OnChain.USDCMinor != 98_000_000 {
		t.Errorf("balance: got available %d, on chain %+v; want 2000000 and 98000000", b.AvailableMinor, b.OnChain)
	}
	r, err := s.App.Money.Reconcile(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if !r.Balanced {
		t.Errorf("ledger not balanced: %+v", r)
	}

	walletHistoryPages(t, s, page, u.ID)
	t.Logf("wallet flow took %s", time.Since(start).Round(time.Millisecond))
}

// walletBeforeAnything checks the wallet page of a new user: nothing on
// the balances or in the history, the user's wallet address and the
// platform's deposit address.
func walletBeforeAnything(t *testing.T, s *server, page playwright.Page, walletAddress string) {
	t.Helper()
	wantText(t, page.GetByTestId("balance-available"), "0.00", "available before anything")
	wantText(t, page.GetByTestId("balance-locked"), "0.00", "locked before anything")
	wantText(t, page.GetByTestId("balance-onchain"), "0.00", "on chain before the faucet")
	if err := expect.Locator(page.GetByTestId("history-empty")).ToHaveText("No transactions yet."); err != nil {
		t.Errorf("empty history: %v", err)
	}
	if err := expect.Locator(page.GetByTestId("wallet-address")).ToHaveText(walletAddress); err != nil {
		t.Errorf("wallet address: %v", err)
	}
	if err := expect.Locator(page.GetByTestId("deposit-address")).ToHaveText(s.App.Money.DepositAddress().String()); err != nil {
		t.Errorf("deposit address: %v", err)
	}

}

// walletFaucetDepositAndWithdrawal takes test money from the faucet,
// deposits and withdraws some through the page, and checks the amounts the
// page or the server refuses.
func walletFaucetDepositAndWithdrawal(t *testing.T, s *server, page playwright.Page) {
	t.Helper()
	rows := page.GetByTestId("history-row")
	// Test money from the embedded chain's faucet.
	click(t, page, "faucet")
	wantText(t, page.GetByTestId("balance-onchain"), "100.00", "on chain after the faucet")
	wantText(t, page.GetByTestId("balance-sol"), "0.1", "SOL after the faucet")
	wantStatus(t, page, "Added 100.00 test USDC", "faucet status")

	// Amounts are checked in the page before anything is sent.
	fill(t, page, "deposit-amount", "1.2345678")
	click(t, page, "deposit-submit")
	wantStatus(t, page, "at most 6 decimals", "too many decimals")
	if err := expect.Locator(page.GetByTestId("deposit-amount")).ToHaveAttribute("aria-invalid", "true"); err != nil {
		t.Errorf("deposit amount marked invalid: %v", err)
	}

	// Deposit 2.5: prepared by the server, signed by the dev wallet in the
	// page, submitted and confirmed.
	fill(t, page, "deposit-amount", "2.5")
	click(t, page, "deposit-submit")
	wantText(t, page.GetByTestId("balance-available"), "2.50", "available after the deposit")
	wantText(t, page.GetByTestId("balance-onchain"), "97.50", "on chain after the deposit")
	wantStatus(t, page, "Deposited 2.50 USDC", "deposit status")
	if err := expect.Locator(rows).ToHaveCount(1); err != nil {
		t.Fatalf("history after the deposit: %v", err)
	}
	wantText(t, rows.First().GetByTestId("history-kind"), "Deposit", "deposit row")
	wantText(t, rows.First().GetByTestId("history-status").Last(), "Confirmed", "deposit row status")
	if err := expect.Locator(rows.First()).ToContainText("+2.5"); err != nil {
		t.Errorf("deposit row amount: %v", err)
	}
	link := rows.First().GetByTestId("history-signature")
	if err := expect.Locator(link).ToHaveAttribute("href",
		regexp.MustCompile(`^https://explorer\.solana\.com/tx/\w+\?cluster=custom&customUrl=`+
			regexp.QuoteMeta(url.QueryEscape(s.App.Config.PublicURL+"/dev/solana-rpc"))+`$`)); err != nil {
		t.Errorf("explorer link: %v", err)
	}

	// Withdraw 1 back to the wallet.
	fill(t, page, "withdraw-amount", "1")
	click(t, page, "withdraw-submit")
	wantText(t, page.GetByTestId("balance-available"), "1.50", "available after the withdrawal")
	wantText(t, page.GetByTestId("balance-onchain"), "98.50", "on chain after the withdrawal")
	wantStatus(t, page, "Withdrew 1.00 USDC", "withdrawal status")
	if err := expect.Locator(rows).ToHaveCount(2); err != nil {
		t.Fatalf("history after the withdrawal: %v", err)
	}
	wantText(t, rows.First().GetByTestId("history-kind"), "Withdrawal", "withdrawal row")
	if err := expect.Locator(rows.First()).ToContainText("-1"); err != nil {
		t.Errorf("withdrawal row amount: %v", err)
	}

	// Less than the smallest withdrawal: the limit, inline.
	fill(t, page, "withdraw-amount", "0.05")
	click(t, page, "withdraw-submit")
	wantStatus(t, page, "The amount must be at least 0.10 USDC for a withdrawal", "too small a withdrawal")
	wantText(t, page.GetByTestId("balance-available"), "1.50", "available after the refused withdrawal")

	// More than the balance: the server's INSUFFICIENT_FUNDS message, inline.
	fill(t, page, "withdraw-amount", "1000")
	click(t, page, "withdraw-submit")
	wantStatus(t, page, regexp.MustCompile(`(?i)your available balance is 1\.50 USDC, less than 1000\.00 USDC`), "over-large withdrawal")
	if err := expect.Locator(page.GetByTestId("wallet-status")).ToHaveAttribute("data-state", "error"); err != nil {
		t.Errorf("error state: %v", err)
	}
	if err := expect.Locator(page.GetByTestId("withdraw-submit")).ToBeEnabled(); err != nil {
		t.Errorf("withdraw button after the error: %v", err)
	}
	wantText(t, page.GetByTestId("balance-available"), "1.50", "available after the refused withdrawal")
	screenshot(t, page, "wallet")
	if err := page.SetViewportSize(390, 844); err != nil {
		t.Fatal(err)
	}
	screenshot(t, page, "wallet-mobile")
	if err := page.SetViewportSize(1280, 720); err != nil {
		t.Fatal(err)
	}

}

// walletStandardAndLegacyDeposits deposits through a Wallet Standard
// wallet, which signs for walletAddress, and checks that a wallet on the
// older window.solana interface is told it cannot.
func walletStandardAndLegacyDeposits(t *testing.T, page playwright.Page, walletAddress string) {
	t.Helper()
	// A Wallet Standard wallet signs through solana:signTransaction. This
	// one is a stand-in that holds the dev wallet's key.
	if _, err := page.Evaluate(`async () => {
		const dev = await wagerWallet.devWallet(false);
		const account = { address: dev.address, publicKey: wagerWallet.base58Decode(dev.address) };
		const wallet = { name: "Stand-in wallet", version: "1.0.0", chains: ["solana:localnet"], accounts: [account], features: {
			"standard:connect": { version: "1.0.0", connect: async () => ({ accounts: [account] }) },
			"solana:signMessage": { version: "1.0.0", signMessage: async ({ message }) =>
				[{ signedMessage: message, signature: await dev.signMessageBytes(message) }] },
			"solana:signTransaction": { version: "1.0.0", signTransaction: async ({ account: a, transaction }) => {
				window.signedBy = a.address;
				return [{ signedTransaction: await dev.signTransaction(transaction) }];
			} },
		} };
		window.dispatchEvent(new CustomEvent("wallet-standard:register-wallet", { detail: ({ register }) => register(wallet) }));
		localStorage.setItem("wager.walletKind", "standard");
	}`); err != nil {
		t.Fatal(err)
	}
	fill(t, page, "deposit-amount", "0.5")
	click(t, page, "deposit-submit")
	wantText(t, page.GetByTestId("balance-available"), "2.00", "available after the Wallet Standard deposit")
	wantText(t, page.GetByTestId("balance-onchain"), "98.00", "on chain after the Wallet Standard deposit")
	if by, err := page.Evaluate(`window.signedBy`); err != nil || by != walletAddress {
		t.Errorf("the Wallet Standard wallet signed for %v (%v), want %s", by, err, walletAddress)
	}

	// Wallets on the older window.solana interface cannot sign deposits yet:
	// the page says so instead of failing obscurely.
	if _, err := page.Evaluate(`localStorage.setItem("wager.walletKind", "legacy")`); err != nil {
		t.Fatal(err)
	}
	fill(t, page, "deposit-amount", "1")
	click(t, page, "deposit-submit")
	wantStatus(t, page, "not supported for deposits yet", "legacy wallet deposit")
	if kind, err := page.Evaluate(`localStorage.setItem("wager.walletKind", "dev")`); err != nil {
		t.Fatal(kind, err)
	}

}

// walletHistoryPages adds twenty more lines to the user's history: the
// page shows twenty and links to the older ones.
func walletHistoryPages(t *testing.T, s *server, page playwright.Page, userID string) {
	t.Helper()
	rows := page.GetByTestId("history-row")
	more := make([]money.Activity, 20)
	for i := range more {
		more[i] = money.Activity{UserID: userID, Kind: "transfer", AmountMinor: -int64(i + 1), Status: "confirmed",
			Signature: fmt.Sprintf("fake%d", i), CreatedAt: time.Now()}
	}
	if _, err := s.App.DB.NewInsert().Model(&more).Exec(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := page.Reload(); err != nil {
		t.Fatal(err)
	}
	if err := expect.Locator(rows).ToHaveCount(20); err != nil {
		t.Errorf("first history page: %v", err)
	}
	click(t, page, "history-older")
	if err := expect.Locator(rows).ToHaveCount(3); err != nil {
		t.Errorf("older history page: %v", err)
	}
	if err := expect.Locator(rows.First()).ToContainText("+0.5"); err != nil {
		t.Errorf("older history page starts with the last deposit: %v", err)
	}
	if err := expect.Locator(page.GetByTestId("history-older")).ToHaveCount(0); err != nil {
		t.Errorf("last history page links further: %v", err)
	}
}
