package e2e

import (
	"strconv"
	"testing"

	"github.com/playwright-community/playwright-go"
)

// TestConnectFourInTheBrowser: two players play Connect Four to a win with
// the drop buttons, a spectator in another browser watches the board fill
// live, and all three read the same result.
func TestConnectFourInTheBrowser(t *testing.T) {
	s := startServer(t, nil)
	p1, p2, spec := newPage(t, s), newPage(t, s), newPage(t, s)
	name1 := signInWithDevWallet(t, p1)
	signInWithDevWallet(t, p2)
	signInWithDevWallet(t, spec)

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
	contains(t, p2.GetByTestId("lobby").Filter(playwright.LocatorFilterOptions{HasText: "Connect Four"}), "Connect Four",
		"the open table says which game")
	joinTableOf(t, p1, p2)
	visible(t, p2.GetByTestId("board"), "p2 sees the board")
	visible(t, p1.GetByTestId("drop-1"), "p1, first on turn, gets the drop buttons")
	if _, err := spec.Goto(p2.URL()); err != nil {
		t.Fatal(err)
	}
	count(t, spec.GetByTestId("cell"), 42, "the spectator sees the 6 by 7 board")
	count(t, spec.Locator("[data-column-button]:visible"), 0, "the spectator has no drop buttons")
	count(t, p2.Locator("[data-column-button]:visible"), 0, "p2 waits for their turn")

	// p1 stacks column 1, p2 column 2: p1 has four in a column on move 7.
	seat := func(page playwright.Page, s int) playwright.Locator {
		return page.Locator(`[data-testid=cell][data-seat="` + strconv.Itoa(s) + `"]`)
	}
	for move := 1; move <= 7; move++ {
		player, column := p1, "drop-1"
		if move%2 == 0 {
			player, column = p2, "drop-2"
		}
		visible(t, player.GetByTestId(column), "move "+strconv.Itoa(move)+": the player on turn gets the buttons")
		click(t, player, column)
		count(t, seat(spec, 0), (move+1)/2, "move "+strconv.Itoa(move)+": the spectator's board")
		count(t, seat(spec, 1), move/2, "move "+strconv.Itoa(move)+": the spectator's board")
		if move == 3 {
			screenshot(t, spec, "connect4-spectator")
		}
	}

	for _, page := range []playwright.Page{p1, p2, spec} {
		wantText(t, page.GetByTestId("result-heading"), name1+" wins", "the result heading")
		wantText(t, page.GetByTestId("result-how"), name1+" connected four in a row.", "how the game was won")
		wantText(t, page.GetByTestId("result-money"), "A free game: no stakes, no fee.", "the money")
		count(t, page.Locator("[data-testid=cell][data-win]"), 4, "the winning line is highlighted")
		count(t, page.Locator("[data-column-button]"), 0, "no drop buttons once the game is over")
	}
	// The winning cells are column 1's bottom four, p1's pieces.
	count(t, spec.Locator(`[data-testid=cell][data-win][data-column="1"][data-seat="0"]`), 4, "the winning line")
	contains(t, spec.GetByTestId("moves"), "7. "+name1+" in column 1", "the last move in the list")
	screenshot(t, spec, "connect4-finished")
}
