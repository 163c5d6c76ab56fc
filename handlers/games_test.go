package handlers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"wager/db"
	"wager/db/dbtest"
	"wager/domain"
	"wager/domain/users"
)

// player is a signed-in test user.
type player struct {
	wallet
	id   string
	auth map[string]string
}

func (a *testApp) newPlayer(t testing.TB) player {
	t.Helper()
	w := newWallet(t)
	token, id := a.login(t, w, "agent-1")
	return player{wallet: w, id: id, auth: bearer(token, "agent-1")}
}

func (a *testApp) lobby(t testing.TB, p player, body string) string {
	t.Helper()
	r := a.do(t, request{method: http.MethodPost, path: "/lobbies", body: body, header: p.auth})
	if r.Code != http.StatusCreated {
		t.Fatalf("create lobby: %d %s", r.Code, r.Body)
	}
	return r.json(t)["id"].(string)
}

func (a *testApp) join(t testing.TB, p player, lobby string) map[string]any {
	t.Helper()
	r := a.do(t, request{method: http.MethodPost, path: "/lobbies/" + lobby + "/join-queue", header: p.auth})
	if r.Code != 200 {
		t.Fatalf("join queue: %d %s", r.Code, r.Body)
	}
	return r.json(t)
}

// match starts a game between two new players and returns them and the game id.
func (a *testApp) match(t testing.TB, settings string) (player, player, string) {
	t.Helper()
	p1, p2 := a.newPlayer(t), a.newPlayer(t)
	lobby := a.lobby(t, p1, `{"gameType": "rps", "stakeMinor": 0, "settings": `+settings+`}`)
	if got := a.join(t, p1, lobby); got["status"] != "queued" {
		t.Fatalf("first join: %v", got)
	}
	got := a.join(t, p2, lobby)
	if got["status"] != "matched" || got["gameId"] == nil {
		t.Fatalf("second join: %v", got)
	}
	return p1, p2, got["gameId"].(string)
}

func (a *testApp) act(t testing.TB, p player, game, body string) response {
	t.Helper()
	return a.do(t, request{method: http.MethodPost, path: "/games/" + game + "/actions", body: body, header: p.auth})
}

func TestRPSGameThroughTheAPI(t *testing.T) {
	a := newTestApp(t, nil)
	p1, p2, game := a.match(t, `{"rounds": 1, "roundSeconds": 30}`)
	spectator := a.newPlayer(t)

	if r := a.do(t, request{path: "/users/me/current-game", header: p1.auth}); r.Code != 200 || r.json(t)["gameId"] != game {
		t.Fatalf("current game: %d %s", r.Code, r.Body)
	}
	if r := a.do(t, request{path: "/users/me/current-game", header: spectator.auth}); r.Code != http.StatusNoContent || r.Body.Len() != 0 {
		t.Fatalf("current game of a user in no game: %d %q, want 204 and no body", r.Code, r.Body)
	}
	if r := a.do(t, request{path: "/users/" + spectator.id + "/current-game"}); r.Code != http.StatusNoContent {
		t.Fatalf("current game of another user in no game: %d %s, want 204", r.Code, r.Body)
	}
	// A user who does not exist is not a user in no game.
	a.do(t, request{path: "/users/00000000-0000-4000-8000-000000000000/current-game"}).wantError(t, http.StatusNotFound, "NOT_FOUND")
	a.act(t, spectator, game, `{"type": "move", "move": "rock"}`).wantError(t, 403, "NOT_A_PLAYER")
	a.act(t, p1, game, `{"type": "move", "move": "lizard"}`).wantError(t, 400, "INVALID_MOVE")
	a.act(t, p1, game, `{"type": "dance"}`).wantError(t, 400, "VALIDATION_ERROR")
	if r := a.act(t, p1, game, `{"type": "move", "move": "rock"}`); r.Code != 200 || r.json(t)["accepted"] != true {
		t.Fatalf("move: %d %s", r.Code, r.Body)
	}
	a.act(t, p1, game, `{"type": "move", "move": "paper"}`).wantError(t, 409, "ALREADY_MOVED")

	// Nobody, not even the mover, sees the choice before the reveal.
	for _, who := range []player{p1, p2, spectator} {
		r := a.do(t, request{path: "/games/" + game + "/state", header: who.auth})
		if r.Code != 200 {
			t.Fatalf("state: %d %s", r.Code, r.Body)
		}
		if strings.Contains(r.Body.String(), "rock") {
			t.Fatalf("the state shows the hidden choice before the reveal: %s", r.Body)
		}
		if sub := r.json(t)["submitted"].(map[string]any); sub[p1.id] != true || sub[p2.id] != false {
			t.Errorf("submitted: %v", sub)
		}
	}
	if r := a.act(t, p2, game, `{"type": "move", "move": "scissors"}`); r.Code != 200 || r.json(t)["status"] != "completed" {
		t.Fatalf("deciding move: %d %s", r.Code, r.Body)
	}
	meta := a.do(t, request{path: "/games/" + game}).json(t)
	if meta["status"] != "completed" || meta["winnerId"] != p1.id || meta["history"] == nil {
		t.Fatalf("completed game: %v", meta)
	}
	a.do(t, request{path: "/games/" + game + "/state", header: spectator.auth}).wantError(t, 409, "GAME_NOT_ACTIVE")
	a.act(t, p2, game, `{"type": "resign"}`).wantError(t, 409, "GAME_NOT_ACTIVE")
	a.do(t, request{path: "/games/00000000-0000-0000-0000-000000000000"}).wantError(t, 404, "NOT_FOUND")

	// Rematch: both ask, a new game starts with the same settings.
	if r := a.do(t, request{method: http.MethodPost, path: "/games/" + game + "/rematch", header: p1.auth}); r.json(t)["status"] != "requested" {
		t.Fatalf("rematch request: %s", r.Body)
	}
	a.do(t, request{method: http.MethodPost, path: "/games/" + game + "/rematch", header: spectator.auth}).wantError(t, 403, "NOT_A_PLAYER")
	r := a.do(t, request{method: http.MethodPost, path: "/games/" + game + "/rematch", header: p2.auth})
	if r.json(t)["status"] != "started" || r.json(t)["newGameId"] == nil {
		t.Fatalf("rematch accept: %s", r.Body)
	}
	if cg := a.do(t, request{path: "/users/" + p2.id + "/current-game"}).json(t); cg["gameId"] != r.json(t)["newGameId"] {
		t.Errorf("after the rematch p2 plays %v, want %v", cg["gameId"], r.json(t)["newGameId"])
	}
}

func TestOneQueueOrGameAtATime(t *testing.T) {
	a := newTestApp(t, nil)
	p1, _, _ := a.match(t, `{}`)
	other := a.lobby(t, p1, `{"gameType": "rps", "stakeMinor": 0}`)
	a.do(t, request{method: http.MethodPost, path: "/lobbies/" + other + "/join-queue", header: p1.auth}).wantError(t, 409, "CONFLICT")

	q := a.newPlayer(t)
	l1, l2 := a.lobby(t, q, `{"gameType": "rps", "stakeMinor": 0}`), a.lobby(t, q, `{"gameType": "rps", "stakeMinor": 0}`)
	a.join(t, q, l1)
	if again := a.join(t, q, l1); again["status"] != "queued" {
		t.Errorf("joining the same queue twice: %v", again)
	}
	a.do(t, request{method: http.MethodPost, path: "/lobbies/" + l2 + "/join-queue", header: q.auth}).wantError(t, 409, "CONFLICT")
	if r := a.do(t, request{method: http.MethodDelete, path: "/lobbies/" + l1 + "/join-queue", header: q.auth}); r.Code != 200 {
		t.Fatalf("leave queue: %d %s", r.Code, r.Body)
	}
	a.do(t, request{method: http.MethodDelete, path: "/lobbies/" + l1 + "/join-queue", header: q.auth}).wantError(t, 404, "NOT_FOUND")
	a.join(t, q, l2)

	for _, body := range []string{`{"gameType": "chess", "stakeMinor": 0}`, `{"gameType": "rps", "stakeMinor": -1}`,
		`{"gameType": "rps", "stakeMinor": 0, "settings": {"rounds": 4}}`, `{"gameType": "rps", "stakeMinor": 0, "settings": {"roundSeconds": 500}}`} {
		a.do(t, request{method: http.MethodPost, path: "/lobbies", body: body, header: q.auth}).wantError(t, 400, "VALIDATION_ERROR")
	}
	staked := a.lobby(t, q, `{"gameType": "rps", "stakeMinor": 1000000}`)
	poor := a.newPlayer(t)
	a.do(t, request{method: http.MethodPost, path: "/lobbies/" + staked + "/join-queue", header: poor.auth}).
		wantError(t, 409, "INSUFFICIENT_FUNDS")
}

func TestJoiningTwoQueuesAtOnceQueuesOnce(t *testing.T) {
	a := newTestApp(t, nil)
	owner := a.newPlayer(t)
	for range 10 {
		q := a.newPlayer(t)
		lobbies := []string{a.lobby(t, owner, `{"gameType": "rps", "stakeMinor": 0}`), a.lobby(t, owner, `{"gameType": "rps", "stakeMinor": 0}`)}
		answers := make([]response, 2)
		var wg sync.WaitGroup
		for i, l := range lobbies {
			wg.Go(func() {
				answers[i] = a.do(t, request{method: http.MethodPost, path: "/lobbies/" + l + "/join-queue", header: q.auth})
			})
		}
		wg.Wait()
		if answers[0].Code != 200 {
			answers[0], answers[1] = answers[1], answers[0]
		}
		if answers[0].Code != 200 {
			t.Fatalf("two joins at once: neither queued: %d %s", answers[0].Code, answers[0].Body)
		}
		answers[1].wantError(t, 409, "CONFLICT")
	}
}

// newUsers creates n users directly (signing in 100 wallets through the
// API would only slow the test down).
func newUsers(t testing.TB, a *testApp, n int) []string {
	t.Helper()
	ids := make([]string, n)
	for i := range ids {
		err := db.Transact(context.Background(), a.DB, func(ctx context.Context, tx db.Tx) error {
			u, _, err := users.FindOrCreate(ctx, tx, newWallet(t).address(), time.Now())
			ids[i] = u.ID
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return ids
}

func TestMatchmakingPairsEveryoneOnceUnderConcurrency(t *testing.T) {
	a := newTestApp(t, nil)
	ctx := context.Background()
	ids := newUsers(t, a, 100)
	l, err := a.Games.CreateLobby(ctx, ids[0], "rps", 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(ids))
	for _, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := a.Games.JoinQueue(ctx, id, l.ID)
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("join: %v", err)
		}
	}
	seen := map[string]string{}
	for _, id := range ids {
		cg, err := a.Games.CurrentGameOf(ctx, id)
		if err != nil || cg == nil {
			t.Fatalf("user %s is in no game after 100 joins (%v)", id, err)
		}
		seen[id] = cg.GameID
	}
	perGame := map[string]int{}
	for _, g := range seen {
		perGame[g]++
	}
	if len(perGame) != 50 {
		t.Fatalf("100 players made %d games, want 50", len(perGame))
	}
	for g, n := range perGame {
		if n != 2 {
			t.Errorf("game %s has %d of the players, want 2", g, n)
		}
	}
	queued, err := a.DB.NewSelect().Table("user_presence").Where("kind = 'queue' AND lobby_id = ?", l.ID).Count(ctx)
	if err != nil || queued != 0 {
		t.Errorf("%d players still queued (%v)", queued, err)
	}
}

func TestDeadlinesSurviveARestart(t *testing.T) {
	a := newTestApp(t, nil)
	p1, _, game := a.match(t, `{"rounds": 3, "roundSeconds": 3}`)
	if r := a.act(t, p1, game, `{"type": "move", "move": "rock"}`); r.Code != 200 {
		t.Fatalf("move: %d %s", r.Code, r.Body)
	}
	a.Close() // the server goes away (nothing it held in memory matters)

	time.Sleep(3200 * time.Millisecond) // the round's deadline passes while it is down
	b := newTestApp(t, nil)
	deadline := time.Now().Add(10 * time.Second)
	for {
		evs, err := b.Events.Events(context.Background(), domain.GameStreamOf(game), 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs {
			if ev.Name == "game:rps:round:reveal" {
				var data struct {
					WinnerID *string `json:"winnerId"`
					Reason   string  `json:"reason"`
				}
				json.Unmarshal(ev.Data, &data)
				if data.WinnerID == nil || *data.WinnerID != p1.id || data.Reason != "timeout" {
					t.Fatalf("the timed-out round: %s, want p1 to win it by timeout", ev.Data)
				}
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the restarted server never applied the passed deadline")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// wsClient is a socket to /ws.
type wsClient struct {
	t    testing.TB
	conn *websocket.Conn
}

func dialWS(t testing.TB, srv *httptest.Server, token string) *wsClient {
	t.Helper()
	url := "ws" + strings.TrimPrefix(srv.URL, "http") + "/ws?token=" + token
	conn, resp, err := websocket.DefaultDialer.Dial(url, nil)
	if err != nil {
		t.Fatalf("dial /ws: %v (%v)", err, resp)
	}
	t.Cleanup(func() { conn.Close() })
	return &wsClient{t: t, conn: conn}
}

func (w *wsClient) send(v any) {
	if err := w.conn.WriteJSON(v); err != nil {
		w.t.Fatal(err)
	}
}

// next reads frames until one of the given type arrives.
func (w *wsClient) next(typ string) map[string]any {
	w.t.Helper()
	w.conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	for {
		var m map[string]any
		if err := w.conn.ReadJSON(&m); err != nil {
			w.t.Fatalf("waiting for %s: %v", typ, err)
		}
		if m["type"] == typ {
			return m
		}
	}
}

// events reads event frames until one named name arrives and returns all.
func (w *wsClient) eventsUntil(name string) []map[string]any {
	w.t.Helper()
	var out []map[string]any
	for {
		ev := w.next("event")
		out = append(out, ev)
		if ev["event"] == name {
			return out
		}
	}
}

func tokenOf(p player) string { return strings.TrimPrefix(p.auth["Authorization"], "Bearer ") }

// twoInstances starts two instances of one deployment, which share the
// token secret (and the keys), each behind an HTTP server of its own.
func twoInstances(t *testing.T) (one, two *testApp, srvOne, srvTwo *httptest.Server) {
	t.Helper()
	shared := map[string]string{"JWT_SECRET": testSecret}
	one, two = newTestApp(t, shared), newTestApp(t, shared)
	srvOne, srvTwo = httptest.NewServer(one.Handler()), httptest.NewServer(two.Handler())
	t.Cleanup(srvOne.Close)
	t.Cleanup(srvTwo.Close)
	return one, two, srvOne, srvTwo
}

func TestSpectatorOnOneInstanceSeesMovesMadeThroughAnother(t *testing.T) {
	one, two, srvOne, srvTwo := twoInstances(t)
	p1, p2, game := one.match(t, `{"rounds": 1, "roundSeconds": 30}`)
	spectator := one.newPlayer(t)

	ws := dialWS(t, srvOne, tokenOf(spectator))
	ws.send(map[string]any{"type": "join-game", "gameId": game})
	joined := ws.next("joined")
	if joined["role"] != "spectator" || joined["state"] == nil {
		t.Fatalf("joined: %v", joined)
	}
	// The spectator count reaches every instance.
	if evs := ws.eventsUntil("game:spectators"); evs[len(evs)-1]["data"].(map[string]any)["count"] != float64(1) {
		t.Errorf("spectator count: %v", evs)
	}
	if r := two.act(t, p1, game, `{"type": "move", "move": "paper"}`); r.Code != 200 {
		t.Fatalf("move through the other instance: %d %s", r.Code, r.Body)
	}
	submitted := ws.eventsUntil("game:rps:round:submitted")
	if b, _ := json.Marshal(submitted); strings.Contains(string(b), "paper") {
		t.Fatalf("an event before the reveal carries the choice: %s", b)
	}
	if r := two.act(t, p2, game, `{"type": "move", "move": "rock"}`); r.Code != 200 {
		t.Fatalf("move through the other instance: %d %s", r.Code, r.Body)
	}
	reveal := ws.eventsUntil("game:rps:round:reveal")
	last := reveal[len(reveal)-1]
	if b, _ := json.Marshal(last); !strings.Contains(string(b), "paper") {
		t.Fatalf("the reveal does not show the choices: %s", b)
	}
	completed := ws.eventsUntil("game:completed")
	if completed[len(completed)-1]["data"].(map[string]any)["winnerId"] != p1.id {
		t.Fatalf("completed: %v", completed[len(completed)-1])
	}

	// A finished game's room is closed to new joins, on every instance.
	late := dialWS(t, srvTwo, tokenOf(p2))
	late.send(map[string]any{"type": "join-game", "gameId": game})
	if e := late.next("error"); e["code"] != "GAME_NOT_ACTIVE" {
		t.Fatalf("joining a completed game: %v", e)
	}
}

func TestResumeBySeqReturnsExactlyTheMissedEvents(t *testing.T) {
	a := newTestApp(t, nil)
	srv := httptest.NewServer(a.Handler())
	t.Cleanup(srv.Close)
	p1, p2, game := a.match(t, `{"rounds": 5, "roundSeconds": 30}`)
	for _, mv := range []string{"rock", "paper"} { // round 1: p2 wins
		a.act(t, p1, game, `{"type": "move", "move": "rock"}`)
		a.act(t, p2, game, fmt.Sprintf(`{"type": "move", "move": %q}`, mv))
	}
	all, err := a.Events.Events(context.Background(), domain.GameStreamOf(game), 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	const seen = 3
	ws := dialWS(t, srv, tokenOf(p1))
	ws.send(map[string]any{"type": "join-game", "gameId": game, "lastSeq": seen})
	if r := ws.next("resumed"); int(r["seq"].(float64)) != seen {
		t.Fatalf("resumed: %v, want seq %d", r, seen)
	}
	var got []int
	for len(got) < len(all)-seen {
		got = append(got, int(ws.next("event")["seq"].(float64)))
	}
	for i, seq := range got {
		if seq != seen+1+i {
			t.Fatalf("replayed seqs %v, want %d..%d in order", got, seen+1, len(all))
		}
	}
	// And then live events continue the sequence.
	a.act(t, p1, game, `{"type": "resign"}`)
	if ev := ws.next("event"); int(ev["seq"].(float64)) != len(all)+1 {
		t.Fatalf("first live event after the replay: %v, want seq %d", ev, len(all)+1)
	}
}

// answer reads frames until the answer to a join-game: joined, resumed
// or error.
func (w *wsClient) answer() map[string]any {
	w.t.Helper()
	w.conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	for {
		var m map[string]any
		if err := w.conn.ReadJSON(&m); err != nil {
			w.t.Fatalf("waiting for the answer to a join: %v", err)
		}
		switch m["type"] {
		case "joined", "resumed", "error":
			return m
		}
	}
}

// A client holding the seq of an event another instance just committed
// resumes on an instance that has not heard of it yet: the instance reads
// the game afresh and answers resumed, never a joined older than what the
// client holds. And a client that missed a game's end resumes after it:
// resumed, then the events it missed, up to game:completed.
func TestAResumeIsResumedOnAnInstanceBehindAndAfterTheEnd(t *testing.T) {
	one, _, srvOne, srvTwo := twoInstances(t)
	p1, p2, game := one.match(t, `{"rounds": 9, "roundSeconds": 30}`)
	lastSeq := func() int {
		t.Helper()
		evs, err := one.Events.Events(context.Background(), domain.GameStreamOf(game), 0, 500)
		if err != nil || len(evs) == 0 {
			t.Fatalf("the game's events: %v %v", evs, err)
		}
		return evs[len(evs)-1].Seq
	}
	watcher := dialWS(t, srvTwo, tokenOf(one.newPlayer(t)))
	watcher.send(map[string]any{"type": "join-game", "gameId": game}) // instance two reads the game now
	if j := watcher.answer(); j["type"] != "joined" {
		t.Fatalf("joining on instance two: %v", j)
	}
	watcher.send(map[string]any{"type": "leave-game", "gameId": game})
	for round := range 3 {
		one.act(t, p1, game, `{"type": "move", "move": "rock"}`)
		one.act(t, p2, game, `{"type": "move", "move": "rock"}`)
		seq := lastSeq()
		watcher.send(map[string]any{"type": "join-game", "gameId": game, "lastSeq": seq})
		if r := watcher.answer(); r["type"] != "resumed" || int(r["seq"].(float64)) != seq {
			t.Fatalf("round %d: resuming at seq %d on the instance that did not commit it: %v, want resumed at %d", round+1, seq, r, seq)
		}
		watcher.send(map[string]any{"type": "leave-game", "gameId": game})
	}

	seen := lastSeq()
	one.act(t, p1, game, `{"type": "resign"}`)
	late := dialWS(t, srvOne, tokenOf(p2))
	late.send(map[string]any{"type": "join-game", "gameId": game, "lastSeq": seen})
	if r := late.answer(); r["type"] != "resumed" || int(r["seq"].(float64)) != seen {
		t.Fatalf("resuming a finished game at seq %d: %v, want resumed", seen, r)
	}
	missed := late.eventsUntil("game:completed")
	for i, ev := range missed {
		if int(ev["seq"].(float64)) != seen+1+i {
			t.Fatalf("the events missed: %v, want seqs from %d in order", missed, seen+1)
		}
	}
	if missed[0]["event"] != "game:rps:resign" {
		t.Errorf("the first event missed: %v, want the resignation", missed[0])
	}
	// A join without a seq to resume from is still refused once the game ended.
	late.send(map[string]any{"type": "join-game", "gameId": game})
	if e := late.answer(); e["type"] != "error" || e["code"] != "GAME_NOT_ACTIVE" {
		t.Fatalf("joining a finished game afresh: %v, want GAME_NOT_ACTIVE", e)
	}
}

func TestWebSocketNeedsAuthentication(t *testing.T) {
	a := newTestApp(t, nil)
	srv := httptest.NewServer(a.Handler())
	t.Cleanup(srv.Close)
	_, resp, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(srv.URL, "http")+"/ws", nil)
	if err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("anonymous upgrade: err %v, response %v; want 401", err, resp)
	}
	p := a.newPlayer(t)
	ws := dialWS(t, srv, tokenOf(p))
	ws.send(map[string]any{"type": "join-game", "gameId": "00000000-0000-0000-0000-000000000000"})
	if e := ws.next("error"); e["code"] != "NOT_FOUND" {
		t.Fatalf("joining a missing game: %v", e)
	}
}

func TestDemoBotsKeepAGameGoing(t *testing.T) {
	// A database of its own: what the package's other tests leave in the
	// shared one (games, arenas, users) is none of the bots' business.
	a := newTestApp(t, map[string]string{"DEMO_BOTS": "2", "DATABASE_URL": dbtest.Fresh(t)})
	var rounds []struct {
		GameID string `bun:"game_id"`
		Status string `bun:"status"`
		Name   string `bun:"name"`
		Data   string `bun:"data"`
	}
	read := func() {
		rounds = rounds[:0]
		if err := a.DB.NewRaw(`SELECT g.id AS game_id, g.status, e.name, e.data::text AS data FROM games AS g
			JOIN game_events AS e ON e.game_id = g.id
			WHERE g.created_at > now() - interval '10 minutes' AND NOT EXISTS (SELECT FROM game_players AS p
				JOIN users AS u ON u.id = p.user_id WHERE p.game_id = g.id AND u.username NOT LIKE 'demo\_bot\_%')
			ORDER BY g.created_at, e.seq`).Scan(context.Background(), &rounds); err != nil {
			t.Fatal(err)
		}
	}
	// How soon is the bots' business and the machine's: only a round that
	// never comes (two minutes) fails the test.
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		read()
		for _, ev := range rounds {
			if ev.Name == "game:rps:round:reveal" && !strings.Contains(ev.Data, `"timeout"`) {
				return // the bots played a round themselves
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, ev := range rounds {
		t.Logf("game %s (%s): %s %s", ev.GameID, ev.Status, ev.Name, ev.Data)
	}
	t.Fatal("the demo bots never played a round")
}

func TestChallenges(t *testing.T) {
	a := newTestApp(t, nil)
	alice, bob, carol := a.newPlayer(t), a.newPlayer(t), a.newPlayer(t)
	challenge := func(from player, to string) response {
		return a.do(t, request{method: http.MethodPost, path: "/challenges", header: from.auth,
			body: `{"toUserId": "` + to + `", "gameType": "rps", "stakeMinor": 0, "settings": {"rounds": 1}}`})
	}
	r := challenge(alice, bob.id)
	if r.Code != http.StatusCreated || r.json(t)["status"] != "pending" {
		t.Fatalf("challenge: %d %s", r.Code, r.Body)
	}
	id := r.json(t)["id"].(string)
	if list := a.do(t, request{path: "/challenges", header: bob.auth}); !strings.Contains(list.Body.String(), id) {
		t.Errorf("bob's challenges do not list it: %s", list.Body)
	}
	challenge(alice, alice.id).wantError(t, 400, "VALIDATION_ERROR")
	challenge(alice, "00000000-0000-0000-0000-000000000000").wantError(t, 404, "NOT_FOUND")
	a.do(t, request{method: http.MethodPost, path: "/challenges/" + id + "/accept", header: carol.auth}).wantError(t, 404, "NOT_FOUND")
	a.do(t, request{method: http.MethodPost, path: "/challenges/" + id + "/accept", header: alice.auth}).wantError(t, 403, "FORBIDDEN")

	acc := a.do(t, request{method: http.MethodPost, path: "/challenges/" + id + "/accept", header: bob.auth})
	if acc.Code != 200 || acc.json(t)["status"] != "accepted" || acc.json(t)["gameId"] == nil {
		t.Fatalf("accept: %d %s", acc.Code, acc.Body)
	}
	if cg := a.do(t, request{path: "/users/me/current-game", header: alice.auth}).json(t); cg["gameId"] != acc.json(t)["gameId"] {
		t.Errorf("alice's current game: %v", cg)
	}
	a.do(t, request{method: http.MethodPost, path: "/challenges/" + id + "/accept", header: bob.auth}).wantError(t, 409, "CONFLICT")

	// Declined and expired challenges start nothing.
	id2 := challenge(carol, alice.id).json(t)["id"].(string)
	if r := a.do(t, request{method: http.MethodPost, path: "/challenges/" + id2 + "/decline", header: alice.auth}); r.json(t)["status"] != "declined" {
		t.Fatalf("decline: %s", r.Body)
	}
	dave := a.newPlayer(t)
	id3 := challenge(carol, dave.id).json(t)["id"].(string)
	if _, err := a.DB.ExecContext(context.Background(), "UPDATE challenges SET expires_at = now() - interval '1 second' WHERE id = ?", id3); err != nil {
		t.Fatal(err)
	}
	a.do(t, request{method: http.MethodPost, path: "/challenges/" + id3 + "/accept", header: dave.auth}).wantError(t, 409, "CONFLICT")
	if r := a.do(t, request{path: "/users/me/current-game", header: dave.auth}); r.Code != http.StatusNoContent {
		t.Errorf("an expired challenge started a game: %d %s", r.Code, r.Body)
	}
}

func TestStakesAreLockedAndPaidOut(t *testing.T) {
	a := newTestApp(t, nil)
	deposit := func(usdc int64) player {
		w, auth := a.funded(t, usdc)
		p := a.prepare(t, auth, a.depositAddress(t, auth), usdc)
		if r := a.submit(t, auth, p["intentId"].(string), signPrepared(t, w, p["transaction"].(string), nil)); r.Code != 200 {
			t.Fatalf("deposit: %d %s", r.Code, r.Body)
		}
		id := a.do(t, request{path: "/users/me", header: auth}).json(t)["id"].(string)
		return player{wallet: w, id: id, auth: auth}
	}
	p1, p2 := deposit(3_000_000), deposit(1_000_000)
	lobby := a.lobby(t, p1, `{"gameType": "rps", "stakeMinor": 1000000, "settings": {"rounds": 1}}`)
	a.join(t, p1, lobby)
	game := a.join(t, p2, lobby)["gameId"].(string)
	if b := a.balances(t, p1.auth); b.available != 2_000_000 || b.locked != 1_000_000 {
		t.Fatalf("p1 after the match: %+v, want 1 USDC locked", b)
	}
	a.act(t, p1, game, `{"type": "move", "move": "rock"}`)
	a.act(t, p2, game, `{"type": "move", "move": "scissors"}`)
	result := a.do(t, request{path: "/games/" + game}).json(t)["result"].(map[string]any)
	if result["potMinor"] != float64(2_000_000) || result["feeMinor"] != float64(20_000) || result["payoutMinor"] != float64(1_980_000) {
		t.Fatalf("result: %v", result)
	}
	if b := a.balances(t, p1.auth); b.available != 2_000_000+1_980_000 || b.locked != 0 {
		t.Errorf("winner after payout: %+v", b)
	}
	if b := a.balances(t, p2.auth); b.available != 0 || b.locked != 0 {
		t.Errorf("loser after payout: %+v", b)
	}
}

func TestChatScriptIsStoredAsTextAndRenderedEscaped(t *testing.T) {
	a := newTestApp(t, nil)
	p1, _, game := a.match(t, `{}`)
	const text = `<script>alert("hi")</script>`
	r := a.do(t, request{method: http.MethodPost, path: "/chat/game/" + game + "/messages", header: p1.auth,
		body: jsonBody(map[string]string{"text": text})})
	if r.Code != http.StatusCreated || r.json(t)["text"] != text {
		t.Fatalf("send: %d %s", r.Code, r.Body)
	}
	page := a.do(t, request{path: "/game/" + game, header: map[string]string{"Cookie": a.sessionCookie(t, p1.wallet)}})
	html := page.Body.String()
	if strings.Contains(html, `<script>alert(`) {
		t.Fatal("the game page carries the message as markup")
	}
	if !strings.Contains(html, `&lt;script&gt;alert(&#34;hi&#34;)&lt;/script&gt;`) {
		t.Fatalf("the game page does not show the message as text: %.300s", html[strings.Index(html, "chat-list"):])
	}
}

// sessionCookie signs w in as a browser and returns its Cookie header.
func (a *testApp) sessionCookie(t testing.TB, w wallet) string {
	t.Helper()
	msg := a.requestChallenge(t, w, "web")
	r := a.do(t, request{method: http.MethodPost, path: "/session", header: map[string]string{"Origin": "http://example.com"},
		body: jsonBody(map[string]string{"address": w.address(), "signedMessage": w.sign(msg)})})
	for _, c := range r.Result().Cookies() {
		if c.Name == "wager_session" {
			return "wager_session=" + c.Value
		}
	}
	t.Fatalf("no session cookie: %d %s", r.Code, r.Body)
	return ""
}
