package handlers

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"wager/domain"
	"wager/domain/notify"
	"wager/domain/social"
	"wager/domain/users"
	"wager/handlers/header"
	"wager/handlers/livepage"
	"wager/views"
	"wager/web"
)

// socialPages serve the notifications, friends and me pages.
type socialPages struct {
	users  *users.Service
	notify *notify.Service
	social *social.Service
	header *header.Header
}

// feedOnHome is how many entries the home page's feed shows.
const feedOnHome = 12

// notificationsPage lists the user's notifications, ?before=<id> for
// older ones.
func (h *socialPages) notificationsPage(c echo.Context) error {
	id, err := requireLogin(c)
	if id == nil {
		return err
	}
	before, _ := strconv.ParseInt(c.QueryParam("before"), 10, 64)
	const pageSize = 30
	p, err := h.notify.List(c.Request().Context(), id.UserID, false, pageSize, before)
	if err != nil {
		return err
	}
	v := views.NotificationsView{Unread: p.Unread}
	for _, n := range p.Items {
		v.Items = append(v.Items, livepage.NotificationLine(n))
	}
	if len(p.Items) == pageSize {
		v.Older = p.Items[len(p.Items)-1].ID
	}
	return web.Render(c, http.StatusOK, views.NotificationsPage(h.header.Page(c, "Notifications"), v))
}

// notificationsRead marks one notification read (:id) or all of them, and
// goes back to the list.
func (h *socialPages) notificationsRead(all bool) echo.HandlerFunc {
	return func(c echo.Context) error {
		id := web.IdentityOf(c)
		if id == nil {
			return domain.Errorf(domain.CodeUnauthorized, "sign in to read your notifications")
		}
		ctx := c.Request().Context()
		if all {
			if _, err := h.notify.ReadAll(ctx, id.UserID); err != nil {
				return err
			}
		} else {
			n, err := strconv.ParseInt(c.Param("id"), 10, 64)
			if err != nil {
				return domain.Errorf(domain.CodeNotFound, "no such notification")
			}
			if _, err := h.notify.MarkRead(ctx, id.UserID, n); err != nil {
				return err
			}
		}
		return c.Redirect(http.StatusSeeOther, "/notifications")
	}
}

// friendsPage shows the user's friends, the requests waiting for them,
// and people found by ?q= (a username prefix).
func (h *socialPages) friendsPage(c echo.Context) error {
	id, err := requireLogin(c)
	if id == nil {
		return err
	}
	v, err := h.friendsView(c, id.UserID, c.QueryParam("q"))
	if err != nil {
		return err
	}
	v.Message = c.QueryParam("done")
	return web.Render(c, http.StatusOK, views.FriendsPage(h.header.Page(c, "Friends"), v))
}

func (h *socialPages) friendsView(c echo.Context, me, search string) (views.FriendsView, error) {
	ctx := c.Request().Context()
	v := views.FriendsView{Search: strings.TrimSpace(search)}
	friends, err := h.social.Friends(ctx, me, 200, "")
	if err != nil {
		return v, err
	}
	for _, f := range friends {
		l := views.FriendLine{UserID: f.UserID, Username: f.Username, Online: f.Online}
		if f.CurrentGameID != nil {
			l.GameID = *f.CurrentGameID
		}
		v.Friends = append(v.Friends, l)
	}
	incoming, err := h.social.IncomingRequests(ctx, me, 200)
	if err != nil {
		return v, err
	}
	for _, r := range incoming {
		v.Incoming = append(v.Incoming, views.RequestLine{UserID: r.UserID, Username: r.Username})
	}
	if v.Search != "" {
		found, err := h.users.Search(ctx, v.Search)
		if err != nil && domain.ErrorCode(err) != domain.CodeValidation {
			return v, err
		}
		for _, u := range found {
			if u.ID != me {
				v.Found = append(v.Found, views.RequestLine{UserID: u.ID, Username: u.Username})
			}
		}
	}
	return v, nil
}

// friendsAction answers the friends page's buttons: ask, accept, remove.
// The page comes back saying what happened, or why not.
func (h *socialPages) friendsAction(action string) echo.HandlerFunc {
	return func(c echo.Context) error {
		id := web.IdentityOf(c)
		if id == nil {
			return domain.Errorf(domain.CodeUnauthorized, "sign in to manage your friends")
		}
		ctx, other := c.Request().Context(), c.Param("id")
		var err error
		done := ""
		switch action {
		case "ask":
			var r social.Relation
			if r, _, err = h.social.Request(ctx, id.UserID, other); err == nil {
				done = "Request sent: they will see it in their notifications."
				if r.Status == social.StatusFriends {
					done = "You are friends now."
				}
			}
		case "accept":
			if _, err = h.social.Accept(ctx, id.UserID, other); err == nil {
				done = "You are friends now."
			}
		default:
			if err = h.social.Remove(ctx, id.UserID, other); err == nil {
				done = "Done: you are no longer connected."
			}
		}
		if err != nil {
			e := web.AsError(err)
			if e.Code == domain.CodeInternal {
				return err
			}
			done = sentence(e.Message)
		}
		return c.Redirect(http.StatusSeeOther, "/friends?done="+url.QueryEscape(done))
	}
}

// mePage sends a signed-in user to their own profile.
func (h *socialPages) mePage(c echo.Context) error {
	id, err := requireLogin(c)
	if id == nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, "/u/"+url.PathEscape(id.Username))
}
