package handlers

import (
	"net/http"
	"net/url"

	"github.com/labstack/echo/v4"

	"wager/domain"
	"wager/domain/support"
	"wager/handlers/header"
	"wager/views"
	"wager/web"
)

// supportPages serve the support pages of players and staff.
type supportPages struct {
	support *support.Service
	header  *header.Header
}

// supportQueuePagePath: the queue page answers browsers at /admin/support
// (the JSON queue's address, see pagesForBrowsers) and lives under
// /admin/support/page, where its tickets are too.
const supportQueuePagePath = "/admin/support/page"

// pageRoutes registers the support pages of users and staff.
func (h *supportPages) pageRoutes(r *router) {
	r.page(http.MethodGet, "/support", h.supportPage)
	r.page(http.MethodPost, "/support/new", h.supportOpen)
	r.page(http.MethodGet, "/support/tickets/:id", h.supportTicketPage)
	r.page(http.MethodPost, "/support/tickets/:id/reply", h.supportReply)
	r.page(http.MethodPost, "/support/tickets/:id/close", h.supportClose)
	r.page(http.MethodGet, supportQueuePagePath, h.supportQueuePage)
	r.page(http.MethodGet, supportQueuePagePath+"/:id", h.staffTicketPage)
	r.page(http.MethodPost, supportQueuePagePath+"/:id/reply", h.staffReply)
	r.page(http.MethodPost, supportQueuePagePath+"/:id/close", h.staffClose)
}

// statusWords says a ticket's status to its user and to staff.
func statusWords(status string, staff bool) string {
	switch status {
	case support.StatusOpen:
		if staff {
			return "Waiting for an answer"
		}
		return "Waiting for support"
	case support.StatusAnswered:
		if staff {
			return "Answered, waiting for the user"
		}
		return "Answered: your turn"
	}
	return "Closed"
}

// supportFilters are the status filter links of a list at path.
func supportFilters(path, current string, staff bool) []views.SupportFilter {
	all := "All"
	if staff {
		all = "" // the queue always shows one status; open is the default
	}
	var out []views.SupportFilter
	for _, s := range []string{"", support.StatusOpen, support.StatusAnswered, support.StatusClosed} {
		label := map[string]string{"": all, support.StatusOpen: "Waiting", support.StatusAnswered: "Answered", support.StatusClosed: "Closed"}[s]
		if label == "" {
			continue
		}
		href := path
		if s != "" {
			href += "?status=" + s
		}
		out = append(out, views.SupportFilter{Label: label, Href: href, Current: s == current || (staff && current == "" && s == support.StatusOpen)})
	}
	return out
}

func emptyWords(status string, staff bool) string {
	if staff {
		return "No tickets here. Nobody is waiting."
	}
	if status == "" {
		return "You have no tickets yet. Write one when something goes wrong."
	}
	return "No tickets with this status."
}

func (h *supportPages) supportPage(c echo.Context) error {
	if id, err := requireLogin(c); id == nil {
		return err
	}
	return h.renderSupport(c, http.StatusOK, views.SupportForm{Category: support.CategoryOther})
}

func (h *supportPages) renderSupport(c echo.Context, code int, f views.SupportForm) error {
	id := web.IdentityOf(c)
	ctx := c.Request().Context()
	status, err := support.ParseStatus(c.QueryParam("status"))
	if err != nil {
		status = "" // a bad link shows every ticket
	}
	tickets, err := h.support.Mine(ctx, id.UserID, status, 50, 0)
	if err != nil {
		return err
	}
	games, err := h.support.RecentGames(ctx, id.UserID, 20)
	if err != nil {
		return err
	}
	v := views.SupportView{Form: f, Filters: supportFilters("/support", status, false), Empty: emptyWords(status, false)}
	for _, g := range games {
		v.Games = append(v.Games, views.SupportGame{ID: g.ID, Label: views.GameName(g.GameType) + ", " + views.DateTime(g.CreatedAt)})
	}
	for _, t := range tickets {
		v.Tickets = append(v.Tickets, views.SupportLine{Href: "/support/tickets/" + t.ID, Subject: t.Subject,
			Status: statusWords(t.Status, false), Detail: "Last activity " + views.DateTime(t.UpdatedAt)})
	}
	return web.Render(c, code, views.Support(h.header.Page(c, "Support"), v))
}

// formErrors turns a refused form into messages by field; ok is false for
// an error that is not the user's (a bug), which the caller returns.
func formErrors(err error) (map[string]string, int, bool) {
	de := web.AsError(err)
	if de.Code == domain.CodeInternal {
		return nil, 0, false
	}
	if len(de.Fields) > 0 {
		return de.Fields, web.StatusOf(de.Code), true
	}
	return map[string]string{"": de.Message}, web.StatusOf(de.Code), true
}

func (h *supportPages) supportOpen(c echo.Context) error {
	id, err := requireLogin(c)
	if id == nil {
		return err
	}
	f := views.SupportForm{Subject: c.FormValue("subject"), Message: c.FormValue("message"),
		Category: c.FormValue("category"), GameID: c.FormValue("gameId")}
	n := support.NewTicket{Subject: f.Subject, Message: f.Message, Category: f.Category}
	if f.GameID != "" {
		n.GameID = &f.GameID
	}
	t, err := h.support.Open(c.Request().Context(), id.UserID, n)
	if err != nil {
		errs, code, ok := formErrors(err)
		if !ok {
			return err
		}
		f.Errors = errs
		return h.renderSupport(c, code, f)
	}
	return c.Redirect(http.StatusSeeOther, "/support/tickets/"+t.ID)
}

func (h *supportPages) supportTicketPage(c echo.Context) error {
	return h.renderUserTicket(c, http.StatusOK, "", "")
}

func (h *supportPages) renderUserTicket(c echo.Context, code int, reply, replyErr string) error {
	id, err := requireLogin(c)
	if id == nil {
		return err
	}
	t, err := h.support.Get(c.Request().Context(), id.UserID, c.Param("id"))
	if err != nil {
		return err
	}
	v := thread(t, false)
	v.Reply, v.ReplyError = reply, replyErr
	v.ReplyAction, v.CloseAction = "/support/tickets/"+t.ID+"/reply", "/support/tickets/"+t.ID+"/close"
	v.Back, v.BackLabel = "/support", "Back to your tickets"
	return web.Render(c, code, views.SupportTicket(h.header.Page(c, t.Subject), v))
}

// thread is a ticket's view: staff read "Support" for staff and the user's
// name for the user; the user reads "You" and "Support".
func thread(t support.Ticket, staff bool) views.SupportThread {
	v := views.SupportThread{Subject: t.Subject, Status: statusWords(t.Status, staff), Closed: t.Status == support.StatusClosed,
		About: aboutWords(t.Summary)}
	for _, m := range t.Messages {
		author := "You"
		if m.Author == support.AuthorStaff {
			author = "Support"
		} else if staff {
			author = "The user"
		}
		v.Messages = append(v.Messages, views.SupportMessageLine{Author: author, Text: m.Text,
			At: views.DateTime(m.CreatedAt), Staff: m.Author == support.AuthorStaff})
	}
	return v
}

func aboutWords(t support.Summary) string {
	s := map[string]string{"account": "About an account", "payment": "About a payment", "game": "About a game"}[t.Category]
	if s == "" {
		s = "About something else"
	}
	if t.GameID != nil {
		s += ", game " + *t.GameID
	}
	return s + ". Opened " + views.DateTime(t.CreatedAt) + "."
}

// supportWrite answers a reply form: back to the ticket, or the ticket
// with the error under the reply box.
func (h *supportPages) supportWrite(c echo.Context, write func(text string) error, back string, render func(code int, reply, replyErr string) error) error {
	text := c.FormValue("text")
	if err := write(text); err != nil {
		errs, code, ok := formErrors(err)
		if !ok || code == http.StatusNotFound || code == http.StatusForbidden {
			return err
		}
		msg := errs["text"]
		if msg == "" {
			msg = errs[""]
		}
		return render(code, text, msg)
	}
	return c.Redirect(http.StatusSeeOther, back)
}

func (h *supportPages) supportReply(c echo.Context) error {
	id, err := requireLogin(c)
	if id == nil {
		return err
	}
	return h.supportWrite(c, func(text string) error {
		_, err := h.support.Reply(c.Request().Context(), id.UserID, c.Param("id"), text)
		return err
	}, "/support/tickets/"+url.PathEscape(c.Param("id")), func(code int, reply, replyErr string) error {
		return h.renderUserTicket(c, code, reply, replyErr)
	})
}

func (h *supportPages) supportClose(c echo.Context) error {
	id, err := requireLogin(c)
	if id == nil {
		return err
	}
	if _, err := h.support.Close(c.Request().Context(), id.UserID, c.Param("id")); err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, "/support/tickets/"+url.PathEscape(c.Param("id")))
}

// requireStaff sends a visitor to sign in and refuses a signed-in user who
// is not an admin, as the admin page does.
func requireStaff(c echo.Context) (*web.Identity, error) {
	id, err := requireLogin(c)
	if id == nil {
		return nil, err
	}
	if !id.Admin {
		return nil, domain.Errorf(domain.CodeAdminOnly, "only administrators can answer support tickets")
	}
	return id, nil
}

func (h *supportPages) supportQueuePage(c echo.Context) error {
	if id, err := requireStaff(c); id == nil {
		return err
	}
	status, err := support.ParseStatus(c.QueryParam("status"))
	if err != nil {
		status = ""
	}
	items, err := h.support.Queue(c.Request().Context(), status, 100, 0)
	if err != nil {
		return err
	}
	v := views.SupportQueueView{Filters: supportFilters("/admin/support", status, true), Empty: emptyWords(status, true)}
	for _, t := range items {
		v.Lines = append(v.Lines, views.SupportLine{Href: supportQueuePagePath + "/" + t.ID, Subject: t.Subject,
			Status: statusWords(t.Status, true),
			Detail: "From " + t.User.Username + ", waiting since " + views.DateTime(t.WaitingSince)})
	}
	return web.Render(c, http.StatusOK, views.SupportQueue(h.header.Page(c, "Support queue"), v))
}

func (h *supportPages) staffTicketPage(c echo.Context) error {
	return h.renderStaffTicket(c, http.StatusOK, "", "")
}

func (h *supportPages) renderStaffTicket(c echo.Context, code int, reply, replyErr string) error {
	if id, err := requireStaff(c); id == nil {
		return err
	}
	t, err := h.support.StaffGet(c.Request().Context(), c.Param("id"))
	if err != nil {
		return err
	}
	v := thread(t.Ticket, true)
	v.About = "From " + t.User.Username + ". " + v.About
	v.Reply, v.ReplyError = reply, replyErr
	base := supportQueuePagePath + "/" + t.ID
	v.ReplyAction, v.CloseAction = base+"/reply", base+"/close"
	v.Back, v.BackLabel = "/admin/support", "Back to the queue"
	return web.Render(c, code, views.SupportTicket(h.header.Page(c, t.Subject), v))
}

func (h *supportPages) staffReply(c echo.Context) error {
	id, err := requireStaff(c)
	if id == nil {
		return err
	}
	return h.supportWrite(c, func(text string) error {
		_, err := h.support.Answer(c.Request().Context(), id.UserID, c.Param("id"), text)
		return err
	}, "/admin/support", func(code int, reply, replyErr string) error {
		return h.renderStaffTicket(c, code, reply, replyErr)
	})
}

func (h *supportPages) staffClose(c echo.Context) error {
	id, err := requireStaff(c)
	if id == nil {
		return err
	}
	if _, err := h.support.StaffClose(c.Request().Context(), id.UserID, c.Param("id")); err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, "/admin/support")
}
