package api

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"wager/domain"
	"wager/domain/auth"
	"wager/domain/media"
	"wager/domain/protection"
	"wager/domain/users"
	"wager/web"
)

// Users serves profiles, images, blocks and settings.
type Users struct {
	Users      *users.Service
	Auth       *auth.Service
	Protection *protection.Service
}

// Routes registers profiles, their images and user search.
func (h *Users) Routes(r Router) {
	r.JSON(http.MethodGet, "/users/search", h.searchUsers, web.Op{Tag: "users", Auth: web.AuthOptional,
		Summary: "Find users whose username starts with a prefix (at most 20)", Response: []UserProfile{},
		Query: []web.Param{{Name: "username", Required: true, Description: "at least 2 characters, any case", MinLength: 2}}})
	r.JSON(http.MethodGet, "/users/me", h.me, web.Op{Tag: "users", Auth: web.AuthRequired,
		Summary: "The signed-in user's profile", Response: MyProfile{}})
	// Documented at /usernames/{username}: /users/username/{username} would
	// be ambiguous with /users/{id}/... in the document.
	r.JSON(http.MethodGet, "/usernames/:username", h.userByUsername, web.Op{Tag: "users", Auth: web.AuthNone,
		Summary: "Public profile by username", Description: "Also served at /users/username/{username}.",
		Response: UserProfile{}, Errors: []int{http.StatusNotFound}})
	r.Alias(http.MethodGet, "/users/username/:username", h.userByUsername, web.AuthNone)
	r.JSON(http.MethodGet, "/users/:id", h.userByID, web.Op{Tag: "users", Auth: web.AuthNone,
		Summary: "Public profile by id", Response: UserProfile{}, Errors: []int{http.StatusNotFound}})
	r.JSON(http.MethodPost, "/users/me/bot", h.declareBot, web.Op{Tag: "users", Auth: web.AuthRequired,
		Summary: "Declare your account a bot, for good",
		Description: "A program that plays (an SDK bot, an AI agent over MCP) must play from a bot account: profiles, game and arena pages say so, " +
			"and arenas that do not allow agents refuse its entry (403 AGENTS_NOT_ALLOWED). It cannot be undone; declaring again changes nothing.",
		Response: MyProfile{}})
	r.JSON(http.MethodPatch, "/users/me/profile", h.updateProfile, web.Op{Tag: "users", Auth: web.AuthRequired,
		Summary: "Change username, display name or bio", Request: ProfileRequest{}, Response: UserProfile{},
		Errors: []int{http.StatusConflict}})
	for _, kind := range []media.Kind{media.Avatar, media.Cover} {
		r.JSON(http.MethodPost, "/users/me/"+string(kind), h.uploadImage(kind), web.Op{Tag: "users", Auth: web.AuthRequired,
			Summary:     "Upload the " + string(kind) + " image (multipart field \"file\")",
			Description: "PNG, JPEG or WebP, recognised by content; at most 2 MB. Re-encoded so that only pixels are kept.",
			Upload:      &web.Upload{Field: "file", Types: []string{"image/png", "image/jpeg", "image/webp"}},
			Response:    UserProfile{}, Errors: []int{http.StatusRequestEntityTooLarge}})
	}
	r.Asset(http.MethodGet, "/images/:id", h.image, web.Op{Tag: "users", Summary: "A profile image (PNG or JPEG bytes)",
		Description: "Content never changes for an id: cached for a year.", Errors: []int{http.StatusNotFound},
		Produces: []string{"image/png", "image/jpeg"}})
}

func (h *Users) searchUsers(c echo.Context) error {
	found, err := h.Users.Search(c.Request().Context(), c.QueryParam("username"))
	if err != nil {
		return err
	}
	out := make([]UserProfile, len(found))
	for i, u := range found {
		out[i] = ProfileOf(u)
	}
	return c.JSON(http.StatusOK, out)
}

func (h *Users) userByUsername(c echo.Context) error {
	u, err := h.Users.ByUsername(c.Request().Context(), c.Param("username"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, ProfileOf(u))
}

func (h *Users) userByID(c echo.Context) error {
	u, err := h.Users.ByID(c.Request().Context(), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, ProfileOf(u))
}

func (h *Users) me(c echo.Context) error {
	u, err := h.Users.ByID(c.Request().Context(), web.IdentityOf(c).UserID)
	if err != nil {
		return err
	}
	p, err := myProfile(c, h.Protection, u)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, p)
}

func (h *Users) declareBot(c echo.Context) error {
	u, err := h.Users.DeclareBot(c.Request().Context(), web.IdentityOf(c).UserID)
	if err != nil {
		return err
	}
	p, err := myProfile(c, h.Protection, u)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, p)
}

// ProfileRequest is the body of PATCH /users/me/profile; absent fields stay
// as they are.
type ProfileRequest struct {
	Username    *string `json:"username,omitempty" pattern:"^[a-z0-9_]{3,20}$" doc:"3-20 of a-z, 0-9 and _; unique"`
	DisplayName *string `json:"displayName,omitempty" maxLength:"40" doc:"at most 40 characters"`
	Bio         *string `json:"bio,omitempty" maxLength:"280" doc:"at most 280 characters"`
}

func (h *Users) updateProfile(c echo.Context) error {
	var req ProfileRequest
	if err := web.BindJSON(c, &req); err != nil {
		return err
	}
	u, err := h.Users.UpdateProfile(c.Request().Context(), web.IdentityOf(c).UserID,
		users.ProfileUpdate{Username: req.Username, DisplayName: req.DisplayName, Bio: req.Bio})
	h.Auth.Forget(web.IdentityOf(c).UserID) // the username may have changed
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, ProfileOf(u))
}

// uploadImage returns the handler of POST /users/me/avatar or /cover.
func (h *Users) uploadImage(kind media.Kind) echo.HandlerFunc {
	return func(c echo.Context) error {
		data, err := FormFile(c)
		if err != nil {
			return err
		}
		u, err := h.Users.SetImage(c.Request().Context(), web.IdentityOf(c).UserID, kind, data)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, ProfileOf(u))
	}
}

// FormFile reads the multipart field "file". The route's body limit bounds
// how much is read.
func FormFile(c echo.Context) ([]byte, error) {
	fh, err := c.FormFile("file")
	if err != nil {
		var he *echo.HTTPError
		if errors.As(err, &he) || strings.Contains(err.Error(), "too large") {
			return nil, domain.Errorf(domain.CodePayloadTooLarge, "the upload is larger than 2 MB")
		}
		return nil, domain.Invalid(map[string]string{"file": "send the image as the multipart form field \"file\""})
	}
	f, err := fh.Open()
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, media.MaxUploadBytes+1))
}

func (h *Users) image(c echo.Context) error {
	img, err := h.Users.ImageByID(c.Request().Context(), c.Param("id"))
	if err != nil {
		return err
	}
	hdr := c.Response().Header()
	hdr.Set("Cache-Control", "public, max-age=31536000, immutable")
	hdr.Set("ETag", `"`+img.ID+`"`)
	hdr.Set("X-Content-Type-Options", "nosniff")
	if c.Request().Header.Get("If-None-Match") == hdr.Get("ETag") {
		return c.NoContent(http.StatusNotModified)
	}
	return c.Blob(http.StatusOK, img.ContentType, img.Data)
}

// UserProfile is a user's public profile.
type UserProfile struct {
	ID            string    `json:"id"`
	Username      string    `json:"username"`
	DisplayName   string    `json:"displayName"`
	Bio           string    `json:"bio"`
	WalletAddress string    `json:"walletAddress"`
	AvatarURL     *string   `json:"avatarUrl"`
	CoverURL      *string   `json:"coverUrl"`
	CreatedAt     time.Time `json:"createdAt"`
	IsBot         bool      `json:"isBot" doc:"a demo player run by the server; never on leaderboards"`
	Bot           bool      `json:"bot" doc:"a bot account: declared one for good (POST /users/me/bot), or a demo bot; arenas with agentsAllowed false refuse it"`
}

// ProfileOf is u's public profile.
func ProfileOf(u users.User) UserProfile {
	return UserProfile{ID: u.ID, Username: u.Username, DisplayName: u.DisplayName, Bio: u.Bio,
		WalletAddress: u.WalletAddress, AvatarURL: ImageURL(u.AvatarImageID), CoverURL: ImageURL(u.CoverImageID),
		CreatedAt: u.CreatedAt, IsBot: u.Bot, Bot: u.BotAccount}
}

// ImageURL is the address of an uploaded image (nil: no image).
func ImageURL(id *string) *string {
	if id == nil {
		return nil
	}
	u := "/images/" + *id
	return &u
}
