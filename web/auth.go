package web

import (
	"crypto/subtle"
	"net/http"
	"strings"

	"github.com/gorilla/websocket"
	"github.com/labstack/echo/v4"

	"wager/domain"
	"wager/domain/auth"
)

// SessionCookie is the name of the browser session cookie.
const SessionCookie = "wager_session"

// CSRFHeader carries the session's CSRF token on state-changing requests
// (forms may send the _csrf field instead).
const CSRFHeader = "X-CSRF-Token"

// Authenticate identifies the caller from a bearer token (with X-App-Id),
// a ?token= on a WebSocket upgrade, or the session cookie. On routes that need no authentication it never
// fails: bad credentials just leave the request anonymous. Elsewhere a bad
// bearer token is 401 and a token without X-App-Id is 400
// APP_ID_REQUIRED. Cookie-authenticated state changes need the CSRF token
// (403 FORBIDDEN without it).
func Authenticate(svc *auth.Service, mode Auth) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			req := c.Request()
			ctx := req.Context()
			if token, ok := bearer(req); ok {
				appID := req.Header.Get("X-App-Id")
				if mode != AuthNone {
					if err := auth.CheckAppID(appID); err != nil {
						return err
					}
				}
				p, err := svc.Authenticate(ctx, token, appID)
				if err != nil && mode != AuthNone {
					return err
				}
				if err == nil {
					SetIdentity(c, identityOf(p, false))
				}
				return next(c)
			}
			if token := req.URL.Query().Get("token"); token != "" && websocket.IsWebSocketUpgrade(req) {
				p, err := svc.AuthenticateQueryToken(ctx, token)
				if err != nil {
					return err
				}
				SetIdentity(c, identityOf(p, false))
				return next(c)
			}
			if ck, err := c.Cookie(SessionCookie); err == nil && ck.Value != "" {
				p, err := svc.SessionPrincipal(ctx, ck.Value)
				if err != nil {
					if domain.ErrorCode(err) != domain.CodeUnauthorized {
						return err
					}
					ClearSessionCookie(c) // ended or unknown: forget it
					return next(c)
				}
				if unsafeMethod(req.Method) && !validCSRF(c, p.CSRFToken) {
					return domain.Errorf(domain.CodeForbidden, "missing or invalid CSRF token; reload the page and try again")
				}
				SetIdentity(c, identityOf(p, true))
			}
			return next(c)
		}
	}
}

// SessionIdentity returns who the session cookie names, or nil. It is for
// a page that renders a refusal that came before authentication (a body
// over its limit): it shows the signed-in header, and allows nothing.
func SessionIdentity(c echo.Context, svc *auth.Service) *Identity {
	ck, err := c.Cookie(SessionCookie)
	if err != nil || ck.Value == "" {
		return nil
	}
	p, err := svc.SessionPrincipal(c.Request().Context(), ck.Value)
	if err != nil {
		return nil
	}
	return identityOf(p, true)
}

func identityOf(p auth.Principal, session bool) *Identity {
	return &Identity{UserID: p.UserID, Username: p.Username, Wallet: p.Wallet,
		AppID: p.AppID, Admin: p.Admin, CSRFToken: p.CSRFToken, Session: session, SignedInAt: p.SignedInAt}
}

func bearer(r *http.Request) (string, bool) {
	h := r.Header.Get(echo.HeaderAuthorization)
	if len(h) > 7 && strings.EqualFold(h[:7], "bearer ") {
		return strings.TrimSpace(h[7:]), true
	}
	return "", h != "" // a malformed Authorization header is a bad token
}

func unsafeMethod(m string) bool {
	return m != http.MethodGet && m != http.MethodHead && m != http.MethodOptions
}

func validCSRF(c echo.Context, want string) bool {
	got := c.Request().Header.Get(CSRFHeader)
	if got == "" {
		ct := c.Request().Header.Get(echo.HeaderContentType)
		if strings.HasPrefix(ct, echo.MIMEApplicationForm) || strings.HasPrefix(ct, echo.MIMEMultipartForm) {
			got = c.FormValue("_csrf")
		}
	}
	return want != "" && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

// SetSessionCookie stores the session token in an HTTP-only, SameSite=Lax
// cookie (Secure when the request came over TLS).
func SetSessionCookie(c echo.Context, token string, maxAge int) {
	c.SetCookie(&http.Cookie{Name: SessionCookie, Value: token, Path: "/", MaxAge: maxAge,
		HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: c.Scheme() == "https"})
}

// ClearSessionCookie removes the session cookie.
func ClearSessionCookie(c echo.Context) {
	c.SetCookie(&http.Cookie{Name: SessionCookie, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: c.Scheme() == "https"})
}
