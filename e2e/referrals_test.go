package e2e

import (
	"strings"
	"testing"

	"github.com/playwright-community/playwright-go"
)

// A visitor who lands on a referral link, looks around and then signs up
// is in the referrer's team on the referrals page.
func TestAReferralLinkBringsTheVisitorIntoTheTeam(t *testing.T) {
	s := startServer(t, nil)
	referrer := newPage(t, s)
	signInWithDevWallet(t, referrer)
	if _, err := referrer.Goto("/referrals"); err != nil {
		t.Fatal(err)
	}
	if err := expect.Locator(referrer.GetByText("Nobody here yet.").First()).ToBeVisible(); err != nil {
		t.Fatalf("the empty team: %v", err)
	}
	link, err := referrer.GetByTestId("referral-link").InputValue()
	if err != nil {
		t.Fatal(err)
	}
	_, code, ok := strings.Cut(link, "/?ref=")
	if !ok || code == "" {
		t.Fatalf("referral link %q has no ?ref=", link)
	}

	visitor := newPage(t, s)
	if _, err := visitor.Goto("/?ref=" + code); err != nil {
		t.Fatal(err)
	}
	// Another page before signing up: the code is kept.
	if _, err := visitor.Goto("/leaderboards"); err != nil {
		t.Fatal(err)
	}
	name := signInWithDevWallet(t, visitor)

	if _, err := referrer.Reload(); err != nil {
		t.Fatal(err)
	}
	if err := expect.Locator(referrer.GetByText("Level 1, brought in by you: 1 person")).ToBeVisible(); err != nil {
		t.Errorf("the level count: %v", err)
	}
	member := referrer.GetByTestId("referred-user").Filter(playwright.LocatorFilterOptions{HasText: name})
	if err := expect.Locator(member).ToBeVisible(); err != nil {
		t.Fatalf("%s is not in the referrer's team: %v", name, err)
	}
	// The visitor's own page names who brought them.
	if _, err := visitor.Goto("/referrals"); err != nil {
		t.Fatal(err)
	}
	if err := expect.Locator(visitor.GetByTestId("referred-by")).ToHaveText("You joined through " + referrerName(t, referrer) + "."); err != nil {
		t.Errorf("the visitor's page: %v", err)
	}
}

func referrerName(t *testing.T, page playwright.Page) string {
	t.Helper()
	name, err := page.GetByTestId("nav-user").TextContent()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(name)
}
