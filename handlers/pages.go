package handlers

import (
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"wager/domain"
	"wager/static"
)

// serveStatic serves the embedded assets. A request that names the
// current content hash (?v=) may be cached for a year.
func serveStatic(c echo.Context) error {
	name := strings.TrimPrefix(path.Clean("/"+c.Param("*")), "/")
	body, err := fs.ReadFile(static.FS, name)
	if err != nil {
		return echo.ErrNotFound
	}
	h := c.Response().Header()
	if v := c.QueryParam("v"); v != "" && v == static.Version(name) {
		h.Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		h.Set("Cache-Control", "public, max-age=300")
	}
	h.Set("ETag", `"`+static.Version(name)+`"`)
	if c.Request().Header.Get("If-None-Match") == h.Get("ETag") {
		return c.NoContent(http.StatusNotModified)
	}
	ctype := mime.TypeByExtension(path.Ext(name))
	if ctype == "" {
		ctype = "application/octet-stream"
	}
	return c.Blob(http.StatusOK, ctype, body)
}

// parseUSDC reads a USDC amount ("1.5") as minor units, exactly.
func parseUSDC(s string) (int64, error) {
	bad := domain.Invalid(map[string]string{"stakeMinor": "must be an amount in USDC such as 1.5, with at most 6 decimals"})
	if s == "" {
		return 0, nil
	}
	whole, frac, _ := strings.Cut(s, ".")
	if len(frac) > 6 || (whole == "" && frac == "") || strings.Trim(whole+frac, "0123456789") != "" || len(whole) > 9 {
		return 0, bad
	}
	w, _ := strconv.ParseInt("0"+whole, 10, 64)
	f, _ := strconv.ParseInt((frac + "000000")[:6], 10, 64)
	return w*1_000_000 + f, nil
}

func fieldLabel(f string) string {
	switch f {
	case "stakeMinor":
		return "The stake"
	case "settings.rounds":
		return "Rounds"
	case "settings.roundSeconds":
		return "Seconds per round"
	case "settings.turnSeconds":
		return "Seconds per turn"
	case "gameType":
		return "The game"
	}
	return f
}
