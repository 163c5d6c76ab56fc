package e2e

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/playwright-community/playwright-go"

	"wager/e2e/apiclient"
	"wager/e2e/testserver"
)

// TestANewcomersFirstMinutes walks the path of someone new: the home page
// signed out, TV showing a live game, signing in with the dev wallet,
// "Play a bot", a whole game against it, the result in words, a rematch
// the bot accepts, and the second game starting.
func TestANewcomersFirstMinutes(t *testing.T) {
	s := startServer(t, map[string]string{"DEMO_BOTS": "3"})
	page := newPage(t, s)

	if _, err := page.Goto("/"); err != nil {
		t.Fatal(err)
	}
	if err := page.GetByRole("link", playwright.PageGetByRoleOptions{Name: "TV", Exact: playwright.Bool(true)}).Click(); err != nil {
		t.Fatal(err)
	}
	// The bots' game may take a moment to start: TV looks again by itself.
	visible(t, page.GetByTestId("tv-banner"), "TV shows a live game")
	visible(t, page.GetByTestId("scoreboard"), "the game on TV")
	contains(t, page.GetByTestId("scoreboard"), "demo_bot_", "TV shows the bots' game")
	screenshot(t, page, "tv-signed-out")

	watched, err := page.GetByTestId("sign-in-to-watch").GetAttribute("href")
	if err != nil {
		t.Fatal(err)
	}
	watched = watched[strings.Index(watched, "%2Fgame%2F")+len("%2Fgame%2F"):]
	click(t, page, "sign-in-to-watch")
	click(t, page, "dev-wallet")
	visible(t, page.GetByTestId("nav-user"), "signed in")
	me, err := page.GetByTestId("nav-user").TextContent()
	if err != nil {
		t.Fatal(err)
	}
	me = strings.TrimSpace(me)
	// Back on the same game, following it: live, or its result when the
	// bots finished it meanwhile (their games last seconds).
	if err := expect.Page(page).ToHaveURL(regexp.MustCompile("/game/" + regexp.QuoteMeta(watched) + "$")); err != nil {
		t.Fatalf("signing in did not return to the game on TV: %v", err)
	}
	visible(t, page.Locator("[data-testid=timer], [data-testid=result]").First(), "back on the game, live or just ended")

	if _, err := page.Goto("/play"); err != nil {
		t.Fatal(err)
	}
	click(t, page, "play-bot-rps")
	visible(t, page.GetByTestId("move-controls"), "the game against the bot starts")
	first := page.URL()
	bot := opponentName(t, page, me)
	if !strings.HasPrefix(bot, "demo_bot_") {
		t.Fatalf("the opponent is %q, want a demo bot", bot)
	}

	playRockUntilTheEnd(t, page)
	gameID := first[strings.LastIndex(first, "/")+1:]
	winner, how := expectedResult(t, s, gameID)
	wantText(t, page.GetByTestId("result-heading"), winner+" wins", "the result heading")
	wantText(t, page.GetByTestId("result-how"), how, "how the game was won")
	wantText(t, page.GetByTestId("result-money"), "A free game: no stakes, no fee.", "the money")
	screenshot(t, page, "game-finished")

	// A rematch: the bot accepts and the page moves to the new game.
	click(t, page, "rematch-ask")
	if err := expect.Page(page).Not().ToHaveURL(first, playwright.PageAssertionsToHaveURLOptions{Timeout: playwright.Float(15_000)}); err != nil {
		t.Fatalf("the rematch did not start: %v", err)
	}
	visible(t, page.GetByTestId("move-controls"), "the second game starts")
	if got := opponentName(t, page, me); got != bot {
		t.Errorf("the rematch is against %q, want %q", got, bot)
	}
	contains(t, page.GetByTestId("round-number"), "1", "the second game's first round")

	// The home page says what a newcomer can do, and lists the game as
	// free, its audience in words.
	if _, err := page.Goto("/"); err != nil {
		t.Fatal(err)
	}
	contains(t, page.GetByTestId("home-intro"), "A game against a bot is free and starts at once", "what the home page offers")
	card := page.GetByTestId("live-game").Filter(playwright.LocatorFilterOptions{HasText: me}).First()
	wantText(t, card.GetByTestId("live-game-pot"), "Free game", "a free game's card")
}

// opponentName reads the other player's name on the scoreboard.
func opponentName(t *testing.T, page playwright.Page, me string) string {
	t.Helper()
	names, err := page.Locator("[data-testid=player-score] a").AllTextContents()
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if n = strings.TrimSpace(n); n != me {
			return n
		}
	}
	t.Fatalf("no opponent among %v", names)
	return ""
}

// playRockUntilTheEnd plays rock in every round until the result shows.
func playRockUntilTheEnd(t *testing.T, page playwright.Page) {
	t.Helper()
	result := page.GetByTestId("result")
	for round := 1; round <= 30; round++ {
		if n, _ := result.Count(); n > 0 {
			return
		}
		roundText, _ := page.GetByTestId("round-number").TextContent()
		if err := page.GetByTestId("move-rock").Click(playwright.LocatorClickOptions{Timeout: playwright.Float(5000)}); err != nil {
			if n, _ := result.Count(); n > 0 {
				return
			}
			t.Fatalf("round %s: %v", roundText, err)
		}
		// The next round, or the end.
		next := page.Locator(fmt.Sprintf(`[data-testid=round-number]:not(:text-is(%q)), [data-testid=result]`, strings.TrimSpace(roundText)))
		visible(t, next.First(), "the round "+roundText+" ends")
	}
	t.Fatal("no result after 30 rounds")
}

// expectedResult reads the finished game through the API and says how its
// result must read: the winner and the sentence of the score.
func expectedResult(t *testing.T, s *server, gameID string) (winner, how string) {
	t.Helper()
	var g struct {
		Players []struct{ UserID, Username string }
		Result  struct {
			WinnerID *string `json:"winnerId"`
			Reason   string
		}
		History []struct {
			Scores map[string]int `json:"scores"`
		}
	}
	if err := apiclient.New(s.URL, nil).Do(t.Context(), "GET", "/games/"+gameID, nil, &g); err != nil {
		t.Fatal(err)
	}
	if g.Result.WinnerID == nil || g.Result.Reason != "score" || len(g.History) == 0 {
		t.Fatalf("the game ended %+v after %d rounds, want a win on rounds", g.Result, len(g.History))
	}
	scores := g.History[len(g.History)-1].Scores
	var lost int
	for _, p := range g.Players {
		if p.UserID == *g.Result.WinnerID {
			winner = p.Username
		} else {
			lost = scores[p.UserID]
		}
	}
	return winner, fmt.Sprintf("%s won %d rounds to %d.", winner, scores[*g.Result.WinnerID], lost)
}

// Signed out, TV stays on the game it shows instead of loading the page
// again every few seconds, and looks for the next game once it ends.
func TestSignedOutTVStaysOnItsGameUntilItEnds(t *testing.T) {
	s := testserver.StartFresh(t, nil)
	players, names, game := stakedTable(t, s)
	page := newPage(t, s)
	if _, err := page.Goto("/tv"); err != nil {
		t.Fatal(err)
	}
	contains(t, page.GetByTestId("scoreboard"), names[0], "TV shows the staked game")
	if _, err := page.Evaluate(`() => { window.tvMark = "the same page"; }`); err != nil {
		t.Fatal(err)
	}
	time.Sleep(7 * time.Second) // past the 5 s after which the page used to load itself again
	if mark, err := page.Evaluate(`() => window.tvMark`); err != nil || mark != "the same page" {
		t.Fatalf("TV loaded the page again while its game went on (%v, %v)", mark, err)
	}
	if err := players[0].Do(t.Context(), "POST", "/games/"+game+"/actions", map[string]string{"type": "resign"}, nil); err != nil {
		t.Fatal(err)
	}
	if err := expect.Locator(page.GetByTestId("tv-off")).ToBeVisible(playwright.LocatorAssertionsToBeVisibleOptions{Timeout: playwright.Float(15_000)}); err != nil {
		t.Errorf("TV after its game ended, with nothing else live: %v", err)
	}
}
