package handlers

import (
	"net/http"
	"sync"

	"github.com/labstack/echo/v4"

	"wager/handlers/reference"
	"wager/views"
	"wager/web"
)

// docsReference is the API reference the docs page shows, built once
// from the two documents the server serves.
type docsReference struct {
	once sync.Once
	ref  views.Reference
}

func (a *App) docsPage(c echo.Context) error {
	a.reference.once.Do(func() {
		a.reference.ref = reference.Build(a.Docs.Document(), a.Protocol.Document())
	})
	return web.Render(c, http.StatusOK, views.Docs(a.header.Page(c, "API reference"), a.reference.ref))
}
