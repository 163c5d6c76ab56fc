package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"wager/domain/audit"
	"wager/web"
)

// Audit serves the admin audit log.
type Audit struct {
	Audit *audit.Service
}

// Routes registers the admin audit log.
func (h *Audit) Routes(r Router) {
	r.JSON(http.MethodGet, "/admin/audit", h.adminAudit, web.Op{Tag: "admin", Auth: web.AuthAdmin,
		Summary: "Every admin action, newest first: who did what to which thing",
		Description: "Flag changes, support answers and closes, integrity releases and voids, each recorded in the action's own transaction. " +
			"The log is append-only: the database refuses to change or delete an entry.",
		Response: []audit.Item{},
		Query:    []web.Param{web.PageLimit, web.PageBefore("an entry's id: only older ones (the last id of the previous page)")}})
}

func (h *Audit) adminAudit(c echo.Context) error {
	limit, before, err := PageParams(c)
	if err != nil {
		return err
	}
	items, err := h.Audit.List(c.Request().Context(), limit, before)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, items)
}
