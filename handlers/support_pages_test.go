package handlers_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

func TestSupportPagesInPlainWords(t *testing.T) {
	staff, user, other := newWallet(t), newWallet(t), newWallet(t)
	a := newTestApp(t, map[string]string{"ADMIN_WALLETS": staff.address()})
	staffCookie, userCookie, otherCookie := a.sessionCookie(t, staff), a.sessionCookie(t, user), a.sessionCookie(t, other)
	get := func(cookie, path string) response {
		return a.do(t, request{path: path, header: map[string]string{"Cookie": cookie, "Accept": "text/html"}})
	}
	post := func(cookie, path string, form url.Values) response {
		form.Set("_csrf", a.csrfOf(t, cookie))
		return a.do(t, request{method: http.MethodPost, path: path, body: form.Encode(),
			header: map[string]string{"Cookie": cookie, "Content-Type": "application/x-www-form-urlencoded"}})
	}

	// The footer leads to support; a new user reads an empty list in words.
	r := get(userCookie, "/support")
	if !strings.Contains(r.Body.String(), `href="/support"`) {
		t.Error("no Support link in the page")
	}
	if text := visibleText(r.Body.String()); r.Code != http.StatusOK || !strings.Contains(text, "You have no tickets yet.") {
		t.Fatalf("empty support page: %d %q", r.Code, text)
	}

	// A refused form keeps what was typed and says why, by field.
	r = post(userCookie, "/support/new", url.Values{"subject": {""}, "message": {"it broke"}, "category": {"payment"}})
	if text := visibleText(r.Body.String()); r.Code != http.StatusBadRequest || !strings.Contains(text, "1 to 120 characters") ||
		!strings.Contains(r.Body.String(), "it broke") || strings.Contains(text, "VALIDATION_ERROR") {
		t.Fatalf("refused form: %d %q", r.Code, text)
	}

	// Opening a ticket leads to its thread.
	r = post(userCookie, "/support/new", url.Values{"subject": {"Deposit missing"}, "message": {"I sent 5 USDC."}, "category": {"payment"}})
	ticketPage := r.Header().Get("Location")
	if r.Code != http.StatusSeeOther || !strings.HasPrefix(ticketPage, "/support/tickets/") {
		t.Fatalf("open: %d %q", r.Code, ticketPage)
	}
	ticketID := strings.TrimPrefix(ticketPage, "/support/tickets/")
	if text := visibleText(get(userCookie, ticketPage).Body.String()); !strings.Contains(text, "Waiting for support") || !strings.Contains(text, "I sent 5 USDC.") {
		t.Fatalf("ticket page: %q", text)
	}
	if text := visibleText(get(userCookie, "/support").Body.String()); !strings.Contains(text, "Deposit missing") || !strings.Contains(text, "Waiting for support") {
		t.Fatalf("list: %q", text)
	}
	if r := get(otherCookie, ticketPage); r.Code != http.StatusNotFound {
		t.Fatalf("another user's ticket page: %d", r.Code)
	}

	// The queue: only for admins, at the JSON queue's address.
	if r := get(otherCookie, "/admin/support"); r.Code != http.StatusForbidden || strings.Contains(visibleText(r.Body.String()), "ADMIN_ONLY") {
		t.Fatalf("a player's queue: %d %q", r.Code, visibleText(r.Body.String()))
	}
	if body := get(staffCookie, "/admin").Body.String(); !strings.Contains(body, `href="/admin/support"`) {
		t.Error("the admin page has no link to the support queue")
	}
	r = get(staffCookie, "/admin/support")
	if text := visibleText(r.Body.String()); r.Code != http.StatusOK || !strings.Contains(text, "Deposit missing") || !strings.Contains(text, "Waiting for an answer") {
		t.Fatalf("queue: %d %q", r.Code, text)
	}
	if r := post(staffCookie, "/admin/support/page/"+ticketID+"/reply", url.Values{"text": {"\u202E"}}); r.Code != http.StatusBadRequest ||
		!strings.Contains(visibleText(r.Body.String()), "must not contain invisible characters that reverse or reorder the text") {
		t.Fatalf("a refused answer: %d %q", r.Code, visibleText(r.Body.String()))
	}
	if r := post(staffCookie, "/admin/support/page/"+ticketID+"/reply", url.Values{"text": {"Found it, credited."}}); r.Code != http.StatusSeeOther {
		t.Fatalf("answer: %d %s", r.Code, r.Body)
	}
	if text := visibleText(get(staffCookie, "/admin/support?status=answered").Body.String()); !strings.Contains(text, "Deposit missing") {
		t.Fatalf("answered queue: %q", text)
	}

	// The user reads the answer, and the notification leads to it.
	if text := visibleText(get(userCookie, ticketPage).Body.String()); !strings.Contains(text, "Found it, credited.") || !strings.Contains(text, "Answered: your turn") {
		t.Fatalf("answered ticket page: %q", text)
	}
	if body := get(userCookie, "/notifications").Body.String(); !strings.Contains(visibleText(body), "Support answered your ticket: Deposit missing.") ||
		!strings.Contains(body, `href="`+ticketPage+`"`) {
		t.Fatalf("notifications page: %q", visibleText(body))
	}

	// Closing it ends the reply box.
	if r := post(userCookie, ticketPage+"/close", url.Values{}); r.Code != http.StatusSeeOther {
		t.Fatalf("close: %d", r.Code)
	}
	if text := visibleText(get(userCookie, ticketPage).Body.String()); !strings.Contains(text, "This ticket is closed.") || strings.Contains(text, "Send reply") {
		t.Fatalf("closed ticket page: %q", text)
	}
	if r := post(userCookie, ticketPage+"/reply", url.Values{"text": {"one more"}}); r.Code != http.StatusConflict ||
		!strings.Contains(visibleText(r.Body.String()), "This ticket is closed.") {
		t.Fatalf("reply to a closed ticket: %d %q", r.Code, visibleText(r.Body.String()))
	}
}
