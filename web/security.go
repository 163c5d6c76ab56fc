package web

import (
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/labstack/echo/v4"

	"wager/domain"
)

// pagePolicy lets pages load only this site's own scripts, styles and
// connections (no inline script, no eval), and be framed by nobody.
const pagePolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; " +
	"connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// answerPolicy is the policy of every answer that is not a page (JSON,
// images, scripts): opened in a browser, it loads nothing and is framed
// by nobody.
const answerPolicy = "default-src 'none'; frame-ancestors 'none'"

// SecurityHeaders sets on every response what browsers need to keep it
// safe: no sniffing of content types, and answerPolicy. Render replaces
// the policy with the page policy and adds what only pages need.
//
// A JSON answer so usually carries eight headers or fewer (these two,
// the request id, the two version headers, the content type, an ETag,
// the upgrade notice), which keeps net/http's header maps (the handler's
// and the copy it writes from) one small map each: a ninth key makes
// each a larger table, and on a cached read those maps were over a third
// of the bytes a request allocated.
func SecurityHeaders(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		setHeaders(c.Response().Header(), securityHeaders)
		return next(c)
	}
}

var securityHeaders = fixedHeaders(
	"X-Content-Type-Options", "nosniff",
	"Content-Security-Policy", answerPolicy,
)

// pageHeaders are what a page carries besides securityHeaders: the page
// policy (scripts and framing), the same refusal of framing for browsers
// that predate the policy's frame-ancestors, and no full URLs in
// referrers to other sites.
var pageHeaders = fixedHeaders(
	"Content-Security-Policy", pagePolicy,
	"X-Frame-Options", "DENY",
	"Referrer-Policy", "strict-origin-when-cross-origin",
)

// fixedHeaders returns the header values of name, value pairs, each key
// in its canonical form and each value a slice of length and capacity 1
// (an Add to it makes a new one), for setHeaders to set on every
// response without canonicalizing or allocating.
func fixedHeaders(pairs ...string) http.Header {
	h := make(http.Header, len(pairs)/2)
	for i := 0; i < len(pairs); i += 2 {
		h.Set(pairs[i], pairs[i+1])
	}
	return h
}

// setHeaders sets the values of fixed (see fixedHeaders) in h, as
// h.Set would.
func setHeaders(h, fixed http.Header) {
	for k, v := range fixed {
		h[k] = v[:1:1]
	}
}

// CheckSameSiteJSON refuses, with 403 FORBIDDEN, a request that another
// site's page could have sent: its Origin (or, without one, its Referer)
// is not this site's (publicURL, or the address it was sent to), or its
// body is not JSON (a cross-site form can post text/plain without
// asking). Call it before reading anything of the request.
func CheckSameSiteJSON(c echo.Context, publicURL string) error {
	req := c.Request()
	origin := req.Header.Get("Origin")
	if origin == "" {
		if u, err := url.Parse(req.Header.Get("Referer")); err == nil && u.Host != "" {
			origin = u.Scheme + "://" + u.Host
		}
	}
	same := origin != "" && origin == c.Scheme()+"://"+req.Host
	if u, err := url.Parse(publicURL); err == nil && u.Host != "" && origin == u.Scheme+"://"+u.Host {
		same = true
	}
	ct := strings.ToLower(strings.TrimSpace(strings.Split(req.Header.Get(echo.HeaderContentType), ";")[0]))
	if !same || ct != echo.MIMEApplicationJSON {
		return domain.Errorf(domain.CodeForbidden, "sign-in must come from this site's own pages, as JSON")
	}
	return nil
}

// LimitPerIP returns a listener that holds at most n open connections per
// client address: more are closed as soon as they are accepted, so that
// one client cannot take every descriptor of the process.
func LimitPerIP(ln net.Listener, n int) net.Listener {
	return &perIPListener{Listener: ln, max: n, open: map[string]int{}}
}

type perIPListener struct {
	net.Listener
	max  int
	mu   sync.Mutex
	open map[string]int
}

func (l *perIPListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		ip := remoteIP(c)
		l.mu.Lock()
		ok := l.open[ip] < l.max
		if ok {
			l.open[ip]++
		}
		l.mu.Unlock()
		if ok {
			return &countedConn{Conn: c, release: func() { l.release(ip) }}, nil
		}
		c.Close()
	}
}

func (l *perIPListener) release(ip string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open[ip]--; l.open[ip] <= 0 {
		delete(l.open, ip)
	}
}

func remoteIP(c net.Conn) string {
	host, _, err := net.SplitHostPort(c.RemoteAddr().String())
	if err != nil {
		return c.RemoteAddr().String()
	}
	return host
}

// countedConn gives its place back when it closes (once).
type countedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *countedConn) Close() error {
	c.once.Do(c.release)
	return c.Conn.Close()
}
