package handlers

import (
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"wager/domain"
	"wager/domain/auth"
	"wager/domain/media"
	"wager/domain/ranking"
	"wager/domain/social"
	"wager/domain/users"
	"wager/handlers/api"
	"wager/handlers/header"
	"wager/views"
	"wager/web"
)

// userPages serve the profile and settings pages.
type userPages struct {
	users   *users.Service
	auth    *auth.Service
	social  *social.Service
	ranking *ranking.Service
	header  *header.Header
}

func viewProfile(u users.User, viewer *web.Identity) views.Profile {
	p := api.ProfileOf(u)
	v := views.Profile{ID: u.ID, Username: u.Username, DisplayName: u.DisplayName, Bio: u.Bio,
		WalletAddress: u.WalletAddress, CreatedAt: u.CreatedAt, IsSelf: viewer != nil && viewer.UserID == u.ID}
	if p.AvatarURL != nil {
		v.AvatarURL = *p.AvatarURL
	}
	if p.CoverURL != nil {
		v.CoverURL = *p.CoverURL
	}
	return v
}

func (h *userPages) profilePage(c echo.Context) error {
	u, err := h.users.ByUsername(c.Request().Context(), c.Param("username"))
	if err != nil {
		return err
	}
	viewer := web.IdentityOf(c)
	p := viewProfile(u, viewer)
	p.CanBefriend = viewer != nil && !p.IsSelf
	if viewer != nil {
		p.Viewer = viewer.UserID
	}
	unlocked, err := h.social.AchievementsOf(c.Request().Context(), u.ID)
	if err != nil {
		return err
	}
	earned := map[string]social.Unlocked{}
	for _, x := range unlocked {
		earned[x.AchievementID] = x
	}
	for _, d := range social.Achievements {
		x, ok := earned[d.ID]
		p.Badges = append(p.Badges, views.Badge{ID: d.ID, Name: d.Name, Description: d.Description, Unlocked: ok, UnlockedAt: x.UnlockedAt})
	}
	if p.Ratings, err = ratingCards(c, h.ranking, u.ID); err != nil {
		return err
	}
	p.IsBot, p.BotAccount = u.Bot, u.BotAccount
	return web.Render(c, http.StatusOK, views.ProfileView(h.header.Page(c, u.Username), p))
}

func (h *userPages) settingsPage(c echo.Context) error {
	id, err := requireLogin(c)
	if id == nil {
		return err
	}
	u, err := h.users.ByID(c.Request().Context(), id.UserID)
	if err != nil {
		return err
	}
	return h.renderSettings(c, http.StatusOK, u, views.SettingsForm{Username: u.Username,
		DisplayName: u.DisplayName, Bio: u.Bio}, nil)
}

func (h *userPages) renderSettings(c echo.Context, status int, u users.User, f views.SettingsForm, imageErr map[string]string) error {
	p := viewProfile(u, web.IdentityOf(c))
	images := []views.ImageForm{
		{Kind: string(media.Avatar), URL: p.AvatarURL, Error: imageErr[string(media.Avatar)]},
		{Kind: string(media.Cover), URL: p.CoverURL, Error: imageErr[string(media.Cover)]},
	}
	return web.Render(c, status, views.Settings(h.header.Page(c, "Settings"), p, f, images))
}

// settingsProfile saves the profile form. htmx gets the form back (with
// errors inline, or "Saved"); a plain form post gets the whole page.
func (h *userPages) settingsProfile(c echo.Context) error {
	id, err := requireLogin(c)
	if id == nil {
		return err
	}
	f := views.SettingsForm{Username: c.FormValue("username"), DisplayName: c.FormValue("displayName"), Bio: c.FormValue("bio")}
	u, err := h.users.UpdateProfile(c.Request().Context(), id.UserID,
		users.ProfileUpdate{Username: &f.Username, DisplayName: &f.DisplayName, Bio: &f.Bio})
	h.auth.Forget(id.UserID) // the username may have changed
	status := http.StatusOK
	if err != nil {
		de := web.AsError(err)
		if de.Code == domain.CodeInternal {
			return err
		}
		status = web.StatusOf(de.Code)
		f.Errors = de.Fields
		if len(f.Errors) == 0 {
			f.Errors = map[string]string{"": de.Message}
		}
	} else {
		f = views.SettingsForm{Username: u.Username, DisplayName: u.DisplayName, Bio: u.Bio, Saved: true}
		// The nav shows the username: keep the page consistent after a rename.
		if c.Request().Header.Get("HX-Request") == "true" && u.Username != id.Username {
			c.Response().Header().Set("HX-Refresh", "true")
		}
	}
	if c.Request().Header.Get("HX-Request") == "true" {
		// htmx swaps only 2xx answers by default; errors are shown in the
		// form, so answer 200 with the form and its messages.
		return web.Render(c, http.StatusOK, views.SettingsProfileForm(h.header.Page(c, "Settings"), f))
	}
	if err == nil {
		return c.Redirect(http.StatusSeeOther, "/settings")
	}
	current, uerr := h.users.ByID(c.Request().Context(), id.UserID)
	if uerr != nil {
		return uerr
	}
	return h.renderSettings(c, status, current, f, nil)
}

func (h *userPages) settingsImage(kind media.Kind) echo.HandlerFunc {
	return func(c echo.Context) error {
		id, err := requireLogin(c)
		if id == nil {
			return err
		}
		ctx := c.Request().Context()
		data, err := api.FormFile(c)
		if err == nil {
			_, err = h.users.SetImage(ctx, id.UserID, kind, data)
		}
		if err == nil {
			return c.Redirect(http.StatusSeeOther, "/settings")
		}
		de := web.AsError(err)
		if de.Code == domain.CodeInternal {
			return err
		}
		return h.refuseImage(c, id, kind, de)
	}
}

// imageUploadPages are the settings pages' image forms by route.
var imageUploadPages = map[string]media.Kind{"/settings/avatar": media.Avatar, "/settings/cover": media.Cover}

// refuseImage answers a refused image upload with the settings page, the
// reason beside the form it came from.
func (h *userPages) refuseImage(c echo.Context, id *web.Identity, kind media.Kind, de *domain.Error) error {
	msg := sentence(de.Message)
	switch {
	case de.Code == domain.CodePayloadTooLarge:
		msg = "The picture is larger than " + strconv.Itoa(media.MaxUploadBytes>>20) + " MB: choose a smaller one, or save it smaller first."
	case de.Fields["file"] != "":
		msg = "The file " + de.Fields["file"] + "."
	}
	u, err := h.users.ByID(c.Request().Context(), id.UserID)
	if err != nil {
		return err
	}
	return h.renderSettings(c, web.StatusOf(de.Code), u,
		views.SettingsForm{Username: u.Username, DisplayName: u.DisplayName, Bio: u.Bio},
		map[string]string{string(kind): msg})
}
