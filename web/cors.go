package web

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"
)

// corsHeaders are the request headers a browser app on another origin may
// send, and corsExposed the answer's headers it may read.
const (
	corsHeaders = "Authorization, Content-Type, X-App-Id, X-SDK-Version, Idempotency-Key, PAYMENT-SIGNATURE, If-None-Match"
	corsExposed = "X-API-Version, X-Min-SDK-Version, X-SDK-Upgrade-Required, X-Unread-Count, X-Request-Id, Retry-After, " +
		"PAYMENT-REQUIRED, PAYMENT-RESPONSE, ETag, Location"
	corsMethods = "GET, HEAD, POST, PUT, PATCH, DELETE"
)

// ParseOrigins reads CORS_ORIGINS: comma-separated origins
// (scheme://host[:port], nothing after). It returns an error naming the
// first that is not one.
func ParseOrigins(s string) ([]string, error) {
	var out []string
	for _, o := range strings.Split(s, ",") {
		o = strings.TrimSpace(o)
		if o == "" {
			continue
		}
		u, err := url.Parse(o)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" || u.RawQuery != "" ||
			u.Fragment != "" || u.User != nil {
			return nil, fmt.Errorf("%q is not an origin (scheme://host[:port])", o)
		}
		out = append(out, u.Scheme+"://"+strings.ToLower(u.Host))
	}
	return out, nil
}

// CORS lets pages of the given origins call the API from a browser with
// a bearer token: their requests get Access-Control-Allow-Origin, and
// their preflights an answer. Credentials are never allowed: a request
// from such an origin is served without its cookies, so that only a token
// the page holds can act for a user and the site's session never does.
// Other origins get nothing (the browser keeps their pages out).
func CORS(origins []string) echo.MiddlewareFunc {
	allowed := map[string]bool{}
	for _, o := range origins {
		allowed[o] = true
	}
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		if len(allowed) == 0 {
			return next
		}
		return func(c echo.Context) error {
			req := c.Request()
			h := c.Response().Header()
			h.Add("Vary", "Origin")
			origin := strings.ToLower(req.Header.Get("Origin"))
			if !allowed[origin] {
				return next(c)
			}
			req.Header.Del("Cookie")
			h.Set("Access-Control-Allow-Origin", origin)
			h.Set("Access-Control-Expose-Headers", corsExposed)
			if req.Method == http.MethodOptions && req.Header.Get("Access-Control-Request-Method") != "" {
				h.Set("Access-Control-Allow-Methods", corsMethods)
				h.Set("Access-Control-Allow-Headers", corsHeaders)
				h.Set("Access-Control-Max-Age", "600")
				return c.NoContent(http.StatusNoContent)
			}
			return next(c)
		}
	}
}

// HeadAsGet serves a HEAD request as the GET of the same address would
// be, headers and status alike (Content-Length included), without the
// body. Use it with Echo's Pre, before routing.
func HeadAsGet(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		if req.Method != http.MethodHead {
			return next(c)
		}
		req.Method = http.MethodGet
		res := c.Response()
		w := &headWriter{ResponseWriter: res.Writer}
		res.Writer = w
		if err := next(c); err != nil {
			c.Error(err)
		}
		req.Method = http.MethodHead // the server writes no body for it
		w.commit()
		return nil
	}
}

// headWriter counts the body it is given instead of sending it, and sends
// the status once the body's length is known.
type headWriter struct {
	http.ResponseWriter
	status int
	n      int
	sent   bool
}

func (w *headWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}

func (w *headWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	w.n += len(b)
	return len(b), nil
}

// Flush sends the status: what a streaming answer wrote so far is all the
// length it gets.
func (w *headWriter) Flush() { w.commit() }

func (w *headWriter) commit() {
	if w.sent {
		return
	}
	w.sent = true
	if w.status == 0 {
		w.status = http.StatusOK
	}
	if w.n > 0 && w.Header().Get("Content-Length") == "" {
		w.Header().Set("Content-Length", strconv.Itoa(w.n))
	}
	w.ResponseWriter.WriteHeader(w.status)
}

func (w *headWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
