package e2e

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/playwright-community/playwright-go"

	"wager/domain/game"
)

// What a newcomer meets first, read off the pages as a person reads them:
// Connect Four's full columns and refusals, the faucet's next step, errors
// in USDC and plain words, bets and the market when a game ends, the
// notifications, a picture too large, and the result card in the first
// person.

// gameIDOf is the game id at the end of a game page's address.
func gameIDOf(url string) string { return url[strings.LastIndex(url, "/")+1:] }

// noJargon fails when a text a person reads speaks in minor units or code
// points.
func noJargon(t *testing.T, text, what string) {
	t.Helper()
	if regexp.MustCompile(`(?i)minor units|U\+[0-9A-F]{4}|(^|[^.\d])[1-9]0{4,}([^.\d]|$)`).MatchString(text) {
		t.Errorf("%s reads %q: amounts in USDC and plain words, please", what, text)
	}
}

// resign ends the game at gameURL by the resignation of the player signed
// in on page, so that no game of this test is live for the next one.
func resign(t *testing.T, s *server, page playwright.Page, gameURL string) {
	t.Helper()
	u, err := s.App.Users.ByUsername(t.Context(), textOf(t, page.GetByTestId("nav-user")))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.App.Games.Act(t.Context(), u.ID, gameIDOf(gameURL), game.Action{Type: "resign"}); err != nil {
		t.Fatalf("resign: %v", err)
	}
}

// textOf is a locator's text, trimmed.
func textOf(t *testing.T, loc playwright.Locator) string {
	t.Helper()
	s, err := loc.TextContent()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(s)
}

// TestConnectFourFullColumnsAndRefusalsReadAsAPlayerExpects: a column that
// fills up loses its drop button on both players' pages; a drop into it
// anyway (a page that missed the update) is refused with the column
// counted from 1; when the turn clock then runs out, the refusal goes and
// the result card speaks to each player in the first person, with the
// change to their rating; a spectator reads no "You".
func TestConnectFourFullColumnsAndRefusalsReadAsAPlayerExpects(t *testing.T) {
	s := startServer(t, nil)
	p1, p2, spec := newPage(t, s), newPage(t, s), newPage(t, s)
	name1 := signInWithDevWallet(t, p1)
	name2 := signInWithDevWallet(t, p2)
	signInWithDevWallet(t, spec)

	if _, err := p1.Goto("/play"); err != nil {
		t.Fatal(err)
	}
	if _, err := p1.Locator("#gameType").SelectOption(playwright.SelectOptionValues{Values: &[]string{"connect4"}}); err != nil {
		t.Fatal(err)
	}
	fill(t, p1, "round-seconds", "20")
	click(t, p1, "play-submit")
	visible(t, p1.GetByTestId("waiting"), "p1 waits for an opponent")
	if _, err := p2.Goto("/play"); err != nil {
		t.Fatal(err)
	}
	joinTableOf(t, p1, p2)
	visible(t, p2.GetByTestId("board"), "p2 sees the board")
	if _, err := spec.Goto(p2.URL()); err != nil {
		t.Fatal(err)
	}
	visible(t, p1.GetByTestId("sound-toggle"), "the sound and motion switch")

	// Both stack column 1, turn about: six pieces fill it, no four in a row.
	for move := 1; move <= 6; move++ {
		player := p1
		if move%2 == 0 {
			player = p2
		}
		visible(t, player.GetByTestId("drop-1"), fmt.Sprintf("move %d: column 1's button", move))
		click(t, player, "drop-1")
		count(t, spec.Locator(`[data-testid=cell][data-column="1"]:not([data-seat="-1"])`), move, fmt.Sprintf("move %d on the spectator's board", move))
	}
	for _, page := range []playwright.Page{p1, p2, spec} {
		count(t, page.GetByTestId("drop-1"), 0, "a full column has no drop button")
		count(t, page.GetByTestId("full-1"), 1, "the full column's place says it is full")
	}
	visible(t, p1.GetByTestId("drop-2"), "the other columns keep their buttons")

	// A page that missed the update drops into column 1 anyway.
	if _, err := p1.Evaluate(`(id) => htmx.ajax("POST", "/game/" + id + "/move",
		{source: "#move-status", target: "#move-status", swap: "outerHTML", values: {column: "0"}})`, gameIDOf(p1.URL())); err != nil {
		t.Fatal(err)
	}
	wantText(t, p1.GetByTestId("move-status"), "Column 1 is full: choose another one.", "the refusal counts columns from 1")
	screenshot(t, p1, "connect4-full-column")

	// p1 lets the clock run out: the refusal is old news, the result says
	// what happened, to each player in their own words.
	wantText(t, p1.GetByTestId("result-how"), name1+" ran out of time.", "the game ends on time")
	count(t, p1.GetByTestId("move-status"), 0, "no stale refusal above the result")
	count(t, p1.GetByText("The time for your turn is up"), 0, "no stale refusal above the result")
	readResult := func(when string) {
		t.Helper()
		wantText(t, p1.Locator("[data-testid=result-you]:visible [data-testid=result-you-outcome]"), "You lost", "the loser's line "+when)
		wantText(t, p2.Locator("[data-testid=result-you]:visible [data-testid=result-you-outcome]"), "You won", "the winner's line "+when)
		lost := textOf(t, p1.Locator("[data-testid=result-you]:visible [data-testid=result-rating]"))
		won := textOf(t, p2.Locator("[data-testid=result-you]:visible [data-testid=result-rating]"))
		if !regexp.MustCompile(`^Your rating: 1[0-9]{3} \(-[1-9][0-9]*, provisional\)$`).MatchString(lost) {
			t.Errorf("the loser's rating %s reads %q, want \"Your rating: N (-D, provisional)\"", when, lost)
		}
		if !regexp.MustCompile(`^Your rating: 1[0-9]{3} \(\+[1-9][0-9]*, provisional\)$`).MatchString(won) {
			t.Errorf("the winner's rating %s reads %q, want \"Your rating: N (+D, provisional)\"", when, won)
		}
		count(t, spec.Locator("[data-testid=result-you]:visible"), 0, "a spectator reads no \"You\" "+when)
		for _, page := range []playwright.Page{p1, p2, spec} {
			wantText(t, page.GetByTestId("result-heading"), name2+" wins", "the heading "+when)
			count(t, page.GetByTestId("pot-players"), 0, "a free game shows no zeros in its pot "+when)
			wantText(t, page.GetByTestId("pot-free"), "A free game: nothing is staked. Donations from spectators would go to the winner.",
				"the pot of a free game "+when)
			if text := textOf(t, page.GetByTestId("result")); strings.Contains(text, " 0 USDC") || strings.Contains(text, "0.00 USDC") {
				t.Errorf("the result of a free game reads %q", text)
			}
		}
	}
	readResult("live")
	screenshot(t, p1, "connect4-lost-on-time")
	for _, page := range []playwright.Page{p1, p2, spec} {
		if _, err := page.Reload(); err != nil {
			t.Fatal(err)
		}
	}
	readResult("after a reload")
}

// TestSoundAndMotionAreOffForReducedMotionAndSwitchable: a player who
// prefers reduced motion starts with sound and motion off, anyone else
// with them on; the switch says which and flips it, and a drop then
// animates the new piece, which takes no clicks as it falls over the
// other player's drop buttons.
func TestSoundAndMotionAreOffForReducedMotionAndSwitchable(t *testing.T) {
	s := startServer(t, nil)
	calm, err := browser(t).NewContext(playwright.BrowserNewContextOptions{BaseURL: playwright.String(s.URL),
		ReducedMotion: playwright.ReducedMotionReduce})
	if err != nil {
		t.Fatal(err)
	}
	defer calm.Close()
	p1, err := calm.NewPage()
	if err != nil {
		t.Fatal(err)
	}
	p2 := newPage(t, s)
	signInWithDevWallet(t, p1)
	signInWithDevWallet(t, p2)
	if _, err := p1.Goto("/play"); err != nil {
		t.Fatal(err)
	}
	if _, err := p1.Locator("#gameType").SelectOption(playwright.SelectOptionValues{Values: &[]string{"connect4"}}); err != nil {
		t.Fatal(err)
	}
	fill(t, p1, "round-seconds", "60")
	click(t, p1, "play-submit")
	visible(t, p1.GetByTestId("waiting"), "p1 waits for an opponent")
	if _, err := p2.Goto("/play"); err != nil {
		t.Fatal(err)
	}
	joinTableOf(t, p1, p2)
	visible(t, p1.GetByTestId("board"), "the game starts")

	toggle := p1.GetByTestId("sound-toggle")
	wantText(t, toggle, "Sound and motion: off", "off for someone who prefers reduced motion")
	if err := expect.Locator(toggle).ToHaveAttribute("aria-pressed", "false"); err != nil {
		t.Error(err)
	}
	wantText(t, p2.GetByTestId("sound-toggle"), "Sound and motion: on", "on for everyone else")
	click(t, p1, "sound-toggle")
	wantText(t, toggle, "Sound and motion: on", "the switch turns it on")
	if err := expect.Locator(toggle).ToHaveAttribute("aria-pressed", "true"); err != nil {
		t.Error(err)
	}

	click(t, p1, "drop-4")
	visible(t, p2.Locator("[data-last-move].c4-dropping"), "the new piece drops on the other player's page")
	visible(t, p2.Locator("[data-testid=on-turn].turn-cue"), "the other player's turn is cued")

	// A drop while the other's piece still falls over the button is a drop:
	// the falling piece takes no clicks. The fall is held where it covers
	// the button, and the click goes to a point it covers.
	covered, err := p2.Evaluate(`() => {
		const cell = document.querySelector("[data-last-move]");
		cell.classList.remove("c4-dropping");
		void cell.offsetWidth;
		cell.classList.add("c4-dropping");
		const piece = cell.firstElementChild;
		const fall = piece.getAnimations()[0];
		fall.pause();
		const b = document.querySelector("[data-testid=drop-" + cell.dataset.column + "]").getBoundingClientRect();
		for (let at = 0; at <= 380; at += 10) {
			fall.currentTime = at;
			const p = piece.getBoundingClientRect();
			const top = Math.max(p.top, b.top), bottom = Math.min(p.bottom, b.bottom);
			if (bottom - top >= 4) return {x: Math.round(b.width / 2), y: Math.round((top + bottom) / 2 - b.top)};
		}
		return null;
	}`)
	if err != nil {
		t.Fatal(err)
	}
	at, ok := covered.(map[string]any)
	if !ok {
		t.Fatalf("the falling piece never covers the drop button (%v)", covered)
	}
	if err := p2.GetByTestId("drop-4").Click(playwright.LocatorClickOptions{Timeout: playwright.Float(5_000),
		Position: &playwright.Position{X: float64(toInt(at["x"])), Y: float64(toInt(at["y"]))}}); err != nil {
		t.Fatalf("a drop while the piece falls: %v", err)
	}
	count(t, p1.Locator(`[data-testid=cell][data-column="4"]:not([data-seat="-1"])`), 2, "the drop during the fall is on the board")

	// The choice outlives the page.
	if _, err := p1.Reload(); err != nil {
		t.Fatal(err)
	}
	wantText(t, p1.GetByTestId("sound-toggle"), "Sound and motion: on", "the choice is remembered")
	resign(t, s, p1, p1.URL())
}

// TestTheFaucetSaysWhatIsNextOrDepositsItself: "Get test USDC" into the
// wallet alone says that the platform balance has none of it yet and fills
// in the deposit; "Get test USDC and deposit it" does both steps, and the
// header's balance shows it.
func TestTheFaucetSaysWhatIsNextOrDepositsItself(t *testing.T) {
	s := startServer(t, nil)
	page := newPage(t, s)
	signInWithDevWallet(t, page)
	if _, err := page.Goto("/wallet"); err != nil {
		t.Fatal(err)
	}
	wantText(t, page.GetByTestId("nav-balance"), "Balance: 0.00 USDC", "nothing on the platform yet")

	click(t, page, "faucet")
	wantText(t, page.GetByTestId("wallet-status"), "Added 100.00 test USDC (and some SOL) to your wallet. "+
		"It is not in your platform balance yet: press Deposit to move it there and play for stakes.", "the next step, said plainly")
	if err := expect.Locator(page.GetByTestId("deposit-amount")).ToHaveValue("100.00"); err != nil {
		t.Errorf("the deposit is filled in: %v", err)
	}
	wantText(t, page.GetByTestId("balance-onchain"), "100.00", "the wallet has it")
	wantText(t, page.GetByTestId("balance-available"), "0.00", "the platform balance does not, yet")

	click(t, page, "faucet-deposit")
	wantText(t, page.GetByTestId("wallet-status"),
		"Got 100.00 test USDC and deposited 100.00 USDC to your platform balance: you can play for stakes now.", "both steps at once")
	wantText(t, page.GetByTestId("balance-available"), "100.00", "the platform balance has it")
	wantText(t, page.GetByTestId("nav-balance"), "Balance: 100.00 USDC", "and the header says so")
	screenshot(t, page, "wallet-faucet-deposit")

	// Every date on the page in one format.
	for _, d := range must(page.Locator("[data-testid=wallet-history] time").AllTextContents()) {
		if !regexp.MustCompile(`^\d{1,2} [A-Z][a-z]{2} \d{4}, \d{2}:\d{2} UTC$`).MatchString(strings.TrimSpace(d)) {
			t.Errorf("a date in the history reads %q, want \"25 Nov 2026, 14:05 UTC\"", d)
		}
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestErrorsSayAmountsInUSDCAndPlainWords: the refusals a newcomer meets
// first (a deposit, a withdrawal, a stake, a donation too small; a chat
// message with text-reordering characters or only spaces) name amounts in
// USDC and say what is wrong in words.
func TestErrorsSayAmountsInUSDCAndPlainWords(t *testing.T) {
	s := startServer(t, nil)
	p1, p2, spec := newPage(t, s), newPage(t, s), newPage(t, s)
	signInWithDevWallet(t, p1)
	signInWithDevWallet(t, p2)
	signInWithDevWallet(t, spec)

	if _, err := spec.Goto("/wallet"); err != nil {
		t.Fatal(err)
	}
	fill(t, spec, "deposit-amount", "0.001")
	click(t, spec, "deposit-submit")
	wantText(t, spec.GetByTestId("wallet-status"), "The amount must be at least 0.01 USDC for a deposit", "a deposit too small")
	fill(t, spec, "withdraw-amount", "0.05")
	click(t, spec, "withdraw-submit")
	wantText(t, spec.GetByTestId("wallet-status"), "The amount must be at least 0.10 USDC for a withdrawal", "a withdrawal too small")

	if _, err := p1.Goto("/play"); err != nil {
		t.Fatal(err)
	}
	fill(t, p1, "stake", "100001")
	click(t, p1, "play-submit")
	wantText(t, p1.GetByTestId("play-error"), "The stake must be from 0 (a free game) to 100000.00 USDC.", "a stake too large")
	noJargon(t, textOf(t, p1.GetByTestId("play-error")), "the stake's refusal")

	gameURL := startTable(t, p1, p2, "60")
	if _, err := spec.Goto(gameURL); err != nil {
		t.Fatal(err)
	}
	fill(t, spec, "donate-amount", "0.001")
	click(t, spec, "donate-submit")
	if err := expect.Locator(spec.GetByTestId("donate-status")).ToHaveText(regexp.MustCompile(`^The amount must be from 0\.01 USDC to [0-9]+\.[0-9]{2} USDC$`)); err != nil {
		t.Errorf("a donation too small: %v", err)
	}
	noJargon(t, textOf(t, spec.GetByTestId("donate-status")), "the donation's refusal")
	// A donation comes from the wallet, which a player who deposited
	// everything has emptied: the form says so before and after.
	wantText(t, spec.GetByTestId("donate-hint"), "Paid from your wallet on chain, not from your platform balance (which pays stakes and market buys).", "the donation's source")
	if _, err := spec.Evaluate(`async () => {
		const me = await wagerWallet.apiGet("/users/me");
		const b = await wagerWallet.apiGet("/wallets/me/balance");
		if (b.onChain.usdcMinor > 0) throw new Error("the spectator's wallet holds " + b.onChain.usdcMinor + " for " + me.walletAddress);
	}`); err != nil {
		t.Fatalf("the spectator's wallet is not empty: %v", err)
	}
	fill(t, spec, "donate-amount", "1")
	click(t, spec, "donate-submit")
	contains(t, spec.GetByTestId("donate-status"), "Donations and bets are paid from your wallet, not from your platform balance", "a donation from an empty wallet")

	fill(t, spec, "chat-text", "hello \u202ecba")
	if err := spec.GetByTestId("chat-text").Press("Enter"); err != nil {
		t.Fatal(err)
	}
	wantText(t, spec.Locator("#chat-error"), "The message must not contain invisible characters that reverse or reorder the text.", "reordering characters")
	fill(t, spec, "chat-text", "   ")
	if err := spec.GetByTestId("chat-text").Press("Enter"); err != nil {
		t.Fatal(err)
	}
	wantText(t, spec.Locator("#chat-error"), "The message must be 1 to 500 characters long.", "a message of spaces")
	resign(t, s, p1, gameURL)
}

// TestBetsAndTheMarketChangeWhenTheGameEnds: a spectator's bet reads
// "open" while the game runs and, without a reload, "won" with the payout
// once it ends, as does the market's panel; the same after a reload, and
// the notification names the amounts and leads to the game. On a phone
// the market has its own tab, after the board.
func TestBetsAndTheMarketChangeWhenTheGameEnds(t *testing.T) {
	s := startServer(t, nil)
	p1, p2, b1 := newPage(t, s), newPage(t, s), newPage(t, s)
	name1 := signInWithDevWallet(t, p1)
	signInWithDevWallet(t, p2)
	signInWithDevWallet(t, b1)
	// Bets and markets are for staked games: the players deposit first.
	for _, p := range []playwright.Page{p1, p2, b1} {
		if _, err := p.Goto("/wallet"); err != nil {
			t.Fatal(err)
		}
		click(t, p, "faucet-deposit")
		wantText(t, p.GetByTestId("balance-available"), "100.00", "deposited")
	}
	click(t, b1, "faucet") // bets go from the wallet on chain
	wantText(t, b1.GetByTestId("balance-onchain"), "100.00", "the bettor's wallet")
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
	gameURL := p2.URL()
	check(t, b1, "game-with-market", strings.TrimPrefix(gameURL, s.URL), b1.GetByTestId("bet-form"))
	// check leaves the phone size: the board first, the market under its tab.
	visible(t, b1.GetByTestId("scoreboard"), "the phone shows the game first")
	hidden(t, b1.GetByTestId("market"), "the market waits under its tab")
	click(t, b1, "tab-market")
	visible(t, b1.GetByTestId("market"), "the market tab shows the market")
	hidden(t, b1.GetByTestId("scoreboard"), "and hides the game")
	box := must(b1.GetByTestId("market-chart").BoundingBox())
	if box == nil || box.Width > 390 {
		t.Errorf("the price chart is %v wide on a 390 px phone", box)
	}
	click(t, b1, "tab-game")
	if err := b1.SetViewportSize(1280, 800); err != nil {
		t.Fatal(err)
	}
	box = must(b1.GetByTestId("market-chart").BoundingBox())
	if box == nil || box.Width < 500 {
		t.Errorf("the price chart did not grow with the window: %v", box)
	}

	if _, err := b1.GetByTestId("bet-on").SelectOption(playwright.SelectOptionValues{Labels: &[]string{name1}}); err != nil {
		t.Fatal(err)
	}
	fill(t, b1, "bet-amount", "1")
	click(t, b1, "bet-submit")
	wantText(t, b1.GetByTestId("bet-status"), "Your bet on "+name1+" is in the pool.", "the bet is in")
	wantTexts(t, b1.GetByTestId("my-bet"), []string{"1.00 USDC on " + name1 + " · open"}, "the bet while the game runs")
	if err := expect.Locator(b1.GetByTestId("market-summary")).ToHaveText(regexp.MustCompile(`^Trading is open until the game ends`)); err != nil {
		t.Errorf("the market while the game runs: %v", err)
	}

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
	// One bet of 1 USDC, all on the winner: 0.99 after the 1% fee.
	wantTexts(t, b1.GetByTestId("my-bet"), []string{"1.00 USDC on " + name1 + " · won 0.99 USDC"}, "the bet once the game ended, live")
	wantText(t, b1.GetByTestId("market-summary"), "Trading closed when the game ended.", "the market once the game ended, live")
	count(t, b1.GetByText("Trading is open until the game ends"), 0, "no open market after the end")
	screenshot(t, b1, "game-ended-bets")
	if _, err := b1.Reload(); err != nil {
		t.Fatal(err)
	}
	wantTexts(t, b1.GetByTestId("my-bet"), []string{"1.00 USDC on " + name1 + " · won 0.99 USDC"}, "the bet after a reload")
	wantText(t, b1.GetByTestId("market-summary"), "Trading closed when the game ended: nobody traded in this market.", "the market after a reload")

	if _, err := b1.Goto("/notifications"); err != nil {
		t.Fatal(err)
	}
	settled := b1.GetByRole("link", playwright.PageGetByRoleOptions{Name: "Your bet of 1.00 USDC won: 0.99 USDC paid to your balance."})
	visible(t, settled, "the notification names the amounts")
	if href := must(settled.GetAttribute("href")); href != "/game/"+gameIDOf(gameURL) {
		t.Errorf("the notification leads to %q, want the game", href)
	}
	count(t, b1.GetByText("Something new"), 0, "no notification without words")
}

// TestAPictureTooLargeKeepsTheSignedInPageAndItsForm: a 3 MB avatar is
// refused on the settings page itself, signed in, beside the form.
func TestAPictureTooLargeKeepsTheSignedInPageAndItsForm(t *testing.T) {
	s := startServer(t, nil)
	page := newPage(t, s)
	name := signInWithDevWallet(t, page)
	if _, err := page.Goto("/settings"); err != nil {
		t.Fatal(err)
	}
	big := append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{0}, 3<<20)...)
	if err := page.Locator("#avatar-file").SetInputFiles([]playwright.InputFile{{Name: "huge.png", MimeType: "image/png", Buffer: big}}); err != nil {
		t.Fatal(err)
	}
	if err := page.GetByTestId("avatar-form").GetByRole("button", playwright.LocatorGetByRoleOptions{Name: "Upload"}).Click(); err != nil {
		t.Fatal(err)
	}
	wantText(t, page.GetByTestId("avatar-error"), "The picture is larger than 2 MB: choose a smaller one, or save it smaller first.", "why")
	wantText(t, page.GetByTestId("nav-user"), name, "still signed in")
	count(t, page.GetByTestId("nav-login"), 0, "no \"Sign in\" for someone signed in")
	visible(t, page.Locator("#avatar-file"), "the form to try again")
	visible(t, page.GetByTestId("profile-form"), "the rest of the settings")
	screenshot(t, page, "settings-avatar-too-large")
}

// TestTheAdminHeaderFitsOneLineAt1280: an admin's header, with every
// link and the widest username there is, is one row on a 1280 px screen.
func TestTheAdminHeaderFitsOneLineAt1280(t *testing.T) {
	adminAddress, adminKey := devKey(t)
	s := startServer(t, map[string]string{"ADMIN_WALLETS": adminAddress})
	page := newPage(t, s)
	usePreset(t, page, adminKey)
	signInWithDevWallet(t, page)
	if _, err := page.Goto("/settings"); err != nil {
		t.Fatal(err)
	}
	widest := strings.Repeat("w", 20)
	if err := page.Locator("#username").Fill(widest); err != nil {
		t.Fatal(err)
	}
	click(t, page, "save-profile")
	if err := expect.Locator(page.GetByTestId("nav-user")).ToHaveText(widest); err != nil {
		t.Fatalf("the rename: %v", err)
	}
	if err := page.SetViewportSize(1280, 800); err != nil {
		t.Fatal(err)
	}
	if _, err := page.Goto("/admin"); err != nil {
		t.Fatal(err)
	}
	visible(t, page.GetByTestId("nav-admin"), "the admin link")
	first := must(page.Locator("header nav > a").First().BoundingBox())
	last := must(page.GetByTestId("logout").BoundingBox())
	if first == nil || last == nil || last.Y > first.Y+first.Height {
		t.Errorf("the admin header wraps at 1280 px: the first link at %v, \"Log out\" at %v", first, last)
	}
}

// TestEveryOtherPageIsAccessible runs axe-core, at desktop and phone
// sizes, on the pages TestEveryPageIsAccessibleAndFitsAPhone does not
// open: sign-in, the settings, support and a ticket, the admin's support
// queue and integrity queue, a table waiting for an opponent, /me, the TV
// with nothing on, a missing page, and a Connect Four game.
func TestEveryOtherPageIsAccessible(t *testing.T) {
	adminAddress, adminKey := devKey(t)
	s := startServer(t, map[string]string{"ADMIN_WALLETS": adminAddress})
	page, other := newPage(t, s), newPage(t, s)
	signInWithDevWallet(t, other)
	check(t, page, "login", "/login", page.GetByTestId("dev-wallet"))
	check(t, page, "tv-off", "/tv", nil)
	check(t, page, "not-found", "/no-such-page", nil)
	usePreset(t, page, adminKey)
	signInWithDevWallet(t, page)
	check(t, page, "settings", "/settings", page.GetByTestId("profile-form"))
	check(t, page, "me", "/me", nil)
	check(t, page, "support", "/support", nil)
	if err := page.Locator("#subject").Fill("Where is my payout?"); err != nil {
		t.Fatal(err)
	}
	if err := page.Locator("#message").Fill("My game ended an hour ago."); err != nil {
		t.Fatal(err)
	}
	click(t, page, "support-submit")
	visible(t, page.GetByTestId("ticket-messages"), "the new ticket")
	check(t, page, "support-ticket", strings.TrimPrefix(page.URL(), s.URL), page.GetByTestId("ticket-messages"))
	check(t, page, "admin-support", "/admin/support", nil)
	check(t, page, "admin-integrity", "/admin/integrity", nil)

	// A table waiting for anyone, then the game.
	if _, err := page.Goto("/play"); err != nil {
		t.Fatal(err)
	}
	if _, err := page.Locator("#gameType").SelectOption(playwright.SelectOptionValues{Values: &[]string{"connect4"}}); err != nil {
		t.Fatal(err)
	}
	fill(t, page, "round-seconds", "60")
	click(t, page, "play-submit")
	visible(t, page.GetByTestId("waiting"), "the table waits")
	check(t, page, "play-wait", strings.TrimPrefix(page.URL(), s.URL), page.GetByTestId("waiting"))
	if _, err := other.Goto("/play"); err != nil {
		t.Fatal(err)
	}
	joinTableOf(t, page, other)
	visible(t, page.GetByTestId("board"), "the game starts")
	check(t, page, "connect4-live", strings.TrimPrefix(page.URL(), s.URL), page.GetByTestId("board"))
	resign(t, s, page, page.URL())
}
