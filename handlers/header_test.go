package handlers_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// balanceNotice waits for the next balance notice on an API socket and
// returns its available and locked amounts.
func balanceNotice(t *testing.T, ws *wsClient) (available, locked float64) {
	t.Helper()
	for {
		n := ws.next("notice")
		if n["notice"] != "balance" {
			continue
		}
		data, _ := n["data"].(map[string]any)
		if data == nil {
			t.Fatalf("balance notice without data: %v", n)
		}
		return data["availableMinor"].(float64), data["lockedMinor"].(float64)
	}
}

// registered makes a round trip on an API socket, so that the hub has
// registered it before the test moves money.
func registered(ws *wsClient) {
	ws.send(map[string]any{"type": "join-game", "gameId": "00000000-0000-0000-0000-000000000000"})
	ws.next("error")
}

func TestBalanceChangesReachTheUsersSockets(t *testing.T) {
	a := newTestApp(t, nil)
	srv := httptest.NewServer(a.Handler())
	t.Cleanup(srv.Close)

	// A deposit: the API socket gets the notice, the page's socket the
	// header's balance as an out-of-band fragment.
	w1, auth1 := a.funded(t, 3_000_000)
	// A page's socket gets no answers to wait for: it is registered just
	// after its upgrade, long before the deposit below commits.
	page := dialPage(t, srv, a.sessionCookie(t, w1))
	api := dialWS(t, srv, strings.TrimPrefix(auth1["Authorization"], "Bearer "))
	registered(api)

	p := a.prepare(t, auth1, a.depositAddress(t, auth1), 3_000_000)
	if r := a.submit(t, auth1, p["intentId"].(string), signPrepared(t, w1, p["transaction"].(string), nil)); r.Code != 200 {
		t.Fatalf("deposit: %d %s", r.Code, r.Body)
	}
	if av, lo := balanceNotice(t, api); av != 3_000_000 || lo != 0 {
		t.Fatalf("after the deposit: got available %v locked %v, want 3000000 and 0", av, lo)
	}
	frag := readUntil(t, page, `id="nav-balance"`)
	if !strings.Contains(frag, `hx-swap-oob="true"`) || !strings.Contains(frag, "3.00 USDC") || strings.HasPrefix(frag, "{") {
		t.Fatalf("the page's balance fragment: %s", frag)
	}

	// A staked game: the stake is locked when it starts, and the winner is
	// told the payout when it is settled.
	w2, auth2 := a.funded(t, 1_000_000)
	p = a.prepare(t, auth2, a.depositAddress(t, auth2), 1_000_000)
	if r := a.submit(t, auth2, p["intentId"].(string), signPrepared(t, w2, p["transaction"].(string), nil)); r.Code != 200 {
		t.Fatalf("second deposit: %d %s", r.Code, r.Body)
	}
	p1 := player{wallet: w1, auth: auth1}
	p2 := player{wallet: w2, auth: auth2}
	lobby := a.lobby(t, p1, `{"gameType": "rps", "stakeMinor": 1000000, "settings": {"rounds": 1}}`)
	a.join(t, p1, lobby)
	game := a.join(t, p2, lobby)["gameId"].(string)
	if av, lo := balanceNotice(t, api); av != 2_000_000 || lo != 1_000_000 {
		t.Fatalf("after the stake was locked: got available %v locked %v, want 2000000 and 1000000", av, lo)
	}
	a.act(t, p1, game, `{"type": "move", "move": "rock"}`)
	a.act(t, p2, game, `{"type": "move", "move": "scissors"}`)
	if av, lo := balanceNotice(t, api); av != 2_000_000+1_980_000 || lo != 0 {
		t.Fatalf("after the payout: got available %v locked %v, want 3980000 and 0", av, lo)
	}
	if frag := readUntil(t, page, "3.98 USDC"); !strings.Contains(frag, `id="nav-balance"`) {
		t.Fatalf("the page's balance after the payout: %s", frag)
	}
}

// dialPage opens a page's socket (HTML fragments) with a session cookie.
func dialPage(t *testing.T, srv *httptest.Server, cookie string) *websocket.Conn {
	t.Helper()
	url := "ws" + strings.TrimPrefix(srv.URL, "http") + "/ws?format=html"
	conn, resp, err := websocket.DefaultDialer.Dial(url, http.Header{"Cookie": {cookie}, "Origin": {srv.URL}})
	if err != nil {
		t.Fatalf("dial the page socket: %v (%v)", err, resp)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// readUntil reads a socket's frames until one contains want.
func readUntil(t *testing.T, conn *websocket.Conn, want string) string {
	t.Helper()
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	for {
		_, b, err := conn.ReadMessage()
		if err != nil {
			t.Fatalf("waiting for a frame with %s: %v", want, err)
		}
		if strings.Contains(string(b), want) {
			return string(b)
		}
	}
}

func TestEveryPageOfASignedInUserHasOneLiveSocketAndTheBalance(t *testing.T) {
	a := newTestApp(t, nil)
	p1, _, game := a.match(t, `{"rounds": 3, "roundSeconds": 60}`)
	cookie := a.sessionCookie(t, p1.wallet)
	name := a.do(t, request{path: "/users/me", header: p1.auth}).json(t)["username"].(string)
	for _, path := range []string{"/", "/wallet", "/settings", "/game/" + game, "/u/" + name} {
		r := a.do(t, request{path: path, header: map[string]string{"Cookie": cookie}})
		body := r.Body.String()
		if r.Code != 200 {
			t.Fatalf("%s: %d", path, r.Code)
		}
		if n := strings.Count(body, "ws-connect="); n != 1 {
			t.Errorf("%s opens %d live sockets, want 1", path, n)
		}
		if !strings.Contains(body, `data-testid="nav-balance"`) || !strings.Contains(body, "0.00 USDC") {
			t.Errorf("%s: the header does not show the balance 0.00 USDC", path)
		}
		if !strings.Contains(body, `data-testid="nav-avatar"`) {
			t.Errorf("%s: the header has no avatar", path)
		}
	}
	// Signed out: no socket, no balance.
	r := a.do(t, request{path: "/game/" + game})
	if body := r.Body.String(); strings.Contains(body, "ws-connect=") || strings.Contains(body, "nav-balance") {
		t.Error("a signed-out visitor's page opens a socket or shows a balance")
	}
}
