package web

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"wager/domain"
)

// newEcho builds a server with the same middleware order the app uses and
// one API route (/api), one operational route (/version) and one page (/page).
func newEcho(p VersionPolicy, maintenance *bool, admin *bool) *echo.Echo {
	log := slog.New(slog.DiscardHandler)
	e := echo.New()
	e.HTTPErrorHandler = ErrorHandler(log, func(c echo.Context, status int, err *domain.Error) error {
		return c.HTML(status, "<p>"+err.Code+"</p>")
	})
	e.Use(Observe(log, NewMetrics()), Recover(log), VersionHeaders(p))
	maint := Maintenance(func() bool { return *maintenance }, func(echo.Context) bool { return *admin }, time.Minute)
	ok := func(c echo.Context) error { return c.JSON(http.StatusOK, map[string]bool{"ok": true}) }
	e.GET("/api", ok, MarkAPI, CheckSDKVersion(p), maint)
	e.GET("/version", ok, MarkAPI)
	e.GET("/page", func(c echo.Context) error { return c.HTML(http.StatusOK, "<p>page</p>") }, MarkPage, maint)
	return e
}

func do(e *echo.Echo, path, sdk string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodGet, path, nil)
	if sdk != "" {
		req.Header.Set("X-SDK-Version", sdk)
	}
	rec := httptest.NewRecorder()
	e.ServeHTTP(rec, req)
	return rec
}

func decode(t *testing.T, rec *httptest.ResponseRecorder) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil {
		t.Fatalf("body %q is not JSON: %v", rec.Body.String(), err)
	}
	return m
}

func TestVersioning(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	inGrace := VersionPolicy{APIVersion: "1.4.0", MinSDK: "1.2.0", GraceUntil: now.Add(time.Hour), Now: clock}
	noEnd := VersionPolicy{APIVersion: "1.4.0", MinSDK: "1.2.0", Now: clock}
	ended := VersionPolicy{APIVersion: "1.4.0", MinSDK: "1.2.0", GraceUntil: now.Add(-time.Second), Now: clock}

	tests := []struct {
		name        string
		policy      VersionPolicy
		path, sdk   string
		wantStatus  int
		wantCode    string
		wantUpgrade string // X-SDK-Upgrade-Required
	}{
		{"equal to minimum", inGrace, "/api", "1.2.0", 200, "", ""},
		{"above minimum", inGrace, "/api", "2.0.0", 200, "", ""},
		{"leading v accepted", inGrace, "/api", "v1.3.1", 200, "", ""},
		{"below minimum", inGrace, "/api", "1.1.9", 426, "SDK_VERSION_OUTDATED", ""},
		{"pre-release of the minimum is below it", inGrace, "/api", "1.2.0-beta.1", 426, "SDK_VERSION_OUTDATED", ""},
		{"malformed", inGrace, "/api", "latest", 400, "INVALID_SDK_VERSION", ""},
		{"partial version is malformed", inGrace, "/api", "1.2", 400, "INVALID_SDK_VERSION", ""},
		{"missing during grace", inGrace, "/api", "", 200, "", "true"},
		{"missing with no grace end", noEnd, "/api", "", 200, "", "true"},
		{"missing after grace", ended, "/api", "", 426, "SDK_VERSION_OUTDATED", ""},
		{"/version never 426 when outdated", ended, "/version", "0.1.0", 200, "", ""},
		{"/version never 426 when missing", ended, "/version", "", 200, "", ""},
		{"pages exempt when outdated", ended, "/page", "0.1.0", 200, "", ""},
		{"pages exempt when missing", ended, "/page", "", 200, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			off := false
			rec := do(newEcho(tt.policy, &off, &off), tt.path, tt.sdk)
			if rec.Code != tt.wantStatus {
				t.Fatalf("status: got %d, want %d (body %s)", rec.Code, tt.wantStatus, rec.Body)
			}
			if got := rec.Header().Get("X-API-Version"); got != "1.4.0" {
				t.Errorf("X-API-Version: got %q, want 1.4.0", got)
			}
			if got := rec.Header().Get("X-Min-SDK-Version"); got != "1.2.0" {
				t.Errorf("X-Min-SDK-Version: got %q, want 1.2.0", got)
			}
			if got := rec.Header().Get("X-SDK-Upgrade-Required"); got != tt.wantUpgrade {
				t.Errorf("X-SDK-Upgrade-Required: got %q, want %q", got, tt.wantUpgrade)
			}
			if tt.wantCode != "" {
				body := decode(t, rec)
				if body["code"] != tt.wantCode {
					t.Errorf("code: got %v, want %s", body["code"], tt.wantCode)
				}
				if tt.wantStatus == 426 {
					if body["minSdkVersion"] != "1.2.0" {
						t.Errorf("minSdkVersion: got %v, want 1.2.0", body["minSdkVersion"])
					}
					if msg, _ := body["message"].(string); len(msg) < 20 || msg[:20] != "SDK version outdated" {
						t.Errorf("message %q should start with \"SDK version outdated\"", msg)
					}
				}
			}
		})
	}
}

// The check remembers the last version it let through; a client that
// was let through once must not open the way for other versions on the
// same server.
func TestAVersionLetThroughLetsNoOtherThrough(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	ended := VersionPolicy{APIVersion: "1.4.0", MinSDK: "1.2.0", GraceUntil: now.Add(-time.Second),
		Now: func() time.Time { return now }}
	off := false
	e := newEcho(ended, &off, &off)
	steps := []struct {
		sdk        string
		wantStatus int
	}{
		{"1.2.0", 200},
		{"1.1.9", 426},
		{"latest", 400},
		{"", 426},
		{"1.2.0", 200},
		{"1.2.0-beta.1", 426},
		{"2.0.0", 200},
		{"1.2.0", 200},
	}
	for i, s := range steps {
		if rec := do(e, "/api", s.sdk); rec.Code != s.wantStatus {
			t.Fatalf("request %d with X-SDK-Version %q: got %d, want %d (body %s)", i+1, s.sdk, rec.Code, s.wantStatus, rec.Body)
		}
	}
}

func TestMaintenance(t *testing.T) {
	p := VersionPolicy{APIVersion: "1.0.0", MinSDK: "1.0.0", Now: time.Now}
	on, admin := true, false
	e := newEcho(p, &on, &admin)

	rec := do(e, "/api", "1.0.0")
	if rec.Code != http.StatusServiceUnavailable || decode(t, rec)["code"] != "MAINTENANCE" {
		t.Fatalf("API in maintenance: got %d %s, want 503 MAINTENANCE", rec.Code, rec.Body)
	}
	if rec.Header().Get("Retry-After") != "60" {
		t.Errorf("Retry-After: got %q, want 60", rec.Header().Get("Retry-After"))
	}
	if rec := do(e, "/page", ""); rec.Code != 503 || rec.Body.String() != "<p>MAINTENANCE</p>" {
		t.Errorf("page in maintenance: got %d %q, want 503 rendered as HTML", rec.Code, rec.Body)
	}
	if rec := do(e, "/version", ""); rec.Code != 200 {
		t.Errorf("/version in maintenance: got %d, want 200", rec.Code)
	}
	admin = true
	if rec := do(e, "/api", "1.0.0"); rec.Code != 200 {
		t.Errorf("admin in maintenance: got %d, want 200", rec.Code)
	}
	on, admin = false, false
	if rec := do(e, "/api", "1.0.0"); rec.Code != 200 {
		t.Errorf("after maintenance: got %d, want 200", rec.Code)
	}
}

func TestPanicAnswersInternalAndServerKeepsServing(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	e := echo.New()
	e.HTTPErrorHandler = ErrorHandler(log, nil)
	e.Use(Observe(log, NewMetrics()), Recover(log))
	e.GET("/boom", func(echo.Context) error { panic("secret database password is hunter2") }, MarkAPI)
	e.GET("/fine", func(c echo.Context) error { return c.String(200, "fine") }, MarkAPI)

	rec := do(e, "/boom", "")
	if rec.Code != 500 {
		t.Fatalf("panic: got status %d, want 500", rec.Code)
	}
	body := decode(t, rec)
	if body["code"] != "INTERNAL" || body["message"] != "internal error" {
		t.Errorf("panic body: got %v, want INTERNAL / internal error", body)
	}
	if s := rec.Body.String(); strings.Contains(s, "hunter2") || strings.Contains(s, "goroutine") {
		t.Errorf("panic body leaks internals: %s", s)
	}
	if rec := do(e, "/fine", ""); rec.Code != 200 || rec.Body.String() != "fine" {
		t.Errorf("after panic: got %d %q, want 200 fine", rec.Code, rec.Body)
	}
}

func TestUnavailableKeepsItsCauseOutOfTheAnswer(t *testing.T) {
	var logged strings.Builder
	e := echo.New()
	e.HTTPErrorHandler = ErrorHandler(slog.New(slog.NewTextHandler(&logged, nil)), nil)
	e.GET("/rpc", func(echo.Context) error {
		return domain.Unavailable("the Solana network did not answer", errors.New("dial https://rpc.example/?api-key=s3cret"))
	}, MarkAPI)
	rec := do(e, "/rpc", "")
	if body := decode(t, rec); rec.Code != 503 || body["code"] != "UNAVAILABLE" || strings.Contains(rec.Body.String(), "s3cret") {
		t.Errorf("answer: %d %s, want 503 UNAVAILABLE without the cause", rec.Code, rec.Body)
	}
	if !strings.Contains(logged.String(), "s3cret") {
		t.Errorf("the cause is not in the log: %s", logged.String())
	}
}

func TestParseSemver(t *testing.T) {
	for v, want := range map[string]bool{
		"1.0.0": true, "v1.0.0": true, "10.20.30": true, "1.0.0-rc.1+build.5": true,
		"": false, "1": false, "1.0": false, "01.0.0": false, "1.0.0.0": false, "one.two.three": false, " 1.0.0": false,
	} {
		if _, ok := ParseSemver(v); ok != want {
			t.Errorf("ParseSemver(%q): got %v, want %v", v, ok, want)
		}
	}
}

func TestRequestIDsAreUniqueAcrossCallsAndInstances(t *testing.T) {
	a, b := RequestIDs(), RequestIDs()
	seen := map[string]bool{}
	for range 1000 {
		for _, id := range []string{a(), b()} {
			if seen[id] {
				t.Fatalf("request id %q given twice", id)
			}
			seen[id] = true
		}
	}
}

// The headers set on every response share their values between
// responses: a handler that adds to one must not change the next
// response's.
func TestFixedHeadersDoNotLeakBetweenResponses(t *testing.T) {
	e := echo.New()
	e.Use(SecurityHeaders)
	e.GET("/add", func(c echo.Context) error {
		c.Response().Header().Add("Content-Security-Policy", "sandbox")
		return c.NoContent(http.StatusNoContent)
	})
	e.GET("/plain", func(c echo.Context) error { return c.NoContent(http.StatusNoContent) })
	for _, path := range []string{"/add", "/plain"} {
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		want := []string{answerPolicy}
		if path == "/add" {
			want = append(want, "sandbox")
		}
		if got := rec.Header().Values("Content-Security-Policy"); !slices.Equal(got, want) {
			t.Fatalf("%s: Content-Security-Policy %q, want %q", path, got, want)
		}
	}
}

// A page carries the page policy, the legacy framing refusal and the
// referrer policy; any other answer a policy under which it loads
// nothing and is framed by nobody; both refuse content sniffing.
func TestPagesAndAnswersCarryTheirPolicies(t *testing.T) {
	e := echo.New()
	e.Use(SecurityHeaders)
	e.GET("/page", func(c echo.Context) error {
		return Render(c, http.StatusOK, templ.ComponentFunc(func(_ context.Context, w io.Writer) error {
			_, err := io.WriteString(w, "<p>hello</p>")
			return err
		}))
	})
	e.GET("/json", func(c echo.Context) error { return c.JSON(http.StatusOK, map[string]int{"n": 1}) })
	get := func(path string) http.Header {
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code != http.StatusOK {
			t.Fatalf("%s: %d", path, rec.Code)
		}
		return rec.Header()
	}
	page := get("/page")
	for k, want := range map[string]string{"Content-Security-Policy": pagePolicy, "X-Frame-Options": "DENY",
		"Referrer-Policy": "strict-origin-when-cross-origin", "X-Content-Type-Options": "nosniff"} {
		if got := page.Values(k); !slices.Equal(got, []string{want}) {
			t.Errorf("page: %s %q, want %q", k, got, want)
		}
	}
	answer := get("/json")
	for k, want := range map[string]string{"Content-Security-Policy": "default-src 'none'; frame-ancestors 'none'",
		"X-Content-Type-Options": "nosniff"} {
		if got := answer.Values(k); !slices.Equal(got, []string{want}) {
			t.Errorf("JSON answer: %s %q, want %q", k, got, want)
		}
	}
}
