package handlers_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a-h/templ"

	"wager/db"
	"wager/domain"
	"wager/domain/chat"
)

func (a *testApp) say(t testing.TB, p player, contextType, id, text string) response {
	t.Helper()
	return a.do(t, request{method: http.MethodPost, path: "/chat/" + contextType + "/" + id + "/messages",
		body: jsonBody(map[string]string{"text": text}), header: p.auth})
}

func (a *testApp) said(t testing.TB, p player, contextType, id, text string) map[string]any {
	t.Helper()
	r := a.say(t, p, contextType, id, text)
	if r.Code != http.StatusCreated {
		t.Fatalf("send %q to %s %s: %d %s", text, contextType, id, r.Code, r.Body)
	}
	return r.json(t)
}

// history reads a chat page (newest first).
func (a *testApp) history(t testing.TB, p player, contextType, id, query string) []map[string]any {
	t.Helper()
	r := a.do(t, request{path: "/chat/" + contextType + "/" + id + "/messages" + query, header: p.auth})
	if r.Code != http.StatusOK {
		t.Fatalf("history of %s %s%s: %d %s", contextType, id, query, r.Code, r.Body)
	}
	var out []map[string]any
	if err := jsonDecode(r.Body.Bytes(), &out); err != nil {
		t.Fatalf("history is not a JSON array: %s", r.Body)
	}
	return out
}

func (a *testApp) threads(t testing.TB, p player) []map[string]any {
	t.Helper()
	r := a.do(t, request{path: "/chat/dm/threads", header: p.auth})
	if r.Code != http.StatusOK {
		t.Fatalf("threads: %d %s", r.Code, r.Body)
	}
	var out []map[string]any
	if err := jsonDecode(r.Body.Bytes(), &out); err != nil {
		t.Fatalf("threads is not a JSON array: %s", r.Body)
	}
	return out
}

func (a *testApp) postSystem(t testing.TB, gameID, text string, metadata map[string]any) {
	t.Helper()
	err := db.Transact(context.Background(), a.DB, func(ctx context.Context, tx db.Tx) error {
		_, err := a.Chat.PostSystem(ctx, tx, gameID, text, metadata, time.Now())
		return err
	})
	if err != nil {
		t.Fatalf("post system message: %v", err)
	}
}

func role(m map[string]any) any { return m["metadata"].(map[string]any)["role"] }

func TestGameChatRoles(t *testing.T) {
	a := newTestApp(t, nil)
	p1, _, game := a.match(t, `{"rounds": 3, "roundSeconds": 60}`)
	spectator := a.newPlayer(t)

	before := time.Now().Truncate(time.Second)
	mine := a.said(t, p1, "game", game, "glhf")
	after := time.Now()
	if mine["context"].(map[string]any)["type"] != "game" || mine["context"].(map[string]any)["id"] != game ||
		mine["sender"].(map[string]any)["userId"] != p1.id || mine["sender"].(map[string]any)["username"] == "" ||
		role(mine) != "player" || mine["text"] != "glhf" {
		t.Fatalf("a player's message: %v", mine)
	}
	if _, err := strconv.ParseInt(mine["id"].(string), 10, 64); err != nil {
		t.Errorf("id %v is not a numeric string", mine["id"])
	}
	if created, err := time.Parse(time.RFC3339, mine["createdAt"].(string)); err != nil || created.Before(before) || created.After(after) {
		t.Errorf("createdAt %v (%v), want the time of the request, between %v and %v", mine["createdAt"], err, before, after)
	}
	if theirs := a.said(t, spectator, "game", game, "go p1"); role(theirs) != "spectator" {
		t.Fatalf("a spectator's message: %v", theirs)
	}
	a.postSystem(t, game, "someone donated 1.00 USDC to the game", map[string]any{"kind": "donation", "amountMinor": int64(1000000), "role": "player"})

	page := a.history(t, spectator, "game", game, "")
	if len(page) != 3 {
		t.Fatalf("history: %d messages, want 3: %v", len(page), page)
	}
	sys := page[0]
	if role(sys) != "system" || sys["sender"] != nil || sys["text"] != "someone donated 1.00 USDC to the game" ||
		sys["metadata"].(map[string]any)["kind"] != "donation" || sys["metadata"].(map[string]any)["amountMinor"] != float64(1000000) {
		t.Fatalf("system message (newest first): %v", sys)
	}
	if role(page[1]) != "spectator" || role(page[2]) != "player" {
		t.Fatalf("history order or roles: %v", page)
	}

	// The whole room sees it as the same stored event, in order with moves.
	evs, err := a.Events.Events(context.Background(), domain.GameStreamOf(game), 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	var chats int
	for _, ev := range evs {
		if ev.Name == "game:chat:message" {
			chats++
		}
	}
	if chats != 3 {
		t.Errorf("%d game:chat:message events, want 3", chats)
	}
}

func TestChatValidation(t *testing.T) {
	a := newTestApp(t, nil)
	p1, p2, game := a.match(t, `{"rounds": 1}`)
	stranger := a.newPlayer(t)

	for _, tc := range []struct{ name, text string }{
		{"empty", ""}, {"spaces only", "  \n\t "}, {"controls only", "\u0000\u0007"}, {"501 characters", strings.Repeat("ä", 501)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := a.say(t, p1, "game", game, tc.text).wantError(t, 400, "VALIDATION_ERROR")
			if e["fields"].(map[string]any)["text"] == nil {
				t.Errorf("error does not name the text field: %v", e)
			}
		})
	}
	if m := a.said(t, p1, "game", game, strings.Repeat("ä", 500)); len([]rune(m["text"].(string))) != 500 {
		t.Errorf("500 characters came back as %d", len([]rune(m["text"].(string))))
	}
	for _, text := range []string{"\x1b[31mred", "nul\x00", "tab\there", "c1\u0085x", "abc\u202Egnp.exe", "\u2066isolate\u2069"} {
		e := a.say(t, p1, "game", game, text).wantError(t, 400, "VALIDATION_ERROR")
		if reason, _ := e["fields"].(map[string]any)["text"].(string); !strings.Contains(reason, "must not contain") {
			t.Errorf("%q: %v, want the text field named with what it must not contain", text, e)
		}
	}
	if m := a.said(t, p1, "game", game, " line\r\nnext "); m["text"] != "line\nnext" {
		t.Errorf("line breaks: got %q, want %q", m["text"], "line\nnext")
	}

	e := a.say(t, p1, "lobby", game, "hi").wantError(t, 400, "VALIDATION_ERROR")
	if e["fields"].(map[string]any)["type"] == nil {
		t.Errorf("bad type: %v", e)
	}
	a.do(t, request{path: "/chat/lobby/" + game + "/messages", header: p1.auth}).wantError(t, 400, "VALIDATION_ERROR")
	a.do(t, request{method: http.MethodPost, path: "/chat/game/" + game + "/messages", body: `{"text": `, header: p1.auth}).
		wantError(t, 400, "INVALID_JSON")
	a.say(t, p1, "game", "00000000-0000-0000-0000-000000000000", "hi").wantError(t, 404, "NOT_FOUND")
	a.say(t, p1, "game", "nope", "hi").wantError(t, 404, "NOT_FOUND")
	a.do(t, request{path: "/chat/game/00000000-0000-0000-0000-000000000000/messages", header: p1.auth}).wantError(t, 404, "NOT_FOUND")
	a.say(t, p1, "dm", p1.id, "hi me").wantError(t, 400, "VALIDATION_ERROR")
	a.say(t, p1, "dm", "00000000-0000-0000-0000-000000000000", "hi").wantError(t, 404, "NOT_FOUND")
	a.do(t, request{method: http.MethodPost, path: "/chat/game/" + game + "/messages", body: `{"text": "hi"}`}).
		wantError(t, 401, "UNAUTHORIZED")
	a.do(t, request{path: "/chat/dm/threads"}).wantError(t, 401, "UNAUTHORIZED")

	// A finished game's chat is closed, but its history stays readable.
	a.act(t, p1, game, `{"type": "move", "move": "rock"}`)
	if r := a.act(t, p2, game, `{"type": "move", "move": "scissors"}`); r.Code != 200 || r.json(t)["status"] != "completed" {
		t.Fatalf("deciding move: %d %s", r.Code, r.Body)
	}
	a.say(t, stranger, "game", game, "too late").wantError(t, 409, "GAME_NOT_ACTIVE")
	a.say(t, p1, "game", game, "gg").wantError(t, 409, "GAME_NOT_ACTIVE")
	if page := a.history(t, stranger, "game", game, ""); len(page) != 2 {
		t.Errorf("history of the finished game: %d messages, want 2", len(page))
	}
}

func TestChatTextIsStoredAsTyped(t *testing.T) {
	a := newTestApp(t, nil)
	p1, _, game := a.match(t, `{}`)
	const script = `<script>alert(1)</script>`
	if m := a.said(t, p1, "game", game, script); m["text"] != script {
		t.Fatalf("sent %q, answered %q", script, m["text"])
	}
	if page := a.history(t, p1, "game", game, ""); page[0]["text"] != script {
		t.Fatalf("history: %q, want %q", page[0]["text"], script)
	}
	// Pages render message text with templ's { } expressions, which
	// escape through templ.EscapeString; this checks only that function,
	// not a chat component (there is none yet).
	if got, want := templ.EscapeString(script), "&lt;script&gt;alert(1)&lt;/script&gt;"; got != want {
		t.Fatalf("templ.EscapeString(%q) = %q, want %q", script, got, want)
	}
}

func TestChatRateLimit(t *testing.T) {
	a := newTestApp(t, nil)
	p1, p2, game := a.match(t, `{}`)
	for i := range chat.RateLimit {
		a.said(t, p1, "game", game, fmt.Sprintf("message %d", i+1))
	}
	r := a.say(t, p1, "game", game, "one too many")
	r.wantError(t, http.StatusTooManyRequests, "RATE_LIMITED")
	if s, err := strconv.Atoi(r.Header().Get("Retry-After")); err != nil || s < 1 || s > 10 {
		t.Errorf("Retry-After: %q, want 1-10 seconds", r.Header().Get("Retry-After"))
	}
	// The limit is per sender and counts direct messages too.
	a.said(t, p2, "game", game, "I can still talk")
	a.say(t, p1, "dm", p2.id, "psst").wantError(t, http.StatusTooManyRequests, "RATE_LIMITED")
	if page := a.history(t, p2, "game", game, ""); len(page) != chat.RateLimit+1 {
		t.Errorf("%d messages stored, want %d", len(page), chat.RateLimit+1)
	}

	// Concurrent sends cannot slip past the count.
	spectator := a.newPlayer(t)
	var wg sync.WaitGroup
	var mu sync.Mutex
	codes := map[string]int{}
	for i := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := a.Chat.Send(context.Background(), spectator.id, "game", game, fmt.Sprint("burst ", i))
			mu.Lock()
			codes[map[bool]string{true: "ok", false: domain.ErrorCode(err)}[err == nil]]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	if codes["ok"] != chat.RateLimit || codes["RATE_LIMITED"] != 12-chat.RateLimit {
		t.Fatalf("12 concurrent sends: %v, want %d ok and the rest RATE_LIMITED", codes, chat.RateLimit)
	}
}

func TestDirectMessagesThreadsAndUnread(t *testing.T) {
	a := newTestApp(t, nil)
	alice, bob, carol := a.newPlayer(t), a.newPlayer(t), a.newPlayer(t)

	first := a.said(t, alice, "dm", bob.id, "hi bob")
	if ctx := first["context"].(map[string]any); ctx["type"] != "dm" || ctx["id"] != bob.id ||
		first["sender"].(map[string]any)["userId"] != alice.id || first["recipientId"] != bob.id {
		t.Fatalf("a direct message as its sender sees it: %v", first)
	}
	a.said(t, alice, "dm", bob.id, "are you there?")
	a.said(t, carol, "dm", alice.id, "hello alice")

	bobs := a.threads(t, bob)
	if len(bobs) != 1 {
		t.Fatalf("bob's threads: %v, want one", bobs)
	}
	th := bobs[0]
	if th["user"].(map[string]any)["userId"] != alice.id || th["unreadCount"] != float64(2) ||
		th["lastMessage"].(map[string]any)["text"] != "are you there?" ||
		th["lastMessage"].(map[string]any)["context"].(map[string]any)["id"] != alice.id {
		t.Fatalf("bob's thread with alice: %v, want 2 unread and the last message", th)
	}
	alices := a.threads(t, alice)
	if len(alices) != 2 || alices[0]["user"].(map[string]any)["userId"] != carol.id || alices[1]["user"].(map[string]any)["userId"] != bob.id {
		t.Fatalf("alice's threads: %v, want carol's (newest) then bob's", alices)
	}
	if alices[1]["unreadCount"] != float64(0) || alices[0]["unreadCount"] != float64(1) {
		t.Fatalf("alice's unread: %v, want 0 with bob (she wrote them) and 1 with carol", alices)
	}
	if page := a.do(t, request{path: "/chat/dm/threads?limit=1&before=" + alices[0]["lastMessage"].(map[string]any)["id"].(string), header: alice.auth}); !strings.Contains(page.Body.String(), bob.id) || strings.Contains(page.Body.String(), carol.id) {
		t.Errorf("threads before carol's message: %s, want only bob's", page.Body)
	}

	// Reading the conversation marks it read; only the two may read it.
	page := a.history(t, bob, "dm", alice.id, "")
	if len(page) != 2 || page[0]["text"] != "are you there?" || page[0]["context"].(map[string]any)["id"] != alice.id {
		t.Fatalf("bob reads alice: %v", page)
	}
	if th := a.threads(t, bob)[0]; th["unreadCount"] != float64(0) {
		t.Fatalf("after reading, bob's unread: %v, want 0", th["unreadCount"])
	}
	if page := a.history(t, carol, "dm", bob.id, ""); len(page) != 0 {
		t.Fatalf("carol sees a conversation she is not in: %v", page)
	}
	a.said(t, alice, "dm", bob.id, "ping")
	if th := a.threads(t, bob)[0]; th["unreadCount"] != float64(1) {
		t.Fatalf("after a new message, bob's unread: %v, want 1", th["unreadCount"])
	}
	if got := a.history(t, alice, "dm", bob.id, ""); len(got) != 3 || got[0]["text"] != "ping" {
		t.Fatalf("alice's view of the conversation: %v", got)
	}
}

func TestBlockStopsDirectMessagesBothWays(t *testing.T) {
	a := newTestApp(t, nil)
	alice, bob := a.newPlayer(t), a.newPlayer(t)
	a.said(t, alice, "dm", bob.id, "hi")

	block := func(p player, method, id string) response {
		return a.do(t, request{method: method, path: "/users/" + id + "/block", header: p.auth})
	}
	if r := block(bob, http.MethodPost, alice.id); r.Code != 200 || r.json(t)["blocked"] != true {
		t.Fatalf("block: %d %s", r.Code, r.Body)
	}
	if r := block(bob, http.MethodPost, alice.id); r.Code != 200 {
		t.Fatalf("blocking again: %d %s", r.Code, r.Body)
	}
	a.say(t, alice, "dm", bob.id, "hello?").wantError(t, 403, "FORBIDDEN")
	a.say(t, bob, "dm", alice.id, "go away").wantError(t, 403, "FORBIDDEN")
	if page := a.history(t, alice, "dm", bob.id, ""); len(page) != 1 {
		t.Errorf("the history before the block: %v", page)
	}
	block(bob, http.MethodPost, bob.id).wantError(t, 400, "VALIDATION_ERROR")
	block(bob, http.MethodPost, "00000000-0000-0000-0000-000000000000").wantError(t, 404, "NOT_FOUND")
	a.do(t, request{method: http.MethodPost, path: "/users/" + alice.id + "/block"}).wantError(t, 401, "UNAUTHORIZED")

	// Alice's own unblock does not lift bob's block.
	if r := block(alice, http.MethodDelete, bob.id); r.Code != 200 || r.json(t)["blocked"] != false {
		t.Fatalf("unblock of someone not blocked: %d %s", r.Code, r.Body)
	}
	a.say(t, alice, "dm", bob.id, "hello?").wantError(t, 403, "FORBIDDEN")
	if r := block(bob, http.MethodDelete, alice.id); r.Code != 200 {
		t.Fatalf("unblock: %d %s", r.Code, r.Body)
	}
	a.said(t, alice, "dm", bob.id, "friends again?")
	a.said(t, bob, "dm", alice.id, "ok")
}

func TestChatPagination(t *testing.T) {
	a := newTestApp(t, nil)
	p1, _, game := a.match(t, `{}`)
	for i := 1; i <= 7; i++ {
		a.postSystem(t, game, fmt.Sprintf("system %d", i), nil)
	}
	var texts []string
	before := ""
	for pages := 0; ; pages++ {
		query := "?limit=3"
		if before != "" {
			query += "&before=" + before
		}
		page := a.history(t, p1, "game", game, query)
		for _, m := range page {
			texts = append(texts, m["text"].(string))
		}
		if len(page) < 3 {
			if pages != 2 {
				t.Errorf("%d full pages, want 2", pages)
			}
			break
		}
		before = page[len(page)-1]["id"].(string)
	}
	want := "system 7,system 6,system 5,system 4,system 3,system 2,system 1"
	if got := strings.Join(texts, ","); got != want {
		t.Fatalf("pages: %s\nwant %s", got, want)
	}
	if all := a.history(t, p1, "game", game, ""); len(all) != 7 {
		t.Errorf("default page: %d, want all 7", len(all))
	}
	for _, q := range []string{"?limit=0", "?limit=201", "?limit=x", "?before=0", "?before=x"} {
		a.do(t, request{path: "/chat/game/" + game + "/messages" + q, header: p1.auth}).wantError(t, 400, "VALIDATION_ERROR")
	}
}

func TestChatArrivesOverTheWebSocket(t *testing.T) {
	a := newTestApp(t, nil)
	srv := httptest.NewServer(a.Handler())
	t.Cleanup(srv.Close)
	p1, p2, game := a.match(t, `{"rounds": 3, "roundSeconds": 60}`)
	spectator := a.newPlayer(t)

	room := dialWS(t, srv, tokenOf(spectator))
	room.send(map[string]any{"type": "join-game", "gameId": game})
	room.next("joined")
	a.said(t, p1, "game", game, "<b>hi</b> room")
	evs := room.eventsUntil("game:chat:message")
	ev := evs[len(evs)-1]
	data := ev["data"].(map[string]any)
	if ev["gameId"] != game || data["text"] != "<b>hi</b> room" || role(data) != "player" ||
		data["sender"].(map[string]any)["userId"] != p1.id {
		t.Fatalf("chat event: %v", ev)
	}

	// Direct messages reach both users' sockets, each from their side.
	bob := dialWS(t, srv, tokenOf(p2))
	alice := dialWS(t, srv, tokenOf(p1))
	for _, ws := range []*wsClient{bob, alice} { // a round trip: the sockets are registered
		ws.send(map[string]any{"type": "join-game", "gameId": "00000000-0000-0000-0000-000000000000"})
		ws.next("error")
	}
	sent := a.said(t, p1, "dm", p2.id, "psst")
	for _, tc := range []struct {
		ws          *wsClient
		contextID   string
		description string
	}{{bob, p1.id, "recipient"}, {alice, p2.id, "sender's other socket"}} {
		n := tc.ws.next("notice")
		data, _ := n["data"].(map[string]any)
		if n["notice"] != "chat:dm" || data == nil || data["id"] != sent["id"] || data["text"] != "psst" ||
			data["context"].(map[string]any)["id"] != tc.contextID || data["sender"].(map[string]any)["userId"] != p1.id {
			t.Fatalf("%s's notice: %v", tc.description, n)
		}
	}
}
