package handlers_test

import (
	"bytes"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"
)

// TestAPictureOverTheLimitIsRefusedWithTheSignedInSettingsPage: a body
// over the upload limit is refused before anything reads it, as before;
// the page that says so shows who is signed in and the form to try again,
// but only to a valid session: no cookie, or a forged one, gets the plain
// error page with "Sign in", and nothing is stored.
func TestAPictureOverTheLimitIsRefusedWithTheSignedInSettingsPage(t *testing.T) {
	a := newTestApp(t, nil)
	p := a.newPlayer(t)
	cookie := a.sessionCookie(t, p.wallet)
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	mw.WriteField("_csrf", a.csrfOf(t, cookie))
	part, _ := mw.CreateFormFile("file", "huge.png")
	part.Write(append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, 3<<20)...))
	mw.Close()
	upload := func(cookie string) response {
		return a.do(t, request{method: http.MethodPost, path: "/settings/avatar", body: body.String(),
			header: map[string]string{"Cookie": cookie, "Content-Type": mw.FormDataContentType(), "Accept": "text/html"}})
	}

	r := upload(cookie)
	page := visibleText(r.Body.String())
	if r.Code != http.StatusRequestEntityTooLarge || !strings.Contains(page, "The picture is larger than 2 MB") ||
		!strings.Contains(r.Body.String(), `data-testid="nav-user"`) || !strings.Contains(r.Body.String(), `data-testid="avatar-form"`) {
		t.Errorf("signed in: %d, want 413 with the settings page, its header and the form; page reads %q", r.Code, page)
	}
	for name, c := range map[string]string{"no cookie": "", "a forged cookie": "wager_session=forged"} {
		r := upload(c)
		if r.Code != http.StatusRequestEntityTooLarge || strings.Contains(r.Body.String(), `data-testid="nav-user"`) ||
			strings.Contains(r.Body.String(), `data-testid="avatar-form"`) || !strings.Contains(r.Body.String(), `data-testid="nav-login"`) {
			t.Errorf("%s: %d, want 413 with the plain error page and \"Sign in\"", name, r.Code)
		}
	}
	if u, err := a.Users.ByID(t.Context(), p.id); err != nil || u.AvatarImageID != nil {
		t.Errorf("the avatar after refused uploads: %+v, %v; want none", u.AvatarImageID, err)
	}
}
