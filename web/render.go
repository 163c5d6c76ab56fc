package web

import (
	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"
)

// Render writes a templ component as an HTML response with the given
// status, under the page policy (see pageHeaders).
func Render(c echo.Context, status int, component templ.Component) error {
	h := c.Response().Header()
	setHeaders(h, pageHeaders)
	h.Set(echo.HeaderContentType, echo.MIMETextHTMLCharsetUTF8)
	c.Response().WriteHeader(status)
	return component.Render(c.Request().Context(), c.Response())
}
