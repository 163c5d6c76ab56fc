package handlers_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"wager/domain/flags"
)

func TestTheAdminPageInPlainWords(t *testing.T) {
	admin, player := newWallet(t), newWallet(t)
	a := newTestApp(t, map[string]string{"ADMIN_WALLETS": admin.address()})
	adminCookie, playerCookie := a.sessionCookie(t, admin), a.sessionCookie(t, player)
	get := func(cookie, path string) response {
		return a.do(t, request{path: path, header: map[string]string{"Cookie": cookie}})
	}
	post := func(cookie, path string, form url.Values) response {
		form.Set("_csrf", a.csrfOf(t, cookie))
		return a.do(t, request{method: http.MethodPost, path: path, body: form.Encode(),
			header: map[string]string{"Cookie": cookie, "Content-Type": "application/x-www-form-urlencoded"}})
	}

	// Only admins have the header link.
	if body := get(adminCookie, "/").Body.String(); !strings.Contains(body, `data-testid="nav-admin"`) {
		t.Error("an admin's header has no Admin link")
	}
	if body := get(playerCookie, "/").Body.String(); strings.Contains(body, `data-testid="nav-admin"`) {
		t.Error("a player's header has an Admin link")
	}

	// A player opening the admin page reads why and where to go, not a code.
	r := get(playerCookie, "/admin")
	text := visibleText(r.Body.String())
	if r.Code != http.StatusForbidden || !strings.Contains(text, "This page is for administrators, and you are signed in with an account that is not one.") ||
		!strings.Contains(text, "Back to the live games") {
		t.Fatalf("a player's /admin: %d %q", r.Code, text)
	}
	if strings.Contains(text, "ADMIN_ONLY") || strings.Contains(text, "403") {
		t.Errorf("the page shows a code: %q", text)
	}

	// Switching maintenance on asks first; nothing changes until confirmed.
	r = post(adminCookie, "/admin/flags/"+flags.Maintenance, url.Values{"enabled": {"true"}})
	if loc := r.Header().Get("Location"); r.Code != http.StatusSeeOther || !strings.HasPrefix(loc, "/admin?confirm="+flags.Maintenance) {
		t.Fatalf("maintenance on without confirmation: %d to %q", r.Code, loc)
	}
	if a.Flags.Enabled(flags.Maintenance) {
		t.Fatal("maintenance went on without confirmation")
	}
	text = visibleText(get(adminCookie, "/admin?confirm="+flags.Maintenance).Body.String())
	for _, want := range []string{"Switch maintenance mode on?", "no one can start a new game", "Switch maintenance on", "Cancel"} {
		if !strings.Contains(text, want) {
			t.Errorf("the confirmation does not say %q: %q", want, text)
		}
	}
	r = post(adminCookie, "/admin/flags/"+flags.Maintenance, url.Values{"enabled": {"true"}, "confirmed": {"yes"}})
	if r.Code != http.StatusSeeOther || !a.Flags.Enabled(flags.Maintenance) {
		t.Fatalf("confirmed maintenance: %d, on %t", r.Code, a.Flags.Enabled(flags.Maintenance))
	}
	t.Cleanup(func() { a.Flags.Set(t.Context(), flags.Maintenance, false, "test") })

	// Every page shows the banner: the admin's pages, and the maintenance
	// page players get, which says what to do in a sentence.
	banner := "The site is in maintenance: only administrators can use it until maintenance mode is switched off."
	if text := visibleText(get(adminCookie, "/docs").Body.String()); !strings.Contains(text, banner) {
		t.Errorf("an admin's page during maintenance: %q", text)
	}
	r = get(playerCookie, "/")
	text = visibleText(r.Body.String())
	if r.Code != http.StatusServiceUnavailable || !strings.Contains(text, banner) ||
		!strings.Contains(text, "Wager Arena is closed for a few minutes while we work on it. Please come back in a few minutes.") {
		t.Errorf("a player's page during maintenance: %d %q", r.Code, text)
	}

	// Switching it off needs no confirmation, and the banner goes.
	if r := post(adminCookie, "/admin/flags/"+flags.Maintenance, url.Values{"enabled": {"false"}}); r.Code != http.StatusSeeOther ||
		a.Flags.Enabled(flags.Maintenance) {
		t.Fatalf("maintenance off: %d", r.Code)
	}
	if text := visibleText(get(playerCookie, "/").Body.String()); strings.Contains(text, banner) {
		t.Error("the banner stays after maintenance")
	}
}

func TestErrorPagesSayWhatToDoInSentences(t *testing.T) {
	a := newTestApp(t, nil)
	cookie := a.sessionCookie(t, newWallet(t))
	for _, tc := range []struct {
		path, want string
		status     int
	}{
		{"/no-such-page", "There is no page at this address. The link may be old or mistyped.", http.StatusNotFound},
		{"/game/00000000-0000-0000-0000-000000000000", "Go back to the live games, or pick a page from the menu at the top.", http.StatusNotFound},
	} {
		r := a.do(t, request{path: tc.path, header: map[string]string{"Cookie": cookie, "Accept": "text/html"}})
		text := visibleText(r.Body.String())
		if r.Code != tc.status || !strings.Contains(text, tc.want) {
			t.Errorf("%s: %d %q, want %d and %q", tc.path, r.Code, text, tc.status, tc.want)
		}
		if strings.Contains(text, "NOT_FOUND") {
			t.Errorf("%s shows its code: %q", tc.path, text)
		}
	}
}
