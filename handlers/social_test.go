package handlers_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"wager/db"
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
	ID   int64          `json:"id,string"`
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
			if data := m["data"].(map[string]any); data["type"] == typ {
				return data["data"].(map[string]any)
			}
		}
	}

	a.act(t, p1, game, `{"type": "move", "move": "rock"}`)
	a.act(t, p2, game, `{"type": "move", "move": "scissors"}`)
	done := notice("game_completed")
	if done["gameId"] != game || done["winnerId"] != p1.id || done["status"] != "completed" || done["receivedMinor"] != 0.0 {
		t.Fatalf("game_completed for the loser: %v", done)
	}
	if got, _ := a.notifications(t, p1, ""); countType(got, "game_completed") != 1 || got[len(got)-1].Data["winnerId"] != p1.id {
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
	// game_completed, first-game, challenge, friend_request.
	if _, unread := a.notifications(t, p2, ""); unread != 4 {
		t.Fatalf("p2 has %d unread, want 4", unread)
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

// achievementIDs reads GET /achievements/user/:id.
func (a *testApp) achievementIDs(t *testing.T, userID string) []string {
	t.Helper()
	r := a.do(t, request{path: "/achievements/user/" + userID})
	if r.Code != http.StatusOK {
		t.Fatalf("achievements of %s: %d %s", userID, r.Code, r.Body)
	}
	var got []struct {
		AchievementID string `json:"achievementId"`
		Name          string `json:"name"`
	}
	if err := json.Unmarshal(r.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	ids := []string{}
	for _, g := range got {
		if g.Name == "" {
			t.Errorf("achievement %s has no name", g.AchievementID)
		}
		ids = append(ids, g.AchievementID)
	}
	sort.Strings(ids)
	return ids
}

// feedEntry is one line of GET /activity/feed.
type feedEntry struct {
	ID    int64  `json:"id,string"`
	Type  string `json:"type"`
	Actor struct {
		UserID   string `json:"userId"`
		Username string `json:"username"`
	} `json:"actor"`
	Data map[string]any `json:"data"`
}

func (a *testApp) feed(t *testing.T, query string) ([]feedEntry, string) {
	t.Helper()
	r := a.do(t, request{path: "/activity/feed" + query})
	if r.Code != http.StatusOK {
		t.Fatalf("feed: %d %s", r.Code, r.Body)
	}
	var out []feedEntry
	if err := json.Unmarshal(r.Body.Bytes(), &out); err != nil {
		t.Fatal(err)
	}
	return out, r.Body.String()
}

// playTo ends a game: winner plays rock and loser scissors each round.
func (a *testApp) playTo(t *testing.T, winner, loser player, game string, rounds int) {
	t.Helper()
	for range rounds {
		a.act(t, winner, game, `{"type": "move", "move": "rock"}`)
		if r := a.act(t, loser, game, `{"type": "move", "move": "scissors"}`); r.Code != 200 {
			t.Fatalf("move: %d %s", r.Code, r.Body)
		}
	}
}

// rematch starts the next game between the two players of a finished one.
func (a *testApp) rematch(t *testing.T, p1, p2 player, game string) string {
	t.Helper()
	a.do(t, request{method: http.MethodPost, path: "/games/" + game + "/rematch", header: p1.auth})
	r := a.do(t, request{method: http.MethodPost, path: "/games/" + game + "/rematch", header: p2.auth})
	next, _ := r.json(t)["newGameId"].(string)
	if next == "" {
		t.Fatalf("rematch: %d %s", r.Code, r.Body)
	}
	return next
}

func TestAchievementsAreEarnedOnceWithANotificationAndAFeedEntry(t *testing.T) {
	a := newTestApp(t, ownDB(t, nil))
	if r := a.do(t, request{path: "/achievements"}); r.Code != 200 || !strings.Contains(r.Body.String(), `"id":"win-streak-3"`) ||
		!strings.Contains(r.Body.String(), `"id":"trader"`) {
		t.Fatalf("definitions: %d %s", r.Code, r.Body)
	}

	// Game 1 (best of 3, won 2-0): the winner's first game, first win and
	// a flawless one; the loser's first game.
	winner, loser, game := a.match(t, `{"rounds": 3, "roundSeconds": 30}`)
	a.playTo(t, winner, loser, game, 2)
	if got, want := a.achievementIDs(t, winner.id), []string{"first-game", "first-win", "flawless"}; !sameSet(got, want) {
		t.Fatalf("the winner's achievements after one game: %v, want %v", got, want)
	}
	if got := a.achievementIDs(t, loser.id); !sameSet(got, []string{"first-game"}) {
		t.Fatalf("the loser's achievements: %v", got)
	}
	if got, _ := a.notifications(t, winner, ""); countType(got, "achievement") != 3 || countType(got, "game_completed") != 1 {
		t.Fatalf("the winner's notifications: %+v", got)
	}
	// The feed is everyone's (other tests' games too): find this game.
	entries, _ := a.feed(t, "?limit=200")
	var won *feedEntry
	for i := range entries {
		if entries[i].Type == "game_won" && entries[i].Data["gameId"] == game {
			won = &entries[i]
		}
	}
	if won == nil || won.Actor.UserID != winner.id || won.Actor.Username == "" || won.Data["gameId"] != game ||
		won.Data["loser"].(map[string]any)["userId"] != loser.id || won.Data["gameType"] != "rps" || won.Data["payoutMinor"] != 0.0 {
		t.Fatalf("game_won entry: %+v", won)
	}

	// Games 2 and 3, won 2-1: no second first-win, and the streak on the
	// third win in a row.
	game = a.rematch(t, winner, loser, game)
	a.act(t, winner, game, `{"type": "move", "move": "scissors"}`)
	a.act(t, loser, game, `{"type": "move", "move": "rock"}`)
	a.playTo(t, winner, loser, game, 2)
	if got := a.achievementIDs(t, winner.id); !sameSet(got, []string{"first-game", "first-win", "flawless"}) {
		t.Fatalf("after two wins: %v", got)
	}
	game = a.rematch(t, winner, loser, game)
	a.playTo(t, winner, loser, game, 2)
	if got := a.achievementIDs(t, winner.id); !sameSet(got, []string{"first-game", "first-win", "flawless", "win-streak-3"}) {
		t.Fatalf("after three wins in a row: %v", got)
	}
	if got, _ := a.notifications(t, winner, ""); countType(got, "achievement") != 4 {
		t.Fatalf("achievement notifications after three games: %d, want 4 (each once)", countType(got, "achievement"))
	}
	entries, _ = a.feed(t, "?limit=200")
	achieved := 0
	for _, e := range entries {
		if e.Type == "achievement" && e.Actor.UserID == winner.id {
			achieved++
		}
	}
	if achieved != 4 {
		t.Fatalf("the feed has %d of the winner's achievements, want 4", achieved)
	}
	page, _ := a.feed(t, "?limit=2")
	older, _ := a.feed(t, "?limit=2&before="+strconv.FormatInt(page[1].ID, 10))
	if len(page) != 2 || len(older) != 2 || older[0].ID >= page[1].ID {
		t.Fatalf("feed pages: %+v then %+v", page, older)
	}
	a.do(t, request{path: "/achievements/user/00000000-0000-4000-8000-000000000000"}).wantError(t, http.StatusNotFound, "NOT_FOUND")
	if r := a.do(t, request{path: "/achievements/me", header: winner.auth}); r.Code != 200 || !strings.Contains(r.Body.String(), "win-streak-3") {
		t.Fatalf("/achievements/me: %d %s", r.Code, r.Body)
	}
}

// Two transactions earning one achievement at the same instant unlock it
// once, with one notification.
func TestAnAchievementIsNeverUnlockedTwice(t *testing.T) {
	a := newTestApp(t, nil)
	p := a.newPlayer(t)
	for round := range 20 {
		id := []string{"first-game", "first-win", "flawless", "high-roller", "first-donation", "patron", "social",
			"first-tip", "recruiter", "first-bet", "trader", "win-streak-3"}[round%12]
		if round >= 12 {
			id = "first-game" // again: already unlocked, nobody gets it
		}
		start := make(chan struct{})
		var wg sync.WaitGroup
		var unlocked atomic.Int32
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				err := db.Transact(t.Context(), a.DB, func(ctx context.Context, tx db.Tx) error {
					ok, err := a.Social.Unlock(ctx, tx, p.id, id)
					if ok {
						unlocked.Add(1)
					}
					return err
				})
				if err != nil {
					t.Error(err)
				}
			}()
		}
		close(start)
		wg.Wait()
		if want := int32(1); round >= 12 {
			want = 0
			if unlocked.Load() != want {
				t.Fatalf("%s unlocked %d more times", id, unlocked.Load())
			}
		} else if unlocked.Load() != want {
			t.Fatalf("%s unlocked %d times by 4 transactions at once, want 1", id, unlocked.Load())
		}
	}
	if got, _ := a.notifications(t, p, "?limit=200"); countType(got, "achievement") != 12 {
		t.Fatalf("%d achievement notifications, want 12", countType(got, "achievement"))
	}
	if got := a.achievementIDs(t, p.id); len(got) != 12 {
		t.Fatalf("achievements %v, want all 12", got)
	}
}

// The feed is public and carries nothing private: no direct messages, no
// balances.
func TestTheFeedCarriesNothingPrivate(t *testing.T) {
	a := newTestApp(t, ownDB(t, nil))
	ann, bob, game := a.match(t, `{"rounds": 1, "roundSeconds": 30}`)
	secret := "meet me at the usual place 7731"
	if r := a.say(t, ann, "dm", bob.id, secret); r.Code != http.StatusCreated {
		t.Fatal(r.Body)
	}
	a.say(t, bob, "game", game, "good luck "+secret)
	a.playTo(t, ann, bob, game, 1)
	entries, body := a.feed(t, "?limit=200")
	if len(entries) == 0 {
		t.Fatal("the feed is empty after a won game")
	}
	for _, leak := range []string{"usual place", "availableMinor", "lockedMinor", "walletAddress", "balance"} {
		if strings.Contains(body, leak) {
			t.Errorf("the feed carries %q: %s", leak, body)
		}
	}
}

// The feed is in the order of its entries' times, which their ids need
// not follow (an id is drawn when the entry is stored, after its time was
// taken): the entry stored last but a moment older than all the others is
// listed last, and it is the page after the one before it.
func TestTheFeedIsInTheOrderOfItsEntriesTimes(t *testing.T) {
	a := newTestApp(t, ownDB(t, nil))
	for range 2 {
		winner, loser, game := a.match(t, `{"rounds": 1, "roundSeconds": 30}`)
		a.playTo(t, winner, loser, game, 1)
	}
	newest, _ := a.feed(t, "?limit=1")
	latest := newest[0].ID // stored last, it becomes a moment older than every other entry
	if _, err := a.DB.ExecContext(t.Context(), `UPDATE activity SET created_at = (SELECT min(created_at) FROM activity) - interval '1 millisecond'
		WHERE id = ?`, latest); err != nil {
		t.Fatal(err)
	}
	all, _ := a.feed(t, "?limit=200")
	if len(all) < 3 || all[len(all)-1].ID != latest {
		t.Fatalf("feed: %+v, want %d, the oldest by time, last", all, latest)
	}
	next, _ := a.feed(t, "?limit=5&before="+strconv.FormatInt(all[len(all)-2].ID, 10))
	if len(next) != 1 || next[0].ID != latest {
		t.Fatalf("the page after %d: %+v, want %d alone", all[len(all)-2].ID, next, latest)
	}
}

// A donation into a live pot is in the feed and earns the donor's
// donation achievements; patron at 10 USDC in all.
func TestDonationsEarnAchievementsAndFeedEntries(t *testing.T) {
	a := newTestApp(t, ownDB(t, nil))
	_, _, game := a.match(t, `{"rounds": 3, "roundSeconds": 60}`)
	donor := a.spectatorWith(t, 20_000_000)
	if r, _ := a.donate(t, donor, game, 4_000_000); r.Code != 200 {
		t.Fatalf("donate: %d %s", r.Code, r.Body)
	}
	if got := a.achievementIDs(t, donor.id); !sameSet(got, []string{"first-donation"}) {
		t.Fatalf("after 4 USDC: %v", got)
	}
	if r, _ := a.donate(t, donor, game, 6_000_000); r.Code != 200 {
		t.Fatalf("donate: %d %s", r.Code, r.Body)
	}
	if got := a.achievementIDs(t, donor.id); !sameSet(got, []string{"first-donation", "patron"}) {
		t.Fatalf("after 10 USDC in all: %v", got)
	}
	entries, _ := a.feed(t, "?limit=200")
	donations := 0
	for _, e := range entries {
		if e.Type == "donation" && e.Actor.UserID == donor.id && e.Data["gameId"] == game {
			donations++
		}
	}
	if donations != 2 {
		t.Fatalf("%d donation entries, want 2: %+v", donations, entries)
	}
}

// Five friends earn "social".
func TestFiveFriendsEarnSocial(t *testing.T) {
	a := newTestApp(t, nil)
	me := a.newPlayer(t)
	for i := range 5 {
		if got := a.achievementIDs(t, me.id); len(got) != 0 {
			t.Fatalf("with %d friends: %v", i, got)
		}
		f := a.newPlayer(t)
		a.do(t, request{method: http.MethodPost, path: "/friends/" + f.id, header: me.auth})
		a.do(t, request{method: http.MethodPost, path: "/friends/requests/" + me.id + "/accept", header: f.auth})
	}
	if got := a.achievementIDs(t, me.id); !sameSet(got, []string{"social"}) {
		t.Fatalf("with 5 friends: %v", got)
	}
}

func sameSet(got, want []string) bool {
	w := append([]string(nil), want...)
	sort.Strings(w)
	return slices.Equal(got, w)
}

func countType(ns []notification, typ string) int {
	n := 0
	for _, x := range ns {
		if x.Type == typ {
			n++
		}
	}
	return n
}

// The demo bots play all day: what they do stays out of the feed, what
// people do against them does not.
func TestDemoBotsStayOutOfTheFeed(t *testing.T) {
	a := newTestApp(t, ownDB(t, nil))
	bot, person, game := a.match(t, `{"rounds": 1, "roundSeconds": 30}`)
	if _, err := a.DB.NewUpdate().Table("users").Set("bot = true").Where("id = ?", bot.id).Exec(t.Context()); err != nil {
		t.Fatal(err)
	}
	a.playTo(t, bot, person, game, 1)
	game = a.rematch(t, bot, person, game)
	a.playTo(t, person, bot, game, 1)
	entries, _ := a.feed(t, "?limit=200")
	personWon := false
	for _, e := range entries {
		if e.Actor.UserID == bot.id {
			t.Errorf("the feed shows the bot's %s", e.Type)
		}
		if e.Type == "game_won" && e.Actor.UserID == person.id && e.Data["gameId"] == game {
			personWon = true
		}
	}
	if !personWon {
		t.Error("the person's win over the bot is not in the feed")
	}
}

// A win staked at 10 USDC is a high roller's; at less it is not.
func TestHighRollerAtTenUSDC(t *testing.T) {
	a := newTestApp(t, nil)
	winner, loser, game := a.stakedGame(t, 9_999_999, `{"rounds": 1}`)
	a.playTo(t, winner, loser, game, 1)
	if got := a.achievementIDs(t, winner.id); slices.Contains(got, "high-roller") {
		t.Fatalf("a win staked just under 10 USDC: %v", got)
	}
	winner, loser, game = a.stakedGame(t, 10_000_000, `{"rounds": 1}`)
	a.playTo(t, winner, loser, game, 1)
	if got := a.achievementIDs(t, winner.id); !slices.Contains(got, "high-roller") {
		t.Fatalf("a win staked at 10 USDC: %v", got)
	}
	if got := a.achievementIDs(t, loser.id); slices.Contains(got, "high-roller") {
		t.Fatalf("the loser: %v", got)
	}
}
