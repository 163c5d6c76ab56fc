package app_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/gagliardetto/solana-go"

	"wager/cmd/server/app"
	"wager/db/dbtest"
	"wager/domain/bots"
	"wager/domain/flags"
	"wager/domain/game/rules"
	wager "wager/sdk"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

// request is what the recorder keeps of one request.
type request struct {
	method, path, sdkVersion, appID string
	status                          int
}

// recorder sits in front of the app's handler and notes every request.
type recorder struct {
	next http.Handler
	mu   sync.Mutex
	seen []request
}

func (rec *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
	rec.next.ServeHTTP(sw, r)
	rec.mu.Lock()
	rec.seen = append(rec.seen, request{r.Method, r.URL.Path, r.Header.Get("X-SDK-Version"), r.Header.Get("X-App-Id"), sw.status})
	rec.mu.Unlock()
}

func (rec *recorder) requests() []request {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return append([]request(nil), rec.seen...)
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// The demo bots play as clients of the API: their moves are requests to
// the server's listener, sent by the SDK. On a fresh database with two
// bots, a game between them completes, every round played by both, and
// every move of it was a POST /games/:id/actions that carried the SDK's
// version and the bots' app id. The limits meant for outsiders do not
// hold them back, and still hold everyone else: one sign-in a minute per
// client address, abuse controls on past 3 requests a minute.
func TestDemoBotsPlayThroughTheAPI(t *testing.T) {
	all := map[string]string{"DATABASE_URL": dbtest.Fresh(t), "DATA_DIR": t.TempDir(), "DEMO_BOTS": "2",
		"AUTH_RATE_LIMIT": "1", "ABUSE_THRESHOLD": "3"}
	cfg, err := app.LoadConfig(func(k string) string { return all[k] })
	if err != nil {
		t.Fatal(err)
	}
	a, err := app.New(context.Background(), cfg, slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	if _, err := a.Flags.Set(t.Context(), flags.AbuseControls, true, "test"); err != nil {
		t.Fatal(err)
	}
	rec := &recorder{next: a.Handler()}
	srv := httptest.NewServer(rec)
	t.Cleanup(srv.Close) // before the app closes
	if err := a.Listening(srv.URL); err != nil {
		t.Fatal(err)
	}

	ctx := t.Context()
	var gameID string
	for deadline := time.Now().Add(60 * time.Second); gameID == ""; time.Sleep(250 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no game between the bots completed within 60 s; requests: %d", len(rec.requests()))
		}
		err := a.DB.NewRaw(`SELECT g.id FROM games AS g WHERE g.status = 'completed'
			AND NOT EXISTS (SELECT 1 FROM game_players AS p JOIN users AS u ON u.id = p.user_id
				WHERE p.game_id = g.id AND NOT u.bot)
			ORDER BY g.ended_at LIMIT 1`).Scan(ctx, &gameID)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			t.Fatal(err)
		}
	}

	evs, err := a.Rooms.Events(ctx, gameID, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	moves := 0
	for _, ev := range evs {
		if ev.Name != "game:rps:round:reveal" {
			continue
		}
		var r rules.RPSRound
		if err := json.Unmarshal(ev.Data, &r); err != nil {
			t.Fatal(err)
		}
		for who, choice := range r.Choices {
			if choice == nil {
				t.Fatalf("round %d of game %s: %s did not choose (%s)", r.Round, gameID, who, r.Reason)
			}
			moves++
		}
	}
	if moves == 0 {
		t.Fatalf("game %s has no played round", gameID)
	}

	sent := 0
	for _, r := range rec.requests() {
		if r.method == http.MethodPost && r.path == "/games/"+gameID+"/actions" {
			if r.sdkVersion != wager.Version || r.appID != bots.AppID {
				t.Errorf("a move in game %s came with X-SDK-Version %q and X-App-Id %q, want %q and %q",
					gameID, r.sdkVersion, r.appID, wager.Version, bots.AppID)
			}
			if r.status == http.StatusOK {
				sent++
			}
		}
	}
	if sent != moves {
		t.Fatalf("game %s: %d moves played, %d accepted through POST /games/:id/actions", gameID, moves, sent)
	}

	var marked int
	if err := a.DB.NewRaw(`SELECT count(*) FROM users WHERE bot AND username IN ('demo_bot_1', 'demo_bot_2')`).Scan(ctx, &marked); err != nil || marked != 2 {
		t.Fatalf("bots marked and named: %d %v, want 2", marked, err)
	}
	for i, w := range bots.Wallets(a.Keys, 2) {
		var id string
		if err := a.DB.NewRaw(`SELECT id FROM users WHERE wallet_address = ?`, w).Scan(ctx, &id); err != nil {
			t.Fatalf("bot %d's user: %v", i+1, err)
		}
		if !a.Bots.IsBot(id) {
			t.Errorf("bot %d (%s) is not known as a bot", i+1, id)
		}
	}

	// The limits still hold for people at the same address: the bots'
	// sign-ins left the one a minute to the first person, and the person
	// is charged past 3 requests.
	person, other := newClient(t, srv.URL), newClient(t, srv.URL)
	if err := person.SignIn(ctx); err != nil {
		t.Fatalf("a person's sign-in: %v", err)
	}
	var ae *wager.APIError
	if err := other.SignIn(ctx); !errors.As(err, &ae) || ae.Status != http.StatusTooManyRequests {
		t.Fatalf("a second person's sign-in from the same address: %v, want 429", err)
	}
	var paid *wager.PaymentRequiredError
	for i := range 4 {
		_, err := person.API.GetUsersMeCurrentGameWithResponse(ctx, nil)
		if i < 3 && err != nil {
			t.Fatalf("request %d: %v", i+1, err)
		}
		if i == 3 && !errors.As(err, &paid) {
			t.Fatalf("a person's 4th request in a minute: %v, want 402", err)
		}
	}
}

func newClient(t *testing.T, url string) *wager.Client {
	t.Helper()
	key, err := solana.NewRandomPrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	c, err := wager.New(url, wager.WithWallet(key), wager.WithAppID("bots-test"))
	if err != nil {
		t.Fatal(err)
	}
	return c
}
