package handlers_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"wager/db"
	"wager/db/dbtest"
	"wager/domain/flags"
	"wager/handlers"
)

func TestHealthVersionFlags(t *testing.T) {
	a := newTestApp(t, map[string]string{"MIN_SDK_VERSION": "1.2.0"})

	r := a.do(t, request{path: "/health"})
	if r.Code != 200 || r.json(t)["status"] != "ok" {
		t.Fatalf("/health: got %d %s, want 200 status ok", r.Code, r.Body)
	}
	r = a.do(t, request{path: "/version"})
	if v := r.json(t); r.Code != 200 || v["apiVersion"] != handlers.APIVersion || v["minSdkVersion"] != "1.2.0" {
		t.Fatalf("/version: got %d %s", r.Code, r.Body)
	}
	r = a.do(t, request{path: "/feature-flags"})
	if f := r.json(t); r.Code != 200 || f["maintenance-mode"] != false || f["abuse-controls"] != false {
		t.Fatalf("/feature-flags on a new database: got %d %s, want both flags false", r.Code, r.Body)
	}
}

func TestHealthDegradedWhenDatabaseIsDown(t *testing.T) {
	a := newTestApp(t, nil)
	down, err := db.Open(context.Background(), dbtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	down.Close()
	healthy := a.HTTP.DB
	a.HTTP.DB = down
	t.Cleanup(func() { a.HTTP.DB = healthy })
	r := a.do(t, request{path: "/health"})
	if r.Code != http.StatusServiceUnavailable || r.json(t)["status"] != "degraded" {
		t.Fatalf("/health with the database down: got %d %s, want 503 degraded", r.Code, r.Body)
	}
}

func TestErrorsAreJSONWithCodes(t *testing.T) {
	a := newTestApp(t, nil)
	a.do(t, request{path: "/no/such/route"}).wantError(t, 404, "NOT_FOUND")
	a.do(t, request{method: http.MethodPost, path: "/no/such/route", body: "{}"}).wantError(t, 404, "NOT_FOUND")
	big := `{"enabled": true, "pad": "` + strings.Repeat("x", 2<<20) + `"}`
	a.do(t, request{method: http.MethodPut, path: "/admin/feature-flags/maintenance-mode", body: big}).
		wantError(t, 413, "PAYLOAD_TOO_LARGE")
	r := a.do(t, request{method: http.MethodDelete, path: "/health"})
	r.wantError(t, 405, "METHOD_NOT_ALLOWED")
	if allow := r.Header().Get("Allow"); !strings.Contains(allow, "GET") || !strings.Contains(allow, "HEAD") {
		t.Errorf("Allow of a 405 on a GET route: %q, want GET and HEAD (every GET route answers HEAD)", allow)
	}
	if r := a.do(t, request{method: http.MethodHead, path: "/health"}); r.Code != http.StatusOK {
		t.Errorf("HEAD /health: %d, want 200", r.Code)
	}
	// The admin API exists but refuses the anonymous caller.
	a.do(t, request{path: "/admin/feature-flags"}).wantError(t, 401, "UNAUTHORIZED")
}

func TestUnknownPageIsHTMLForBrowsers(t *testing.T) {
	a := newTestApp(t, nil)
	r := a.do(t, request{path: "/no/such/page", header: map[string]string{"Accept": "text/html,application/xhtml+xml"}})
	if r.Code != 404 || !strings.Contains(r.Header().Get("Content-Type"), "text/html") ||
		!strings.Contains(r.Body.String(), `data-code="NOT_FOUND"`) {
		t.Fatalf("unknown page for a browser: got %d %s %.200s", r.Code, r.Header().Get("Content-Type"), r.Body)
	}
}

func TestVersionCheckAppliesToAPIRoutesOnly(t *testing.T) {
	a := newTestApp(t, map[string]string{"MIN_SDK_VERSION": "2.0.0", "SDK_GRACE_UNTIL": "2020-01-01T00:00:00Z"})
	old := map[string]string{"X-SDK-Version": "1.9.9"}
	missing := map[string]string{"X-SDK-Version": ""}
	for _, h := range []map[string]string{old, missing} {
		a.do(t, request{path: "/admin/feature-flags", header: h}).wantError(t, 426, "SDK_VERSION_OUTDATED")
		for _, path := range []string{"/health", "/version", "/feature-flags", "/"} {
			if r := a.do(t, request{path: path, header: h}); r.Code != 200 {
				t.Errorf("%s with X-SDK-Version %q: got %d, want 200", path, h["X-SDK-Version"], r.Code)
			}
		}
	}
	a.do(t, request{path: "/admin/feature-flags", header: map[string]string{"X-SDK-Version": "two"}}).
		wantError(t, 400, "INVALID_SDK_VERSION")
	// A compatible client passes the check and reaches authentication.
	a.do(t, request{path: "/admin/feature-flags", header: map[string]string{"X-SDK-Version": "2.0.0"}}).
		wantError(t, 401, "UNAUTHORIZED")
}

func TestMaintenanceModeExemptEndpoints(t *testing.T) {
	a := newTestApp(t, nil)
	ctx := context.Background()
	if _, err := a.Flags.Set(ctx, flags.Maintenance, true, "test"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Flags.Set(ctx, flags.Maintenance, false, "test") })

	for _, path := range []string{"/health", "/version", "/feature-flags"} {
		if r := a.do(t, request{path: path}); r.Code != 200 {
			t.Errorf("%s in maintenance: got %d, want 200", path, r.Code)
		}
	}
	if f := a.do(t, request{path: "/feature-flags"}).json(t); f["maintenance-mode"] != true {
		t.Errorf("/feature-flags should report maintenance-mode true, got %v", f)
	}
	r := a.do(t, request{path: "/admin/feature-flags"})
	r.wantError(t, 503, "MAINTENANCE")
	if r.Header().Get("Retry-After") == "" {
		t.Error("503 MAINTENANCE without Retry-After")
	}
	page := a.do(t, request{path: "/"})
	if page.Code != 503 || !strings.Contains(page.Body.String(), `data-code="MAINTENANCE"`) {
		t.Errorf("home page in maintenance: got %d, want 503 with the maintenance page", page.Code)
	}

	if _, err := a.Flags.Set(ctx, flags.Maintenance, false, "test"); err != nil {
		t.Fatal(err)
	}
	if r := a.do(t, request{path: "/"}); r.Code != 200 {
		t.Errorf("home page after maintenance: got %d, want 200", r.Code)
	}
}

func TestFlagChangeReachesEveryInstance(t *testing.T) {
	one, two := newTestApp(t, nil), newTestApp(t, nil)
	ctx := context.Background()
	if _, err := one.Flags.Set(ctx, flags.AbuseControls, true, "test"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { one.Flags.Set(ctx, flags.AbuseControls, false, "test") })
	// How soon is not this test's business: it waits for the change, and
	// only a change that never comes (a minute: a hung listener) fails it.
	for deadline := time.Now().Add(time.Minute); !two.Flags.Enabled(flags.AbuseControls); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the other instance never saw the flag change")
		}
	}
	if f := two.do(t, request{path: "/feature-flags"}).json(t); f["abuse-controls"] != true {
		t.Errorf("other instance's /feature-flags: got %v, want abuse-controls true", f)
	}
	changes, err := two.Flags.Changes(ctx, 10)
	if err != nil || len(changes) == 0 || changes[0].Name != flags.AbuseControls || changes[0].ChangedBy != "test" {
		t.Errorf("audit trail: got %+v, %v; want the change by test first", changes, err)
	}
}

func TestUnknownFlagIsNotFound(t *testing.T) {
	a := newTestApp(t, nil)
	_, err := a.Flags.Set(context.Background(), "no-such-flag", true, "test")
	if err == nil || !strings.Contains(err.Error(), "NOT_FOUND") {
		t.Fatalf("setting an unknown flag: got %v, want NOT_FOUND", err)
	}
}

func TestOpenAPIDocumentsEveryJSONRoute(t *testing.T) {
	a := newTestApp(t, nil)
	notJSON := map[string]bool{"/static/*": true, "/transparency/tile/*": true}
	for _, p := range a.HTTP.Pages() {
		notJSON[p] = true
	}
	for _, rt := range a.HTTP.Echo.Routes() {
		if notJSON[rt.Path] {
			continue
		}
		if !a.HTTP.Docs.Has(rt.Method, rt.Path) {
			t.Errorf("%s %s is registered but not in /openapi.json", rt.Method, rt.Path)
		}
	}
	r := a.do(t, request{path: "/openapi.json"})
	var doc struct {
		OpenAPI string                    `json:"openapi"`
		Paths   map[string]map[string]any `json:"paths"`
	}
	if err := json.Unmarshal(r.Body.Bytes(), &doc); err != nil || doc.OpenAPI != "3.1.0" {
		t.Fatalf("/openapi.json: %v, openapi=%q", err, doc.OpenAPI)
	}
	if _, ok := doc.Paths["/admin/feature-flags/{name}"]["put"]; !ok {
		t.Errorf("/openapi.json lacks PUT /admin/feature-flags/{name}; paths: %v", doc.Paths)
	}
	page := a.do(t, request{path: "/docs"})
	if page.Code != 200 || !strings.Contains(page.Body.String(), "/admin/feature-flags/{name}") {
		t.Errorf("/docs: got %d, want the operations listed", page.Code)
	}
}

func TestMetricsCountRequestsByRouteAndStatus(t *testing.T) {
	a := newTestApp(t, nil)
	a.do(t, request{path: "/health"})
	a.do(t, request{path: "/nope"})
	if r := a.do(t, request{path: "/metrics"}); r.Code != http.StatusNotFound {
		t.Errorf("/metrics on the public address: %d, want 404 (it is on METRICS_ADDR)", r.Code)
	}
	body := a.scrapeMetrics()
	for _, want := range []string{
		`http_requests_total{method="GET",route="/health",status="200"} 1`,
		`http_requests_total{method="GET",route="unmatched",status="404"} 2`,
		`http_request_duration_seconds_bucket{method="GET",route="/health",status="200",le="+Inf"} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// An operator sees on /metrics when requests wait for a connection to the
// database: every connection of the pool in use, and the waits counted.
func TestMetricsShowRequestsWaitingForTheDatabase(t *testing.T) {
	a := newTestApp(t, noWorkers)
	release := holdEveryConnection(t, a)
	if n := metric(t, a, `go_sql_in_use_connections{db_name="main"}`); n != float64(db.PoolSize) {
		t.Fatalf("%v connections in use on /metrics, want %d", n, db.PoolSize)
	}
	const waits = `go_sql_wait_count_total{db_name="main"}`
	before := metric(t, a, waits)
	done := make(chan error, 1)
	go func() {
		_, err := a.DB.ExecContext(context.Background(), "SELECT 1")
		done <- err
	}()
	for deadline := time.Now().Add(10 * time.Second); metric(t, a, waits) == before; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s stays %v while a statement waits", waits, before)
		}
	}
	release()
	if err := <-done; err != nil {
		t.Fatalf("the waiting statement: %v", err)
	}
}

// A scrape while every connection of the pool is taken does not queue
// for one to read the fee payer's budget (read from the database, which
// every instance charges): it shows the value last read.
func TestMetricsShowTheFeePayersBudgetWhileThePoolIsTaken(t *testing.T) {
	a := newTestApp(t, map[string]string{"WORKERS": "false", "FEE_PAYER_GLOBAL_DAILY_LAMPORTS": "1000000000000"})
	const gauge = "fee_payer_global_budget_left_lamports"
	left := metric(t, a, gauge)
	if math.IsNaN(left) || left <= 0 {
		t.Fatalf("/metrics: %v lamports of the budget left", left)
	}
	holdEveryConnection(t, a)
	if got := metric(t, a, gauge); got != left {
		t.Errorf("/metrics with every connection taken: %v lamports left, want the %v read before", got, left)
	}
}

// holdEveryConnection takes every connection of a's pool, as a burst of
// transactions would, until the returned function (or the test's end)
// gives them back.
func holdEveryConnection(t *testing.T, a *testApp) (release func()) {
	t.Helper()
	var held []*sql.Conn
	release = func() {
		for _, c := range held {
			c.Close() // a second Close does nothing
		}
	}
	t.Cleanup(release) // before the app closes
	for range db.PoolSize {
		c, err := a.DB.DB.Conn(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	return release
}

// An operator sees on /metrics how long goroutines waited for a core
// before they ran: when the cores are saturated, every request's round
// trips to the database wait there, and this is where it shows first.
func TestMetricsShowHowLongGoroutinesWaitToRun(t *testing.T) {
	a := newTestApp(t, noWorkers)
	if n := metric(t, a, "go_sched_latencies_seconds_count"); n <= 0 {
		t.Fatalf("go_sched_latencies_seconds counts %v waits", n)
	}
}

func TestStaticAssetsAreCached(t *testing.T) {
	a := newTestApp(t, nil)
	home := a.do(t, request{path: "/"}).Body.String()
	i := strings.Index(home, "/static/css/app.css?v=")
	if i < 0 {
		t.Fatal("home page does not link the stylesheet")
	}
	url := home[i : i+strings.IndexByte(home[i:], '"')]
	r := a.do(t, request{path: url})
	if r.Code != 200 || !strings.HasPrefix(r.Header().Get("Content-Type"), "text/css") ||
		!strings.Contains(r.Header().Get("Cache-Control"), "immutable") {
		t.Fatalf("%s: got %d %q %q", url, r.Code, r.Header().Get("Content-Type"), r.Header().Get("Cache-Control"))
	}
	if r := a.do(t, request{path: "/static/../go.mod"}); r.Code != 404 {
		t.Errorf("path traversal: got %d, want 404", r.Code)
	}
}

// Maintenance closes the platform to players, so it never costs one a
// round: a round whose deadline passes while it is on gets its full time
// again when it ends, and the player who could not move then moves. (A
// database of its own: the deadline worker's record is one per database.)
func TestMaintenanceNeverCostsAPlayerARound(t *testing.T) {
	clk := newTestClock()
	a := newTestAppAt(t, map[string]string{"WORKERS": "false", "JWT_SECRET": testSecret, "DATABASE_URL": dbtest.Fresh(t)}, clk.now)
	ctx := context.Background()
	worker := func() {
		t.Helper()
		if _, _, err := a.Games.RunDeadlinesOnce(ctx); err != nil {
			t.Fatal(err)
		}
	}
	p1, p2, game := a.stakedGame(t, 1_000_000, `{"rounds": 1, "roundSeconds": 5}`)
	worker()
	if r := a.act(t, p1, game, `{"type": "move", "move": "rock"}`); r.Code != 200 {
		t.Fatalf("the first move: %d %s", r.Code, r.Body)
	}
	if _, err := a.Flags.Set(ctx, flags.Maintenance, true, "test"); err != nil {
		t.Fatal(err)
	}
	a.act(t, p2, game, `{"type": "move", "move": "paper"}`).wantError(t, http.StatusServiceUnavailable, "MAINTENANCE")
	for range 8 { // the worker runs every second, past the round's deadline
		clk.advance(time.Second)
		worker()
	}
	if _, err := a.Flags.Set(ctx, flags.Maintenance, false, "test"); err != nil {
		t.Fatal(err)
	}
	worker()
	if r := a.act(t, p2, game, `{"type": "move", "move": "paper"}`); r.Code != 200 {
		t.Fatalf("the move the player could not make during maintenance: %d %s", r.Code, r.Body)
	}
	g := a.do(t, request{path: "/games/" + game}).json(t)
	if g["status"] != "completed" || g["winnerId"] != p2.id {
		t.Errorf("the game: %v won by %v, want completed and won by the paper, %s", g["status"], g["winnerId"], p2.id)
	}
}
