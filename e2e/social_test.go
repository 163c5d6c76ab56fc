package e2e

import (
	"regexp"
	"strconv"
	"testing"

	"github.com/playwright-community/playwright-go"
)

// TestFriendsTheBellAndWatchingAFriend: Ann asks Bob to be friends and
// Bob's bell counts it without a reload; Bob accepts from the bell and
// Ann's bell counts that; while Bob plays Cat, Ann's friends page shows him
// playing with a link that opens his live game; Bob wins, which Dan's home
// page feed shows as it happens; Bob ranks above Cat on the leaderboard,
// and his profile shows the first win and his rating.
func TestFriendsTheBellAndWatchingAFriend(t *testing.T) {
	s := startServer(t, nil)
	ann, bob, cat := newPage(t, s), newPage(t, s), newPage(t, s)
	signInWithDevWallet(t, ann)
	bobName := signInWithDevWallet(t, bob)
	signInWithDevWallet(t, cat)
	for _, p := range []playwright.Page{ann, bob} {
		if _, err := p.Goto("/"); err != nil {
			t.Fatal(err)
		}
		wantText(t, p.GetByTestId("bell-count"), "Unread notifications: 0", "the bell before anything")
	}

	// Ann finds Bob by name and asks.
	if _, err := ann.Goto("/friends"); err != nil {
		t.Fatal(err)
	}
	wantText(t, ann.GetByTestId("friends-empty"), "No friends yet. Find someone by name and ask.", "Ann's empty list")
	fill(t, ann, "friend-search", bobName)
	click(t, ann, "friend-search-submit")
	contains(t, ann.GetByTestId("friend-found"), bobName, "the search finds Bob")
	click(t, ann, "friend-ask")
	wantText(t, ann.GetByTestId("friends-message"), "Request sent: they will see it in their notifications.", "Ann is told")

	// Bob's bell counts it live, and leads him to accept.
	wantText(t, bob.GetByTestId("bell-count"), "Unread notifications: 1", "Bob's bell without a reload")
	if err := bob.GetByTestId("nav-bell").Locator("summary").Click(); err != nil {
		t.Fatal(err)
	}
	annName, err := ann.GetByTestId("nav-user").TextContent()
	if err != nil {
		t.Fatal(err)
	}
	wantText(t, bob.GetByTestId("bell-latest").GetByTestId("notification-text").First(), annName+" asked to be your friend.",
		"the request in Bob's bell")
	if err := bob.GetByTestId("bell-latest").GetByTestId("notification-text").First().Click(); err != nil {
		t.Fatal(err)
	}
	contains(t, bob.GetByTestId("friend-request"), annName, "the request on Bob's friends page")
	click(t, bob, "friend-accept")
	wantText(t, bob.GetByTestId("friends-message"), "You are friends now.", "Bob is told")
	wantText(t, ann.GetByTestId("bell-count"), "Unread notifications: 1", "Ann's bell counts the acceptance")

	// Bob plays Cat; Ann sees him playing and watches.
	startTable(t, cat, bob, "60")
	game := bob.URL()
	if _, err := ann.Goto("/friends"); err != nil {
		t.Fatal(err)
	}
	friend := ann.Locator(`[data-testid=friend][data-user="` + bobName + `"]`)
	wantText(t, friend.GetByTestId("friend-status"), "playing now", "Bob's status for Ann")
	screenshot(t, ann, "friends")
	if err := friend.GetByTestId("friend-watch").Click(); err != nil {
		t.Fatal(err)
	}
	if err := expect.Page(ann).ToHaveURL(regexp.MustCompile(regexp.QuoteMeta(game) + "$")); err != nil {
		t.Fatalf("the watch link opens Bob's game: %v", err)
	}
	visible(t, ann.GetByTestId("scoreboard"), "Ann watches the game")

	// Dan watches the home page's feed.
	dan := newPage(t, s)
	signInWithDevWallet(t, dan)
	if _, err := dan.Goto("/"); err != nil {
		t.Fatal(err)
	}
	visible(t, dan.GetByTestId("activity-feed"), "the feed on the home page")

	// Bob wins 2-0 and earns his first win.
	for range 2 {
		click(t, bob, "move-rock")
		click(t, cat, "move-scissors")
		visible(t, ann.GetByTestId("reveal").Last(), "Ann sees the round revealed")
	}
	wantText(t, ann.GetByTestId("result-heading"), bobName+" wins", "the result Ann watches")

	// The leaderboard lists the winner above the loser.
	catName, err := cat.GetByTestId("nav-user").TextContent()
	if err != nil {
		t.Fatal(err)
	}
	wantText(t, dan.GetByTestId("feed-entry").Filter(playwright.LocatorFilterOptions{HasText: " beat "}).First(),
		bobName+" beat "+catName+" at rock, paper, scissors.", "the win in Dan's feed without a reload")
	if _, err := ann.Goto("/leaderboards?board=rps"); err != nil {
		t.Fatal(err)
	}
	// Other tests' players may be on the board too.
	rank := func(name string) int {
		t.Helper()
		r, err := ann.Locator(`[data-testid=leaderboard-row][data-user="` + name + `"] [data-testid=leaderboard-rank]`).TextContent()
		if err != nil {
			t.Fatalf("%s is not on the board: %v", name, err)
		}
		n, err := strconv.Atoi(r)
		if err != nil {
			t.Fatalf("%s's rank reads %q", name, r)
		}
		return n
	}
	if b, c := rank(bobName), rank(catName); b >= c {
		t.Errorf("ranks: %s %d, %s %d; want the winner above the loser", bobName, b, catName, c)
	}
	wantText(t, ann.Locator(`[data-testid=leaderboard-row][data-user="`+bobName+`"] [data-testid=leaderboard-wins]`), "1", "Bob's wins")
	screenshot(t, ann, "leaderboards")
	// On a phone the board keeps its sort column and the rating on screen,
	// and says each player's record under their name.
	if err := ann.SetViewportSize(390, 844); err != nil {
		t.Fatal(err)
	}
	for _, column := range []string{"Net USDC", "Rating"} {
		box := must(ann.GetByRole("columnheader", playwright.PageGetByRoleOptions{Name: column, Exact: playwright.Bool(true)}).BoundingBox())
		if box == nil || box.X < 0 || box.X+box.Width > 390 {
			t.Errorf("the %s column is at %+v on a 390 px phone, off screen", column, box)
		}
	}
	wantText(t, ann.Locator(`[data-testid=leaderboard-row][data-user="`+bobName+`"] [data-testid=leaderboard-record]`),
		"1 game · 1 won · 0 lost", "Bob's record on a phone")
	if err := ann.SetViewportSize(1280, 800); err != nil {
		t.Fatal(err)
	}
	if _, err := bob.Goto("/u/" + bobName); err != nil {
		t.Fatal(err)
	}
	badge := bob.Locator(`[data-testid=badge][data-achievement="first-win"]`)
	wantText(t, badge.Locator("p").First(), "First win", "the badge's name")
	contains(t, badge.GetByTestId("badge-earned"), "Earned", "the first win is earned")
	contains(t, bob.GetByTestId("rating-summary"), "Rock, paper, scissors: rating ", "Bob's rating in words")
	contains(t, bob.GetByTestId("rating-summary"), "after 1 game (1 won, 0 lost, 0 drawn).", "Bob's record")
	visible(t, bob.Locator("[data-rating-chart] canvas"), "Bob's rating chart is drawn")
	screenshot(t, bob, "profile-achievements")
	if err := expect.Locator(bob.Locator(`[data-testid=badge][data-achievement="trader"][data-unlocked="false"]`)).ToBeVisible(); err != nil {
		t.Errorf("a locked badge shows as locked: %v", err)
	}
}
