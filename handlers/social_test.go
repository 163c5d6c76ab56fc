package handlers_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
)

// friendOf is one line of GET /friends/:userId.
type friendOf struct {
	UserID        string  `json:"userId"`
	Username      string  `json:"username"`
	Online        bool    `json:"online"`
	CurrentGameID *string `json:"currentGameId"`
}

func (a *testApp) friends(t *testing.T, p player, of string, query string) []friendOf {
	t.Helper()
	r := a.do(t, request{path: "/friends/" + of + query, header: p.auth})
	if r.Code != http.StatusOK {
		t.Fatalf("friends of %s: %d %s", of, r.Code, r.Body)
	}
	var out []friendOf
	if err := json.Unmarshal(r.Body.Bytes(), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// notification is one line of GET /notifications.
type notification struct {
	ID   int64          `json:"id"`
	Type string         `json:"type"`
	Data map[string]any `json:"data"`
	Read bool           `json:"read"`
}

func (a *testApp) notifications(t *testing.T, p player, query string) ([]notification, int) {
	t.Helper()
	r := a.do(t, request{path: "/notifications" + query, header: p.auth})
	if r.Code != http.StatusOK {
		t.Fatalf("notifications: %d %s", r.Code, r.Body)
	}
	var out []notification
	if err := json.Unmarshal(r.Body.Bytes(), &out); err != nil {
		t.Fatal(err)
	}
	unread, err := strconv.Atoi(r.Header().Get("X-Unread-Count"))
	if err != nil {
		t.Fatalf("X-Unread-Count %q: %v", r.Header().Get("X-Unread-Count"), err)
	}
	return out, unread
}

func TestFriendsRequestAcceptAndEnd(t *testing.T) {
	a := newTestApp(t, nil)
	ann, bob, cat := a.newPlayer(t), a.newPlayer(t), a.newPlayer(t)
	ask := func(from player, to string) response {
		return a.do(t, request{method: http.MethodPost, path: "/friends/" + to, header: from.auth})
	}

	// A new request: 201 pending, and Bob is told who asked.
	if r := ask(ann, bob.id); r.Code != http.StatusCreated || r.json(t)["status"] != "pending" || r.json(t)["userId"] != bob.id {
		t.Fatalf("request: %d %s", r.Code, r.Body)
	}
	if r := ask(ann, bob.id); r.Code != http.StatusOK || r.json(t)["status"] != "pending" {
		t.Fatalf("the same request again: %d %s, want 200 pending", r.Code, r.Body)
	}
	got, unread := a.notifications(t, bob, "")
	if len(got) != 1 || got[0].Type != "friend_request" || got[0].Data["userId"] != ann.id || got[0].Data["username"] == "" || unread != 1 {
		t.Fatalf("Bob's notifications: %+v (unread %d), want one friend_request from Ann", got, unread)
	}
	r := a.do(t, request{path: "/friends/requests/incoming", header: bob.auth})
	var incoming []map[string]any
	_ = json.Unmarshal(r.Body.Bytes(), &incoming)
	if r.Code != 200 || len(incoming) != 1 || incoming[0]["userId"] != ann.id {
		t.Fatalf("Bob's incoming requests: %d %s", r.Code, r.Body)
	}
	if len(a.friends(t, ann, ann.id, "")) != 0 {
		t.Fatal("a pending request is not a friendship")
	}

	// Bob asking Ann back accepts: friends both ways, Ann is told.
	if r := ask(bob, ann.id); r.Code != http.StatusOK || r.json(t)["status"] != "friends" {
		t.Fatalf("asking back: %d %s, want 200 friends", r.Code, r.Body)
	}
	if f := a.friends(t, cat, ann.id, ""); len(f) != 1 || f[0].UserID != bob.id || f[0].Username == "" {
		t.Fatalf("Ann's friends as Cat reads them: %+v", f)
	}
	if f := a.friends(t, ann, bob.id, ""); len(f) != 1 || f[0].UserID != ann.id {
		t.Fatalf("Bob's friends: %+v", f)
	}
	if got, _ := a.notifications(t, ann, ""); len(got) != 1 || got[0].Type != "friend_accepted" || got[0].Data["userId"] != bob.id {
		t.Fatalf("Ann's notifications: %+v", got)
	}
	if r := ask(ann, bob.id); r.Code != http.StatusOK || r.json(t)["status"] != "friends" {
		t.Fatalf("asking a friend: %d %s", r.Code, r.Body)
	}
	if r := a.do(t, request{path: "/friends/requests/incoming", header: bob.auth}); r.Body.String() != "[]\n" {
		t.Fatalf("Bob's incoming after accepting: %s", r.Body)
	}

	// Accepting: only a pending request from that user.
	if r := ask(cat, ann.id); r.Code != http.StatusCreated {
		t.Fatal(r.Body)
	}
	a.do(t, request{method: http.MethodPost, path: "/friends/requests/" + ann.id + "/accept", header: cat.auth}).
		wantError(t, http.StatusNotFound, "NOT_FOUND")
	if r := a.do(t, request{method: http.MethodPost, path: "/friends/requests/" + cat.id + "/accept", header: ann.auth}); r.Code != 200 || r.json(t)["status"] != "friends" {
		t.Fatalf("accept: %d %s", r.Code, r.Body)
	}
	if f := a.friends(t, ann, ann.id, ""); len(f) != 2 {
		t.Fatalf("Ann has %d friends, want 2", len(f))
	}

	// Paging, most recent friendship first.
	first := a.friends(t, ann, ann.id, "?limit=1")
	second := a.friends(t, ann, ann.id, "?limit=1&before="+first[0].UserID)
	if len(first) != 1 || len(second) != 1 || first[0].UserID != cat.id || second[0].UserID != bob.id {
		t.Fatalf("pages: %+v then %+v, want Cat then Bob", first, second)
	}

	// Unfriending ends it for both.
	if r := a.do(t, request{method: http.MethodDelete, path: "/friends/" + ann.id, header: bob.auth}); r.Code != http.StatusNoContent {
		t.Fatalf("unfriend: %d %s", r.Code, r.Body)
	}
	if f := a.friends(t, ann, ann.id, ""); len(f) != 1 || f[0].UserID != cat.id {
		t.Fatalf("Ann's friends after Bob left: %+v", f)
	}
	if f := a.friends(t, bob, bob.id, ""); len(f) != 0 {
		t.Fatalf("Bob's friends after leaving: %+v", f)
	}

	// DELETE also withdraws a request and declines one.
	ask(ann, bob.id)
	a.do(t, request{method: http.MethodDelete, path: "/friends/" + bob.id, header: ann.auth})
	if r := a.do(t, request{path: "/friends/requests/incoming", header: bob.auth}); r.Body.String() != "[]\n" {
		t.Fatalf("a withdrawn request still waits: %s", r.Body)
	}
	ask(ann, bob.id)
	a.do(t, request{method: http.MethodDelete, path: "/friends/" + ann.id, header: bob.auth})
	if r := ask(ann, bob.id); r.Code != http.StatusCreated {
		t.Fatalf("a declined request can be made again: %d %s", r.Code, r.Body)
	}
}

func TestFriendRequestsRefused(t *testing.T) {
	a := newTestApp(t, nil)
	ann, bob := a.newPlayer(t), a.newPlayer(t)
	ask := func(from player, to string) response {
		return a.do(t, request{method: http.MethodPost, path: "/friends/" + to, header: from.auth})
	}
	ask(ann, ann.id).wantError(t, http.StatusBadRequest, "VALIDATION_ERROR")
	ask(ann, "00000000-0000-4000-8000-000000000000").wantError(t, http.StatusNotFound, "NOT_FOUND")
	ask(ann, "not-a-user").wantError(t, http.StatusNotFound, "NOT_FOUND")
	a.do(t, request{path: "/friends/00000000-0000-4000-8000-000000000000", header: ann.auth}).wantError(t, http.StatusNotFound, "NOT_FOUND")
	a.do(t, request{path: "/friends/" + ann.id}).wantError(t, http.StatusUnauthorized, "UNAUTHORIZED")
	a.do(t, request{path: "/friends/" + ann.id + "?limit=0", header: ann.auth}).wantError(t, http.StatusBadRequest, "VALIDATION_ERROR")

	// A block stops requests both ways, and nothing is stored.
	if r := a.do(t, request{method: http.MethodPost, path: "/users/" + ann.id + "/block", header: bob.auth}); r.Code != 200 {
		t.Fatal(r.Body)
	}
	ask(ann, bob.id).wantError(t, http.StatusForbidden, "FORBIDDEN")
	ask(bob, ann.id).wantError(t, http.StatusForbidden, "FORBIDDEN")
	if got, unread := a.notifications(t, bob, ""); len(got) != 0 || unread != 0 {
		t.Fatalf("a refused request notified: %+v", got)
	}
}

func TestNotificationsReadOneOrAll(t *testing.T) {
	a := newTestApp(t, nil)
	me := a.newPlayer(t)
	for range 3 {
		other := a.newPlayer(t)
		if r := a.do(t, request{method: http.MethodPost, path: "/friends/" + me.id, header: other.auth}); r.Code != 201 {
			t.Fatal(r.Body)
		}
	}
	all, unread := a.notifications(t, me, "")
	if len(all) != 3 || unread != 3 || !(all[0].ID > all[1].ID && all[1].ID > all[2].ID) {
		t.Fatalf("notifications %+v, unread %d: want 3 unread, newest first", all, unread)
	}
	if page, _ := a.notifications(t, me, "?limit=2&before="+strconv.FormatInt(all[0].ID, 10)); len(page) != 2 || page[0].ID != all[1].ID {
		t.Fatalf("the page before the newest: %+v", page)
	}

	r := a.do(t, request{method: http.MethodPatch, path: "/notifications/" + strconv.FormatInt(all[1].ID, 10) + "/read", header: me.auth})
	if r.Code != 200 || r.json(t)["read"] != true || r.json(t)["type"] != "friend_request" {
		t.Fatalf("mark read: %d %s", r.Code, r.Body)
	}
	if got, unread := a.notifications(t, me, "?unread=true"); len(got) != 2 || unread != 2 {
		t.Fatalf("unread after marking one: %d listed, %d counted", len(got), unread)
	}
	other := a.newPlayer(t)
	a.do(t, request{method: http.MethodPatch, path: "/notifications/" + strconv.FormatInt(all[0].ID, 10) + "/read", header: other.auth}).
		wantError(t, http.StatusNotFound, "NOT_FOUND")
	a.do(t, request{method: http.MethodPatch, path: "/notifications/x/read", header: me.auth}).wantError(t, http.StatusNotFound, "NOT_FOUND")
	a.do(t, request{path: "/notifications?unread=maybe", header: me.auth}).wantError(t, http.StatusBadRequest, "VALIDATION_ERROR")

	// Read-all answers how many it changed: 2, then 0.
	for _, want := range []float64{2, 0} {
		if r := a.do(t, request{method: http.MethodPost, path: "/notifications/read-all", header: me.auth}); r.Code != 200 || r.json(t)["updated"] != want {
			t.Fatalf("read-all: %d %s, want updated %v", r.Code, r.Body, want)
		}
	}
	if _, unread := a.notifications(t, me, ""); unread != 0 {
		t.Fatalf("unread after read-all: %d", unread)
	}
}

// TestNotificationsReachTheSocketsAndEveryPlaceTheyComeFrom: a challenge,
// a friend request and a finished game each notify, and each new
// notification reaches the user's open socket as it is stored.
func TestNotificationsReachTheSocketsAndEveryPlaceTheyComeFrom(t *testing.T) {
	a := newTestApp(t, nil)
	srv := httptest.NewServer(a.Handler())
	t.Cleanup(srv.Close)
	p1, p2, game := a.match(t, `{"rounds": 1, "roundSeconds": 30}`)
	ws := dialWS(t, srv, tokenOf(p2))

	notice := func(typ string) map[string]any {
		t.Helper()
		for {
			m := ws.next("notice")
			if m["notice"] != "notification" {
				continue
			}
			data := m["data"].(map[string]any)
			if data["type"] != typ {
				t.Fatalf("notification %v, want %s", data["type"], typ)
			}
			return data["data"].(map[string]any)
		}
	}

	a.act(t, p1, game, `{"type": "move", "move": "rock"}`)
	a.act(t, p2, game, `{"type": "move", "move": "scissors"}`)
	done := notice("game_completed")
	if done["gameId"] != game || done["winnerId"] != p1.id || done["status"] != "completed" || done["receivedMinor"] != 0.0 {
		t.Fatalf("game_completed for the loser: %v", done)
	}
	if got, _ := a.notifications(t, p1, ""); len(got) != 1 || got[0].Type != "game_completed" || got[0].Data["winnerId"] != p1.id {
		t.Fatalf("the winner's notifications: %+v", got)
	}

	r := a.do(t, request{method: http.MethodPost, path: "/challenges", header: p1.auth,
		body: `{"toUserId": "` + p2.id + `", "gameType": "rps", "stakeMinor": 0}`})
	if r.Code != http.StatusCreated {
		t.Fatalf("challenge: %d %s", r.Code, r.Body)
	}
	ch := notice("challenge")
	if ch["challengeId"] != r.json(t)["id"] || ch["fromUserId"] != p1.id || ch["fromUsername"] == "" || ch["gameType"] != "rps" {
		t.Fatalf("challenge notification: %v", ch)
	}

	a.do(t, request{method: http.MethodPost, path: "/friends/" + p2.id, header: p1.auth})
	if fr := notice("friend_request"); fr["userId"] != p1.id {
		t.Fatalf("friend_request notification: %v", fr)
	}
	if _, unread := a.notifications(t, p2, ""); unread != 3 {
		t.Fatalf("p2 has %d unread, want 3", unread)
	}
}

// TestFriendsShowWhoIsOnlineAndPlaying: a friend with an open socket is
// online (on any instance), and a friend in a game shows it.
func TestFriendsShowWhoIsOnlineAndPlaying(t *testing.T) {
	a := newTestApp(t, nil)
	srv := httptest.NewServer(a.Handler())
	t.Cleanup(srv.Close)
	p1, _, game := a.match(t, `{"rounds": 1, "roundSeconds": 30}`)
	fan := a.newPlayer(t)
	a.do(t, request{method: http.MethodPost, path: "/friends/" + p1.id, header: fan.auth})
	a.do(t, request{method: http.MethodPost, path: "/friends/requests/" + fan.id + "/accept", header: p1.auth})

	f := a.friends(t, fan, fan.id, "")
	if len(f) != 1 || f[0].Online || f[0].CurrentGameID == nil || *f[0].CurrentGameID != game {
		t.Fatalf("p1 without a socket, in a game: %+v", f)
	}
	ws := dialWS(t, srv, tokenOf(p1))
	waitFor(t, func() bool { return a.friends(t, fan, fan.id, "")[0].Online }) // presence is shared once a second
	ws.conn.Close()
	waitFor(t, func() bool { return !a.friends(t, fan, fan.id, "")[0].Online })
}
