package handlers_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"wager/chain"

	"github.com/gagliardetto/solana-go"
	"github.com/gorilla/websocket"
)

// The attacks of this file are the ones an outsider can make over HTTP:
// each test makes one and checks that the user it aims at does not notice.

// clientIP returns an address no other test of the package uses, so that
// the per-address limits start from nothing.
func clientIP() string {
	n := nextClientIP.Add(1)
	return fmt.Sprintf("100.%d.%d.%d", 64+rand.IntN(64), n/256%256, n%256)
}

var nextClientIP atomic.Int64

// handshakeFrom asks for a sign-in challenge for address as a client at ip.
func (a *testApp) handshakeFrom(t testing.TB, ip, address string) response {
	t.Helper()
	return a.do(t, request{method: http.MethodPost, path: "/auth/handshake", remoteAddr: ip + ":40000",
		body: jsonBody(map[string]string{"walletAddress": address}), header: appHeaders("agent-1")})
}

// retryAfter checks a 429 RATE_LIMITED answer and returns its Retry-After
// in seconds.
func retryAfter(t testing.TB, r response) int {
	t.Helper()
	r.wantError(t, http.StatusTooManyRequests, "RATE_LIMITED")
	s, err := strconv.Atoi(r.Header().Get("Retry-After"))
	if err != nil || s < 1 {
		t.Fatalf("Retry-After %q, want a whole number of seconds", r.Header().Get("Retry-After"))
	}
	return s
}

func TestHandshakesInSomeoneElsesNameDoNotLockThemOut(t *testing.T) {
	a := newTestApp(t, map[string]string{"AUTH_RATE_LIMIT": "120"})
	owner := newWallet(t)
	ownerIP, attackerIP := clientIP(), clientIP()

	// The owner asks for a challenge; then the attacker asks for 30 in
	// the owner's name, while other people sign in from elsewhere.
	first := a.handshakeFrom(t, ownerIP, owner.address()).json(t)
	granted, limited := 0, 0
	for range 30 {
		r := a.handshakeFrom(t, attackerIP, owner.address())
		if r.Code == http.StatusOK {
			granted++
		} else if wait := retryAfter(t, r); wait > 60 {
			t.Fatalf("Retry-After %d s for a one-minute window", wait)
		} else {
			limited++
		}
		other := newWallet(t)
		msg := a.handshakeFrom(t, clientIP(), other.address()).json(t)["message"].(string)
		if r := a.loginWith(t, other.address(), other.sign(msg), "agent-1"); r.Code != http.StatusOK {
			t.Fatalf("another wallet's sign-in during the attack: %d %s", r.Code, r.Body)
		}
	}
	if granted != 10 || limited != 20 {
		t.Errorf("30 handshakes for one wallet from one client: %d granted, %d refused; want 10 and 20", granted, limited)
	}

	// The owner still gets a challenge of their own, and either one signs
	// them in: a challenge never invalidates another.
	second := a.handshakeFrom(t, ownerIP, owner.address())
	if second.Code != http.StatusOK {
		t.Fatalf("the owner's handshake during the attack: %d %s", second.Code, second.Body)
	}
	if r := a.loginWith(t, owner.address(), owner.sign(first["message"].(string)), "agent-1"); r.Code != http.StatusOK {
		t.Fatalf("the owner signing their first challenge after the attack: %d %s", r.Code, r.Body)
	}
	r := a.do(t, request{method: http.MethodPost, path: "/auth/login-wallet", header: appHeaders("agent-1"),
		body: jsonBody(map[string]string{"address": owner.address(), "nonce": second.json(t)["nonce"].(string),
			"signedMessage": owner.sign(second.json(t)["message"].(string))})})
	if r.Code != http.StatusOK {
		t.Fatalf("the owner signing their second challenge, named by its nonce: %d %s", r.Code, r.Body)
	}
	// A used challenge stays used.
	a.loginWith(t, owner.address(), owner.sign(first["message"].(string)), "agent-1").wantError(t, 401, "UNAUTHORIZED")
}

func TestHandshakesAreLimitedPerClientAddress(t *testing.T) {
	a := newTestApp(t, map[string]string{"AUTH_RATE_LIMIT": "20"})
	ip := clientIP()
	for i := range 20 {
		if r := a.handshakeFrom(t, ip, newWallet(t).address()); r.Code != http.StatusOK {
			t.Fatalf("handshake %d of 20: %d %s", i+1, r.Code, r.Body)
		}
	}
	r := a.handshakeFrom(t, ip, newWallet(t).address())
	retryAfter(t, r)
	if msg := r.json(t)["message"].(string); !strings.Contains(msg, "20 sign-in requests a minute from one address") {
		t.Errorf("the refusal does not say which limit: %q", msg)
	}
	// X-Forwarded-For from a client that is not a trusted proxy changes
	// nothing; another client is not limited.
	other := clientIP()
	spoofed := a.do(t, request{method: http.MethodPost, path: "/auth/handshake", remoteAddr: ip + ":40000",
		body:   jsonBody(map[string]string{"walletAddress": newWallet(t).address()}),
		header: map[string]string{"X-App-Id": "agent-1", "X-Forwarded-For": other, "X-Real-Ip": other}})
	retryAfter(t, spoofed)
	if r := a.handshakeFrom(t, other, newWallet(t).address()); r.Code != http.StatusOK {
		t.Fatalf("another client's handshake: %d %s", r.Code, r.Body)
	}

	// Behind a trusted proxy the client is the one it names.
	proxied := newTestApp(t, map[string]string{"AUTH_RATE_LIMIT": "1", "TRUSTED_PROXIES": "10.0.0.0/8"})
	via := func(client string) response {
		return proxied.do(t, request{method: http.MethodPost, path: "/auth/handshake", remoteAddr: "10.1.2.3:5000",
			body:   jsonBody(map[string]string{"walletAddress": newWallet(t).address()}),
			header: map[string]string{"X-App-Id": "agent-1", "X-Forwarded-For": client}})
	}
	behind := clientIP()
	if r := via(behind); r.Code != http.StatusOK {
		t.Fatalf("first handshake through the proxy: %d %s", r.Code, r.Body)
	}
	retryAfter(t, via(behind))
	if r := via(clientIP()); r.Code != http.StatusOK {
		t.Fatalf("another client through the same proxy: %d %s", r.Code, r.Body)
	}
}

func TestExpiredSignInDataIsDeleted(t *testing.T) {
	a := newTestApp(t, nil)
	expired, current := newWallet(t), newWallet(t)
	a.requestChallenge(t, expired, "agent-1")
	a.requestChallenge(t, expired, "agent-1")
	a.requestChallenge(t, current, "agent-1")
	a.sessionCookie(t, expired)
	a.sessionCookie(t, current)
	ctx := context.Background()
	const ofUser = "user_id = (SELECT id FROM users WHERE wallet_address = ?)"
	count := func(table, where string, w wallet) (n int) {
		t.Helper()
		if err := a.DB.NewSelect().Table(table).ColumnExpr("count(*)").Where(where, w.address()).Scan(ctx, &n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	for table, where := range map[string]string{"auth_challenges": "wallet_address = ?", "sessions": ofUser} {
		if _, err := a.DB.NewUpdate().Table(table).Set("expires_at = now() - interval '1 second'").
			Where(where, expired.address()).Exec(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Auth.DeleteExpired(ctx); err != nil {
		t.Fatal(err)
	}
	if c, s := count("auth_challenges", "wallet_address = ?", expired), count("sessions", ofUser, expired); c != 0 || s != 0 {
		t.Errorf("expired: %d challenges and %d sessions left, want none", c, s)
	}
	// The current challenge was consumed by the sign-in; the session stays.
	if c, s := count("auth_challenges", "wallet_address = ?", current), count("sessions", ofUser, current); c != 2 || s != 1 {
		t.Errorf("current: %d challenges and %d sessions left, want 2 and 1", c, s)
	}
}

func TestAnotherSitesFormCannotSignAVisitorIn(t *testing.T) {
	a := newTestApp(t, nil)
	w := newWallet(t)
	msg := a.requestChallenge(t, w, "web")
	body := jsonBody(map[string]string{"address": w.address(), "signedMessage": w.sign(msg)})
	for _, h := range []map[string]string{
		{"Origin": "https://evil.example", "Content-Type": "text/plain"}, // a cross-site <form enctype=text/plain>
		{"Origin": "https://evil.example"},
		{"Origin": "null", "Content-Type": "text/plain"},
		{"Referer": "https://evil.example/page", "Content-Type": "text/plain"},
		{"Origin": "http://example.com", "Content-Type": "text/plain"}, // same site, but a form
		{"Content-Type": "text/plain"},
		{},
	} {
		r := a.do(t, request{method: http.MethodPost, path: "/session", body: body, header: h})
		r.wantError(t, http.StatusForbidden, "FORBIDDEN")
		if c := r.Header().Get("Set-Cookie"); c != "" {
			t.Errorf("headers %v: a refused sign-in set a cookie: %s", h, c)
		}
	}
	// Refused before the signature was read: the challenge is still good.
	r := a.do(t, request{method: http.MethodPost, path: "/session", body: body,
		header: map[string]string{"Origin": "http://example.com"}})
	if r.Code != http.StatusOK || !strings.Contains(r.Header().Get("Set-Cookie"), "wager_session=") {
		t.Fatalf("the site's own sign-in: %d %s %v", r.Code, r.Body, r.Header())
	}
	same := a.do(t, request{method: http.MethodPost, path: "/session", body: body,
		header: map[string]string{"Referer": "http://example.com/login"}})
	if same.Code != http.StatusUnauthorized {
		t.Errorf("a used challenge from the site's own page (Referer only): %d %s, want 401", same.Code, same.Body)
	}
}

func TestASignedOutTokenIsRefusedByEveryInstance(t *testing.T) {
	shared := map[string]string{"JWT_SECRET": testSecret}
	one, two := newTestApp(t, shared), newTestApp(t, shared)
	p := one.newPlayer(t)
	kept := one.newPlayer(t)
	for _, a := range []*testApp{one, two} {
		if r := a.do(t, request{path: "/users/me", header: p.auth}); r.Code != http.StatusOK {
			t.Fatalf("before signing out: %d %s", r.Code, r.Body)
		}
	}
	if r := one.do(t, request{method: http.MethodPost, path: "/auth/logout", header: p.auth}); r.Code != http.StatusNoContent {
		t.Fatalf("sign out: %d %s", r.Code, r.Body)
	}
	one.do(t, request{path: "/users/me", header: p.auth}).wantError(t, 401, "UNAUTHORIZED")
	eventually(t, "the other instance refuses the signed-out token", func() bool {
		return two.do(t, request{path: "/users/me", header: p.auth}).Code == http.StatusUnauthorized
	})
	srv := httptest.NewServer(two.Handler())
	t.Cleanup(srv.Close)
	if _, resp, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(srv.URL, "http")+"/ws?token="+tokenOf(p), nil); err == nil ||
		resp == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a socket with the signed-out token: %v %v, want 401", err, resp)
	}
	// An instance started later knows it too; the user's other tokens
	// still work.
	three := newTestApp(t, shared)
	three.do(t, request{path: "/users/me", header: p.auth}).wantError(t, 401, "UNAUTHORIZED")
	if r := three.do(t, request{path: "/users/me", header: kept.auth}); r.Code != http.StatusOK {
		t.Errorf("another token after a sign-out: %d %s", r.Code, r.Body)
	}

	// Signing out in the browser ends the session on every instance.
	cookie := one.sessionCookie(t, newWallet(t))
	page := func(a *testApp) response {
		return a.do(t, request{path: "/settings", header: map[string]string{"Cookie": cookie}})
	}
	if r := page(two); r.Code != http.StatusOK {
		t.Fatalf("the settings page with a session: %d", r.Code)
	}
	csrf := one.csrfOf(t, cookie)
	if r := one.do(t, request{method: http.MethodPost, path: "/logout", body: "_csrf=" + url.QueryEscape(csrf),
		header: map[string]string{"Cookie": cookie, "Content-Type": "application/x-www-form-urlencoded"}}); r.Code != http.StatusSeeOther {
		t.Fatalf("browser sign-out: %d %s", r.Code, r.Body)
	}
	eventually(t, "the other instance forgets the ended session", func() bool {
		return page(two).Code == http.StatusSeeOther // to the sign-in page
	})
}

// csrfOf reads the CSRF token a page gives the session of cookie (as
// sessionCookie returns it).
func (a *testApp) csrfOf(t testing.TB, cookie string) string {
	t.Helper()
	html := a.do(t, request{path: "/settings", header: map[string]string{"Cookie": cookie}}).Body.String()
	_, rest, ok := strings.Cut(html, `name="csrf-token" content="`)
	token, _, _ := strings.Cut(rest, `"`)
	if !ok || token == "" {
		t.Fatal("the page has no CSRF token")
	}
	return token
}

// eventually polls cond, for news that travels between instances; only
// news that never comes (a minute) fails.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: never", what)
		}
	}
}

func TestTheFeePayersSpendingPerUserIsBoundedPerDay(t *testing.T) {
	const budget = 60_000 // lamports: a few fees
	a := newTestApp(t, map[string]string{"FEE_PAYER_DAILY_LAMPORTS": strconv.Itoa(budget)})
	feePayer := a.Keys.FeePayer().PublicKey()

	// The cheapest loop is refused outright: 1 minor unit in, 1 out.
	w, auth := a.funded(t, 50_000_000)
	deposit := a.depositAddress(t, auth)
	r := a.do(t, request{method: http.MethodPost, path: "/wallets/transfer/prepare", header: auth,
		body: jsonBody(map[string]any{"toAddress": deposit, "amountMinor": 1})})
	if e := r.wantError(t, 400, "VALIDATION_ERROR"); !strings.Contains(e["fields"].(map[string]any)["amountMinor"].(string), "must be at least 0.01 USDC for a deposit") {
		t.Errorf("a 1-unit deposit: %v, want the minimum named", e)
	}
	a.do(t, request{method: http.MethodPost, path: "/wallets/withdraw", header: auth, body: `{"amountMinor": 1}`}).
		wantError(t, 400, "VALIDATION_ERROR")

	// Someone else deposits first (the vault's own token account, which
	// the platform opens once, is not the user's spending).
	other, otherAuth := a.funded(t, 1_000_000)
	otherDeposit := func() response {
		p := a.prepare(t, otherAuth, a.depositAddress(t, otherAuth), 100_000)
		return a.submit(t, otherAuth, p["intentId"].(string), signPrepared(t, other, p["transaction"].(string), nil))
	}
	if r := otherDeposit(); r.Code != http.StatusOK {
		t.Fatalf("another user's deposit: %d %s", r.Code, r.Body)
	}

	// The loop at the minimums stops at the day's budget.
	before := a.lamports(t, feePayer)
	rounds, refused := 0, false
	for !refused && rounds < 20 {
		p := a.prepare(t, auth, deposit, 100_000)
		r := a.submit(t, auth, p["intentId"].(string), signPrepared(t, w, p["transaction"].(string), nil))
		if r.Code == http.StatusTooManyRequests {
			retryAfter(t, r)
			refused = true
			break
		}
		if r.Code != http.StatusOK {
			t.Fatalf("deposit %d: %d %s", rounds+1, r.Code, r.Body)
		}
		balance := a.balances(t, auth)
		r = a.do(t, request{method: http.MethodPost, path: "/wallets/withdraw", header: auth, body: `{"amountMinor": 100000}`})
		if r.Code == http.StatusTooManyRequests {
			retryAfter(t, r)
			if after := a.balances(t, auth); after != balance {
				t.Errorf("a refused withdrawal moved money: %+v, was %+v", after, balance)
			}
			refused = true
			break
		}
		if r.Code != http.StatusOK {
			t.Fatalf("withdrawal %d: %d %s", rounds+1, r.Code, r.Body)
		}
		rounds++
	}
	spent := before - a.lamports(t, feePayer)
	t.Logf("%d deposit and withdrawal rounds before the refusal; the fee payer spent %d lamports", rounds, spent)
	if !refused {
		t.Fatalf("20 rounds and no refusal")
	}
	if spent > budget || spent <= 0 {
		t.Errorf("the fee payer spent %d lamports for the user, want at most the budget %d", spent, budget)
	}

	// Someone else still gets their deposit paid for.
	if r := otherDeposit(); r.Code != http.StatusOK {
		t.Fatalf("another user's deposit: %d %s", r.Code, r.Body)
	}
}

func TestTransfersToThePlatformsOwnAddressesAreRefused(t *testing.T) {
	a := newTestApp(t, nil)
	_, _, game := a.match(t, `{"rounds": 1}`)
	_, auth := a.funded(t, 1_000_000)
	for name, to := range map[string]string{
		"a game's escrow": a.Keys.Escrow(game).PublicKey().String(),
		"the fee payer":   a.Keys.FeePayer().PublicKey().String(),
	} {
		r := a.do(t, request{method: http.MethodPost, path: "/wallets/transfer/prepare", header: auth,
			body: jsonBody(map[string]any{"toAddress": to, "amountMinor": 10_000})})
		e := r.wantError(t, 400, "VALIDATION_ERROR")
		if reason, _ := e["fields"].(map[string]any)["toAddress"].(string); !strings.Contains(reason, "platform's own addresses") ||
			!strings.Contains(reason, a.depositAddress(t, auth)) {
			t.Errorf("a transfer to %s: %v, want the reason and the deposit address", name, e)
		}
	}
}

// A plain transfer goes to the associated token account of the wallet it
// names: named a token account instead (the vault's, or a friend's USDC
// account copied from an explorer), the USDC would land in an account of
// that token account, which no key can spend. Such an address is refused.
func TestTransfersToATokenAccountAreRefused(t *testing.T) {
	a := newTestApp(t, nil)
	a.depositor(t, 1_000_000) // the vault's USDC account exists from the first deposit on
	friend, _ := a.funded(t, 1_000_000)
	_, auth := a.funded(t, 1_000_000)
	for name, to := range map[string]solana.PublicKey{
		"the vault's USDC account": chain.ATA(a.Keys.Vault().PublicKey(), a.Money.Mint()),
		"a friend's USDC account":  chain.ATA(solana.MustPublicKeyFromBase58(friend.address()), a.Money.Mint()),
	} {
		r := a.do(t, request{method: http.MethodPost, path: "/wallets/transfer/prepare", header: auth,
			body: jsonBody(map[string]any{"toAddress": to.String(), "amountMinor": 10_000})})
		e := r.wantError(t, 400, "VALIDATION_ERROR")
		if reason, _ := e["fields"].(map[string]any)["toAddress"].(string); !strings.Contains(reason, "token account") {
			t.Errorf("a transfer to %s: %v, want the reason", name, e)
		}
	}
	// The friend's wallet itself is fine.
	r := a.do(t, request{method: http.MethodPost, path: "/wallets/transfer/prepare", header: auth,
		body: jsonBody(map[string]any{"toAddress": friend.address(), "amountMinor": 10_000})})
	if r.Code != http.StatusOK {
		t.Fatalf("a transfer to the friend's wallet: %d %s", r.Code, r.Body)
	}
}

func TestUsersSocketsAndMessagesAreBounded(t *testing.T) {
	a := newTestApp(t, nil)
	srv := httptest.NewServer(a.Handler())
	t.Cleanup(srv.Close)
	p1, p2, game := a.match(t, `{"rounds": 3, "roundSeconds": 60}`)
	flooder, watcher := a.newPlayer(t), a.newPlayer(t)

	url := "ws" + strings.TrimPrefix(srv.URL, "http") + "/ws?token="
	var held []*websocket.Conn
	for range 20 {
		c, _, err := websocket.DefaultDialer.Dial(url+tokenOf(flooder), nil)
		if err != nil {
			t.Fatalf("socket %d: %v", len(held)+1, err)
		}
		t.Cleanup(func() { c.Close() })
		held = append(held, c)
	}
	_, resp, err := websocket.DefaultDialer.Dial(url+tokenOf(flooder), nil)
	if err == nil || resp == nil || resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("the 21st socket of one user: %v %v, want 429", err, resp)
	}

	ws := dialWS(t, srv, tokenOf(watcher))
	ws.send(map[string]any{"type": "join-game", "gameId": game})
	ws.next("joined")

	// One of the flooder's sockets sends join/leave as fast as it can: it
	// is closed; the flooder's other sockets and the watcher's are not.
	flood := held[0]
	closed := make(chan int, 1)
	go func() {
		for {
			if _, _, err := flood.ReadMessage(); err != nil {
				code := -1
				if ce, ok := err.(*websocket.CloseError); ok {
					code = ce.Code
				} else {
					t.Logf("the flooding socket's read ended with %v", err)
				}
				closed <- code
				return
			}
		}
	}()
	for i := 0; i < 500; i++ {
		typ := "join-game"
		if i%2 == 1 {
			typ = "leave-game"
		}
		if err := flood.WriteJSON(map[string]any{"type": typ, "gameId": game}); err != nil {
			break
		}
	}
	select {
	case code := <-closed:
		if code != websocket.ClosePolicyViolation {
			t.Errorf("the flooding socket closed with %d, want %d (policy violation)", code, websocket.ClosePolicyViolation)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the flooding socket is still open")
	}
	if err := held[1].WriteJSON(map[string]any{"type": "join-game", "gameId": game}); err != nil {
		t.Fatal(err)
	}
	held[1].SetReadDeadline(time.Now().Add(5 * time.Second))
	var joined map[string]any
	if err := held[1].ReadJSON(&joined); err != nil || joined["type"] != "joined" {
		t.Fatalf("the flooder's other socket: %v %v", joined, err)
	}
	a.act(t, p1, game, `{"type": "move", "move": "rock"}`)
	a.act(t, p2, game, `{"type": "move", "move": "paper"}`)
	ws.eventsUntil("game:rps:round:reveal")

	// A message larger than 4 KiB closes its socket too.
	if err := held[2].WriteMessage(websocket.TextMessage, []byte(`{"type":"join-game","gameId":"`+strings.Repeat("a", 5000)+`"}`)); err != nil {
		t.Fatal(err)
	}
	held[2].SetReadDeadline(time.Now().Add(5 * time.Second))
	for {
		if _, _, err := held[2].ReadMessage(); err != nil {
			if ce, ok := err.(*websocket.CloseError); !ok || ce.Code != websocket.CloseMessageTooBig {
				t.Errorf("after a 5 KB message: %v, want close %d", err, websocket.CloseMessageTooBig)
			}
			break
		}
	}
}
