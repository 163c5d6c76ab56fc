package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"wager/domain/audit"
	"wager/web"
)

// auditPagePath: the log's page answers browsers at /admin/audit (the JSON
// list's address, see pagesForBrowsers) and lives here.
const auditPagePath = "/admin/audit/page"

// auditHandlers serve the admin audit log and its page.
type auditHandlers struct {
	audit  *audit.Service
	chrome *chrome
}

// routes registers the admin audit log: the JSON list and its page.
func (h *auditHandlers) routes(r *router) {
	r.json(http.MethodGet, "/admin/audit", h.adminAudit, web.Op{Tag: "admin", Auth: web.AuthAdmin,
		Summary: "Every admin action, newest first: who did what to which thing",
		Description: "Flag changes, support answers and closes, integrity releases and voids, each recorded in the action's own transaction. " +
			"The log is append-only: the database refuses to change or delete an entry.",
		Response: []audit.Item{},
		Query:    []web.Param{web.PageLimit, web.PageBefore("an entry's id: only older ones (the last id of the previous page)")}})
	r.page(http.MethodGet, auditPagePath, h.auditPage)
}

func (h *auditHandlers) adminAudit(c echo.Context) error {
	limit, before, err := pageParams(c)
	if err != nil {
		return err
	}
	items, err := h.audit.List(c.Request().Context(), limit, before)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, items)
}
