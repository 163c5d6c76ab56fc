package e2e

import (
	"regexp"
	"strings"
	"testing"

	"github.com/playwright-community/playwright-go"
)

// startTable has p1 open a free rock-paper-scissors table with the given
// seconds per round and p2 join it; it returns the game's address.
func startTable(t *testing.T, p1, p2 playwright.Page, seconds string) string {
	t.Helper()
	return startStakedTable(t, p1, p2, "0", seconds)
}

// joinTableOf has p2, on /play, join the table p1 waits at
// (/play/wait/<id>): other tests' tables may be open too.
func joinTableOf(t *testing.T, p1, p2 playwright.Page) {
	t.Helper()
	row := p2.GetByTestId("lobby").Filter(playwright.LocatorFilterOptions{
		Has: p2.Locator(`form[action="/play/join/` + p1.URL()[strings.LastIndex(p1.URL(), "/")+1:] + `"]`)})
	if err := row.GetByTestId("lobby-join").Click(); err != nil {
		t.Fatalf("p2 joins p1's table: %v", err)
	}
}

// TestACancelledGameSaysSoAndNothingElse: nobody moves, the round runs
// out, and every page says the game was cancelled and what that meant for
// the money; no draw, no winner, no "winner gets".
func TestACancelledGameSaysSoAndNothingElse(t *testing.T) {
	s := startServer(t, nil)
	p1, p2 := newPage(t, s), newPage(t, s)
	signInWithDevWallet(t, p1)
	signInWithDevWallet(t, p2)
	startTable(t, p1, p2, "3")

	for _, page := range []playwright.Page{p1, p2} {
		wantText(t, page.GetByTestId("game-status"), "cancelled", "the status")
		wantText(t, page.GetByTestId("result-heading"), "Cancelled", "the heading")
		wantText(t, page.GetByTestId("result-how"), "Nobody moved before the time ran out.", "why")
		wantText(t, page.GetByTestId("result-money"), "A free game: no stakes, no fee.", "the money")
		count(t, page.GetByTestId("pot-winner"), 0, "no winner's share on a cancelled game")
		count(t, page.GetByTestId("move-controls"), 0, "no moves on a cancelled game")
		if text, err := page.GetByTestId("result").InnerText(); err != nil {
			t.Fatal(err)
		} else if regexp.MustCompile(`(?i)\b(draw|wins|winner)\b`).MatchString(text) {
			t.Errorf("a cancelled game's result reads %q", text)
		}
	}
	screenshot(t, p1, "game-cancelled")
}

// TestASignedOutVisitorSeesTheGameAndIsAskedToSignIn: the game page shows
// the game as it stands with a clear call to sign in, no clock running
// down and no failing socket; signing in comes back to the game, live.
func TestASignedOutVisitorSeesTheGameAndIsAskedToSignIn(t *testing.T) {
	s := startServer(t, nil)
	p1, p2, visitor := newPage(t, s), newPage(t, s), newPage(t, s)
	signInWithDevWallet(t, p1)
	signInWithDevWallet(t, p2)
	game := startTable(t, p1, p2, "60")
	sockets := 0
	visitor.OnWebSocket(func(playwright.WebSocket) { sockets++ })

	if _, err := visitor.Goto(game); err != nil {
		t.Fatal(err)
	}
	visible(t, visitor.GetByTestId("scoreboard"), "the visitor sees the game")
	wantText(t, visitor.Locator("[data-testid=signed-out-notice] h2"), "This is the game as it stood when the page opened",
		"the notice")
	count(t, visitor.GetByTestId("timer"), 0, "no clock runs down on a page that does not follow the game")
	screenshot(t, visitor, "game-signed-out")
	if sockets != 0 {
		t.Errorf("the signed-out page opened %d sockets", sockets)
	}

	// Signing in comes back to the same game, which now follows live.
	click(t, visitor, "sign-in-to-watch")
	if err := expect.Page(visitor).ToHaveURL(regexp.MustCompile(`/login\?next=`)); err != nil {
		t.Fatal(err)
	}
	click(t, visitor, "dev-wallet")
	if err := expect.Page(visitor).ToHaveURL(regexp.MustCompile(regexp.QuoteMeta(game) + "$")); err != nil {
		t.Fatalf("after signing in: %v", err)
	}
	visible(t, visitor.GetByTestId("timer"), "the signed-in page runs the clock")
	click(t, p1, "move-rock")
	visible(t, visitor.GetByTestId("submitted"), "the visitor, signed in, sees p1's move live")
	count(t, visitor.GetByTestId("signed-out-notice"), 0, "no notice once signed in")
}
