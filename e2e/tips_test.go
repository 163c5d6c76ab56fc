package e2e

import (
	"testing"

	"github.com/playwright-community/playwright-go"

	"wager/e2e/apiclient"
)

// TestASpectatorTipsAPlayerFromTheGameChat: the tip button on a player's
// chat message opens the tip panel, a preset fills the amount, the dev
// wallet signs, and the announcement appears in the chat of both the
// tipper and the tipped player without a reload. Nobody is offered a tip
// button on their own message.
func TestASpectatorTipsAPlayerFromTheGameChat(t *testing.T) {
	s := startServer(t, nil)
	p1, p2, spec := newPage(t, s), newPage(t, s), newPage(t, s)
	name1 := signInWithDevWallet(t, p1)
	name2 := signInWithDevWallet(t, p2)
	specName := signInWithDevWallet(t, spec)
	gameURL := startTable(t, p1, p2, "60")
	if _, err := p1.Goto(gameURL); err != nil {
		t.Fatal(err)
	}
	if _, err := spec.Goto(gameURL); err != nil {
		t.Fatal(err)
	}
	specAddress, err := spec.Evaluate(`JSON.parse(localStorage.getItem("wager.devWallet.v1")).address`)
	if err != nil {
		t.Fatal(err)
	}
	if err := apiclient.New(s.URL, nil).Do(t.Context(), "POST", "/dev/faucet",
		map[string]any{"address": specAddress, "amountMinor": 5_000_000}, nil); err != nil {
		t.Fatal(err)
	}

	fill(t, p1, "chat-text", "tips welcome")
	if err := p1.GetByTestId("chat-text").Press("Enter"); err != nil {
		t.Fatal(err)
	}
	onSpec := spec.GetByTestId("chat-message").Filter(playwright.LocatorFilterOptions{HasText: "tips welcome"})
	visible(t, onSpec, "the spectator sees p1's message")
	onP1 := p1.GetByTestId("chat-message").Filter(playwright.LocatorFilterOptions{HasText: "tips welcome"})
	visible(t, onP1, "p1 sees their own message")
	if err := expect.Locator(onP1.GetByTestId("tip-button")).ToBeHidden(); err != nil {
		t.Errorf("p1 is offered a tip on their own message: %v", err)
	}

	if err := onSpec.GetByTestId("tip-button").Click(); err != nil {
		t.Fatalf("the spectator clicks Tip on p1's message: %v", err)
	}
	visible(t, spec.GetByTestId("tip-panel"), "the tip panel opens")
	wantText(t, spec.GetByTestId("tip-to"), name1, "the tip goes to the message's author")
	if err := spec.GetByTestId("tip-preset").Filter(playwright.LocatorFilterOptions{HasText: "0.50 USDC"}).Click(); err != nil {
		t.Fatal(err)
	}
	click(t, spec, "tip-submit")
	wantText(t, spec.GetByTestId("tip-status"), "Sent! "+name1+" got 0.50 USDC.", "the tip is confirmed")

	want := specName + " tipped " + name1 + " 0.50 USDC"
	for who, page := range map[string]playwright.Page{"the spectator": spec, "p1": p1} {
		announced := page.GetByTestId("chat-system").Filter(playwright.LocatorFilterOptions{HasText: " tipped "})
		wantText(t, announced, want, who+" sees the tip announced in the chat")
	}
	count(t, spec.GetByTestId("chat-message").Filter(playwright.LocatorFilterOptions{HasText: " tipped "}).GetByTestId("tip-button"), 0,
		"no tip button on a system message")
	screenshot(t, spec, "game-tip")

	// A wrong amount is said in plain words, before anything is signed.
	if err := onSpec.GetByTestId("tip-button").Click(); err != nil {
		t.Fatal(err)
	}
	fill(t, spec, "tip-amount", "0.001")
	click(t, spec, "tip-submit")
	if err := expect.Locator(spec.GetByTestId("tip-status")).ToContainText("The amount must be from 0.01 USDC"); err != nil {
		t.Errorf("a tip below the minimum: %v", err)
	}

	// From a profile: no chat to announce it in, the same signing flow.
	if _, err := spec.Goto("/u/" + name2); err != nil {
		t.Fatal(err)
	}
	click(t, spec, "tip-button")
	wantText(t, spec.GetByTestId("tip-to"), name2, "the profile's tip goes to its user")
	if err := spec.GetByTestId("tip-preset").Filter(playwright.LocatorFilterOptions{HasText: "1.00 USDC"}).First().Click(); err != nil {
		t.Fatal(err)
	}
	click(t, spec, "tip-submit")
	wantText(t, spec.GetByTestId("tip-status"), "Sent! "+name2+" got 1.00 USDC.", "the profile tip is confirmed")
	if _, err := p2.Goto("/u/" + name2); err != nil {
		t.Fatal(err)
	}
	count(t, p2.GetByTestId("tip-button"), 0, "no tip button on your own profile")
}
