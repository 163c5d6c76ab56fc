package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/playwright-community/playwright-go"
)

// The spectators of a staked Connect Four game see its moves
// SPECTATOR_DELAY after the players, so that nobody watching can help a
// player; chat, donations and the pot reach them at once. Ann plays and
// watches her page, Bob plays through the API, Sam watches and donates:
// the player on turn drops a piece, Ann's page shows it at once, and while
// Sam's board is still behind, Ann's chat message and Sam's donation show
// on Sam's page. The move then reaches Sam's page about the delay after it
// was made, without a reload, and the chat line stays a single line.
func TestTheSpectatorsBoardIsBehindThePlayersWhileChatAndDonationsAreLive(t *testing.T) {
	const delay = 20 * time.Second
	s := startServer(t, map[string]string{"SPECTATOR_DELAY": delay.String()})
	ctx := t.Context()

	// Ann plays and has a page; Bob plays through the API; Sam watches and
	// has test USDC in his wallet to donate.
	ann := newArenaPerson(t, s)
	faucetTo(t, ann.api, ann.api.Key.PublicKey().String(), 2_000_000)
	if err := ann.api.Deposit(ctx, 2_000_000); err != nil {
		t.Fatal(err)
	}
	bob := apiDepositor(t, s, 2_000_000)
	var bobMe struct{ ID, Username string }
	if err := bob.Do(ctx, "GET", "/users/me", nil, &bobMe); err != nil {
		t.Fatal(err)
	}
	sam := newArenaPerson(t, s)
	faucetTo(t, sam.api, sam.api.Key.PublicKey().String(), 5_000_000)

	var lobby struct{ ID string }
	if err := ann.api.Do(ctx, "POST", "/lobbies", map[string]any{"gameType": "connect4", "stakeMinor": 1_000_000,
		"settings": map[string]int{"turnSeconds": 60}}, &lobby); err != nil {
		t.Fatal(err)
	}
	if err := ann.api.Do(ctx, "POST", "/lobbies/"+lobby.ID+"/join-queue", nil, nil); err != nil {
		t.Fatal(err)
	}
	var joined struct{ GameID string }
	if err := bob.Do(ctx, "POST", "/lobbies/"+lobby.ID+"/join-queue", nil, &joined); err != nil || joined.GameID == "" {
		t.Fatalf("Bob joins Ann's table: %+v %v", joined, err)
	}
	gameID := joined.GameID
	goTo(t, ann.page, "/game/"+gameID)
	goTo(t, sam.page, "/game/"+gameID)

	// Each page says how late the spectators see the moves.
	wantText(t, ann.page.GetByTestId("spectator-delay"),
		"Spectators see your moves 20 seconds late, so that nobody watching can help a player; chat and donations reach everyone at once.",
		"the player's page on the delay")
	wantText(t, sam.page.GetByTestId("spectator-delay"),
		"You see the moves 20 seconds after the players, so that nobody watching can help them; chat and donations are live.",
		"the spectator's page on the delay")
	// Betting closes at the first move as it is played, which Sam sees late.
	wantText(t, sam.page.GetByTestId("bets-late"),
		"Betting closes at the first move as it is played: you see it 20 seconds later, and a bet placed meanwhile is refused.",
		"the spectator's bets panel on the delay")
	count(t, ann.page.GetByTestId("bets-late"), 0, "a player's bets panel on the delay")
	// Sam's page is in the game's room: Ann's page counts him, live.
	contains(t, ann.page.GetByTestId("spectator-count"), "1 watching", "Ann's page counts Sam")
	visible(t, sam.page.GetByTestId("board"), "Sam sees the board")
	contains(t, sam.page.GetByTestId("moves"), "The first player has not moved yet.", "Sam's moves before any move")
	wantText(t, sam.page.GetByTestId("pot-spectators"), "0.00", "the spectators' pot before the donation")

	// The player on turn drops a piece in the fourth column.
	var state struct {
		Turn *string `json:"turn"`
	}
	if err := ann.api.Do(ctx, "GET", "/games/"+gameID+"/state", nil, &state); err != nil || state.Turn == nil {
		t.Fatalf("the game's state: %+v %v", state, err)
	}
	mover, moverName := ann.api, ann.name
	switch *state.Turn {
	case ann.id:
	case bobMe.ID:
		mover, moverName = bob, bobMe.Username
	default:
		t.Fatalf("on turn: %q, neither Ann (%s) nor Bob (%s)", *state.Turn, ann.id, bobMe.ID)
	}
	if err := mover.Do(ctx, "POST", "/games/"+gameID+"/actions",
		map[string]any{"type": "move", "move": map[string]int{"column": 3}}, nil); err != nil {
		t.Fatalf("the first move: %v", err)
	}
	moved := time.Now()
	theMove := "1. " + moverName + " in column 4"
	// The first player's piece, at the bottom (row 6) of column 4.
	piece := `[data-testid=cell][data-row="6"][data-column="4"][data-seat="0"]`

	// Ann's page shows it at once; Sam's does not.
	if err := expect.Locator(ann.page.GetByTestId("move")).ToHaveText([]string{theMove},
		playwright.LocatorAssertionsToHaveTextOptions{Timeout: playwright.Float(5_000)}); err != nil {
		t.Fatalf("Ann's page does not show the move at once: %v", err)
	}
	count(t, ann.page.Locator(piece), 1, "the piece on Ann's board")
	stillBehind := func(when string) {
		t.Helper()
		since := time.Since(moved) // before the reading: a reading after 15 s might be the release
		text := textOf(t, sam.page.GetByTestId("moves"))
		moves, err := sam.page.GetByTestId("move").Count()
		if err != nil {
			t.Fatal(err)
		}
		pieces, err := sam.page.Locator(piece).Count()
		if err != nil {
			t.Fatal(err)
		}
		if since > 15*time.Second {
			t.Logf("%s: %v after the move, too close to the delay of %v to require Sam's board to be behind (moves panel %q)",
				when, since.Round(time.Millisecond), delay, text)
			return
		}
		if moves != 0 || pieces != 0 || !strings.Contains(text, "The first player has not moved yet.") {
			t.Fatalf("%s, %v after the move: Sam's page shows it already (moves panel %q, %d moves listed, %d pieces in column 4), "+
				"want it %v late", when, since.Round(time.Millisecond), text, moves, pieces, delay)
		}
	}
	stillBehind("right after the move")

	// Ann says something on her page: Sam reads it at once, once.
	const said = "good luck, spectators can't help you"
	fill(t, ann.page, "chat-text", said)
	if err := ann.page.GetByTestId("chat-text").Press("Enter"); err != nil {
		t.Fatal(err)
	}
	samSaid := sam.page.GetByTestId("chat-message").Filter(playwright.LocatorFilterOptions{HasText: said})
	contains(t, samSaid, said, "Ann's message on Sam's page")
	contains(t, samSaid.GetByTestId("chat-role"), "player", "Ann's message is labelled player")
	count(t, samSaid, 1, "Ann's message on Sam's page")
	t.Logf("the chat message reached Sam %v after the move", time.Since(moved).Round(time.Millisecond))
	stillBehind("after the chat message")

	// Sam donates 1 USDC from his page: his pot and the chat say so at once.
	fill(t, sam.page, "donate-amount", "1")
	click(t, sam.page, "donate-submit")
	wantText(t, sam.page.GetByTestId("donate-status"), "Thank you! Your donation is in the pot.", "Sam's donation")
	wantText(t, sam.page.GetByTestId("pot-spectators"), "1.00", "the spectators' pot on Sam's page")
	announcement := sam.name + " donated 1.00 USDC to the game"
	samDonated := sam.page.GetByTestId("chat-system").Filter(playwright.LocatorFilterOptions{HasText: announcement})
	wantText(t, samDonated, announcement, "the donation's announcement on Sam's page")
	wantText(t, ann.page.GetByTestId("pot-spectators"), "1.00", "the spectators' pot on Ann's page")
	t.Logf("the donation reached Sam's pot and chat %v after the move", time.Since(moved).Round(time.Millisecond))
	stillBehind("after the chat message and the donation")

	// The move reaches Sam's page the delay after it was made, without a
	// reload.
	samMoves := sam.page.GetByTestId("move")
	deadline := moved.Add(2 * delay)
	for {
		n, err := samMoves.Count()
		if err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Sam's page does not show the move %v after it (moves panel %q)", 2*delay, textOf(t, sam.page.GetByTestId("moves")))
		}
		time.Sleep(100 * time.Millisecond)
	}
	late := time.Since(moved)
	t.Logf("the move reached Sam's page %v after it was made", late.Round(time.Millisecond))
	if late < delay-2*time.Second {
		t.Errorf("the move reached Sam's page %v after it was made, want about %v", late.Round(time.Millisecond), delay)
	}
	if err := expect.Locator(samMoves).ToHaveText([]string{theMove}); err != nil {
		t.Errorf("Sam's moves once the move came due: %v", err)
	}
	count(t, sam.page.Locator(piece), 1, "the piece on Sam's board")
	// What came at once stays as it was, once.
	count(t, samSaid, 1, "Ann's message on Sam's page after the move came due")
	count(t, samDonated, 1, "the donation's announcement on Sam's page after the move came due")
	wantText(t, sam.page.GetByTestId("pot-spectators"), "1.00", "the spectators' pot on Sam's page after the move came due")
	wantText(t, sam.page.GetByTestId("spectator-delay"),
		"You see the moves 20 seconds after the players, so that nobody watching can help them; chat and donations are live.",
		"the spectator's page on the delay, after the move")
	screenshot(t, sam.page, "spectator-delay")

	// End the game, so that none of this test's games is live for the next.
	if err := mover.Do(ctx, "POST", "/games/"+gameID+"/actions", map[string]string{"type": "resign"}, nil); err != nil {
		t.Fatalf("resign: %v", err)
	}
}
