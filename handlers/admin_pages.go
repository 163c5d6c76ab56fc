package handlers

import (
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"wager/domain"
	"wager/domain/flags"
	"wager/domain/money"
	"wager/views"
	"wager/web"
)

func (a *App) adminPage(c echo.Context) error {
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
	v.ConfirmMaintenance = c.QueryParam("confirm") == flags.Maintenance && !a.Flags.Enabled(flags.Maintenance)
	list, err := a.Flags.List(ctx)
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
	changes, err := a.Flags.Changes(ctx, 20)
	if err != nil {
		return err
	}
	for _, ch := range changes {
		v.Changes = append(v.Changes, views.FlagChangeLine{Name: ch.Name, By: ch.ChangedBy, Enabled: ch.Enabled, At: ch.ChangedAt})
	}
	books, err := a.Money.Reconcile(ctx)
	if err != nil {
		return err
	}
	v.Books = booksView(books)
	if name := strings.TrimSpace(c.QueryParam("player")); name != "" {
		v.Player = a.playerProtectionLine(c, name)
	}
	return web.Render(c, http.StatusOK, views.Admin(a.pageFor(c, "Admin"), v))
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

// adminFlag turns a flag on or off. Maintenance mode shuts everyone else
// out, so switching it on takes a second step: without confirmed=yes (the
// confirmation panel's form) the admin is sent to that panel instead.
func (a *App) adminFlag(c echo.Context) error {
	id := web.IdentityOf(c)
	if id == nil || !id.Admin {
		return domain.Errorf(domain.CodeAdminOnly, "only administrators can change feature flags")
	}
	enabled := c.FormValue("enabled") == "true"
	if c.Param("name") == flags.Maintenance && enabled && c.FormValue("confirmed") != "yes" {
		return c.Redirect(http.StatusSeeOther, "/admin?confirm="+flags.Maintenance+"#confirm")
	}
	if _, err := a.Flags.SetByAdmin(c.Request().Context(), c.Param("name"), enabled, id.UserID, id.Username+" ("+id.Wallet+")"); err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, "/admin")
}
