package handlers

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"

	"wager/domain/auth"
	"wager/domain/flags"
	"wager/handlers/header"
	"wager/views"
	"wager/web"
)

// authPages serve the sign-in page and signing out.
type authPages struct {
	auth          *auth.Service
	flags         *flags.Service
	embeddedChain bool
	header        *header.Header
}

func (h *authPages) loginPage(c echo.Context) error {
	next := safeNext(c.QueryParam("next"))
	if web.IdentityOf(c) != nil {
		return c.Redirect(http.StatusSeeOther, next)
	}
	return web.Render(c, http.StatusOK, views.Login(h.header.Page(c, "Sign in"), views.LoginPage{
		Next: next, DevWallet: h.embeddedChain, Maintenance: h.flags.Enabled(flags.Maintenance)}))
}

// safeNext keeps redirects on this site.
func safeNext(next string) string {
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.ContainsAny(next, "\\\r\n") {
		return "/"
	}
	return next
}

func (h *authPages) logout(c echo.Context) error {
	if ck, err := c.Cookie(web.SessionCookie); err == nil && ck.Value != "" {
		if err := h.auth.EndSession(c.Request().Context(), ck.Value); err != nil {
			return err
		}
	}
	web.ClearSessionCookie(c)
	return c.Redirect(http.StatusSeeOther, "/")
}

// requireLogin sends anonymous visitors to the sign-in page and back.
func requireLogin(c echo.Context) (*web.Identity, error) {
	id := web.IdentityOf(c)
	if id == nil {
		return nil, c.Redirect(http.StatusSeeOther, "/login?next="+url.QueryEscape(c.Request().URL.RequestURI()))
	}
	return id, nil
}
