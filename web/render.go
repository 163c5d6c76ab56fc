package web

import (
	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"
)

// Render writes a templ component as an HTML response with the given status.
func Render(c echo.Context, status int, component templ.Component) error {
	c.Response().Header().Set(echo.HeaderContentType, echo.MIMETextHTMLCharsetUTF8)
	c.Response().WriteHeader(status)
	return component.Render(c.Request().Context(), c.Response())
}
