package e2e

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/gagliardetto/solana-go"
	"github.com/playwright-community/playwright-go"

	"wager/e2e/apiclient"
)

// frames records what a page's WebSockets receive.
type frames struct {
	mu  sync.Mutex
	all []string
}

func (f *frames) received() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string{}, f.all...)
}

func recordFrames(page playwright.Page) *frames {
	f := &frames{}
	page.OnWebSocket(func(ws playwright.WebSocket) {
		ws.OnFrameReceived(func(payload []byte) {
			f.mu.Lock()
			f.all = append(f.all, string(payload))
			f.mu.Unlock()
		})
	})
	return f
}

// devKey makes a dev-wallet key ahead of time, so that the server can be
// told that it belongs to an admin; usePreset puts it in a browser context.
func devKey(t *testing.T) (address, initScript string) {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pkcs8, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	address = solana.PublicKeyFromBytes(pub).String()
	stored, _ := json.Marshal(map[string]string{"address": address, "pkcs8": base64.StdEncoding.EncodeToString(pkcs8)})
	return address, `localStorage.setItem("wager.devWallet.v1", ` + strconvQuote(string(stored)) + `)`
}

func usePreset(t *testing.T, page playwright.Page, initScript string) {
	t.Helper()
	if err := page.Context().AddInitScript(playwright.Script{Content: playwright.String(initScript)}); err != nil {
		t.Fatal(err)
	}
}

func strconvQuote(s string) string { b, _ := json.Marshal(s); return string(b) }

func visible(t *testing.T, loc playwright.Locator, what string) {
	t.Helper()
	if err := expect.Locator(loc).ToBeVisible(playwright.LocatorAssertionsToBeVisibleOptions{Timeout: playwright.Float(15_000)}); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func contains(t *testing.T, loc playwright.Locator, text, what string) {
	t.Helper()
	if err := expect.Locator(loc).ToContainText(text, playwright.LocatorAssertionsToContainTextOptions{Timeout: playwright.Float(15_000)}); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func count(t *testing.T, loc playwright.Locator, n int, what string) {
	t.Helper()
	if err := expect.Locator(loc).ToHaveCount(n, playwright.LocatorAssertionsToHaveCountOptions{Timeout: playwright.Float(15_000)}); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

var choiceWord = regexp.MustCompile(`(?i)\b(rock|paper|scissors)\b`)

// noHiddenChoice fails when the spectator's page or frames show a choice
// beyond the revealed rounds: every rendering of the history may hold at
// most `revealed` rounds.
func noHiddenChoice(t *testing.T, page playwright.Page, fs []string, revealed int) {
	t.Helper()
	// Everything the game shows, but the title (the game's name is
	// "Rock, paper, scissors") and the chat.
	var html string
	for _, id := range []string{"#scoreboard", "#history", "#result", "#pot"} {
		part, err := page.Locator(id).InnerHTML()
		if err != nil {
			t.Fatal(err)
		}
		html += part
	}
	check := func(where, s string) {
		if n := strings.Count(s, `data-testid="reveal"`); n > revealed {
			t.Fatalf("%s shows %d revealed rounds before round %d's reveal", where, n, revealed+1)
		}
		if revealed == 0 && choiceWord.MatchString(stripChat(s)) {
			t.Fatalf("%s contains a choice before any reveal: %s", where, choiceWord.FindString(s))
		}
	}
	check("the spectator's page", html)
	for _, f := range fs {
		check("a WebSocket frame", f)
	}
}

// stripChat drops the chat list, where people may type anything.
func stripChat(s string) string {
	if i := strings.Index(s, `id="chat-list"`); i >= 0 {
		return s[:i]
	}
	return s
}

func TestLiveGamePlayersSpectatorAndAdmin(t *testing.T) {
	adminAddress, adminKey := devKey(t)
	s := startServer(t, map[string]string{"ADMIN_WALLETS": adminAddress})
	p1, p2, spec := newPage(t, s), newPage(t, s), newPage(t, s)
	name1 := signInWithDevWallet(t, p1)
	signInWithDevWallet(t, p2)
	specName := signInWithDevWallet(t, spec)
	specFrames := recordFrames(spec)

	depositForTheStake(t, p1, p2)

	// p1 opens a table staking 1 USDC and waits; p2 joins it; both land on
	// the game.
	if _, err := p1.Goto("/play"); err != nil {
		t.Fatal(err)
	}
	fill(t, p1, "stake", "1")
	fill(t, p1, "round-seconds", "60")
	click(t, p1, "play-submit")
	visible(t, p1.GetByTestId("waiting"), "p1 waits for an opponent")
	if _, err := p2.Goto("/play"); err != nil {
		t.Fatal(err)
	}
	joinTableOf(t, p1, p2)
	visible(t, p2.GetByTestId("move-controls"), "p2 sees the move controls")
	visible(t, p1.GetByTestId("move-controls"), "p1's waiting room turned into the game")
	gameURL := p2.URL()

	// The spectator watches: timer, count, nothing hidden.
	if _, err := spec.Goto(gameURL); err != nil {
		t.Fatal(err)
	}
	visible(t, spec.GetByTestId("timer"), "the spectator sees the round timer")
	contains(t, spec.GetByTestId("spectator-count"), "1 watching", "the spectator count")
	count(t, spec.GetByTestId("move-controls"), 0, "spectators have no move controls")
	t1, _ := spec.GetByTestId("timer").TextContent()
	if err := expect.Locator(spec.GetByTestId("timer")).Not().ToHaveText(t1,
		playwright.LocatorAssertionsToHaveTextOptions{Timeout: playwright.Float(3000)}); err != nil {
		t.Errorf("the round timer does not count down (stuck at %q): %v", t1, err)
	}

	// The spectator can give: faucet on the embedded chain, then donate.
	specAddress, err := spec.Evaluate(`JSON.parse(localStorage.getItem("wager.devWallet.v1")).address`)
	if err != nil {
		t.Fatal(err)
	}
	faucet := apiclient.New(s.URL, nil)
	if err := faucet.Do(t.Context(), "POST", "/dev/faucet", map[string]any{"address": specAddress, "amountMinor": 5_000_000}, nil); err != nil {
		t.Fatal(err)
	}

	play := func(round int, m1, m2 string) {
		t.Helper()
		click(t, p1, "move-"+m1)
		contains(t, p1.GetByTestId("my-choice"), m1, "p1 sees their own pending choice")
		visible(t, spec.GetByTestId("submitted"), "the spectator sees that p1 moved")
		noHiddenChoice(t, spec, specFrames.received(), round-1)
		click(t, p2, "move-"+m2)
		count(t, spec.GetByTestId("reveal"), round, "the spectator sees the reveal without reloading")
	}
	play(1, "rock", "scissors")
	contains(t, spec.GetByTestId("history"), "rock", "the revealed choice")
	contains(t, spec.GetByTestId("round-number"), "2", "the next round starts on the spectator's page")

	// Chat, labelled by role, live on the players' pages.
	fill(t, spec, "chat-text", "good luck both")
	if err := spec.GetByTestId("chat-text").Press("Enter"); err != nil {
		t.Fatal(err)
	}
	msg := p1.GetByTestId("chat-message").Filter(playwright.LocatorFilterOptions{HasText: "good luck both"})
	visible(t, msg, "p1 sees the spectator's message")
	contains(t, msg.GetByTestId("chat-role"), "spectator", "the message is labelled spectator")

	// Donate 1 USDC: progress, announcement and pot change on every page.
	fill(t, spec, "donate-amount", "1")
	click(t, spec, "donate-submit")
	contains(t, spec.GetByTestId("donate-status"), "in the pot", "the donation is confirmed")
	contains(t, p1.GetByTestId("chat-system"), specName+" donated 1.00 USDC to the game", "the announcement")
	contains(t, spec.GetByTestId("pot-spectators"), "1", "the pot shows the donation")
	contains(t, p2.GetByTestId("pot-winner"), "2.97", "what the winner would get")
	screenshot(t, spec, "game-spectator")

	homeScreenshot(t, s)

	play(2, "paper", "rock")
	for _, page := range []playwright.Page{spec, p2} {
		wantText(t, page.GetByTestId("result-heading"), name1+" wins", "the result")
		wantText(t, page.GetByTestId("result-how"), name1+" won 2 rounds to 0.", "how the game was won")
		wantText(t, page.GetByTestId("result-money"),
			name1+" receives 2.97 USDC: the pot of 3.00 USDC less the platform's fee of 0.03 USDC.", "the payout and the fee")
	}

	winnerWalletHistory(t, p1, gameURL, name1)
	donorWalletHistory(t, spec)
	maintenanceByAnAdmin(t, s, adminKey, spec)
}

// depositForTheStake checks that p1's stake of 1 USDC is refused while its
// balance is empty, the page saying how much is needed and linking to the
// wallet, and has each player deposit 1 USDC of test money from their
// wallet page.
func depositForTheStake(t *testing.T, p1, p2 playwright.Page) {
	t.Helper()
	if _, err := p1.Goto("/play"); err != nil {
		t.Fatal(err)
	}
	fill(t, p1, "stake", "1")
	fill(t, p1, "round-seconds", "60")
	click(t, p1, "play-submit")
	// Two lines as the reader sees them (innerText; textContent runs the
	// paragraphs together).
	if err := expect.Locator(p1.GetByTestId("play-error")).ToHaveText(
		"This game needs 1.00 USDC and you have 0.00 USDC available. Deposit USDC in your wallet, then try again.",
		playwright.LocatorAssertionsToHaveTextOptions{UseInnerText: playwright.Bool(true)}); err != nil {
		t.Fatalf("the refused stake: %v", err)
	}
	click(t, p1, "play-deposit")
	for _, p := range []playwright.Page{p1, p2} {
		if p == p2 {
			if _, err := p.Goto("/wallet"); err != nil {
				t.Fatal(err)
			}
		}
		click(t, p, "faucet")
		wantText(t, p.GetByTestId("balance-onchain"), "100.00", "on chain after the faucet")
		fill(t, p, "deposit-amount", "1")
		click(t, p, "deposit-submit")
		wantText(t, p.GetByTestId("balance-available"), "1.00", "available after the deposit")
	}
}

// winnerWalletHistory checks that the winner's wallet shows the payout
// (the stakes and the donation less 1%) and that its history tells the
// game's story in words, newest first, each line of the game linking to
// it (gameURL).
func winnerWalletHistory(t *testing.T, p1 playwright.Page, gameURL, name1 string) {
	t.Helper()
	if _, err := p1.Goto("/wallet"); err != nil {
		t.Fatal(err)
	}
	wantText(t, p1.GetByTestId("balance-available"), "2.97", "the winner's platform balance")
	rows := p1.GetByTestId("history-row")
	count(t, rows, 3, "the winner's history: winnings, stake, deposit")
	for i, want := range []struct{ kind, amount string }{{"Winnings", "+2.97"}, {"Stake in a game", "-1.00"}, {"Deposit", "+1.00"}} {
		row := rows.Nth(i)
		wantText(t, row.GetByTestId("history-kind"), want.kind, "history line "+want.kind)
		wantText(t, row.GetByTestId("history-amount"), want.amount, "the amount of "+want.kind)
		if i < 2 {
			wantText(t, row.GetByTestId("history-game"), "The Rock, paper, scissors game", "the game link of "+want.kind)
		} else {
			count(t, row.GetByTestId("history-game"), 0, "a deposit links no game")
		}
	}
	screenshot(t, p1, "wallet-winner")
	if err := rows.First().GetByTestId("history-game").Click(); err != nil {
		t.Fatalf("the winnings' game link: %v", err)
	}
	if err := expect.Page(p1).ToHaveURL(regexp.MustCompile("^" + regexp.QuoteMeta(gameURL) + "$")); err != nil {
		t.Errorf("the winnings' game link: %v", err)
	}
	wantText(t, p1.GetByTestId("result-heading"), name1+" wins", "the linked game's result")
}

// donorWalletHistory checks that the spectator's history shows the
// donation, from their wallet, with its transaction and its game.
func donorWalletHistory(t *testing.T, spec playwright.Page) {
	t.Helper()
	if _, err := spec.Goto("/wallet"); err != nil {
		t.Fatal(err)
	}
	donation := spec.GetByTestId("history-row").First()
	wantText(t, donation.GetByTestId("history-kind"), "Donation to a game", "the donor's history")
	wantText(t, donation.GetByTestId("history-amount"), "-1.00", "the donation's amount")
	wantText(t, donation.GetByTestId("history-game"), "The Rock, paper, scissors game", "the donation's game link")
	visible(t, donation.GetByTestId("history-signature"), "the donation's transaction")
}

// maintenanceByAnAdmin has an admin turn maintenance on; the user of page
// spec sees the maintenance page.
func maintenanceByAnAdmin(t *testing.T, s *server, adminKey string, spec playwright.Page) {
	t.Helper()
	admin := newPage(t, s)
	usePreset(t, admin, adminKey)
	signInWithDevWallet(t, admin)
	if _, err := admin.Goto("/admin"); err != nil {
		t.Fatal(err)
	}
	click(t, admin, "toggle-maintenance-mode")
	click(t, admin, "confirm-maintenance-on") // it asks first
	t.Cleanup(func() { s.App.Flags.Set(context.Background(), "maintenance-mode", false, "test") })
	contains(t, admin.GetByTestId("flag-change").First(), "maintenance-mode turned on", "the change is listed with who made it")
	if _, err := spec.Goto("/"); err != nil {
		t.Fatal(err)
	}
	visible(t, spec.Locator(`[data-code="MAINTENANCE"]`), "the user sees the maintenance page")
}

// homeScreenshot checks that the home page lists the live game and keeps
// a picture of it.
func homeScreenshot(t *testing.T, s *server) {
	t.Helper()
	home := newPage(t, s)
	if _, err := home.Goto("/"); err != nil {
		t.Fatal(err)
	}
	visible(t, home.GetByTestId("live-game").First(), "the home page lists the live game")
	screenshot(t, home, "home")
}
