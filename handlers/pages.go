package handlers

import (
	"io/fs"
	"log/slog"
	"mime"
	"net/http"
	"path"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"wager/domain"
	"wager/domain/flags"
	"wager/domain/money"
	"wager/domain/notify"
	"wager/domain/protection"
	"wager/domain/users"
	"wager/handlers/api"
	"wager/static"
	"wager/views"
	"wager/web"
)

// chrome reads what every page shows around its own content: the viewer,
// their balance, avatar, notifications and protection, and the
// maintenance banner.
type chrome struct {
	flags      *flags.Service
	money      *money.Service
	users      *users.Service
	notify     *notify.Service
	protection *protection.Service
	log        *slog.Logger
}

// pageFor returns the chrome of a page for the request's viewer: for a
// signed-in one their avatar and platform balance (two primary-key reads;
// the page still renders, without them, when they fail) and the page's
// live socket, which keeps that balance current. The maintenance banner
// comes from the flags' in-memory copy, not the database.
func (h *chrome) pageFor(c echo.Context, title string) views.Page {
	p := views.Page{Title: title, Path: c.Request().URL.Path, Maintenance: h.flags.Enabled(flags.Maintenance)}
	id := web.IdentityOf(c)
	if id == nil {
		return p
	}
	p.User = &views.Viewer{ID: id.UserID, Username: id.Username, IsAdmin: id.Admin}
	p.CSRFToken = id.CSRFToken
	// Only a session cookie opens the socket from a page; a page fetched
	// with a bearer token has nothing to open it with.
	p.Live = id.Session
	ctx := c.Request().Context()
	if b, err := h.money.PlatformBalance(ctx, id.UserID); err != nil {
		h.log.Warn("page header: read the balance", "user", id.UserID, "err", err)
	} else {
		p.User.AvailableMinor, p.User.BalanceKnown = b.AvailableMinor, true
	}
	if u, err := h.users.ByID(ctx, id.UserID); err != nil {
		h.log.Warn("page header: read the avatar", "user", id.UserID, "err", err)
	} else if url := api.ImageURL(u.AvatarImageID); url != nil {
		p.User.AvatarURL = *url
	}
	p.Bell = h.bellFor(c, id.UserID)
	if h.protection != nil {
		p.Protection = h.protectionChrome(c, id)
	}
	return p
}

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
