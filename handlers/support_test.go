package handlers_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// ticket is a support ticket as the API answers it.
type ticket struct {
	ID        string  `json:"id"`
	Subject   string  `json:"subject"`
	Category  string  `json:"category"`
	GameID    *string `json:"gameId"`
	Status    string  `json:"status"`
	CreatedAt string  `json:"createdAt"`
	UpdatedAt string  `json:"updatedAt"`
	Messages  []struct {
		ID     string `json:"id"`
		Author string `json:"author"`
		Text   string `json:"text"`
	} `json:"messages"`
	User *struct {
		UserID string `json:"userId"`
	} `json:"user"`
}

func decodeAs[T any](t *testing.T, r response, status int) T {
	t.Helper()
	if r.Code != status {
		t.Fatalf("status: got %d, want %d (body %s)", r.Code, status, r.Body)
	}
	var v T
	if err := json.Unmarshal(r.Body.Bytes(), &v); err != nil {
		t.Fatalf("body %s: %v", r.Body, err)
	}
	return v
}

// supportApp is an app with one admin signed in.
func supportApp(t *testing.T) (*testApp, player) {
	t.Helper()
	staff := newWallet(t)
	a := newTestApp(t, map[string]string{"ADMIN_WALLETS": staff.address()})
	token, id := a.login(t, staff, "agent-1")
	return a, player{wallet: staff, id: id, auth: bearer(token, "agent-1")}
}

func (a *testApp) openTicket(t *testing.T, p player, subject string) ticket {
	t.Helper()
	r := a.do(t, request{method: http.MethodPost, path: "/support", header: p.auth,
		body: jsonBody(map[string]string{"subject": subject, "message": "Help with " + subject})})
	return decodeAs[ticket](t, r, http.StatusCreated)
}

func TestSupportTicketValidation(t *testing.T) {
	a := newTestApp(t, nil)
	p := a.newPlayer(t)
	_, _, game := a.match(t, `{"rounds": 1, "roundSeconds": 30}`)

	long := strings.Repeat("x", 121)
	cases := []struct {
		name  string
		body  map[string]any
		field string
	}{
		{"no subject", map[string]any{"message": "hi"}, "subject"},
		{"blank subject", map[string]any{"subject": "   ", "message": "hi"}, "subject"},
		{"subject over 120", map[string]any{"subject": long, "message": "hi"}, "subject"},
		{"subject with a line break", map[string]any{"subject": "a\nb", "message": "hi"}, "subject"},
		{"no message", map[string]any{"subject": "s"}, "message"},
		{"message over 5000", map[string]any{"subject": "s", "message": strings.Repeat("y", 5001)}, "message"},
		{"message with a control character", map[string]any{"subject": "s", "message": "a\x07b"}, "message"},
		{"subject with a direction override", map[string]any{"subject": "pay\u202Eme", "message": "hi"}, "subject"},
		{"unknown category", map[string]any{"subject": "s", "message": "hi", "category": "refund"}, "category"},
		{"game id not an id", map[string]any{"subject": "s", "message": "hi", "gameId": "nope"}, "gameId"},
		{"no such game", map[string]any{"subject": "s", "message": "hi", "gameId": "7b4c5a3e-0000-4000-8000-000000000000"}, "gameId"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := a.do(t, request{method: http.MethodPost, path: "/support", header: p.auth, body: jsonBody(c.body)})
			m := r.wantError(t, http.StatusBadRequest, "VALIDATION_ERROR")
			fields, _ := m["fields"].(map[string]any)
			if fields[c.field] == nil {
				t.Errorf("fields %v do not name %s", fields, c.field)
			}
		})
	}

	// A valid ticket: 201, defaults, the first message, the game kept.
	r := a.do(t, request{method: http.MethodPost, path: "/support", header: p.auth,
		body: jsonBody(map[string]any{"subject": "  Stuck game ", "message": "line one\r\nline two", "gameId": game})})
	got := decodeAs[ticket](t, r, http.StatusCreated)
	if got.Subject != "Stuck game" || got.Category != "other" || got.Status != "open" || got.GameID == nil || *got.GameID != game ||
		len(got.Messages) != 1 || got.Messages[0].Author != "user" || got.Messages[0].Text != "line one\nline two" || got.ID == "" ||
		got.CreatedAt == "" || got.UpdatedAt == "" {
		t.Fatalf("new ticket: %s", r.Body)
	}
	r = a.do(t, request{method: http.MethodPost, path: "/support", header: p.auth,
		body: jsonBody(map[string]any{"subject": "Deposit", "message": "where is it", "category": "payment"})})
	if got := decodeAs[ticket](t, r, http.StatusCreated); got.Category != "payment" || got.GameID != nil {
		t.Fatalf("payment ticket: %s", r.Body)
	}

	// Messages are checked like the first one.
	for _, text := range []string{"", "a\u2066b", strings.Repeat("z", 5001)} {
		r := a.do(t, request{method: http.MethodPost, path: "/support/me/" + got.ID + "/messages", header: p.auth,
			body: jsonBody(map[string]string{"text": text})})
		if m := r.wantError(t, http.StatusBadRequest, "VALIDATION_ERROR"); m["fields"].(map[string]any)["text"] == nil {
			t.Errorf("message %q: fields %v", text, m["fields"])
		}
	}
	for _, q := range []string{"?status=pending", "?limit=0", "?offset=-1"} {
		a.do(t, request{path: "/support/me" + q, header: p.auth}).wantError(t, http.StatusBadRequest, "VALIDATION_ERROR")
	}
	if r := a.do(t, request{method: http.MethodPost, path: "/support", body: `{"subject":"s","message":"m"}`}); r.Code != http.StatusUnauthorized {
		t.Errorf("without a token: %d", r.Code)
	}
}

func TestSupportTicketLifecycle(t *testing.T) {
	a, staff := supportApp(t)
	ann, bob := a.newPlayer(t), a.newPlayer(t)
	tk := a.openTicket(t, ann, "Missing payout")

	// Another user's ticket does not exist for them.
	for _, r := range []request{
		{path: "/support/me/" + tk.ID},
		{method: http.MethodPost, path: "/support/me/" + tk.ID + "/messages", body: `{"text":"mine now"}`},
		{method: http.MethodPatch, path: "/support/me/" + tk.ID + "/close"},
		{path: "/support/me/not-an-id"},
	} {
		r.header = bob.auth
		a.do(t, r).wantError(t, http.StatusNotFound, "NOT_FOUND")
	}
	if got := decodeAs[[]ticket](t, a.do(t, request{path: "/support/me", header: bob.auth}), http.StatusOK); len(got) != 0 {
		t.Fatalf("bob's tickets: %v", got)
	}

	// Staff answer: 201 staff message, answered, and Ann is told.
	r := a.do(t, request{method: http.MethodPost, path: "/admin/support/" + tk.ID + "/messages", header: staff.auth,
		body: `{"text":"We sent it again."}`})
	if m := decodeAs[struct{ Author, Text string }](t, r, http.StatusCreated); m.Author != "staff" || m.Text != "We sent it again." {
		t.Fatalf("staff answer: %s", r.Body)
	}
	got := decodeAs[ticket](t, a.do(t, request{path: "/support/me/" + tk.ID, header: ann.auth}), http.StatusOK)
	if got.Status != "answered" || len(got.Messages) != 2 || got.Messages[1].Author != "staff" || got.User != nil {
		t.Fatalf("after the answer: %+v", got)
	}
	notes, unread := a.notifications(t, ann, "")
	if unread != 1 || len(notes) != 1 || notes[0].Type != "support_reply" || notes[0].Data["ticketId"] != tk.ID ||
		notes[0].Data["subject"] != "Missing payout" {
		t.Fatalf("ann's notifications: %d %+v", unread, notes)
	}

	// The user's message puts it back to open.
	r = a.do(t, request{method: http.MethodPost, path: "/support/me/" + tk.ID + "/messages", header: ann.auth, body: `{"text":"Still nothing."}`})
	if m := decodeAs[struct{ Author string }](t, r, http.StatusCreated); m.Author != "user" {
		t.Fatalf("user message: %s", r.Body)
	}
	if got := decodeAs[ticket](t, a.do(t, request{path: "/support/me/" + tk.ID, header: ann.auth}), http.StatusOK); got.Status != "open" || len(got.Messages) != 3 {
		t.Fatalf("after the user's message: %+v", got)
	}

	// Closing: 200 closed, again 200 unchanged; nobody writes to it.
	first := decodeAs[ticket](t, a.do(t, request{method: http.MethodPatch, path: "/support/me/" + tk.ID + "/close", header: ann.auth}), http.StatusOK)
	if first.Status != "closed" || len(first.Messages) != 3 {
		t.Fatalf("close: %+v", first)
	}
	again := decodeAs[ticket](t, a.do(t, request{method: http.MethodPatch, path: "/support/me/" + tk.ID + "/close", header: ann.auth}), http.StatusOK)
	if again.Status != "closed" || again.UpdatedAt != first.UpdatedAt {
		t.Fatalf("close again changed it: %+v, then %+v", first, again)
	}
	a.do(t, request{method: http.MethodPost, path: "/support/me/" + tk.ID + "/messages", header: ann.auth, body: `{"text":"hello?"}`}).
		wantError(t, http.StatusConflict, "CONFLICT")
	a.do(t, request{method: http.MethodPost, path: "/admin/support/" + tk.ID + "/messages", header: staff.auth, body: `{"text":"hello?"}`}).
		wantError(t, http.StatusConflict, "CONFLICT")
	if _, unread := a.notifications(t, ann, ""); unread != 1 {
		t.Errorf("a refused answer notified: %d unread", unread)
	}

	// Staff close any ticket, also idempotently.
	other := a.openTicket(t, bob, "Username")
	for range 2 {
		r := a.do(t, request{method: http.MethodPatch, path: "/admin/support/" + other.ID + "/close", header: staff.auth})
		if got := decodeAs[ticket](t, r, http.StatusOK); got.Status != "closed" || got.User == nil || got.User.UserID != bob.id {
			t.Fatalf("staff close: %s", r.Body)
		}
	}
	a.do(t, request{path: "/admin/support/7b4c5a3e-0000-4000-8000-000000000000", header: staff.auth}).wantError(t, http.StatusNotFound, "NOT_FOUND")
}

func TestSupportListsAndQueueOrder(t *testing.T) {
	a, staff := supportApp(t)
	ann, bob := a.newPlayer(t), a.newPlayer(t)
	first := a.openTicket(t, ann, "First")
	second := a.openTicket(t, bob, "Second")
	third := a.openTicket(t, ann, "Third")
	ours := map[string]bool{first.ID: true, second.ID: true, third.ID: true}
	ids := func(list []ticket) string { // the package's other tests share the queue
		var s []string
		for _, t := range list {
			if ours[t.ID] {
				s = append(s, t.Subject)
			}
		}
		return strings.Join(s, ",")
	}
	queue := func(q string) string {
		return ids(decodeAs[[]ticket](t, a.do(t, request{path: "/admin/support" + q, header: staff.auth}), http.StatusOK))
	}
	mine := func(p player, q string) string {
		return ids(decodeAs[[]ticket](t, a.do(t, request{path: "/support/me" + q, header: p.auth}), http.StatusOK))
	}

	if got := queue(""); got != "First,Second,Third" {
		t.Fatalf("queue: got %s, want the oldest waiting first", got)
	}
	// Answering First takes it out of the open queue; Ann writing again
	// puts it back at the end: she has waited least.
	a.do(t, request{method: http.MethodPost, path: "/admin/support/" + first.ID + "/messages", header: staff.auth, body: `{"text":"Done."}`})
	if got := queue("?status=answered"); got != "First" {
		t.Fatalf("answered queue: %s", got)
	}
	a.do(t, request{method: http.MethodPost, path: "/support/me/" + first.ID + "/messages", header: ann.auth, body: `{"text":"Not done."}`})
	if got := queue("?status=open"); got != "Second,Third,First" {
		t.Fatalf("open queue after the reply: %s", got)
	}
	// Bob writing to his open ticket does not lose his place.
	a.do(t, request{method: http.MethodPost, path: "/support/me/" + second.ID + "/messages", header: bob.auth, body: `{"text":"Any news?"}`})
	if got := queue(""); got != "Second,Third,First" {
		t.Fatalf("open queue after bob's nudge: %s", got)
	}
	a.do(t, request{method: http.MethodPatch, path: "/support/me/" + third.ID + "/close", header: ann.auth})
	if got := queue("?status=closed"); got != "Third" {
		t.Fatalf("closed queue: %s", got)
	}

	// Ann's own list: newest activity first, by status, paged.
	if got := mine(ann, ""); got != "Third,First" {
		t.Fatalf("ann's tickets: %s", got)
	}
	if got := mine(ann, "?status=open"); got != "First" {
		t.Fatalf("ann's open tickets: %s", got)
	}
	if got := mine(ann, "?status=answered"); got != "" {
		t.Fatalf("ann's answered tickets: %s", got)
	}
	if got := mine(ann, "?limit=1&offset=1"); got != "First" {
		t.Fatalf("ann's second page: %s", got)
	}
	if r := a.do(t, request{path: "/support/me?status=answered", header: ann.auth}); strings.TrimSpace(r.Body.String()) != "[]" {
		t.Errorf("an empty list is %s, want []", r.Body)
	}
	a.do(t, request{path: "/admin/support?status=waiting", header: staff.auth}).wantError(t, http.StatusBadRequest, "VALIDATION_ERROR")
}

func TestSupportStaffRoutesRefuseOthers(t *testing.T) {
	a, _ := supportApp(t)
	p := a.newPlayer(t)
	tk := a.openTicket(t, p, "Mine")
	for _, r := range []request{
		{path: "/admin/support"},
		{path: "/admin/support/" + tk.ID},
		{method: http.MethodPost, path: "/admin/support/" + tk.ID + "/messages", body: `{"text":"I am staff"}`},
		{method: http.MethodPatch, path: "/admin/support/" + tk.ID + "/close"},
	} {
		r.header = p.auth
		a.do(t, r).wantError(t, http.StatusForbidden, "ADMIN_ONLY")
	}
	if got := decodeAs[ticket](t, a.do(t, request{path: "/support/me/" + tk.ID, header: p.auth}), http.StatusOK); got.Status != "open" || len(got.Messages) != 1 {
		t.Fatalf("a refused staff call changed the ticket: %+v", got)
	}
}
