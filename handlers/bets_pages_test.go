package handlers_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
)

// section is the visible text of the game page's element with the given
// test id, up to the end of its section; "" when the page has none.
func section(page, testID string) string {
	_, rest, ok := strings.Cut(page, `data-testid="`+testID+`"`)
	if !ok {
		return ""
	}
	_, rest, _ = strings.Cut(rest, ">")
	body, _, _ := strings.Cut(rest, "</section>")
	return visibleText(body)
}

// The game page's Bets card: both pools with their totals, bars and odds,
// the form for a spectator while betting is open, then "Betting closed"
// and each of the viewer's bets with what it paid.
func TestTheGamePageShowsThePoolsTheOddsAndTheViewersBets(t *testing.T) {
	a := newTestApp(t, noWorkers)
	if _, err := a.Settlement.ProcessTransfers(context.Background()); err != nil {
		t.Fatal(err)
	}
	p1, p2, game := a.stakedGame(t, 100_000, `{"rounds": 1}`)
	s1, s2 := a.spectatorWith(t, 1_000_000), a.spectatorWith(t, 1_000_000)
	name := func(p player) string {
		return a.do(t, request{path: "/users/me", header: p.auth}).json(t)["username"].(string)
	}
	n1, n2 := name(p1), name(p2)
	pageOf := func(p player) string {
		r := a.do(t, request{path: "/game/" + game, header: map[string]string{"Cookie": a.sessionCookie(t, p.wallet)}})
		if r.Code != http.StatusOK {
			t.Fatalf("game page: %d", r.Code)
		}
		return r.Body.String()
	}

	page := pageOf(s1)
	if got, want := section(page, "bets"), "Bets in USDC "+n1+" 0.00 no bets yet "+n2+" 0.00 no bets yet Each player's pool takes at most 1.00 USDC."; got != want {
		t.Errorf("bets card before any bet:\n got %q\nwant %q", got, want)
	}
	if !strings.Contains(page, `data-testid="bet-form"`) {
		t.Error("a spectator has no bet form while betting is open")
	}
	if strings.Contains(pageOf(p1), `data-testid="bet-form"`) {
		t.Error("a player is offered to bet on their own game")
	}

	a.bet(t, s1, game, p1.id, 100_000)
	a.bet(t, s1, game, p1.id, 200_000)
	a.bet(t, s2, game, p2.id, 700_000)
	page = pageOf(s1)
	// T = 1000000, fee 10000: 990000 shared by the pool of the winner.
	if got, want := section(page, "bets"), "Bets in USDC "+n1+" 0.30 pays 3.3x "+n2+" 0.70 pays 1.41x Each player's pool takes at most 1.00 USDC."; got != want {
		t.Errorf("bets card with bets:\n got %q\nwant %q", got, want)
	}
	for _, want := range []string{`value="30"`, `value="70"`} {
		if !strings.Contains(page, want) {
			t.Errorf("the pool bars lack %s", want)
		}
	}
	if got, want := section(page, "my-bets"), "Your bets 0.20 USDC on "+n1+" · open 0.10 USDC on "+n1+" · open"; got != want {
		t.Errorf("the bettor's bets:\n got %q\nwant %q", got, want)
	}

	a.act(t, p1, game, `{"type": "move", "move": "rock"}`)
	a.act(t, p2, game, `{"type": "move", "move": "scissors"}`)
	page = pageOf(s1)
	if got, want := section(page, "bets"), "Bets in USDC "+n1+" 0.30 pays 3.3x "+n2+" 0.70 pays 1.41x Betting closed"; got != want {
		t.Errorf("bets card after the game:\n got %q\nwant %q", got, want)
	}
	if strings.Contains(page, `data-testid="bet-form"`) {
		t.Error("the bet form stays after betting closed")
	}
	if got, want := section(page, "my-bets"), "Your bets 0.20 USDC on "+n1+" · won 0.66 USDC 0.10 USDC on "+n1+" · won 0.33 USDC"; got != want {
		t.Errorf("the winning bettor's bets:\n got %q\nwant %q", got, want)
	}
	if got, want := section(pageOf(s2), "my-bets"), "Your bets 0.70 USDC on "+n2+" · lost"; got != want {
		t.Errorf("the losing bettor's bets:\n got %q\nwant %q", got, want)
	}
}
