package handlers

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"

	"github.com/labstack/echo/v4"

	"wager/domain"
	"wager/domain/audit"
	"wager/handlers/api"
	"wager/handlers/header"
	"wager/views"
	"wager/web"
)

// auditPages serve the audit log's page.
type auditPages struct {
	audit  *audit.Service
	header *header.Header
}

// auditPagePath: the log's page answers browsers at /admin/audit (the JSON
// list's address, see pagesForBrowsers) and lives here.
const auditPagePath = "/admin/audit/page"

// auditPageSize is how many entries the page shows at a time.
const auditPageSize = 50

// pageRoutes registers the audit log's page.
func (h *auditPages) pageRoutes(r *router) {
	r.page(http.MethodGet, auditPagePath, h.auditPage)
}

// auditPage shows the audit log to admins, newest first, ?before=<id> for
// older entries.
func (h *auditPages) auditPage(c echo.Context) error {
	id, err := requireLogin(c)
	if id == nil {
		return err
	}
	if !id.Admin {
		return domain.Errorf(domain.CodeAdminOnly, "only administrators can read the audit log")
	}
	_, before, err := api.PageParams(c)
	if err != nil {
		return err
	}
	items, err := h.audit.List(c.Request().Context(), auditPageSize, before)
	if err != nil {
		return err
	}
	v := views.AuditView{Paged: before > 0}
	for _, it := range items {
		v.Lines = append(v.Lines, auditLine(it))
	}
	if len(items) == auditPageSize {
		v.Older = "/admin/audit?before=" + url.QueryEscape(items[len(items)-1].ID)
	}
	return web.Render(c, http.StatusOK, views.Audit(h.header.Page(c, "Audit log"), v))
}

// auditActionWords says each known action in words; others show their
// dotted name only.
var auditActionWords = map[string]string{
	audit.FlagSet:          "Set a feature flag",
	audit.SupportReply:     "Answered a support ticket",
	audit.SupportClose:     "Closed a support ticket",
	audit.IntegrityRelease: "Released a held game",
	audit.IntegrityVoid:    "Voided a held game",
}

// auditLine is an entry as the page shows it: its target linked to the
// thing acted on where it has a page.
func auditLine(it audit.Item) views.AuditLine {
	l := views.AuditLine{At: it.CreatedAt, Who: it.Actor.Username, WhoHref: "/u/" + url.PathEscape(it.Actor.Username),
		Action: auditActionWords[it.Action], Code: it.Action, Target: it.Target, Details: detailWords(it.Data)}
	kind, id, _ := strings.Cut(it.Target, ":")
	if _, ok := domain.CanonicalID(id); ok {
		switch kind {
		case "ticket":
			l.TargetHref = supportQueuePagePath + "/" + id
		case "game":
			l.TargetHref = "/game/" + id
		}
	}
	return l
}

// detailWords writes an entry's data, a JSON object, as "name: value"
// pairs in name order; "" for an empty object.
func detailWords(data json.RawMessage) string {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		return string(data)
	}
	names := make([]string, 0, len(fields))
	for name := range fields {
		names = append(names, name)
	}
	sort.Strings(names)
	parts := make([]string, 0, len(names))
	for _, name := range names {
		raw := bytes.TrimSpace(fields[name])
		var s string
		if json.Unmarshal(raw, &s) == nil {
			raw = []byte(s) // strings without their quotes
		}
		parts = append(parts, fmt.Sprintf("%s: %s", name, raw))
	}
	return strings.Join(parts, ", ")
}
