// Package header reads what every page shows around its own content (the
// viewer, their balance, avatar, bell and protection, the maintenance
// banner) for the pages of package handlers, which hold a Header and
// reach none of the services it reads.
package header

import (
	"log/slog"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"wager/domain/flags"
	"wager/domain/money"
	"wager/domain/notify"
	"wager/domain/protection"
	"wager/domain/users"
	"wager/handlers/api"
	"wager/handlers/livepage"
	"wager/views"
	"wager/web"
)

// New returns the header of the pages.
func New(f *flags.Service, m *money.Service, u *users.Service, n *notify.Service, p *protection.Service, log *slog.Logger) *Header {
	return &Header{flags: f, money: m, users: u, notify: n, protection: p, log: log}
}

// Header reads what every page shows around its own content: the viewer,
// their balance, avatar, notifications and protection, and the
// maintenance banner. The pages hold one and reach none of its services.
type Header struct {
	flags      *flags.Service
	money      *money.Service
	users      *users.Service
	notify     *notify.Service
	protection *protection.Service
	log        *slog.Logger
}

// Page returns the header of a page for the request's viewer: for a
// signed-in one their avatar and platform balance (two primary-key reads;
// the page still renders, without them, when they fail) and the page's
// live socket, which keeps that balance current. The maintenance banner
// comes from the flags' in-memory copy, not the database.
func (h *Header) Page(c echo.Context, title string) views.Page {
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

// bellLatest is how many notifications the header's bell lists.
const bellLatest = 5

// bellFor reads the header's bell of a signed-in user.
func (h *Header) bellFor(c echo.Context, userID string) views.Bell {
	p, err := h.notify.List(c.Request().Context(), userID, false, bellLatest, 0)
	if err != nil {
		h.log.Warn("page header: read the notifications", "user", userID, "err", err)
		return views.Bell{}
	}
	b := views.Bell{Unread: p.Unread}
	for _, n := range p.Items {
		b.Latest = append(b.Latest, livepage.NotificationLine(n))
	}
	return b
}

// protectionChrome is what a signed-in page shows of the viewer's
// protection: the banner while money in is closed, and the reality
// check. It is nil when it cannot be read (the page renders without it).
func (h *Header) protectionChrome(c echo.Context, id *web.Identity) *views.ProtectionChrome {
	ctx := c.Request().Context()
	st, err := h.protection.StandingOf(ctx, id.UserID, protection.CountryOf(ctx))
	if err != nil {
		h.log.Warn("page header: read the protection", "user", id.UserID, "err", err)
		return nil
	}
	ch := &views.ProtectionChrome{ReminderMinutes: st.ReminderMinutes, Now: h.protection.Now().Format(time.RFC3339)}
	if id.SignedInAt.IsZero() {
		ch.ReminderMinutes = 0
	} else {
		ch.StartedAt = id.SignedInAt.UTC().Format(time.RFC3339)
	}
	ch.Banner, ch.Closed = bannerOf(st, h.protection.Config().MinAge)
	return ch
}

// What a closed account can still do, in the banner's words.
const stillOpen = "Withdrawals, selling shares, cancelling orders, redeeming, chat and free games still work."

// bannerOf words the viewer's standing for the banner, and whether money
// in is closed.
func bannerOf(st protection.Standing, minAge int) (string, bool) {
	const closed = "Deposits, stakes, tournament entries, bets, market buys, donations and tips are closed"
	switch x := st.Exclusion; {
	case st.Underage:
		return "This account is for players aged " + strconv.Itoa(minAge) + " or older, and the birth date given for it is younger: it cannot put money in. " +
			stillOpen, true
	case x != nil && x.Until == nil:
		return "You excluded yourself for good. " + closed + " for this account. " + stillOpen, true
	case x != nil && x.Kind == protection.KindTimeout:
		return "You are taking a time-out until " + protection.FormatTime(*x.Until) + ". " + closed + " until then. " + stillOpen, true
	case x != nil:
		return "You excluded yourself until " + protection.FormatTime(*x.Until) + ". " + closed + " until then. " + stillOpen, true
	case st.Restricted:
		return "Play for money is not offered where you are (" + st.Country + "). " + closed + " here. " + stillOpen, true
	case st.AgeUnconfirmed:
		return "Confirm your age before you deposit or play for money.", false
	}
	return "", false
}
