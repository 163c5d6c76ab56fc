package handlers_test

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gagliardetto/solana-go"
	"github.com/golang-jwt/jwt/v5"

	"wager/domain/flags"
	"wager/handlers/api"
)

const testSecret = "test-secret-test-secret-test-secret!"

// wallet is a real ed25519 keypair as a Solana wallet holds it.
type wallet struct{ key solana.PrivateKey }

func newWallet(t testing.TB) wallet {
	t.Helper()
	k, err := solana.NewRandomPrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	return wallet{k}
}

func (w wallet) address() string { return w.key.PublicKey().String() }

func (w wallet) sign(msg string) string {
	sig, err := w.key.Sign([]byte(msg))
	if err != nil {
		panic(err)
	}
	return base64.StdEncoding.EncodeToString(sig[:])
}

func appHeaders(app string) map[string]string { return map[string]string{"X-App-Id": app} }

func jsonBody(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// handshake asks for a challenge for w and returns its message.
func (a *testApp) requestChallenge(t testing.TB, w wallet, app string) string {
	t.Helper()
	r := a.do(t, request{method: http.MethodPost, path: "/auth/handshake",
		body: jsonBody(map[string]string{"walletAddress": w.address()}), header: appHeaders(app)})
	if r.Code != 200 {
		t.Fatalf("handshake: got %d %s", r.Code, r.Body)
	}
	m := r.json(t)
	msg, _ := m["message"].(string)
	if msg == "" || m["nonce"] == "" || !strings.Contains(msg, w.address()) || !strings.Contains(msg, m["nonce"].(string)) {
		t.Fatalf("handshake answer lacks the address or nonce: %v", m)
	}
	return msg
}

func (a *testApp) loginWith(t testing.TB, address, signature, app string) response {
	t.Helper()
	return a.do(t, request{method: http.MethodPost, path: "/auth/login-wallet",
		body: jsonBody(map[string]string{"address": address, "signedMessage": signature}), header: appHeaders(app)})
}

// login signs in w as app and returns the access token and user id.
func (a *testApp) login(t testing.TB, w wallet, app string) (token, userID string) {
	t.Helper()
	msg := a.requestChallenge(t, w, app)
	r := a.loginWith(t, w.address(), w.sign(msg), app)
	if r.Code != 200 {
		t.Fatalf("login: got %d %s", r.Code, r.Body)
	}
	m := r.json(t)
	user, _ := m["user"].(map[string]any)
	token, _ = m["access_token"].(string)
	if token == "" || user["id"] == nil || user["username"] == nil {
		t.Fatalf("login answer: %v", m)
	}
	return token, user["id"].(string)
}

func bearer(token, app string) map[string]string {
	return map[string]string{"Authorization": "Bearer " + token, "X-App-Id": app}
}

func TestWalletLogin(t *testing.T) {
	a := newTestApp(t, map[string]string{"JWT_SECRET": testSecret})
	alice := newWallet(t)

	t.Run("good login creates the user once", func(t *testing.T) {
		token, id := a.login(t, alice, "agent-1")
		me := a.do(t, request{path: "/users/me", header: bearer(token, "agent-1")})
		if me.Code != 200 || me.json(t)["id"] != id || me.json(t)["walletAddress"] != alice.address() {
			t.Fatalf("/users/me: got %d %s", me.Code, me.Body)
		}
		name := me.json(t)["username"].(string)
		if len(name) < 3 || len(name) > 20 || strings.Trim(name, "abcdefghijklmnopqrstuvwxyz0123456789_") != "" {
			t.Errorf("generated username %q breaks the username rules", name)
		}
		_, again := a.login(t, alice, "agent-1")
		if again != id {
			t.Errorf("second login: got user %s, want the same user %s", again, id)
		}
	})

	t.Run("wrong key fails and consumes nothing", func(t *testing.T) {
		msg := a.requestChallenge(t, alice, "agent-1")
		mallory := newWallet(t)
		a.loginWith(t, alice.address(), mallory.sign(msg), "agent-1").wantError(t, 401, "UNAUTHORIZED")
		// The challenge is still good for the real owner.
		if r := a.loginWith(t, alice.address(), alice.sign(msg), "agent-1"); r.Code != 200 {
			t.Fatalf("owner after a failed attempt: got %d %s", r.Code, r.Body)
		}
	})

	t.Run("tampered message fails", func(t *testing.T) {
		msg := a.requestChallenge(t, alice, "agent-1")
		tampered := strings.Replace(msg, "Version: 1", "Version: 2", 1)
		a.loginWith(t, alice.address(), alice.sign(tampered), "agent-1").wantError(t, 401, "UNAUTHORIZED")
	})

	t.Run("a signature is good once", func(t *testing.T) {
		msg := a.requestChallenge(t, alice, "agent-1")
		sig := alice.sign(msg)
		if r := a.loginWith(t, alice.address(), sig, "agent-1"); r.Code != 200 {
			t.Fatalf("first use: got %d", r.Code)
		}
		a.loginWith(t, alice.address(), sig, "agent-1").wantError(t, 401, "UNAUTHORIZED")
		a.requestChallenge(t, alice, "agent-1") // a fresh challenge does not revive it
		a.loginWith(t, alice.address(), sig, "agent-1").wantError(t, 401, "UNAUTHORIZED")
	})

	t.Run("racing logins with one signature: one wins", func(t *testing.T) {
		msg := a.requestChallenge(t, alice, "agent-1")
		sig := alice.sign(msg)
		var wg sync.WaitGroup
		codes := make(chan int, 8)
		for i := 0; i < 8; i++ {
			wg.Add(1)
			go func() { defer wg.Done(); codes <- a.loginWith(t, alice.address(), sig, "agent-1").Code }()
		}
		wg.Wait()
		close(codes)
		ok := 0
		for c := range codes {
			if c == 200 {
				ok++
			} else if c != 401 {
				t.Errorf("racing login answered %d", c)
			}
		}
		if ok != 1 {
			t.Fatalf("%d racing logins succeeded, want exactly 1", ok)
		}
	})

	t.Run("expired challenge fails", func(t *testing.T) {
		msg := a.requestChallenge(t, alice, "agent-1")
		if _, err := a.DB.ExecContext(context.Background(),
			"UPDATE auth_challenges SET expires_at = now() - interval '1 second' WHERE consumed_at IS NULL AND wallet_address = ?",
			alice.address()); err != nil {
			t.Fatal(err)
		}
		a.loginWith(t, alice.address(), alice.sign(msg), "agent-1").wantError(t, 401, "UNAUTHORIZED")
	})

	t.Run("challenge is bound to the app id", func(t *testing.T) {
		msg := a.requestChallenge(t, alice, "agent-1")
		a.loginWith(t, alice.address(), alice.sign(msg), "other-app").wantError(t, 401, "UNAUTHORIZED")
	})

	t.Run("malformed inputs", func(t *testing.T) {
		for _, addr := range []string{"not-base58-0OIl", "", "abc", strings.Repeat("1", 60)} {
			r := a.do(t, request{method: http.MethodPost, path: "/auth/handshake",
				body: jsonBody(map[string]string{"walletAddress": addr}), header: appHeaders("agent-1")})
			r.wantError(t, 400, "VALIDATION_ERROR")
		}
		a.do(t, request{method: http.MethodPost, path: "/auth/handshake",
			body: jsonBody(map[string]string{"walletAddress": alice.address()})}).wantError(t, 400, "APP_ID_REQUIRED")
		a.do(t, request{method: http.MethodPost, path: "/auth/handshake", body: `{"walletAddress":`,
			header: appHeaders("agent-1")}).wantError(t, 400, "INVALID_JSON")
		a.loginWith(t, alice.address(), "not base64!", "agent-1").wantError(t, 401, "UNAUTHORIZED")
		a.loginWith(t, "nope", alice.sign("x"), "agent-1").wantError(t, 401, "UNAUTHORIZED")
	})
}

func TestTokens(t *testing.T) {
	a := newTestApp(t, map[string]string{"JWT_SECRET": testSecret})
	token, id := a.login(t, newWallet(t), "agent-1")
	sign := func(method jwt.SigningMethod, key any, claims jwt.MapClaims) string {
		s, err := jwt.NewWithClaims(method, claims).SignedString(key)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	now := time.Now()
	valid := jwt.MapClaims{"sub": id, "app": "agent-1", "iat": now.Unix(), "exp": now.Add(time.Hour).Unix(), "jti": "x"}
	expired := jwt.MapClaims{"sub": id, "app": "agent-1", "iat": now.Add(-48 * time.Hour).Unix(),
		"exp": now.Add(-24 * time.Hour).Unix(), "jti": "x"}
	_, otherKey, _ := ed25519.GenerateKey(nil)

	if r := a.do(t, request{path: "/users/me", header: bearer(token, "agent-1")}); r.Code != 200 {
		t.Fatalf("valid token: got %d %s", r.Code, r.Body)
	}
	if r := a.do(t, request{path: "/users/me", header: bearer(sign(jwt.SigningMethodHS256, []byte(testSecret), valid), "agent-1")}); r.Code != 200 {
		t.Fatalf("hand-made valid token: got %d %s (the refusals below would prove nothing)", r.Code, r.Body)
	}
	for name, tok := range map[string]string{
		"alg none":           sign(jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, valid),
		"forged (other key)": sign(jwt.SigningMethodHS256, []byte("another-secret-another-secret-123"), valid),
		"other algorithm":    sign(jwt.SigningMethodEdDSA, otherKey, valid),
		"expired":            sign(jwt.SigningMethodHS256, []byte(testSecret), expired),
		"garbage":            "a.b.c",
		"tampered":           tamper(token),
	} {
		t.Run(name, func(t *testing.T) {
			a.do(t, request{path: "/users/me", header: bearer(tok, "agent-1")}).wantError(t, 401, "UNAUTHORIZED")
		})
	}
	a.do(t, request{path: "/users/me", header: map[string]string{"Authorization": "Bearer " + token}}).
		wantError(t, 400, "APP_ID_REQUIRED")
	a.do(t, request{path: "/users/me", header: bearer(token, "another-app")}).wantError(t, 401, "UNAUTHORIZED")
	a.do(t, request{path: "/users/me"}).wantError(t, 401, "UNAUTHORIZED")
	a.do(t, request{path: "/users/me", header: map[string]string{"Authorization": "Basic Zm9vOmJhcg==", "X-App-Id": "a"}}).
		wantError(t, 401, "UNAUTHORIZED")
}

func TestAdminsAreExemptFromMaintenance(t *testing.T) {
	admin, player := newWallet(t), newWallet(t)
	a := newTestApp(t, map[string]string{"JWT_SECRET": testSecret, "ADMIN_WALLETS": admin.address()})
	adminToken, _ := a.login(t, admin, "console")
	playerToken, _ := a.login(t, player, "agent-1")

	a.do(t, request{path: "/admin/feature-flags", header: bearer(playerToken, "agent-1")}).wantError(t, 403, "ADMIN_ONLY")
	r := a.do(t, request{method: http.MethodPut, path: "/admin/feature-flags/maintenance-mode",
		body: `{"enabled": true}`, header: bearer(adminToken, "console")})
	if r.Code != 200 || r.json(t)["enabled"] != true {
		t.Fatalf("admin turns maintenance on: got %d %s", r.Code, r.Body)
	}
	t.Cleanup(func() { a.Flags.Set(context.Background(), flags.Maintenance, false, "test") })

	a.do(t, request{path: "/users/me", header: bearer(playerToken, "agent-1")}).wantError(t, 503, "MAINTENANCE")
	if r := a.do(t, request{path: "/users/me", header: bearer(adminToken, "console")}); r.Code != 200 {
		t.Errorf("admin during maintenance: got %d %s", r.Code, r.Body)
	}
	// Only admins can sign in while in maintenance.
	a.do(t, request{method: http.MethodPost, path: "/auth/handshake",
		body: jsonBody(map[string]string{"walletAddress": player.address()}), header: appHeaders("agent-1")}).
		wantError(t, 503, "MAINTENANCE")
	if _, id := a.login(t, admin, "console"); id == "" {
		t.Error("admin could not sign in during maintenance")
	}

	list := a.do(t, request{path: "/admin/feature-flags", header: bearer(adminToken, "console")})
	var body api.AdminFlags
	if err := json.Unmarshal(list.Body.Bytes(), &body); err != nil || len(body.Changes) == 0 {
		t.Fatalf("admin flag list: %v %s", err, list.Body)
	}
	if c := body.Changes[0]; c.Name != flags.Maintenance || !c.Enabled || !strings.Contains(c.ChangedBy, admin.address()) {
		t.Errorf("newest change: got %+v, want maintenance-mode on by the admin", c)
	}
	a.do(t, request{method: http.MethodPut, path: "/admin/feature-flags/nope", body: `{"enabled": true}`,
		header: bearer(adminToken, "console")}).wantError(t, 404, "NOT_FOUND")
	a.do(t, request{method: http.MethodPut, path: "/admin/feature-flags/maintenance-mode", body: `{}`,
		header: bearer(adminToken, "console")}).wantError(t, 400, "VALIDATION_ERROR")
}

// tamper changes one character in the middle of a token's signature.
func tamper(token string) string {
	i := strings.LastIndexByte(token, '.') + 10
	c := byte('A')
	if token[i] == 'A' {
		c = 'B'
	}
	return token[:i] + string(c) + token[i+1:]
}
