package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"wager/domain"
	"wager/domain/support"
	"wager/web"
)

// Support serves support tickets, the player's and staff's.
type Support struct {
	Support *support.Service
}

// Routes registers support tickets: the user's side under
// /support and the staff side (admins) under /admin/support.
func (h *Support) Routes(r Router) {
	status := web.Param{Name: "status", Description: "only tickets of this status", Enum: []string{support.StatusOpen, support.StatusAnswered, support.StatusClosed}}
	offset := web.Param{Name: "offset", Description: "how many tickets to skip (paging is limit/offset: a ticket moves when it gets a message)",
		Type: "integer", Min: web.Bound(0), Max: web.Bound(support.MaxOffset), Default: 0}

	r.JSON(http.MethodPost, "/support", h.openTicket, web.Op{Tag: "support", Auth: web.AuthRequired, Status: http.StatusCreated,
		Summary: "Open a support ticket with its first message",
		Description: "400 VALIDATION_ERROR naming each invalid field: subject (1-120 characters, one line), message (1-5000), category, gameId (a game that exists). Control characters and direction overrides are refused. " +
			"At most 5 of your tickets may be open (not closed) at once: the 6th is 409 CONFLICT; write in one of them, or close one.",
		Request: support.NewTicket{}, Response: support.Ticket{}, Errors: []int{http.StatusConflict}})
	r.JSON(http.MethodGet, "/support/me", h.myTickets, web.Op{Tag: "support", Auth: web.AuthRequired,
		Summary: "Your tickets, newest activity first (without their messages)", Response: []support.Summary{},
		Query: []web.Param{status, web.PageLimit, offset}})
	r.JSON(http.MethodGet, "/support/me/:id", h.myTicket, web.Op{Tag: "support", Auth: web.AuthRequired,
		Summary: "One of your tickets with its messages, oldest first", Description: "Another user's ticket is 404.",
		Response: support.Ticket{}, Errors: []int{http.StatusNotFound}})
	r.JSON(http.MethodPost, "/support/me/:id/messages", h.replyTicket, web.Op{Tag: "support", Auth: web.AuthRequired, Status: http.StatusCreated,
		Summary:     "Write to your ticket",
		Description: "The ticket goes back to open (waiting for staff). 409 CONFLICT when it is closed; 404 for another user's.",
		Request:     TicketText{}, Response: support.Message{}, Errors: []int{http.StatusNotFound, http.StatusConflict}})
	r.JSON(http.MethodPatch, "/support/me/:id/close", h.closeMyTicket, web.Op{Tag: "support", Auth: web.AuthRequired,
		Summary: "Close your ticket", Description: "Closing a closed ticket answers it unchanged.",
		Response: support.Ticket{}, Errors: []int{http.StatusNotFound}})

	r.JSON(http.MethodGet, "/admin/support", h.supportQueue, web.Op{Tag: "admin", Auth: web.AuthAdmin,
		Summary:  "The support queue: tickets of a status (open when absent), the longest waiting first",
		Response: []support.QueueItem{}, Query: []web.Param{status, web.PageLimit, offset}})
	r.JSON(http.MethodGet, "/admin/support/:id", h.staffTicket, web.Op{Tag: "admin", Auth: web.AuthAdmin,
		Summary: "A ticket with its user and messages", Response: support.StaffTicket{}, Errors: []int{http.StatusNotFound}})
	r.JSON(http.MethodPost, "/admin/support/:id/messages", h.answerTicket, web.Op{Tag: "admin", Auth: web.AuthAdmin, Status: http.StatusCreated,
		Summary:     "Answer a ticket as staff",
		Description: "The ticket becomes answered and its user gets a support_reply notification; recorded in the audit log (support.reply). 409 CONFLICT when it is closed.",
		Request:     TicketText{}, Response: support.Message{}, Errors: []int{http.StatusNotFound, http.StatusConflict}})
	r.JSON(http.MethodPatch, "/admin/support/:id/close", h.staffCloseTicket, web.Op{Tag: "admin", Auth: web.AuthAdmin,
		Summary: "Close a ticket", Description: "Recorded in the audit log (support.close). Closing a closed ticket answers it unchanged and records nothing.",
		Response: support.StaffTicket{}, Errors: []int{http.StatusNotFound}})
}

// TicketText is the body of a message to a ticket.
type TicketText struct {
	Text string `json:"text" minLength:"1" maxLength:"5000"`
}

func (h *Support) openTicket(c echo.Context) error {
	var req support.NewTicket
	if err := web.BindJSON(c, &req); err != nil {
		return err
	}
	t, err := h.Support.Open(c.Request().Context(), web.IdentityOf(c).UserID, req)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, t)
}

// ticketListParams reads ?status=, ?limit= and ?offset=.
func ticketListParams(c echo.Context) (status string, limit, offset int, err error) {
	v := domain.Validator{}
	limit = pageLimit(v, c)
	if err := v.Err(); err != nil {
		return "", 0, 0, err
	}
	if status, err = support.ParseStatus(c.QueryParam("status")); err != nil {
		return "", 0, 0, err
	}
	offset, err = support.ParseOffset(c.QueryParam("offset"))
	return status, limit, offset, err
}

func (h *Support) myTickets(c echo.Context) error {
	status, limit, offset, err := ticketListParams(c)
	if err != nil {
		return err
	}
	out, err := h.Support.Mine(c.Request().Context(), web.IdentityOf(c).UserID, status, limit, offset)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

func (h *Support) myTicket(c echo.Context) error {
	t, err := h.Support.Get(c.Request().Context(), web.IdentityOf(c).UserID, c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, t)
}

func (h *Support) replyTicket(c echo.Context) error {
	var req TicketText
	if err := web.BindJSON(c, &req); err != nil {
		return err
	}
	m, err := h.Support.Reply(c.Request().Context(), web.IdentityOf(c).UserID, c.Param("id"), req.Text)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, m)
}

func (h *Support) closeMyTicket(c echo.Context) error {
	t, err := h.Support.Close(c.Request().Context(), web.IdentityOf(c).UserID, c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, t)
}

func (h *Support) supportQueue(c echo.Context) error {
	status, limit, offset, err := ticketListParams(c)
	if err != nil {
		return err
	}
	out, err := h.Support.Queue(c.Request().Context(), status, limit, offset)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

func (h *Support) staffTicket(c echo.Context) error {
	t, err := h.Support.StaffGet(c.Request().Context(), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, t)
}

func (h *Support) answerTicket(c echo.Context) error {
	var req TicketText
	if err := web.BindJSON(c, &req); err != nil {
		return err
	}
	m, err := h.Support.Answer(c.Request().Context(), web.IdentityOf(c).UserID, c.Param("id"), req.Text)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, m)
}

func (h *Support) staffCloseTicket(c echo.Context) error {
	t, err := h.Support.StaffClose(c.Request().Context(), web.IdentityOf(c).UserID, c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, t)
}
