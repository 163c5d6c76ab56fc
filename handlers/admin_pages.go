package handlers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"wager/domain"
	"wager/domain/flags"
	"wager/domain/money"
	"wager/domain/protection"
	"wager/domain/reserves"
	"wager/domain/users"
	"wager/handlers/header"
	"wager/views"
	"wager/web"
)

// adminPages serve the admin page: flags, the books and a player's protection.
type adminPages struct {
	users      *users.Service
	flags      *flags.Service
	money      *money.Service
	reserves   *reserves.Service
	protection *protection.Service
	log        *slog.Logger
	header     *header.Header
}

func (h *adminPages) adminPage(c echo.Context) error {
	id := web.IdentityOf(c)
	if id == nil {
		_, err := requireLogin(c)
		return err
	}
	if !id.Admin {
		return domain.Errorf(domain.CodeAdminOnly, "only administrators can open the admin page")
	}
	ctx := c.Request().Context()
	var v views.AdminView
	v.ConfirmMaintenance = c.QueryParam("confirm") == flags.Maintenance && !h.flags.Enabled(flags.Maintenance)
	list, err := h.flags.List(ctx)
	if err != nil {
		return err
	}
	for _, f := range list {
		line := views.FlagLine{Name: f.Name, Description: f.Description, Enabled: f.Enabled, UpdatedAt: f.UpdatedAt}
		if f.UpdatedBy != nil {
			line.UpdatedBy = *f.UpdatedBy
		}
		v.Flags = append(v.Flags, line)
	}
	changes, err := h.flags.Changes(ctx, 20)
	if err != nil {
		return err
	}
	for _, ch := range changes {
		v.Changes = append(v.Changes, views.FlagChangeLine{Name: ch.Name, By: ch.ChangedBy, Enabled: ch.Enabled, At: ch.ChangedAt})
	}
	books, err := h.money.Reconcile(ctx)
	if err != nil {
		return err
	}
	v.Books = booksView(books)
	if v.Books.Reserves, v.Books.ReservesShort, err = h.reservesLine(ctx); err != nil {
		return err
	}
	if name := strings.TrimSpace(c.QueryParam("player")); name != "" {
		v.Player = h.playerProtectionLine(c, name)
	}
	return web.Render(c, http.StatusOK, views.Admin(h.header.Page(c, "Admin"), v))
}

// booksView is the reconciliation in words: unattributed USDC is listed
// as such, and only a shortfall or a ledger that does not sum to zero is
// the alarm.
func booksView(r money.Reconciliation) views.BooksView {
	v := views.BooksView{LedgerTotal: money.FormatUSDC(r.LedgerTotalMinor), EntriesTotal: money.FormatUSDC(r.EntriesTotalMinor),
		Balanced: r.Balanced, LedgerSumsToZero: r.LedgerTotalMinor == 0 && r.EntriesTotalMinor == 0, Unread: len(r.UnreadAddresses)}
	var unattributed, short int64
	for _, ad := range r.Addresses {
		line := views.AddressLine{Label: ad.Label, Address: ad.Address, Ledger: money.FormatUSDC(ad.LedgerMinor), Unread: ad.ChainMinor == nil}
		if ad.ChainMinor != nil {
			line.Chain = money.FormatUSDC(*ad.ChainMinor)
		}
		if ad.UnattributedMinor > 0 {
			line.Unattributed = money.USDC(ad.UnattributedMinor)
		}
		if ad.ShortfallMinor > 0 {
			line.Shortfall = money.USDC(ad.ShortfallMinor)
		}
		unattributed, short = unattributed+ad.UnattributedMinor, short+ad.ShortfallMinor
		v.Addresses = append(v.Addresses, line)
	}
	if unattributed > 0 {
		v.Unattributed = money.USDC(unattributed)
	}
	if short > 0 {
		v.Shortfall = money.USDC(short)
	}
	return v
}

// reservesLine is the latest proof of reserves in words, and whether its
// assets fall short of its liabilities (the alarm).
func (h *adminPages) reservesLine(ctx context.Context) (string, bool, error) {
	s, err := h.reserves.Latest(ctx)
	var derr *domain.Error
	switch {
	case errors.As(err, &derr) && derr.Code == domain.CodeNotFound:
		return "No proof of reserves has been taken yet.", false, nil
	case err != nil:
		return "", false, err
	}
	taken := fmt.Sprintf("Proof of reserves %s (%s UTC, slot %d): ", s.SnapshotID, s.At.UTC().Format("2006-01-02 15:04"), s.Slot)
	owed := money.USDC(s.LiabilitiesMinor) + " owed to " + views.Users(s.Users)
	if s.Shortfall() > 0 {
		return taken + "the assets on chain, " + money.USDC(s.AssetsMinor) + ", are below the liabilities, " + owed + ": " +
			money.USDC(s.Shortfall()) + " short.", true, nil
	}
	return taken + "the assets on chain, " + money.USDC(s.AssetsMinor) + ", cover the liabilities, " + owed + ".", false, nil
}

// adminFlag turns a flag on or off. Maintenance mode shuts everyone else
// out, so switching it on takes a second step: without confirmed=yes (the
// confirmation panel's form) the admin is sent to that panel instead.
func (h *adminPages) adminFlag(c echo.Context) error {
	id := web.IdentityOf(c)
	if id == nil || !id.Admin {
		return domain.Errorf(domain.CodeAdminOnly, "only administrators can change feature flags")
	}
	enabled := c.FormValue("enabled") == "true"
	if c.Param("name") == flags.Maintenance && enabled && c.FormValue("confirmed") != "yes" {
		return c.Redirect(http.StatusSeeOther, "/admin?confirm="+flags.Maintenance+"#confirm")
	}
	if _, err := h.flags.SetByAdmin(c.Request().Context(), c.Param("name"), enabled, id.UserID, id.Username+" ("+id.Wallet+")"); err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, "/admin")
}

// playerProtectionLine is a player's protection as the admin page shows
// it, read only.
func (h *adminPages) playerProtectionLine(c echo.Context, username string) *views.PlayerProtectionLine {
	ctx := c.Request().Context()
	line := &views.PlayerProtectionLine{Username: username}
	u, err := h.users.ByUsername(ctx, username)
	if err != nil {
		line.Error = sentence(web.AsError(err).Message)
		return line
	}
	v, err := h.protection.StaffViewOf(ctx, u.ID)
	if err != nil {
		line.Error = "The player's protection could not be read."
		h.log.Error("admin page: read a player's protection", "user", u.ID, "err", err)
		return line
	}
	var set []string
	for _, name := range protection.Names {
		if val := limitValues(v.Limits)[name]; val != nil {
			set = append(set, limitLabels[name]+": "+money.FormatUSDC(*val)+" USDC")
		}
	}
	line.Limits = "None."
	if len(set) > 0 {
		line.Limits = strings.Join(set, "; ") + "."
	}
	for _, p := range v.Limits.Pending {
		line.Limits += " Waiting: " + limitLabels[p.Name] + " " + strings.ToLower(usdcOrNone(p.Value)) + " from " + protection.FormatTime(p.EffectiveAt) + "."
	}
	switch x := v.Running; {
	case x == nil:
		line.Exclusion = "None running."
	case x.Until == nil:
		line.Exclusion = "Self-excluded for good since " + protection.FormatTime(x.StartsAt) + "."
	case x.Kind == protection.KindTimeout:
		line.Exclusion = "Time-out until " + protection.FormatTime(*x.Until) + "."
	default:
		line.Exclusion = "Self-excluded until " + protection.FormatTime(*x.Until) + "."
	}
	if n := len(v.Exclusions); n > 0 {
		line.Exclusion += " " + strconv.Itoa(n) + " asked for in all."
	}
	switch {
	case v.Underage:
		line.Age = "Underage: refused money in for good."
	case v.AgeConfirmed:
		line.Age = "Confirmed."
	default:
		line.Age = "Not confirmed."
	}
	return line
}
