package e2e

import (
	"testing"
	"time"

	"github.com/gagliardetto/solana-go"
	"github.com/playwright-community/playwright-go"

	"wager/e2e/apiclient"
	"wager/e2e/testserver"
)

// A recurring arena appears on /arenas on schedule, an hour before each
// start, on the server's injected clock: not before, then with its start
// and its recurrence in words.
func TestARecurringArenaAppearsOnSchedule(t *testing.T) {
	key, err := solana.NewRandomPrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	clk := &testserver.Clock{}
	s := testserver.StartClocked(t, map[string]string{"ADMIN_WALLETS": key.PublicKey().String()}, clk.Now)
	admin := apiclient.New(s.URL, key)
	if err := admin.Login(t.Context()); err != nil {
		t.Fatal(err)
	}
	start := clk.Now().Add(3 * time.Hour).Truncate(time.Minute)
	at := start.Format("15:04")
	var schedule struct{ ID string }
	if err := admin.Do(t.Context(), "POST", "/admin/tournament-schedules", map[string]any{"name": "Teatime arena", "gameType": "rps",
		"entryFeeMinor": 0, "durationMinutes": 20, "every": "daily", "at": at}, &schedule); err != nil {
		t.Fatal(err)
	}
	page := newPage(t, s)
	card := page.GetByTestId("arena-card").Filter(playwright.LocatorFilterOptions{HasText: "Teatime arena"})
	goTo(t, page, "/arenas")
	if err := expect.Locator(card).ToHaveCount(0); err != nil {
		t.Fatalf("three hours ahead, the arena is listed: %v", err)
	}

	clk.AdvanceTo(start.Add(-59 * time.Minute))
	eventually(t, "the occurrence an hour ahead", func() bool {
		goTo(t, page, "/arenas")
		n, err := card.Count()
		return err == nil && n == 1
	})
	wantText(t, card.Locator("p").First(), "Rock, paper, scissors · free · 0 of 64 players · recurs every day at "+at+" UTC",
		"the occurrence's card")
	wantText(t, card.Locator("p").Last(), "starts "+start.UTC().Format("2 Jan 2006, 15:04 UTC"), "its start")
}
