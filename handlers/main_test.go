package handlers_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"wager/cmd/server/app"
	"wager/db/dbtest"
	"wager/domain"
	"wager/domain/money"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

// testApp is the whole server, as the tests drive it.
type testApp struct {
	*app.App
	// ctx is the context of the requests do sends (nil: their own).
	ctx context.Context
}

const testMasterSeed = "5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed"

// newTestApp starts the whole app on the package's test database (or the
// one env's DATABASE_URL names) with the given environment on top of the
// defaults.
func newTestApp(t testing.TB, env map[string]string) *testApp {
	t.Helper()
	return newTestAppAt(t, env, nil)
}

// newTestAppAt is newTestApp whose every service reads the time from
// clock (nil: the system clock).
func newTestAppAt(t testing.TB, env map[string]string, clock domain.Clock) *testApp {
	t.Helper()
	dataDir := t.TempDir()
	getenv := func(k string) string {
		if k == "DATABASE_URL" && env[k] == "" {
			return dbtest.URL(t)
		}
		if k == "DATA_DIR" {
			return dataDir
		}
		if _, set := env[k]; !set && k == "AUTH_RATE_LIMIT" {
			return "0" // the tests sign in hundreds of wallets from one address
		}
		if v, ok := env[k]; ok || k != "MASTER_SEED" {
			return v
		}
		// The package's database (ledger and local chain) outlives one app:
		// every app of the package must hold the same keys.
		return testMasterSeed
	}
	cfg, err := app.LoadConfig(getenv)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Clock = clock
	started, err := app.New(context.Background(), cfg, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	a := &testApp{App: started}
	t.Cleanup(a.Close)
	t.Cleanup(func() { checkBooks(t, a) })
	if env["DEMO_BOTS"] != "" {
		// The bots play through the API: it must be served.
		srv := httptest.NewServer(a.Handler())
		t.Cleanup(srv.Close) // before the app closes
		if err := a.Listening(srv.URL); err != nil {
			t.Fatal(err)
		}
	}
	return a
}

// checkBooks fails the test when the ledger does not sum to zero or a
// platform address's chain balance differs from the ledger's. The package's apps share
// one database and chain, and a settlement transfer that one of them sent
// is in the ledger only once its worker records it: an address may differ
// for that moment. So the books must balance within 5 seconds, and a
// difference that lasts is a failure.
func checkBooks(t testing.TB, a *testApp) {
	t.Helper()
	if a.Closed() {
		return // closed by the test itself; another app checks the same books
	}
	var r money.Reconciliation
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		var err error
		if r, err = a.Money.Reconcile(context.Background()); err != nil {
			t.Errorf("reconcile: %v", err)
			return
		}
		if exact(r) || time.Now().After(deadline) {
			break
		}
	}
	if !exact(r) {
		t.Errorf("the books do not balance after the test: %+v", r)
	}
}

// exact reports whether the books balance with no unattributed USDC
// either: the tests' own money all goes through intents.
func exact(r money.Reconciliation) bool {
	for _, a := range r.Addresses {
		if a.UnattributedMinor != 0 {
			return false
		}
	}
	return r.Balanced
}

// scrapeMetrics reads /metrics from the operations listener.
func (a *testApp) scrapeMetrics() string {
	rec := httptest.NewRecorder()
	a.HTTP.Operations().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	return rec.Body.String()
}

// metric is the value of the series (a metric's name and its labels, as
// /metrics writes them) on /metrics; it fails the test when there is none.
func metric(t testing.TB, a *testApp, series string) float64 {
	t.Helper()
	for line := range strings.Lines(a.scrapeMetrics()) {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			n, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				t.Fatalf("%s: the value %q: %v", series, v, err)
			}
			return n
		}
	}
	t.Fatalf("/metrics has no %s", series)
	return 0
}

// request describes one HTTP request to the app.
type request struct {
	method, path, body string
	header             map[string]string
	remoteAddr         string // the client's address; httptest's default when empty
}

type response struct {
	*httptest.ResponseRecorder
}

func (a *testApp) do(t testing.TB, r request) response {
	t.Helper()
	if r.method == "" {
		r.method = http.MethodGet
	}
	var body io.Reader
	if r.body != "" {
		body = strings.NewReader(r.body)
	}
	req := httptest.NewRequest(r.method, r.path, body)
	if a.ctx != nil {
		req = req.WithContext(a.ctx)
	}
	if r.remoteAddr != "" {
		req.RemoteAddr = r.remoteAddr
	}
	if r.body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("X-SDK-Version", "1.0.0")
	for k, v := range r.header {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	rec := httptest.NewRecorder()
	a.Handler().ServeHTTP(rec, req)
	return response{rec}
}

// json decodes the body into a map, failing the test when it is not JSON.
func (r response) json(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Body.Bytes(), &m); err != nil {
		t.Fatalf("response %d %q is not a JSON object: %v", r.Code, r.Body.String(), err)
	}
	return m
}

// list decodes the body into a list, failing the test when it is not a
// JSON array.
func (r response) list(t testing.TB) []any {
	t.Helper()
	var l []any
	if err := json.Unmarshal(r.Body.Bytes(), &l); err != nil {
		t.Fatalf("response %d %q is not a JSON array: %v", r.Code, r.Body.String(), err)
	}
	return l
}

// wantError checks the status and error code of a JSON error answer.
func (r response) wantError(t testing.TB, status int, code string) map[string]any {
	t.Helper()
	if r.Code != status {
		t.Fatalf("status: got %d, want %d (body %s)", r.Code, status, r.Body)
	}
	m := r.json(t)
	if m["code"] != code {
		t.Fatalf("code: got %v, want %s (body %s)", m["code"], code, r.Body)
	}
	if msg, _ := m["message"].(string); msg == "" {
		t.Errorf("error without a message: %s", r.Body)
	}
	return m
}

func jsonDecode(b []byte, v any) error { return json.Unmarshal(b, v) }

func testLogger(t testing.TB) *slog.Logger {
	if os.Getenv("TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// ownDB is env with a database of the test's own: for a test that reads
// what every user sees (the activity feed, newest first by time), which
// the other tests' apps, some on clocks of their own, fill in the shared
// database.
func ownDB(t *testing.T, env map[string]string) map[string]string {
	t.Helper()
	out := map[string]string{"DATABASE_URL": dbtest.Fresh(t)}
	for k, v := range env {
		out[k] = v
	}
	return out
}
