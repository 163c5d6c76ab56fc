package handlers

import (
	"net/http"
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"wager/domain"
	"wager/handlers/api"
	"wager/views"
	"wager/web"
)

// renderErrorPage is the HTML side of the one error path: the JSON API
// answers the same error with its code, a page says in plain sentences
// what happened and what to do next.
func (a *App) renderErrorPage(c echo.Context, status int, e *domain.Error) error {
	if web.IdentityOf(c) == nil && e.Code == domain.CodePayloadTooLarge {
		// The body limit refuses before authentication runs: the page still
		// shows who is signed in, and an image upload its form again.
		if id := web.SessionIdentity(c, a.auth); id != nil {
			web.SetIdentity(c, id)
			if kind, ok := imageUploadPages[c.Path()]; ok {
				return a.pages.users.refuseImage(c, id, kind, e)
			}
		}
	}
	ep := errorPage(status, e, c.Request().URL.RequestURI())
	if e.Code == domain.CodeMaintenance {
		ep.RetryAfterSeconds = int(api.MaintenanceRetry.Seconds())
		c.Response().Header().Set("Retry-After", "60")
	}
	p := a.header.Page(c, ep.Title)
	// An error page has nothing live to show, and during maintenance the
	// socket would be refused over and over.
	p.Live = false
	return web.Render(c, status, views.Error(p, ep))
}

// errorPage words an error for a person. Codes that mean the same thing
// to everyone get fixed words; the others carry the error's own message,
// written as a sentence, since it names what went wrong (the stake that
// the balance does not cover, the field that is invalid).
func errorPage(status int, e *domain.Error, requestURI string) views.ErrorPage {
	home := func(p views.ErrorPage) views.ErrorPage {
		p.ActionURL, p.ActionLabel = "/", "Back to the live games"
		return p
	}
	p := views.ErrorPage{Status: status, Code: e.Code}
	switch e.Code {
	case domain.CodeMaintenance:
		p.Title = "We're doing some maintenance"
		p.Detail = "Wager Arena is closed for a few minutes while we work on it."
		p.Next = "Please come back in a few minutes."
		return p
	case domain.CodeNotFound, domain.CodeMethodNotAllowed:
		p.Title = "Nothing here"
		p.Detail = "There is no page at this address. The link may be old or mistyped."
		p.Next = "Go back to the live games, or pick a page from the menu at the top."
		return home(p)
	case domain.CodeUnauthorized:
		p.Title = "Please sign in"
		p.Detail = "This page is for signed-in players."
		p.Next = "Sign in with your wallet and you will be brought back here."
		p.ActionURL, p.ActionLabel = "/login?next="+url.QueryEscape(requestURI), "Sign in"
		return p
	case domain.CodeAdminOnly:
		p.Title = "This page is for administrators"
		p.Detail = "This page is for administrators, and you are signed in with an account that is not one."
		p.Next = "If you should have access, ask an administrator to add your wallet. Everything else is open to you from the menu at the top."
		return home(p)
	case domain.CodeRateLimited:
		p.Title = "Slow down a little"
		p.Detail = sentence(e.Message)
		p.Next = "Wait a moment, then try again."
		return home(p)
	case domain.CodeInternal, domain.CodeUnavailable:
		p.Title = "Something went wrong on our side"
		p.Detail = "We could not finish this request. The problem is ours, not yours."
		p.Next = "Please try again in a moment. If it keeps happening, come back a little later."
		return home(p)
	case domain.CodeForbidden, domain.CodeNotAPlayer:
		p.Title = "You can't do that here"
	case domain.CodePayloadTooLarge, domain.CodeUnsupportedMedia:
		p.Title = "We can't take that file"
	default:
		p.Title = "That didn't work"
	}
	p.Detail = sentence(e.Message)
	if status < http.StatusInternalServerError {
		p.Next = "Go back, change what is needed and try again, or return to the live games."
	} else {
		p.Next = "Please try again in a moment."
	}
	return home(p)
}

// sentence writes a message as a sentence: a capital first letter and a
// full stop at the end.
func sentence(msg string) string {
	msg = strings.TrimSpace(msg)
	if msg == "" {
		return "Something went wrong."
	}
	r, n := utf8.DecodeRuneInString(msg)
	msg = string(unicode.ToUpper(r)) + msg[n:]
	if !strings.ContainsAny(msg[len(msg)-1:], ".!?") {
		msg += "."
	}
	return msg
}
