package handlers

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"

	"wager/domain/auth"
	"wager/domain/flags"
	"wager/views"
	"wager/web"
)

func (h *authHandlers) loginPage(c echo.Context) error {
	next := safeNext(c.QueryParam("next"))
	if web.IdentityOf(c) != nil {
		return c.Redirect(http.StatusSeeOther, next)
	}
	return web.Render(c, http.StatusOK, views.Login(h.chrome.pageFor(c, "Sign in"), views.LoginPage{
		Next: next, DevWallet: h.embeddedChain, Maintenance: h.flags.Enabled(flags.Maintenance)}))
}

// safeNext keeps redirects on this site.
func safeNext(next string) string {
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.ContainsAny(next, "\\\r\n") {
		return "/"
	}
	return next
}

// createSession is the browser's login: the same signature check as
// POST /auth/login-wallet (app id "web"), answered with a session cookie.
// It is called by the wallet script with JSON and answers JSON.
func (h *authHandlers) createSession(c echo.Context) error {
	if err := web.CheckSameSiteJSON(c, h.publicURL); err != nil {
		return err
	}
	var req LoginRequest
	if err := web.BindJSON(c, &req); err != nil {
		return err
	}
	if err := h.refuseDuringMaintenance(req.Address); err != nil {
		return err
	}
	ctx := c.Request().Context()
	u, err := h.auth.Login(ctx, auth.SignIn{Address: req.Address, Signature: req.SignedMessage, AppID: "web",
		Nonce: req.Nonce, ReferralCode: req.ReferralCode, ClientIP: c.RealIP()})
	if err != nil {
		return err
	}
	token, _, err := h.auth.StartSession(ctx, u.ID)
	if err != nil {
		return err
	}
	web.SetSessionCookie(c, token, int(auth.SessionLifetime.Seconds()))
	return c.JSON(http.StatusOK, SessionAnswer{User: profileOf(u)})
}

func (h *authHandlers) logout(c echo.Context) error {
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

// SessionAnswer is the answer of the browser sign-in.
type SessionAnswer struct {
	User UserProfile `json:"user"`
}
