package handlers

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"wager/domain"
	"wager/domain/media"
	"wager/domain/users"
	"wager/web"
)

// userRoutes registers profiles, their images and user search.
func (a *App) userRoutes(r *router) {
	r.json(http.MethodGet, "/users/search", a.searchUsers, web.Op{Tag: "users", Auth: web.AuthOptional,
		Summary: "Find users whose username starts with a prefix (at most 20)", Response: []UserProfile{},
		Query: []web.Param{{Name: "username", Required: true, Description: "at least 2 characters, any case", MinLength: 2}}})
	r.json(http.MethodGet, "/users/me", a.me, web.Op{Tag: "users", Auth: web.AuthRequired,
		Summary: "The signed-in user's profile", Response: MyProfile{}})
	// Documented at /usernames/{username}: /users/username/{username} would
	// be ambiguous with /users/{id}/... in the document.
	r.json(http.MethodGet, "/usernames/:username", a.userByUsername, web.Op{Tag: "users", Auth: web.AuthNone,
		Summary: "Public profile by username", Description: "Also served at /users/username/{username}.",
		Response: UserProfile{}, Errors: []int{http.StatusNotFound}})
	r.alias(http.MethodGet, "/users/username/:username", a.userByUsername, web.AuthNone)
	r.json(http.MethodGet, "/users/:id", a.userByID, web.Op{Tag: "users", Auth: web.AuthNone,
		Summary: "Public profile by id", Response: UserProfile{}, Errors: []int{http.StatusNotFound}})
	r.json(http.MethodPatch, "/users/me/profile", a.updateProfile, web.Op{Tag: "users", Auth: web.AuthRequired,
		Summary: "Change username, display name or bio", Request: ProfileRequest{}, Response: UserProfile{},
		Errors: []int{http.StatusConflict}})
	for _, kind := range []media.Kind{media.Avatar, media.Cover} {
		r.json(http.MethodPost, "/users/me/"+string(kind), a.uploadImage(kind), web.Op{Tag: "users", Auth: web.AuthRequired,
			Summary:     "Upload the " + string(kind) + " image (multipart field \"file\")",
			Description: "PNG, JPEG or WebP, recognised by content; at most 2 MB. Re-encoded so that only pixels are kept.",
			Upload:      &web.Upload{Field: "file", Types: []string{"image/png", "image/jpeg", "image/webp"}},
			Response:    UserProfile{}, Errors: []int{http.StatusRequestEntityTooLarge}})
	}
	r.asset(http.MethodGet, "/images/:id", a.image, web.Op{Tag: "users", Summary: "A profile image (PNG or JPEG bytes)",
		Description: "Content never changes for an id: cached for a year.", Errors: []int{http.StatusNotFound},
		Produces: []string{"image/png", "image/jpeg"}})
}

func (a *App) searchUsers(c echo.Context) error {
	found, err := a.Users.Search(c.Request().Context(), c.QueryParam("username"))
	if err != nil {
		return err
	}
	out := make([]UserProfile, len(found))
	for i, u := range found {
		out[i] = profileOf(u)
	}
	return c.JSON(http.StatusOK, out)
}

func (a *App) userByUsername(c echo.Context) error {
	u, err := a.Users.ByUsername(c.Request().Context(), c.Param("username"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, profileOf(u))
}

func (a *App) userByID(c echo.Context) error {
	u, err := a.Users.ByID(c.Request().Context(), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, profileOf(u))
}

func (a *App) me(c echo.Context) error {
	u, err := a.Users.ByID(c.Request().Context(), web.IdentityOf(c).UserID)
	if err != nil {
		return err
	}
	p, err := a.myProfile(c, profileOf(u))
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

func (a *App) updateProfile(c echo.Context) error {
	var req ProfileRequest
	if err := web.BindJSON(c, &req); err != nil {
		return err
	}
	u, err := a.Users.UpdateProfile(c.Request().Context(), web.IdentityOf(c).UserID,
		users.ProfileUpdate{Username: req.Username, DisplayName: req.DisplayName, Bio: req.Bio})
	a.Auth.Forget(web.IdentityOf(c).UserID) // the username may have changed
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, profileOf(u))
}

// uploadImage returns the handler of POST /users/me/avatar or /cover.
func (a *App) uploadImage(kind media.Kind) echo.HandlerFunc {
	return func(c echo.Context) error {
		data, err := formFile(c)
		if err != nil {
			return err
		}
		u, err := a.Users.SetImage(c.Request().Context(), web.IdentityOf(c).UserID, kind, data)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, profileOf(u))
	}
}

// formFile reads the multipart field "file". The route's body limit bounds
// how much is read.
func formFile(c echo.Context) ([]byte, error) {
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

func (a *App) image(c echo.Context) error {
	img, err := a.Users.ImageByID(c.Request().Context(), c.Param("id"))
	if err != nil {
		return err
	}
	h := c.Response().Header()
	h.Set("Cache-Control", "public, max-age=31536000, immutable")
	h.Set("ETag", `"`+img.ID+`"`)
	h.Set("X-Content-Type-Options", "nosniff")
	if c.Request().Header.Get("If-None-Match") == h.Get("ETag") {
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
}

func profileOf(u users.User) UserProfile {
	return UserProfile{ID: u.ID, Username: u.Username, DisplayName: u.DisplayName, Bio: u.Bio,
		WalletAddress: u.WalletAddress, AvatarURL: imageURL(u.AvatarImageID), CoverURL: imageURL(u.CoverImageID),
		CreatedAt: u.CreatedAt, IsBot: u.Bot}
}

func imageURL(id *string) *string {
	if id == nil {
		return nil
	}
	u := "/images/" + *id
	return &u
}
