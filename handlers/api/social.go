package api

import (
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"wager/domain"
	"wager/domain/notify"
	"wager/domain/social"
	"wager/web"
)

// Social serves friends, notifications, achievements and the activity feed.
type Social struct {
	Notify *notify.Service
	Social *social.Service
}

// Routes registers friends, achievements, the activity feed and
// notifications.
func (h *Social) Routes(r Router) {
	r.JSON(http.MethodPost, "/friends/:userId", h.befriend, web.Op{Tag: "social", Auth: web.AuthRequired,
		Status: http.StatusCreated, Summary: "Ask a user to be your friend",
		Description: "201 with status pending for a new request; the user gets a friend_request notification, at most once a day from you: " +
			"withdrawing the request and asking again within 24 hours of the last notification asks without notifying. " +
			"When that user had already asked you, this accepts instead: 200 with status friends (they get friend_accepted). " +
			"Asking again answers 200 with the current status. 400 for yourself, 404 for an unknown user, 403 FORBIDDEN when either blocked the other.",
		Response: social.Relation{}, Responses: map[int]any{http.StatusOK: social.Relation{}},
		Errors: []int{http.StatusForbidden, http.StatusNotFound}})
	r.JSON(http.MethodPost, "/friends/requests/:userId/accept", h.acceptFriend, web.Op{Tag: "social", Auth: web.AuthRequired,
		Summary: "Accept a user's friend request", Description: "The user gets a friend_accepted notification. 404 when that user has no pending request to you.",
		Response: social.Relation{}, Errors: []int{http.StatusNotFound}})
	r.JSON(http.MethodDelete, "/friends/:userId", h.unfriend, web.Op{Tag: "social", Auth: web.AuthRequired,
		Status: http.StatusNoContent, Summary: "End a friendship (for both), withdraw your request or decline theirs",
		Errors: []int{http.StatusNotFound}})
	r.JSON(http.MethodGet, "/friends/requests/incoming", h.incomingFriends, web.Op{Tag: "social", Auth: web.AuthRequired,
		Summary: "Friend requests waiting for your answer, newest first", Response: []social.Incoming{},
		Query: []web.Param{web.PageLimit}})
	r.JSON(http.MethodGet, "/friends/:userId", h.friendsOf, web.Op{Tag: "social", Auth: web.AuthRequired,
		Summary:  "A user's friends, most recent friendship first, with who is online and playing",
		Response: []social.Friend{}, Errors: []int{http.StatusNotFound},
		Query: []web.Param{web.PageLimit,
			web.PageBefore("the userId of the previous page's last friend")}})

	r.JSON(http.MethodGet, "/achievements", h.achievements, web.Op{Tag: "social", Auth: web.AuthOptional,
		Summary: "Every achievement there is", Response: []social.Achievement{}})
	r.JSON(http.MethodGet, "/achievements/me", h.myAchievements, web.Op{Tag: "social", Auth: web.AuthRequired,
		Summary: "Your achievements, earliest first", Response: []social.Unlocked{}})
	r.JSON(http.MethodGet, "/achievements/user/:id", h.userAchievements, web.Op{Tag: "social", Auth: web.AuthOptional,
		Summary: "A user's achievements, earliest first", Response: []social.Unlocked{}, Errors: []int{http.StatusNotFound}})
	r.JSON(http.MethodGet, "/activity/feed", h.activityFeed, web.Op{Tag: "social", Auth: web.AuthOptional,
		Summary: "The public activity feed, newest first",
		Description: "Games won, donations, tips, achievements and bets won; nothing private. New entries also reach open sockets as " +
			"{type: notice, notice: activity, data: <the entry>}, at most 5 a second per server: this list has every one.",
		Response: []social.Entry{},
		Query:    []web.Param{web.PageLimit, web.PageBefore("an id: only older entries")}})

	r.JSON(http.MethodGet, "/notifications", h.notifications, web.Op{Tag: "social", Auth: web.AuthRequired,
		Summary:     "Your notifications, newest first",
		Description: "The X-Unread-Count response header carries how many are unread in all. New ones also reach your sockets as {type: notice, notice: notification, data}.",
		Response:    []notify.Notification{},
		Query: []web.Param{{Name: "unread", Type: "boolean", Description: "true for the unread ones only"},
			web.PageLimit, web.PageBefore("an id: only older ones")}})
	r.JSON(http.MethodPatch, "/notifications/:id/read", h.readNotification, web.Op{Tag: "social", Auth: web.AuthRequired,
		Summary: "Mark one notification read", Response: notify.Notification{}, Errors: []int{http.StatusNotFound}})
	r.JSON(http.MethodPost, "/notifications/read-all", h.readAllNotifications, web.Op{Tag: "social", Auth: web.AuthRequired,
		Summary: "Mark every notification read", Response: ReadAll{}})
}

func (h *Social) befriend(c echo.Context) error {
	r, created, err := h.Social.Request(c.Request().Context(), web.IdentityOf(c).UserID, c.Param("userId"))
	if err != nil {
		return err
	}
	if created {
		return c.JSON(http.StatusCreated, r)
	}
	return c.JSON(http.StatusOK, r)
}

func (h *Social) acceptFriend(c echo.Context) error {
	r, err := h.Social.Accept(c.Request().Context(), web.IdentityOf(c).UserID, c.Param("userId"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, r)
}

func (h *Social) unfriend(c echo.Context) error {
	if err := h.Social.Remove(c.Request().Context(), web.IdentityOf(c).UserID, c.Param("userId")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

func (h *Social) incomingFriends(c echo.Context) error {
	v := domain.Validator{}
	limit := pageLimit(v, c)
	if err := v.Err(); err != nil {
		return err
	}
	out, err := h.Social.IncomingRequests(c.Request().Context(), web.IdentityOf(c).UserID, limit)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

func (h *Social) friendsOf(c echo.Context) error {
	v := domain.Validator{}
	limit := pageLimit(v, c)
	if err := v.Err(); err != nil {
		return err
	}
	out, err := h.Social.Friends(c.Request().Context(), c.Param("userId"), limit, c.QueryParam("before"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

func (h *Social) notifications(c echo.Context) error {
	limit, before, err := PageParams(c)
	if err != nil {
		return err
	}
	unread := false
	if s := c.QueryParam("unread"); s != "" {
		if unread, err = strconv.ParseBool(s); err != nil {
			return domain.Invalid(map[string]string{"unread": "must be true or false"})
		}
	}
	p, err := h.Notify.List(c.Request().Context(), web.IdentityOf(c).UserID, unread, limit, before)
	if err != nil {
		return err
	}
	c.Response().Header().Set("X-Unread-Count", strconv.Itoa(p.Unread))
	return c.JSON(http.StatusOK, p.Items)
}

func (h *Social) readNotification(c echo.Context) error {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil || id <= 0 {
		return domain.Errorf(domain.CodeNotFound, "no such notification")
	}
	n, err := h.Notify.MarkRead(c.Request().Context(), web.IdentityOf(c).UserID, id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, n)
}

// ReadAll answers POST /notifications/read-all.
type ReadAll struct {
	Updated int `json:"updated" doc:"how many notifications were unread"`
}

func (h *Social) readAllNotifications(c echo.Context) error {
	n, err := h.Notify.ReadAll(c.Request().Context(), web.IdentityOf(c).UserID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, ReadAll{Updated: n})
}

func (h *Social) achievements(c echo.Context) error {
	return c.JSON(http.StatusOK, social.Achievements)
}

func (h *Social) myAchievements(c echo.Context) error {
	out, err := h.Social.AchievementsOf(c.Request().Context(), web.IdentityOf(c).UserID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

func (h *Social) userAchievements(c echo.Context) error {
	out, err := h.Social.AchievementsOf(c.Request().Context(), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

func (h *Social) activityFeed(c echo.Context) error {
	limit, before, err := PageParams(c)
	if err != nil {
		return err
	}
	out, err := h.Social.Feed(c.Request().Context(), limit, before)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}
