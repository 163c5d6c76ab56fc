package contract_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	wager "wager.example.com/sdk"
	"wager.example.com/sdk/api"
	"wager/e2e/testserver"
)

// socket is a raw live socket that keeps every frame it receives.
type socket struct {
	t    testing.TB
	name string
	conn *websocket.Conn

	mu     sync.Mutex
	frames []json.RawMessage
	done   chan struct{}
}

func dial(t testing.TB, s *testserver.Server, name string, c *wager.Client) *socket {
	t.Helper()
	token, _ := c.Token()
	h := http.Header{"Authorization": {"Bearer " + token}, "X-App-Id": {"contract-test"}, "X-SDK-Version": {wager.Version}}
	conn, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(s.URL, "http")+"/ws", h)
	if err != nil {
		t.Fatalf("dial /ws as %s: %v", name, err)
	}
	w := &socket{t: t, name: name, conn: conn, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for {
			_, b, err := conn.ReadMessage()
			if err != nil {
				return
			}
			w.mu.Lock()
			w.frames = append(w.frames, b)
			w.mu.Unlock()
		}
	}()
	t.Cleanup(func() { conn.Close() })
	return w
}

func (w *socket) send(v any) {
	w.t.Helper()
	if err := w.conn.WriteJSON(v); err != nil {
		w.t.Fatalf("%s: send %v: %v", w.name, v, err)
	}
}

// wait waits until a frame for which match is true arrived; the test
// fails at once when none did within 15 s.
func (w *socket) wait(what string, match func(map[string]any) bool) map[string]any {
	w.t.Helper()
	m := w.expect(what, match)
	if m == nil {
		w.t.FailNow()
	}
	return m
}

// expect is wait that lets the test go on (failed) when no frame came.
func (w *socket) expect(what string, match func(map[string]any) bool) map[string]any {
	w.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for seen := 0; time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		w.mu.Lock()
		frames := w.frames[seen:]
		seen = len(w.frames)
		w.mu.Unlock()
		for _, b := range frames {
			var m map[string]any
			json.Unmarshal(b, &m)
			if match(m) {
				return m
			}
		}
	}
	w.t.Errorf("%s: no %s within 15 s", w.name, what)
	return nil
}

func frameIs(typ, name string) func(map[string]any) bool {
	return func(m map[string]any) bool {
		return m["type"] == typ && (name == "" || m["event"] == name || m["notice"] == name)
	}
}

// all returns the frames received so far.
func (w *socket) all() []json.RawMessage {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]json.RawMessage(nil), w.frames...)
}

// scene is a platform after a tour of its features: two players who
// played a staked game (won by first) with a spectator who bet, traded,
// donated and chatted in it, and a free game between them still running.
type scene struct {
	s                      *testserver.Server
	first, second, watcher *wager.Client
	staked, free           string // game ids
	lobby, challenge       string
	sockets                []*socket
}

// play sets the scene, with live sockets of the three users open
// throughout (and every client message and frame kind exercised on the
// watcher's).
func play(t *testing.T) *scene {
	t.Helper()
	ctx := context.Background()
	sc := &scene{s: startServer(t)}
	sc.first, _ = newClient(t, sc.s)
	sc.second, _ = newClient(t, sc.s)
	sc.watcher, _ = newClient(t, sc.s)
	for _, c := range []*wager.Client{sc.first, sc.second, sc.watcher} {
		fund(t, c, 5_000_000, 2_000_000)
	}
	one, two, eye := dial(t, sc.s, "first", sc.first), dial(t, sc.s, "second", sc.second), dial(t, sc.s, "watcher", sc.watcher)
	sc.sockets = []*socket{one, two, eye}

	// A challenge, declined.
	ch, err := sc.first.API.PostChallengesWithResponse(ctx, nil, api.ChallengeRequest{GameType: "rps", StakeMinor: 0,
		ToUserId: ptr(sc.second.UserID()), Settings: wager.Settings(map[string]any{"rounds": 1})})
	must(t, "challenge", err)
	sc.challenge = ch.JSON201.Id
	two.wait("challenge:received", frameIs("notice", "challenge:received"))
	_, err = sc.second.API.PostChallengesByIdDeclineWithResponse(ctx, sc.challenge, nil)
	must(t, "decline", err)
	one.wait("challenge:declined", frameIs("notice", "challenge:declined"))

	// A staked game.
	l, err := sc.first.API.PostLobbiesWithResponse(ctx, nil, api.LobbyRequest{GameType: "rps", StakeMinor: 1_000_000,
		Settings: wager.Settings(map[string]any{"rounds": 3, "roundSeconds": 60})})
	must(t, "open a lobby", err)
	sc.lobby = l.JSON201.Id
	_, err = sc.first.API.PostLobbiesByIdJoinQueueWithResponse(ctx, sc.lobby, nil)
	must(t, "first queues", err)
	j, err := sc.second.API.PostLobbiesByIdJoinQueueWithResponse(ctx, sc.lobby, nil)
	must(t, "second queues", err)
	sc.staked = *j.JSON200.GameId
	one.wait("game:matched", frameIs("notice", "game:matched"))
	one.send(map[string]any{"type": "join-game", "gameId": sc.staked})
	one.wait("joined", frameIs("joined", ""))
	eye.send(map[string]any{"type": "join-game", "gameId": sc.staked})
	eye.wait("joined", frameIs("joined", ""))
	eye.wait("game:spectators", frameIs("event", "game:spectators"))

	// The watcher bets, trades, donates and chats.
	_, err = sc.watcher.Bet(ctx, sc.staked, sc.first.UserID(), 10_000)
	must(t, "bet", err)
	_, err = sc.watcher.API.PostGamesByIdMarketOrdersBuyWithResponse(ctx, sc.staked, nil,
		api.MarketOrderRequest{OutcomeId: sc.first.UserID(), PriceMinor: 600_000, Shares: 1})
	must(t, "buy", err)
	_, err = sc.second.API.PostGamesByIdMarketOrdersBuyWithResponse(ctx, sc.staked, nil,
		api.MarketOrderRequest{OutcomeId: sc.second.UserID(), PriceMinor: 400_000, Shares: 1})
	if err == nil {
		t.Fatal("a player traded in their own game's market")
	}
	_, err = sc.watcher.Donate(ctx, sc.staked, 10_000)
	must(t, "donate", err)
	_, err = sc.watcher.API.PostChatByTypeByIdMessagesWithResponse(ctx, "game", sc.staked, nil, api.ChatRequest{Text: "good luck"})
	must(t, "chat", err)
	eye.wait("game:chat:message", frameIs("event", "game:chat:message"))

	// Every client message: ping, a join of no game, leave, and a resume.
	eye.send(map[string]any{"type": "ping"})
	eye.wait("pong", frameIs("pong", ""))
	eye.send(map[string]any{"type": "join-game", "gameId": "00000000-0000-0000-0000-000000000000"})
	eye.wait("error", frameIs("error", ""))
	eye.send(map[string]any{"type": "leave-game", "gameId": sc.staked})
	eye.wait("left", frameIs("left", ""))
	eye.send(map[string]any{"type": "join-game", "gameId": sc.staked, "lastSeq": 1})
	eye.expect("resumed", frameIs("resumed", ""))

	// First wins 2-0.
	for range 2 {
		for _, m := range []struct {
			c    *wager.Client
			move string
		}{{sc.first, "rock"}, {sc.second, "scissors"}} {
			_, err := m.c.API.PostGamesByIdActionsWithResponse(ctx, sc.staked, nil, api.GameAction{Type: "move", Move: moveBody(t, m.move)})
			must(t, "move", err)
		}
	}
	eye.wait("game:completed", frameIs("event", "game:completed"))
	one.wait("a notification", frameIs("notice", "notification"))
	_, err = sc.second.API.PostGamesByIdRematchWithResponse(ctx, sc.staked, nil)
	must(t, "ask for a rematch", err)
	one.wait("rematch:requested", frameIs("notice", "rematch:requested"))

	// A free game that goes on.
	f, err := sc.second.API.PostLobbiesWithResponse(ctx, nil, api.LobbyRequest{GameType: "rps"})
	must(t, "open a free lobby", err)
	_, err = sc.second.API.PostLobbiesByIdJoinQueueWithResponse(ctx, f.JSON201.Id, nil)
	must(t, "second queues", err)
	jf, err := sc.first.API.PostLobbiesByIdJoinQueueWithResponse(ctx, f.JSON201.Id, nil)
	must(t, "first queues", err)
	sc.free = *jf.JSON200.GameId
	one.send(map[string]any{"type": "join-game", "gameId": sc.free})
	one.wait("joined the free game", frameIs("joined", ""))
	_, err = sc.first.API.PostGamesByIdActionsWithResponse(ctx, sc.free, nil, api.GameAction{Type: "move", Move: moveBody(t, "paper")})
	must(t, "move in the free game", err)
	one.wait("a submission", frameIs("event", "game:rps:round:submitted"))
	return sc
}

func must(t testing.TB, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func ptr[T any](v T) *T { return &v }

// moveBody is a move as the body of a move action.
func moveBody(t testing.TB, move any) *api.GameMove {
	t.Helper()
	m, err := wager.MoveOf(move)
	if err != nil {
		t.Fatal(err)
	}
	return m
}
