package web

import (
	"time"

	"github.com/labstack/echo/v4"

	"wager/domain"
)

// Identity is the authenticated caller of a request.
type Identity struct {
	UserID   string
	Username string
	Wallet   string
	AppID    string
	Admin    bool

	// Session is true for browser sessions, whose state changes carry
	// CSRFToken.
	Session   bool
	CSRFToken string
	// SignedInAt is when this sign-in happened (the token's issue time,
	// the browser session's start).
	SignedInAt time.Time
}

const ctxIdentity = "web.identity"

// SetIdentity records the authenticated caller on the request.
func SetIdentity(c echo.Context, id *Identity) { c.Set(ctxIdentity, id) }

// IdentityOf returns the authenticated caller, or nil for an anonymous
// request.
func IdentityOf(c echo.Context) *Identity {
	id, _ := c.Get(ctxIdentity).(*Identity)
	return id
}

// IsAdmin reports whether the request is admin-authenticated.
func IsAdmin(c echo.Context) bool {
	id := IdentityOf(c)
	return id != nil && id.Admin
}

// RequireUser refuses anonymous requests with 401 UNAUTHORIZED.
func RequireUser(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if IdentityOf(c) == nil {
			return domain.Errorf(domain.CodeUnauthorized, "sign in first: this endpoint needs a bearer token")
		}
		return next(c)
	}
}

// RequireAdmin refuses anonymous requests with 401 and non-admins with 403
// ADMIN_ONLY.
func RequireAdmin(next echo.HandlerFunc) echo.HandlerFunc {
	return RequireUser(func(c echo.Context) error {
		if !IsAdmin(c) {
			return domain.Errorf(domain.CodeAdminOnly, "only admins may do this")
		}
		return next(c)
	})
}
