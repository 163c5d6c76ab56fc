package e2e

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gagliardetto/solana-go"
	"github.com/playwright-community/playwright-go"

	"wager/cmd/server/bots"
	"wager/e2e/apiclient"
	"wager/e2e/testserver"
)

// arenaPerson is a person in an arena: a browser page signed in with a
// dev wallet whose key the test also holds, to play the games the arena
// pairs the person in through the API, while the page stays on the arena.
type arenaPerson struct {
	page playwright.Page
	api  *apiclient.Client
	name string
	id   string
}

// newArenaPerson signs a fresh dev wallet in, in a browser page and
// through the API.
func newArenaPerson(t *testing.T, s *server) arenaPerson {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pkcs8, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	stored, _ := json.Marshal(map[string]string{"address": solana.PublicKeyFromBytes(pub).String(),
		"pkcs8": base64.StdEncoding.EncodeToString(pkcs8)})
	page := newPage(t, s)
	usePreset(t, page, `localStorage.setItem("wager.devWallet.v1", `+strconvQuote(string(stored))+`)`)
	p := arenaPerson{page: page, api: apiclient.New(s.URL, solana.PrivateKey(priv))}
	p.name = signInWithDevWallet(t, page)
	if err := p.api.Login(t.Context()); err != nil {
		t.Fatal(err)
	}
	var me struct{ ID, Username string }
	if err := p.api.Do(t.Context(), "GET", "/users/me", nil, &me); err != nil {
		t.Fatal(err)
	}
	if me.Username != p.name {
		t.Fatalf("the API signs in %q, the page %q", me.Username, p.name)
	}
	p.id = me.ID
	return p
}

// arenaDetail is what the test reads of GET /tournaments/:id.
type arenaDetail struct {
	ID          string    `json:"id"`
	Status      string    `json:"status"`
	StartsAt    time.Time `json:"startsAt"`
	EndsAt      time.Time `json:"endsAt"`
	PlayerCount int       `json:"playerCount"`
	Standings   []struct {
		UserID        string  `json:"userId"`
		Score         int     `json:"score"`
		CurrentGameID *string `json:"currentGameId"`
	} `json:"standings"`
}

func readArena(t *testing.T, s *server, id string) arenaDetail {
	t.Helper()
	var d arenaDetail
	if err := apiclient.New(s.URL, nil).Do(t.Context(), "GET", "/tournaments/"+id, nil, &d); err != nil {
		t.Fatal(err)
	}
	return d
}

// onArenaPage opens the arena's page for each person, as people who wait
// for a pairing do: an arena pairs only entrants connected to its room.
func onArenaPage(t *testing.T, arena string, ps ...arenaPerson) {
	t.Helper()
	for _, p := range ps {
		goTo(t, p.page, "/arenas/"+arena)
	}
}

// currentGame waits until the arena has paired userID and returns the game.
func currentGame(t *testing.T, s *server, arena, userID string) string {
	t.Helper()
	var game string
	eventually(t, "a pairing for "+userID, func() bool {
		for _, st := range readArena(t, s, arena).Standings {
			if st.UserID == userID && st.CurrentGameID != nil {
				game = *st.CurrentGameID
			}
		}
		return game != ""
	})
	return game
}

// eventually polls ok until it holds, for at most a minute of real time:
// the arena's worker and the bots work on their own.
func eventually(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !ok(); time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within a minute", what)
		}
	}
}

// line is a player's line in an arena page's standings.
func line(page playwright.Page, userID string) playwright.Locator {
	return page.Locator(`[data-testid="arena-line"][data-user-id="` + userID + `"]`)
}

// wantMatch waits until the locator's text matches re.
func wantMatch(t *testing.T, loc playwright.Locator, re, what string) {
	t.Helper()
	if err := expect.Locator(loc).ToHaveText(regexp.MustCompile(re),
		playwright.LocatorAssertionsToHaveTextOptions{Timeout: playwright.Float(moneyTimeout)}); err != nil {
		t.Fatalf("%s: want /%s/: %v", what, re, err)
	}
}

// resignAndWatch has loser resign its current game in the arena and
// checks, on every page and without a reload, that the standings moved:
// the loser's line has one more loss (and, when it had no win, a rank
// below the first), and the opponent's score is no longer 0.
func resignAndWatch(t *testing.T, s *server, arena string, loser arenaPerson, pages []playwright.Page, losses string, noWin bool) {
	t.Helper()
	game := currentGame(t, s, arena, loser.id)
	var g struct{ Players []string }
	if err := loser.api.Do(t.Context(), "GET", "/games/"+game+"/state", nil, &g); err != nil {
		t.Fatal(err)
	}
	opponent := g.Players[0]
	if opponent == loser.id {
		opponent = g.Players[1]
	}
	if err := loser.api.Do(t.Context(), "POST", "/games/"+game+"/actions", map[string]string{"type": "resign"}, nil); err != nil {
		t.Fatalf("%s resigns: %v", loser.name, err)
	}
	for _, page := range pages {
		l := line(page, loser.id)
		wantMatch(t, l.Locator("td").Nth(3), `^\d+ won, \d+ drawn, `+losses+` lost$`, loser.name+"'s record after the resignation, live")
		if noWin {
			wantMatch(t, l.Locator("td").First(), `^[2-9]$`, loser.name+"'s rank after the resignation, live")
		}
		wantMatch(t, line(page, opponent).GetByTestId("arena-score"), `^[1-9]\d*$`, "the winner's score after the resignation, live")
	}
}

// TestTwoPeopleAndTwoBotsInTheDemoArena: with two demo bots, the demo
// arena (free: bots hold no money) is scheduled with the bots in it; two
// people join it from its page and keep the page open. When it starts all
// four are paired; as the people's games end (each resigns one) the
// standings move on both pages without a reload; at the end both pages say
// it finished.
func TestTwoPeopleAndTwoBotsInTheDemoArena(t *testing.T) {
	clk := &testserver.Clock{}
	s := testserver.StartClocked(t, map[string]string{"DEMO_BOTS": "2"}, clk.Now)

	var arena arenaDetail
	eventually(t, "demo arena with the two bots in it", func() bool {
		var list []arenaDetail
		if err := apiclient.New(s.URL, nil).Do(t.Context(), "GET", "/tournaments", nil, &list); err != nil {
			t.Fatal(err)
		}
		for _, a := range list {
			if a.Status == "scheduled" && a.PlayerCount == 2 {
				arena = a
				return true
			}
		}
		return false
	})

	ann, bob := newArenaPerson(t, s), newArenaPerson(t, s)
	pages := []playwright.Page{ann.page, bob.page}
	for _, p := range pages {
		if _, err := p.Goto("/arenas/" + arena.ID); err != nil {
			t.Fatal(err)
		}
		wantText(t, p.GetByTestId("arena-title"), bots.ArenaName, "the demo arena's page")
		click(t, p, "arena-join")
		visible(t, p.GetByTestId("arena-in"), "the person is in")
	}
	for _, p := range pages {
		wantText(t, p.GetByTestId("arena-players"), "4 players of 64", "both people and both bots, live")
		wantText(t, p.GetByTestId("arena-status"), "scheduled", "before the start")
	}

	// The bots stop starting games among themselves shortly before their
	// arena starts, to be free for it: skip to then, let the clock run
	// fast (in steps shorter than the gap the deadline worker takes for an
	// outage) until their last game is over, and go on to the start. Four
	// players, two games.
	clk.AdvanceTo(arena.StartsAt.Add(-29 * time.Second))
	eventually(t, "end of the bots' last game before the arena", func() bool {
		if next := clk.Now().Add(2 * time.Second); next.Before(arena.StartsAt) {
			clk.AdvanceTo(next)
		}
		var live []json.RawMessage
		if err := apiclient.New(s.URL, nil).Do(t.Context(), "GET", "/games/live", nil, &live); err != nil {
			t.Fatal(err)
		}
		return len(live) == 0
	})
	clk.AdvanceTo(arena.StartsAt.Add(time.Second))
	// The people do not move, and stay paired for their first round; the
	// bots play at once, game after game, so each bot line says it is
	// playing or shows the games it played since the start (a page that
	// catches up late sees a later moment, never an earlier one).
	bots := `[data-testid="arena-line"]:not([data-user-id="` + ann.id + `"]):not([data-user-id="` + bob.id + `"])`
	for _, p := range pages {
		wantText(t, p.GetByTestId("arena-status"), "running", "the start, live")
		for _, who := range []arenaPerson{ann, bob} {
			wantText(t, line(p, who.id).Locator("td:last-child"), "playing", "each person paired at the start, live")
			wantText(t, line(p, who.id).GetByTestId("arena-score"), "0", "no score yet")
		}
		if err := expect.Locator(p.Locator(bots)).ToHaveCount(2); err != nil {
			t.Fatalf("two bots in the standings: %v", err)
		}
		for i := range 2 {
			wantMatch(t, p.Locator(bots).Nth(i), `playing|[1-9]\d* (won|drawn|lost)`, "each bot paired since the start, live")
		}
	}

	// Ann resigns: on both pages her line has a loss and she is no longer
	// first, and her opponent has scored. Then Bob does the same.
	resignAndWatch(t, s, arena.ID, ann, pages, "1", true)
	resignAndWatch(t, s, arena.ID, bob, pages, "1", false)

	// The end: the games running then time out round after round (the
	// clock runs fast, in steps shorter than the gap the deadline worker
	// takes for an outage), and the arena finishes on both pages.
	clk.AdvanceTo(arena.EndsAt.Add(time.Second))
	eventually(t, "the arena's end", func() bool {
		clk.AdvanceTo(clk.Now().Add(5 * time.Second))
		return readArena(t, s, arena.ID).Status == "finished"
	})
	for _, p := range pages {
		wantText(t, p.GetByTestId("arena-status"), "finished", "the end, live")
		wantText(t, p.GetByTestId("arena-clock"), "Finished", "the clock at the end, live")
		wantText(t, p.Locator("#arena-games p"), "No game is being played right now.", "no game left, live")
	}
	if d := readArena(t, s, arena.ID); d.Status != "finished" {
		t.Errorf("the arena is %s", d.Status)
	}
}

// TestAStakedArenaPaysItsWinnerLive: two people with 5 USDC each enter an
// arena of 5 USDC split 60/40 and keep its page open. When it starts they
// are paired; Bob resigns, and both pages show Ann first with 2 points
// without a reload; at the end Ann's header reads the first prize (60% of
// the pool less the 1% fee: 5.94 USDC) and Bob's the second (3.96 USDC).
func TestAStakedArenaPaysItsWinnerLive(t *testing.T) {
	clk := &testserver.Clock{}
	s := testserver.StartClocked(t, nil, clk.Now)
	ann, bob := newArenaPerson(t, s), newArenaPerson(t, s)
	for _, p := range []arenaPerson{ann, bob} {
		depositFromFaucet(t, p.page, "5.00")
	}
	var arena arenaDetail
	if err := ann.api.Do(t.Context(), "POST", "/tournaments", map[string]any{"name": "Friday arena", "gameType": "rps",
		"settings": map[string]int{"rounds": 3, "roundSeconds": 10}, "entryFeeMinor": 5_000_000,
		"startsAt": clk.Now().Add(time.Minute).Format(time.RFC3339), "durationMinutes": 1, "prizeSplitBps": []int{6000, 4000}},
		&arena); err != nil {
		t.Fatal(err)
	}
	pages := []playwright.Page{ann.page, bob.page}
	for _, p := range pages {
		if _, err := p.Goto("/arenas/" + arena.ID); err != nil {
			t.Fatal(err)
		}
		click(t, p, "arena-join")
		visible(t, p.GetByTestId("arena-in"), "the person is in")
		wantText(t, p.GetByTestId("nav-balance"), "Balance: 0.00 USDC", "the entry fee locked")
	}
	for _, p := range pages {
		wantText(t, p.GetByTestId("arena-players"), "2 players of 64 · pool 10.00 USDC", "both entries in the pool, live")
	}

	clk.AdvanceTo(arena.StartsAt.Add(time.Second))
	for _, p := range pages {
		wantText(t, p.GetByTestId("arena-status"), "running", "the start, live")
		a, b := regexp.QuoteMeta(ann.name), regexp.QuoteMeta(bob.name)
		wantMatch(t, p.GetByTestId("arena-game"), "^("+a+" v "+b+"|"+b+" v "+a+")$", "their game in progress, live")
	}

	game := currentGame(t, s, arena.ID, bob.id)
	if err := bob.api.Do(t.Context(), "POST", "/games/"+game+"/actions", map[string]string{"type": "resign"}, nil); err != nil {
		t.Fatal(err)
	}
	for _, p := range pages {
		wantTexts(t, p.GetByTestId("arena-player"), []string{ann.name, bob.name}, "Ann first, live")
		wantText(t, line(p, ann.id).GetByTestId("arena-score"), "2", "Ann's score, live")
		wantText(t, line(p, ann.id).Locator("td").First(), "1", "Ann's rank, live")
		wantText(t, line(p, bob.id).Locator("td").First(), "2", "Bob's rank, live")
		// The rematch the arena pairs them in next is lost by both when
		// neither moves in its first round: Bob's losses may be 1 or 2.
		wantMatch(t, line(p, bob.id).Locator("td").Nth(3), `^0 won, 0 drawn, [12] lost$`, "Bob's record, live")
	}

	clk.AdvanceTo(arena.EndsAt.Add(time.Second))
	for _, p := range pages {
		wantText(t, p.GetByTestId("arena-status"), "finished", "the end, live")
		wantTexts(t, p.GetByTestId("arena-prize"), []string{"#1 " + ann.name + ": 5.94 USDC", "#2 " + bob.name + ": 3.96 USDC"},
			"the prizes, live")
	}
	wantText(t, ann.page.GetByTestId("nav-balance"), "Balance: 5.94 USDC", "the first prize in Ann's header, live")
	wantText(t, bob.page.GetByTestId("nav-balance"), "Balance: 3.96 USDC", "the second prize in Bob's header, live")
}

// The arenas list, an arena's page before and during its run, and the
// page that waits for a challenged person: axe-core finds no serious or
// critical violation at either size, and none scrolls sideways on a phone.
func TestArenaAndChallengePagesAreAccessible(t *testing.T) {
	clk := &testserver.Clock{}
	s := testserver.StartClocked(t, nil, clk.Now)
	ann, bob := newArenaPerson(t, s), newArenaPerson(t, s)

	var challenge struct {
		ID string `json:"id"`
	}
	if err := ann.api.Do(t.Context(), "POST", "/challenges", map[string]any{"toUserId": bob.id, "gameType": "rps", "stakeMinor": 0},
		&challenge); err != nil {
		t.Fatal(err)
	}
	check(t, ann.page, "play-challenge", "/play/challenge/"+challenge.ID, ann.page.GetByTestId("waiting"))
	if err := ann.api.Do(t.Context(), "DELETE", "/challenges/"+challenge.ID, nil, nil); err != nil {
		t.Fatal(err)
	}

	var arena arenaDetail
	if err := ann.api.Do(t.Context(), "POST", "/tournaments", map[string]any{"name": "Evening arena", "gameType": "rps",
		"startsAt": clk.Now().Add(time.Minute).Format(time.RFC3339), "durationMinutes": 5}, &arena); err != nil {
		t.Fatal(err)
	}
	for _, p := range []arenaPerson{ann, bob} {
		if err := p.api.Do(t.Context(), "POST", "/tournaments/"+arena.ID+"/join", nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	check(t, ann.page, "arenas", "/arenas", ann.page.GetByTestId("arena-card").First())
	check(t, ann.page, "arena-scheduled", "/arenas/"+arena.ID, ann.page.GetByTestId("arena-in"))
	onArenaPage(t, arena.ID, bob)
	clk.AdvanceTo(arena.StartsAt.Add(time.Second))
	currentGame(t, s, arena.ID, ann.id)
	check(t, ann.page, "arena-running", "/arenas/"+arena.ID, ann.page.GetByTestId("arena-game").First())
}

// A person who keeps an arena's page open is shown their game the moment
// the arena pairs them, plays it on its page, and is offered there the
// next game the arena pairs them in, without looking for it, while the
// result of the game they finished stays on screen.
func TestAnArenaLeadsItsPlayerFromGameToGame(t *testing.T) {
	clk := &testserver.Clock{}
	s := testserver.StartClocked(t, nil, clk.Now)
	ann, bob := newArenaPerson(t, s), newArenaPerson(t, s)
	var arena arenaDetail
	if err := ann.api.Do(t.Context(), "POST", "/tournaments", map[string]any{"name": "Lunch arena", "gameType": "rps",
		"startsAt": clk.Now().Add(time.Minute).Format(time.RFC3339), "durationMinutes": 5}, &arena); err != nil {
		t.Fatal(err)
	}
	for _, p := range []arenaPerson{ann, bob} {
		if err := p.api.Do(t.Context(), "POST", "/tournaments/"+arena.ID+"/join", nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ann.page.Goto("/arenas/" + arena.ID); err != nil {
		t.Fatal(err)
	}
	wantText(t, ann.page.GetByTestId("arena-in"), "You are in. You are paired as soon as the arena runs and you are free, while this page or your game's page is open.", "before the start")
	onArenaPage(t, arena.ID, bob)

	clk.AdvanceTo(arena.StartsAt.Add(time.Second))
	first := currentGame(t, s, arena.ID, ann.id)
	wantText(t, ann.page.GetByTestId("arena-next-game"), "Your game is ready: play it now.", "the pairing, live")
	if err := ann.page.GetByTestId("arena-next-game").GetByRole("link").Click(); err != nil {
		t.Fatal(err)
	}
	if err := expect.Page(ann.page).ToHaveURL(regexp.MustCompile("/game/" + first + "$")); err != nil {
		t.Fatalf("the link leads to the arena's game: %v", err)
	}
	wantText(t, ann.page.GetByTestId("game-arena"),
		"An arena game: back to the arena · your next game is offered here as soon as the arena pairs you", "the game page names its arena")

	// Bob resigns: the arena pairs them again. Ann's page keeps her result
	// on screen and offers the next game until she moves on.
	if err := bob.api.Do(t.Context(), "POST", "/games/"+first+"/actions", map[string]string{"type": "resign"}, nil); err != nil {
		t.Fatal(err)
	}
	wantText(t, ann.page.GetByTestId("arena-next-game"), "Your next arena game is ready and its clock runs: play it now.", "the next pairing, live")
	wantText(t, ann.page.GetByTestId("result-heading"), ann.name+" wins", "the result, still on screen after the next pairing")
	if !strings.HasSuffix(ann.page.URL(), "/game/"+first) {
		t.Fatalf("Ann's page left her result for %s before she moved on", ann.page.URL())
	}
	if err := ann.page.GetByTestId("arena-next-game").GetByRole("link").Click(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "Ann's page on her next game", func() bool {
		url := ann.page.URL()
		return !strings.HasSuffix(url, first) && strings.Contains(url, "/game/")
	})
	next := currentGame(t, s, arena.ID, ann.id)
	if !strings.HasSuffix(ann.page.URL(), "/game/"+next) {
		t.Fatalf("Ann's page is on %s, her next game is %s", ann.page.URL(), next)
	}

	// Bob leaves the arena's page and resigns this one too; Ann reloads her
	// page of the game that is over (a new socket, which that game's room
	// no longer takes): the page waits in the arena's room, and when Bob
	// comes back they are paired again.
	goTo(t, bob.page, "/")
	time.Sleep(2 * time.Second) // the instance shares who is in which room every second
	if err := bob.api.Do(t.Context(), "POST", "/games/"+next+"/actions", map[string]string{"type": "resign"}, nil); err != nil {
		t.Fatal(err)
	}
	wantText(t, ann.page.GetByTestId("result-heading"), ann.name+" wins", "the second result")
	if _, err := ann.page.Reload(); err != nil {
		t.Fatal(err)
	}
	wantText(t, ann.page.GetByTestId("result-heading"), ann.name+" wins", "the second result after a reload")
	onArenaPage(t, arena.ID, bob)
	third := currentGame(t, s, arena.ID, ann.id)
	if third == next || third == first {
		t.Fatalf("Ann's current game is still %s", third)
	}
}
