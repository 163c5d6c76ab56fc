package app_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gagliardetto/solana-go"

	wager "wager.example.com/sdk"
	"wager.example.com/sdk/api"
	"wager/cmd/server/app"
	"wager/cmd/server/bots"
	"wager/db/dbtest"
	"wager/domain"
	"wager/domain/flags"
	"wager/domain/game/rules"
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
	a, rec, url := startApp(t, map[string]string{"DEMO_BOTS": "2", "AUTH_RATE_LIMIT": "1", "ABUSE_THRESHOLD": "3"})
	if _, err := a.Flags.Set(t.Context(), flags.AbuseControls, true, "test"); err != nil {
		t.Fatal(err)
	}

	ctx := t.Context()
	var gameID string
	began := time.Now()
	for deadline := time.Now().Add(3 * time.Minute); gameID == ""; time.Sleep(250 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no game between the bots ever completed; requests: %d", len(rec.requests()))
		}
		err := a.DB.NewRaw(`SELECT g.id FROM games AS g WHERE g.status = 'completed'
			AND NOT EXISTS (SELECT 1 FROM game_players AS p JOIN users AS u ON u.id = p.user_id
				WHERE p.game_id = g.id AND NOT u.bot)
			ORDER BY g.ended_at LIMIT 1`).Scan(ctx, &gameID)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			t.Fatal(err)
		}
	}

	evs, err := a.Events.Events(ctx, domain.GameStreamOf(gameID), 0, 100)
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
	t.Logf("game %s: %d moves, completed %v after the start", gameID, moves, time.Since(began).Round(time.Second))

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
	person, other := newClient(t, url), newClient(t, url)
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

// startApp starts the app with env (on a fresh database unless env names
// one), serves it behind a recorder and tells it where it listens.
func startApp(t *testing.T, env map[string]string) (*app.App, *recorder, string) {
	t.Helper()
	if env["DATABASE_URL"] == "" {
		env["DATABASE_URL"] = dbtest.Fresh(t)
	}
	env["DATA_DIR"] = t.TempDir()
	cfg, err := app.LoadConfig(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	a, err := app.New(context.Background(), cfg, slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	rec := &recorder{next: a.Handler()}
	srv := httptest.NewServer(rec)
	t.Cleanup(srv.Close) // before the app closes
	if err := a.Listening(srv.URL); err != nil {
		t.Fatal(err)
	}
	return a, rec, srv.URL
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

// A person challenges the bot to Connect Four through the API: the bot
// accepts, drops its pieces when its turn comes, and accepts the rematch
// after the person resigned, all as requests of the SDK.
func TestDemoBotAnswersAChallengeAndARematch(t *testing.T) {
	a, rec, url := startApp(t, map[string]string{"DEMO_BOTS": "1"})
	ctx := t.Context()
	var botID string
	for deadline := time.Now().Add(2 * time.Minute); botID == ""; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the bot never signed in")
		}
		err := a.DB.NewRaw(`SELECT id FROM users WHERE bot`).Scan(ctx, &botID)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			t.Fatal(err)
		}
	}
	person := newClient(t, url)
	settings := map[string]any{"turnSeconds": 30}
	if _, err := person.API.PostChallengesWithResponse(ctx, nil, api.ChallengeRequest{GameType: "connect4", ToUserId: &botID, Settings: wager.Settings(settings)}); err != nil {
		t.Fatalf("challenge the bot: %v", err)
	}
	game := waitForGame(t, person, "")

	// The person drops pieces across the board until the bot has moved
	// twice, then resigns.
	id := game
	for col, deadline := 0, time.Now().Add(2*time.Minute); ; time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the bot never moved twice")
		}
		r, err := person.API.GetGamesByIdStateWithResponse(ctx, id, nil)
		if err != nil {
			t.Fatal(err)
		}
		var st rules.C4View
		if err := json.Unmarshal(r.Body, &st); err != nil {
			t.Fatal(err)
		}
		byBot := 0
		for _, m := range st.History {
			if m.UserID == botID {
				byBot++
			}
		}
		if byBot >= 2 {
			break
		}
		if st.Turn != nil && *st.Turn == person.UserID() {
			if _, err := person.API.PostGamesByIdActionsWithResponse(ctx, id, nil, api.GameAction{Type: "move", Move: moveBody(t, map[string]int{"column": col})}); err != nil {
				t.Fatalf("drop in column %d: %v", col, err)
			}
			col = (col + 2) % 7
		}
	}
	if _, err := person.API.PostGamesByIdActionsWithResponse(ctx, id, nil, api.GameAction{Type: "resign"}); err != nil {
		t.Fatalf("resign: %v", err)
	}
	if _, err := person.API.PostGamesByIdRematchWithResponse(ctx, id, nil); err != nil {
		t.Fatalf("ask for a rematch: %v", err)
	}
	if again := waitForGame(t, person, game); again == game {
		t.Fatal("the rematch is the same game")
	}

	want := map[string]int{"POST /challenges/*/accept": 1, "POST /games/" + game + "/actions": 2, "POST /games/" + game + "/rematch": 1}
	got := map[string]int{}
	for _, r := range rec.requests() {
		if r.appID != bots.AppID || r.sdkVersion != wager.Version || r.status != http.StatusOK {
			continue
		}
		key := r.method + " " + r.path
		if strings.HasPrefix(r.path, "/challenges/") && strings.HasSuffix(r.path, "/accept") {
			key = "POST /challenges/*/accept"
		}
		got[key]++
	}
	for k, n := range want {
		if got[k] < n {
			t.Errorf("%s from the bot's SDK: %d, want at least %d", k, got[k], n)
		}
	}
}

// waitForGame waits until c's current game is one other than not, and
// returns its id.
func waitForGame(t *testing.T, c *wager.Client, not string) string {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		r, err := c.API.GetUsersMeCurrentGameWithResponse(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if r.JSON200 != nil && r.JSON200.GameId != not {
			return r.JSON200.GameId
		}
	}
	t.Fatal("no new game")
	return ""
}

// A person's free table that nobody takes gets the bot, which joins it
// through the API.
func TestDemoBotTakesAPersonsTable(t *testing.T) {
	_, rec, url := startApp(t, map[string]string{"DEMO_BOTS": "1"})
	ctx := t.Context()
	person := newClient(t, url)
	settings := map[string]any{"rounds": 1, "roundSeconds": 30}
	l, err := person.API.PostLobbiesWithResponse(ctx, nil, api.LobbyRequest{GameType: "rps", Settings: wager.Settings(settings)})
	if err != nil {
		t.Fatalf("open a table: %v", err)
	}
	if _, err := person.API.PostLobbiesByIdJoinQueueWithResponse(ctx, l.JSON201.Id, nil); err != nil {
		t.Fatalf("sit at it: %v", err)
	}
	// When the bot may take it is domain/game's
	// TestAPersonsFreeTableIsOfferedOnlyOnceItWaited, on a steered clock.
	waitForGame(t, person, "")
	joined := false
	for _, r := range rec.requests() {
		joined = joined || (r.method == http.MethodPost && r.path == "/lobbies/"+l.JSON201.Id+"/join-queue" &&
			r.appID == bots.AppID && r.sdkVersion == wager.Version && r.status == http.StatusOK)
	}
	if !joined {
		t.Error("the bot did not join the table through the SDK")
	}
}

// moveBody is a move as the body of a move action.
func moveBody(t testing.TB, move any) *api.GameMove {
	t.Helper()
	m, err := wager.MoveOf(move)
	if err != nil {
		t.Fatal(err)
	}
	return m
}
