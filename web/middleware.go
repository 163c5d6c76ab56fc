package web

import (
	"crypto/rand"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"runtime/debug"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"
	"golang.org/x/mod/semver"

	"wager/domain"
)

// Context keys set by route-level middleware.
const (
	ctxPage = "web.page"
	ctxAPI  = "web.api"
)

// MarkPage marks the route as a browser page: errors render as HTML.
func MarkPage(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		c.Set(ctxPage, true)
		return next(c)
	}
}

// MarkAPI marks the route as a JSON API route: errors render as JSON.
func MarkAPI(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		c.Set(ctxPage, false)
		c.Set(ctxAPI, true)
		return next(c)
	}
}

// RequestIDs returns a generator of request ids for the RequestID
// middleware: a random prefix drawn once per instance and a counter, so
// ids are unique across instances without drawing 32 random characters
// for every request.
func RequestIDs() func() string {
	prefix := rand.Text()[:13]
	var n atomic.Uint64
	return func() string { return prefix + "-" + strconv.FormatUint(n.Add(1), 36) }
}

// SlowRequest is how long a request may take before it is logged as slow.
const SlowRequest = time.Second

// Observe records every request's metrics and logs the ones worth reading
// (server errors, slow requests; all at debug level). It is the outermost
// middleware after the request id: it turns a returned error into the
// response itself (through the error handler) so that the status it logs
// and counts is the one the client got.
func Observe(log *slog.Logger, m *Metrics) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			start := time.Now()
			if err := next(c); err != nil {
				c.Error(err)
			}
			elapsed := time.Since(start)
			status := c.Response().Status
			route := c.Path()
			if route == "" || route == "/*" {
				route = "unmatched"
			}
			m.observe(c.Request().Method, route, status, elapsed)
			// Every request is counted in the metrics; the log gets server
			// errors, slow requests, and the rest only at LOG_LEVEL=debug,
			// so that a busy server does not spend itself writing logs.
			level := slog.LevelDebug
			switch {
			case status >= 500:
				level = slog.LevelError
			case elapsed >= SlowRequest:
				level = slog.LevelWarn
			}
			if !log.Enabled(c.Request().Context(), level) {
				return nil
			}
			log.LogAttrs(c.Request().Context(), level, "request",
				slog.String("method", c.Request().Method),
				slog.String("path", c.Request().URL.Path),
				slog.String("route", route),
				slog.Int("status", status),
				slog.Duration("latency", elapsed),
				slog.Int64("bytes", c.Response().Size),
				slog.String("request_id", RequestID(c)),
				slog.String("remote_ip", c.RealIP()),
			)
			return nil
		}
	}
}

// Recover turns a panic in a handler into an INTERNAL error (logged with
// its stack by the error handler's caller) so the server keeps serving.
func Recover(log *slog.Logger) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) (err error) {
			defer func() {
				if r := recover(); r != nil {
					if r == http.ErrAbortHandler {
						panic(r)
					}
					log.Error("panic in handler", "panic", fmt.Sprint(r), "path", c.Request().URL.Path,
						"request_id", RequestID(c), "stack", string(debug.Stack()))
					err = domain.Errorf(domain.CodeInternal, "internal error")
				}
			}()
			return next(c)
		}
	}
}

// VersionPolicy is the client-version compatibility rule of the API.
type VersionPolicy struct {
	APIVersion string    // current API contract version
	MinSDK     string    // minimum X-SDK-Version, semver without "v"
	GraceUntil time.Time // end of the missing-header grace period; zero = none
	Now        domain.Clock
}

// VersionHeaders sets X-API-Version and X-Min-SDK-Version on every response.
func VersionHeaders(p VersionPolicy) echo.MiddlewareFunc {
	fixed := fixedHeaders("X-API-Version", p.APIVersion, "X-Min-SDK-Version", p.MinSDK)
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			setHeaders(c.Response().Header(), fixed)
			return next(c)
		}
	}
}

var semverRE = regexp.MustCompile(`^v?(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$`)

// ParseSemver returns v in the "vMAJOR.MINOR.PATCH[-pre][+build]" form that
// golang.org/x/mod/semver compares, or false when v is not semver.
func ParseSemver(v string) (string, bool) {
	if !semverRE.MatchString(v) {
		return "", false
	}
	if v[0] != 'v' {
		v = "v" + v
	}
	return v, semver.IsValid(v)
}

// CheckSDKVersion enforces the policy on API routes: 400
// INVALID_SDK_VERSION for a malformed X-SDK-Version, 426
// SDK_VERSION_OUTDATED below the minimum, and for a missing header either
// X-SDK-Upgrade-Required: true (during the grace period) or 426 (after it).
func CheckSDKVersion(p VersionPolicy) echo.MiddlewareFunc {
	minV, ok := ParseSemver(p.MinSDK)
	if !ok {
		panic("web: invalid minimum SDK version " + p.MinSDK)
	}
	outdated := func(msg string) error {
		return domain.Errorf(domain.CodeSDKVersionOutdated, "SDK version outdated: %s", msg).
			With("minSdkVersion", p.MinSDK)
	}
	// The last version let through: a client sends the same one with
	// every request, and the policy does not change while it runs.
	var accepted atomic.Pointer[string]
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			raw := c.Request().Header.Get("X-SDK-Version")
			if last := accepted.Load(); last != nil && *last == raw {
				return next(c)
			}
			if raw == "" {
				if p.GraceUntil.IsZero() || p.Now().Before(p.GraceUntil) {
					c.Response().Header().Set("X-SDK-Upgrade-Required", "true")
					return next(c)
				}
				return outdated("the X-SDK-Version header is required; upgrade to " + p.MinSDK + " or later")
			}
			v, ok := ParseSemver(raw)
			if !ok {
				return domain.Errorf(domain.CodeInvalidSDKVersion,
					"X-SDK-Version %q is not a semantic version (MAJOR.MINOR.PATCH)", raw)
			}
			if semver.Compare(v, minV) < 0 {
				return outdated(raw + " is below the minimum " + p.MinSDK + "; upgrade your client and retry")
			}
			accepted.Store(&raw)
			return next(c)
		}
	}
}

// Maintenance answers 503 MAINTENANCE with Retry-After while enabled()
// holds, unless exempt(c) says the caller is exempt (admins). Routes that
// must stay available (/health, /version, /feature-flags) do not use it.
func Maintenance(enabled func() bool, exempt func(echo.Context) bool, retryAfter time.Duration) echo.MiddlewareFunc {
	secs := strconv.Itoa(int(retryAfter.Seconds()))
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if enabled() && (exempt == nil || !exempt(c)) {
				c.Response().Header().Set("Retry-After", secs)
				return domain.Errorf(domain.CodeMaintenance,
					"The service is down for maintenance. Please try again in a few minutes.").
					With("retryAfterSeconds", int(retryAfter.Seconds()))
			}
			return next(c)
		}
	}
}

// CanonicalIDs rewrites an :id path parameter written as a UUID in another
// spelling (upper case, braces, urn:uuid:) to its canonical form, so that
// handlers, queries and keys derived from ids (a game's escrow) see one
// spelling of each id.
func CanonicalIDs(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		names, values := c.ParamNames(), c.ParamValues()
		for i, name := range names {
			if name != "id" {
				continue
			}
			if id, ok := domain.CanonicalID(values[i]); ok && id != values[i] {
				values = slices.Clone(values)
				values[i] = id
				c.SetParamValues(values...)
			}
		}
		return next(c)
	}
}
