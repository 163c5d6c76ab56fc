package e2e

import (
	"testing"

	"github.com/playwright-community/playwright-go"
)

// A user asks for help, an admin answers from the queue, and the user's
// bell rings without a reload; the answer is on the ticket's page.
func TestSupportTicketAnsweredFromTheQueue(t *testing.T) {
	adminAddress, adminKey := devKey(t)
	exact := playwright.PageGetByLabelOptions{Exact: playwright.Bool(true)}
	s := startServer(t, map[string]string{"ADMIN_WALLETS": adminAddress})
	admin, user := newPage(t, s), newPage(t, s)
	usePreset(t, admin, adminKey)
	signInWithDevWallet(t, admin)
	signInWithDevWallet(t, user)

	// The user finds support in the footer and opens a ticket.
	if err := user.GetByTestId("footer-support").Click(); err != nil {
		t.Fatal(err)
	}
	wantText(t, user.GetByTestId("support-empty"), "You have no tickets yet. Write one when something goes wrong.", "no tickets yet")
	if err := user.GetByLabel("Subject", exact).Fill("Deposit not showing"); err != nil {
		t.Fatal(err)
	}
	if _, err := user.GetByLabel("About", exact).SelectOption(playwright.SelectOptionValues{Values: &[]string{"payment"}}); err != nil {
		t.Fatal(err)
	}
	if err := user.GetByLabel("What happened", exact).Fill("I sent 5 USDC an hour ago."); err != nil {
		t.Fatal(err)
	}
	click(t, user, "support-submit")
	wantText(t, user.GetByTestId("ticket-subject"), "Deposit not showing", "the new ticket's page")
	wantText(t, user.GetByTestId("ticket-status"), "Waiting for support", "the new ticket's status")
	wantText(t, user.GetByTestId("bell-count"), "Unread notifications: 0", "the bell before the answer")

	// The admin answers it from the queue.
	if _, err := admin.Goto("/admin"); err != nil {
		t.Fatal(err)
	}
	click(t, admin, "admin-support-link")
	line := admin.GetByTestId("support-line").Filter(playwright.LocatorFilterOptions{HasText: "Deposit not showing"})
	visible(t, line, "the ticket in the queue")
	if err := line.GetByTestId("support-subject").Click(); err != nil {
		t.Fatal(err)
	}
	if err := admin.GetByLabel("Reply", exact).Fill("We found it: it is on your balance now."); err != nil {
		t.Fatal(err)
	}
	click(t, admin, "ticket-send")
	count(t, admin.GetByTestId("support-line").Filter(playwright.LocatorFilterOptions{HasText: "Deposit not showing"}), 0,
		"the answered ticket leaves the waiting queue")

	// The user's bell rings on the page they have open.
	wantText(t, user.GetByTestId("bell-count"), "Unread notifications: 1", "the user's bell without a reload")
	if _, err := user.Reload(); err != nil {
		t.Fatal(err)
	}
	wantText(t, user.GetByTestId("ticket-status"), "Answered: your turn", "the answered ticket's status")
	wantText(t, user.GetByTestId("ticket-message-text").Last(), "We found it: it is on your balance now.", "the answer on the ticket page")
}
