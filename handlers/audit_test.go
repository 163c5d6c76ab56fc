package handlers_test

import (
	"bytes"
	"context"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"wager/domain/audit"
	"wager/domain/flags"
	"wager/views"
)

// auditEntry is an entry of GET /admin/audit as a client reads it. Its id
// is a string: a number there would fail to decode.
type auditEntry struct {
	ID    string `json:"id"`
	Actor struct {
		UserID   string `json:"userId"`
		Username string `json:"username"`
	} `json:"actor"`
	Action    string         `json:"action"`
	Target    string         `json:"target"`
	Data      map[string]any `json:"data"`
	CreatedAt time.Time      `json:"createdAt"`
}

// auditLog reads one page of the log as the admin auth.
func (a *testApp) auditLog(t *testing.T, auth map[string]string, query string) []auditEntry {
	t.Helper()
	return decodeAs[[]auditEntry](t, a.do(t, request{path: "/admin/audit" + query, header: auth}), http.StatusOK)
}

// newestAuditID returns the id of the newest entry, 0 when there is none.
func (a *testApp) newestAuditID(t *testing.T, auth map[string]string) int64 {
	t.Helper()
	page := a.auditLog(t, auth, "?limit=1")
	if len(page) == 0 {
		return 0
	}
	return auditID(t, page[0])
}

func auditID(t *testing.T, e auditEntry) int64 {
	t.Helper()
	n, err := strconv.ParseInt(e.ID, 10, 64)
	if err != nil || n <= 0 {
		t.Fatalf("entry id %q is not a positive number as a string", e.ID)
	}
	return n
}

// auditSince returns the entries newer than id, newest first.
func (a *testApp) auditSince(t *testing.T, auth map[string]string, id int64) []auditEntry {
	t.Helper()
	var out []auditEntry
	for _, e := range a.auditLog(t, auth, "?limit=200") {
		if auditID(t, e) > id {
			out = append(out, e)
		}
	}
	return out
}

func (a *testApp) username(t *testing.T, auth map[string]string) string {
	t.Helper()
	return decodeAs[struct{ Username string }](t, a.do(t, request{path: "/users/me", header: auth}), http.StatusOK).Username
}

// formPost posts a page's form with the session's CSRF token.
func (a *testApp) formPost(t *testing.T, cookie, path string, form url.Values) response {
	t.Helper()
	form.Set("_csrf", a.csrfOf(t, cookie))
	return a.do(t, request{method: http.MethodPost, path: path, body: form.Encode(),
		header: map[string]string{"Cookie": cookie, "Content-Type": "application/x-www-form-urlencoded", "Accept": "text/html"}})
}

// Every admin action, through the API and through the pages, leaves exactly
// one entry naming who did what to which thing, newest first; a refused
// action, or one that changes nothing, leaves none.
func TestEveryAdminActionIsAuditedOnce(t *testing.T) {
	a, staff := supportApp(t)
	cookie := a.sessionCookie(t, staff.wallet)
	name := a.username(t, staff.auth)
	p := a.newPlayer(t)
	byAPI, byPage := a.openTicket(t, p, "Refund please"), a.openTicket(t, p, "Lost stake")
	t.Cleanup(func() { a.Flags.Set(context.Background(), flags.AbuseControls, false, "test") })
	start := a.newestAuditID(t, staff.auth)

	type want struct {
		action, target string
		data           map[string]any
	}
	var wants []want
	expect := func(r response, status int, w want) response {
		t.Helper()
		if r.Code != status {
			t.Fatalf("%s of %s: %d %s", w.action, w.target, r.Code, r.Body)
		}
		wants = append(wants, w)
		return r
	}
	lastMessage := func(ticketID string) string {
		tk := decodeAs[ticket](t, a.do(t, request{path: "/admin/support/" + ticketID, header: staff.auth}), http.StatusOK)
		return tk.Messages[len(tk.Messages)-1].ID
	}

	expect(a.do(t, request{method: http.MethodPut, path: "/admin/feature-flags/" + flags.AbuseControls, header: staff.auth,
		body: `{"enabled": true}`}), http.StatusOK,
		want{"flag.set", "flag:abuse-controls", map[string]any{"enabled": true}})
	expect(a.formPost(t, cookie, "/admin/flags/"+flags.AbuseControls, url.Values{"enabled": {"false"}}), http.StatusSeeOther,
		want{"flag.set", "flag:abuse-controls", map[string]any{"enabled": false}})
	r := a.do(t, request{method: http.MethodPost, path: "/admin/support/" + byAPI.ID + "/messages", header: staff.auth,
		body: `{"text": "Refunded."}`})
	answer := decodeAs[struct{ ID string }](t, r, http.StatusCreated)
	expect(r, http.StatusCreated, want{"support.reply", "ticket:" + byAPI.ID, map[string]any{"messageId": answer.ID}})
	expect(a.formPost(t, cookie, "/admin/support/page/"+byPage.ID+"/reply", url.Values{"text": {"Found it."}}), http.StatusSeeOther,
		want{"support.reply", "ticket:" + byPage.ID, map[string]any{"messageId": lastMessage(byPage.ID)}})
	expect(a.do(t, request{method: http.MethodPatch, path: "/admin/support/" + byAPI.ID + "/close", header: staff.auth}), http.StatusOK,
		want{"support.close", "ticket:" + byAPI.ID, map[string]any{"previousStatus": "answered"}})
	expect(a.formPost(t, cookie, "/admin/support/page/"+byPage.ID+"/close", url.Values{}), http.StatusSeeOther,
		want{"support.close", "ticket:" + byPage.ID, map[string]any{"previousStatus": "answered"}})

	a.adminActionsLeavingNoEntry(t, cookie, staff, p, byAPI, byPage)
	if a.Flags.Enabled(flags.Maintenance) {
		t.Fatal("maintenance went on without confirmation")
	}

	got := a.auditSince(t, staff.auth, start)
	if len(got) != len(wants) {
		t.Fatalf("%d entries after %d actions: %+v", len(got), len(wants), got)
	}
	for i, e := range got {
		w := wants[len(wants)-1-i] // newest first
		if e.Actor.UserID != staff.id || e.Actor.Username != name || e.Action != w.action || e.Target != w.target ||
			!reflect.DeepEqual(e.Data, w.data) || e.CreatedAt.IsZero() {
			t.Errorf("entry %d: got %+v, want %+v by %s (%s)", i, e, w, name, staff.id)
		}
		if i > 0 && auditID(t, e) >= auditID(t, got[i-1]) {
			t.Errorf("entry %d (id %s) is not older than the one before (id %s)", i, e.ID, got[i-1].ID)
		}
	}

	a.checkAuditPaging(t, staff.auth, got)

	// Nobody rewrites the record afterwards, not even with SQL.
	for _, stmt := range []string{
		"UPDATE admin_audit SET actor_username = 'someone_else' WHERE id = " + got[0].ID,
		"DELETE FROM admin_audit WHERE id = " + got[0].ID,
	} {
		if _, err := a.DB.ExecContext(context.Background(), stmt); err == nil || !strings.Contains(err.Error(), "the admin audit log is append-only") {
			t.Errorf("%s: got %v, want the log's refusal", stmt, err)
		}
	}
	if again := a.auditSince(t, staff.auth, start); !reflect.DeepEqual(again, got) {
		t.Errorf("after the refused statements: %+v", again)
	}
}

// adminActionsLeavingNoEntry tries admin actions that are refused, or
// that do nothing, and checks their answers: none may leave an entry.
func (a *testApp) adminActionsLeavingNoEntry(t *testing.T, cookie string, staff, p player, byAPI, byPage ticket) {
	t.Helper()
	open := a.openTicket(t, p, "Still open")
	for _, c := range []struct {
		what   string
		r      response
		status int
	}{
		{"an unknown flag", a.do(t, request{method: http.MethodPut, path: "/admin/feature-flags/no-such-flag", header: staff.auth,
			body: `{"enabled": true}`}), http.StatusNotFound},
		{"an unknown flag on the page", a.formPost(t, cookie, "/admin/flags/no-such-flag", url.Values{"enabled": {"true"}}), http.StatusNotFound},
		{"a flag without a value", a.do(t, request{method: http.MethodPut, path: "/admin/feature-flags/" + flags.AbuseControls,
			header: staff.auth, body: `{}`}), http.StatusBadRequest},
		{"maintenance on, not confirmed", a.formPost(t, cookie, "/admin/flags/"+flags.Maintenance, url.Values{"enabled": {"true"}}),
			http.StatusSeeOther},
		{"a reply to a closed ticket", a.do(t, request{method: http.MethodPost, path: "/admin/support/" + byAPI.ID + "/messages",
			header: staff.auth, body: `{"text": "one more"}`}), http.StatusConflict},
		{"a page reply to a closed ticket", a.formPost(t, cookie, "/admin/support/page/"+byPage.ID+"/reply",
			url.Values{"text": {"one more"}}), http.StatusConflict},
		{"a refused text", a.do(t, request{method: http.MethodPost, path: "/admin/support/" + open.ID + "/messages",
			header: staff.auth, body: `{"text": "\u202e"}`}), http.StatusBadRequest},
		{"a reply to no ticket", a.do(t, request{method: http.MethodPost, path: "/admin/support/7b4c5a3e-0000-4000-8000-000000000000/messages",
			header: staff.auth, body: `{"text": "hello"}`}), http.StatusNotFound},
		{"closing a closed ticket", a.do(t, request{method: http.MethodPatch, path: "/admin/support/" + byAPI.ID + "/close",
			header: staff.auth}), http.StatusOK},
		{"a player setting a flag", a.do(t, request{method: http.MethodPut, path: "/admin/feature-flags/" + flags.AbuseControls,
			header: p.auth, body: `{"enabled": true}`}), http.StatusForbidden},
		{"a player answering", a.do(t, request{method: http.MethodPost, path: "/admin/support/" + open.ID + "/messages",
			header: p.auth, body: `{"text": "I am staff"}`}), http.StatusForbidden},
	} {
		if c.r.Code != c.status {
			t.Errorf("%s: %d %s, want %d", c.what, c.r.Code, c.r.Body, c.status)
		}
	}
}

// checkAuditPaging checks that paging by two with before = the last id
// seen walks the entries got, and that the default page has at most 50.
func (a *testApp) checkAuditPaging(t *testing.T, auth map[string]string, got []auditEntry) {
	t.Helper()
	var paged []auditEntry
	for before := ""; len(paged) < len(got); {
		page := a.auditLog(t, auth, "?limit=2"+before)
		if len(page) != 2 {
			t.Fatalf("a page of %d entries: %+v", len(page), page)
		}
		paged, before = append(paged, page...), "&before="+page[1].ID
	}
	if !reflect.DeepEqual(paged[:len(got)], got) {
		t.Errorf("paged: %+v\nwant %+v", paged[:len(got)], got)
	}
	if all := a.auditLog(t, auth, ""); len(all) > 50 {
		t.Errorf("the default page has %d entries, more than 50", len(all))
	}
}

func TestAuditLogIsForAdminsWithValidCursors(t *testing.T) {
	a, staff := supportApp(t)
	p := a.newPlayer(t)
	a.do(t, request{path: "/admin/audit", header: p.auth}).wantError(t, http.StatusForbidden, "ADMIN_ONLY")
	a.do(t, request{path: "/admin/audit"}).wantError(t, http.StatusUnauthorized, "UNAUTHORIZED")
	for _, q := range []string{"before=abc", "before=0", "before=-3", "before=1.5", "before=99999999999999999999", "limit=0", "limit=201", "limit=ten"} {
		field, _, _ := strings.Cut(q, "=")
		e := a.do(t, request{path: "/admin/audit?" + q, header: staff.auth}).wantError(t, http.StatusBadRequest, "VALIDATION_ERROR")
		if fields, _ := e["fields"].(map[string]any); fields[field] == nil {
			t.Errorf("?%s: the error does not name %s: %v", q, field, e)
		}
	}
	if got := a.auditLog(t, staff.auth, "?before=1"); len(got) != 0 {
		t.Errorf("entries before the first: %+v", got)
	}
}

// The page says who did what to which thing, newest first, pages with
// Older and Newest, and shows only to admins.
func TestAuditPageInPlainWords(t *testing.T) {
	a, staff := supportApp(t)
	cookie := a.sessionCookie(t, staff.wallet)
	name := a.username(t, staff.auth)
	p := a.newPlayer(t)
	tk := a.openTicket(t, p, "Where is my payout")
	get := func(cookie, path string) response {
		return a.do(t, request{path: path, header: map[string]string{"Cookie": cookie, "Accept": "text/html"}})
	}
	t.Cleanup(func() { a.Flags.Set(context.Background(), flags.AbuseControls, false, "test") })
	if r := a.formPost(t, cookie, "/admin/flags/"+flags.AbuseControls, url.Values{"enabled": {"true"}}); r.Code != http.StatusSeeOther {
		t.Fatalf("flag: %d", r.Code)
	}
	if r := a.formPost(t, cookie, "/admin/support/page/"+tk.ID+"/reply", url.Values{"text": {"Sent again."}}); r.Code != http.StatusSeeOther {
		t.Fatalf("reply: %d", r.Code)
	}
	if r := a.formPost(t, cookie, "/admin/support/page/"+tk.ID+"/close", url.Values{}); r.Code != http.StatusSeeOther {
		t.Fatalf("close: %d", r.Code)
	}

	admin := get(cookie, "/admin").Body.String()
	if !strings.Contains(admin, `href="/admin/audit"`) || !strings.Contains(visibleText(admin), "Audit log") {
		t.Error("the admin page has no Audit log link")
	}
	r := get(cookie, "/admin/audit")
	page := r.Body.String()
	if text := visibleText(page); r.Code != http.StatusOK || !strings.Contains(text, "When Who Action Target Details") {
		t.Fatalf("audit page: %d %q", r.Code, text)
	}
	rows := auditRows(page)
	if len(rows) < 3 {
		t.Fatalf("%d rows: %q", len(rows), rows)
	}
	for i, want := range [][]string{
		{name, "Closed a support ticket", "support.close", "ticket:" + tk.ID, "previousStatus: answered"},
		{name, "Answered a support ticket", "support.reply", "ticket:" + tk.ID, "messageId: "},
		{name, "Set a feature flag", "flag.set", "flag:abuse-controls", "enabled: true"},
	} {
		for _, w := range want {
			if !strings.Contains(rows[i], w) {
				t.Errorf("row %d %q does not say %q", i, rows[i], w)
			}
		}
	}
	if !strings.Contains(page, `href="/admin/support/page/`+tk.ID+`"`) || !strings.Contains(page, `href="/u/`+name+`"`) {
		t.Error("the ticket and the admin are not linked")
	}

	// A player reads that the page is not for them.
	if r := get(a.sessionCookie(t, p.wallet), "/admin/audit"); r.Code != http.StatusForbidden ||
		!strings.Contains(visibleText(r.Body.String()), "This page is for administrators") {
		t.Errorf("a player's audit page: %d %q", r.Code, visibleText(r.Body.String()))
	}

	// Past a page of entries, Older leads to the rest and Newest back.
	for i := range 50 {
		if err := audit.Record(t.Context(), a.DB, audit.Entry{ActorID: staff.id, Action: "test.filler",
			Target: "flag:filler-" + strconv.Itoa(i)}); err != nil {
			t.Fatal(err)
		}
	}
	page = get(cookie, "/admin/audit").Body.String()
	if rows := auditRows(page); len(rows) != 50 || !strings.Contains(rows[0], "flag:filler-49") || !strings.Contains(rows[0], "test.filler") {
		t.Fatalf("first page: %d rows, first %q", len(rows), rows[0])
	}
	_, rest, ok := strings.Cut(page, `href="/admin/audit?before=`)
	older, _, _ := strings.Cut(rest, `"`)
	if !ok || strings.Contains(page, `data-testid="audit-newest"`) {
		t.Fatal("the first page has no Older link, or a Newest one")
	}
	page = get(cookie, "/admin/audit?before="+older).Body.String()
	if rows := auditRows(page); len(rows) == 0 || !strings.Contains(rows[0], "Closed a support ticket") ||
		!strings.Contains(page, `data-testid="audit-newest"`) {
		t.Fatalf("older page: %q", rows)
	}
	if text := visibleText(get(cookie, "/admin/audit?before=1").Body.String()); !strings.Contains(text, "No older entries: this is the beginning of the log.") {
		t.Errorf("past the first entry: %q", text)
	}
	if r := get(cookie, "/admin/audit?before=x"); r.Code != http.StatusBadRequest {
		t.Errorf("a bad cursor on the page: %d", r.Code)
	}

	// An empty log says so in words.
	var b bytes.Buffer
	if err := views.Audit(views.Page{Title: "Audit log"}, views.AuditView{}).Render(t.Context(), &b); err != nil {
		t.Fatal(err)
	}
	if text := visibleText(b.String()); !strings.Contains(text, "No admin actions yet.") {
		t.Errorf("the empty log: %q", text)
	}
}

// auditRows returns the visible text of the page's rows, newest first.
func auditRows(page string) []string {
	var out []string
	for _, p := range strings.Split(page, `data-testid="audit-row"`)[1:] {
		row, _, _ := strings.Cut(p, "</tr>")
		_, row, _ = strings.Cut(row, ">")
		out = append(out, visibleText(row))
	}
	return out
}
