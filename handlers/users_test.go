package handlers_test

import (
	"bytes"
	"fmt"
	"hash/crc32"
	"image"
	"image/color"
	"image/png"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

func TestUserSearchAndProfiles(t *testing.T) {
	a := newTestApp(t, map[string]string{"JWT_SECRET": testSecret})
	token, id := a.login(t, newWallet(t), "agent-1")
	auth := bearer(token, "agent-1")
	patch := func(body string) response {
		return a.do(t, request{method: http.MethodPatch, path: "/users/me/profile", body: body, header: auth})
	}

	r := patch(`{"username": "Zed_Runner", "displayName": "Zed", "bio": "I play rock."}`)
	if r.Code != 200 || r.json(t)["username"] != "zed_runner" || r.json(t)["bio"] != "I play rock." {
		t.Fatalf("profile update: got %d %s", r.Code, r.Body)
	}
	for _, body := range []string{
		`{"username": "ab"}`, `{"username": "has space"}`, `{"username": "` + strings.Repeat("a", 21) + `"}`,
		`{"username": "émile"}`, `{"bio": "` + strings.Repeat("b", 281) + `"}`,
		`{"displayName": "` + strings.Repeat("d", 41) + `"}`,
	} {
		patch(body).wantError(t, 400, "VALIDATION_ERROR")
	}
	// Text that reads other than it is: direction overrides and control
	// characters are refused, naming the field (a bio keeps its line breaks).
	for field, text := range map[string]string{
		"displayName": "Zed\u202Egnp.exe", "bio": "ring\u0085the bell", "username": "zed\u2066_x",
	} {
		e := patch(jsonBody(map[string]string{field: text})).wantError(t, 400, "VALIDATION_ERROR")
		if reason, _ := e["fields"].(map[string]any)[field].(string); !strings.Contains(reason, "must not contain") {
			t.Errorf("%s %q: %v, want the field named with what it must not contain", field, text, e)
		}
	}
	if r := patch(`{"bio": "two\r\nlines"}`); r.Code != 200 || r.json(t)["bio"] != "two\nlines" {
		t.Errorf("a bio with a line break: %d %s", r.Code, r.Body)
	}
	patch(`{"username": 5}`).wantError(t, 400, "VALIDATION_ERROR")
	// A failed update changes nothing, not even the valid fields beside the bad one.
	patch(`{"displayName": "Changed", "username": "x"}`).wantError(t, 400, "VALIDATION_ERROR")
	if got := a.do(t, request{path: "/users/" + id}).json(t)["displayName"]; got != "Zed" {
		t.Errorf("display name after a refused update: got %v, want Zed", got)
	}

	otherToken, _ := a.login(t, newWallet(t), "agent-1")
	taken := a.do(t, request{method: http.MethodPatch, path: "/users/me/profile", body: `{"username": "ZED_RUNNER"}`,
		header: bearer(otherToken, "agent-1")})
	if m := taken.wantError(t, 409, "CONFLICT"); m["fields"] == nil {
		t.Errorf("taken username should name the field: %v", m)
	}

	if r := a.do(t, request{path: "/users/username/ZED_runner"}); r.Code != 200 || r.json(t)["id"] != id {
		t.Errorf("by username: got %d %s", r.Code, r.Body)
	}
	a.do(t, request{path: "/users/username/nobody_here"}).wantError(t, 404, "NOT_FOUND")
	a.do(t, request{path: "/users/not-a-uuid"}).wantError(t, 404, "NOT_FOUND")
	a.do(t, request{path: "/users/00000000-0000-0000-0000-000000000000"}).wantError(t, 404, "NOT_FOUND")

	search := func(q string) []map[string]any {
		r := a.do(t, request{path: "/users/search?username=" + url.QueryEscape(q)})
		if r.Code != 200 {
			t.Fatalf("search %q: got %d %s", q, r.Code, r.Body)
		}
		var out []map[string]any
		if err := jsonDecode(r.Body.Bytes(), &out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	if got := search("ZED"); len(got) != 1 || got[0]["id"] != id {
		t.Errorf("search ZED: got %v, want zed_runner", got)
	}
	if got := search("z%"); len(got) != 0 {
		t.Errorf("search for a literal %% matched %v", got)
	}
	if got := search("__"); len(got) != 0 {
		t.Errorf("search for literal underscores matched %v", got)
	}
	a.do(t, request{path: "/users/search?username=z"}).wantError(t, 400, "VALIDATION_ERROR")
	for i := 0; i < 22; i++ {
		tok, _ := a.login(t, newWallet(t), "agent-1")
		a.do(t, request{method: http.MethodPatch, path: "/users/me/profile",
			body: fmt.Sprintf(`{"username": "many_%02d"}`, i), header: bearer(tok, "agent-1")})
	}
	if got := search("many_"); len(got) != 20 {
		t.Errorf("search many_: got %d results, want at most 20", len(got))
	}
}

// pngWithText returns a PNG whose tEXt chunk carries a secret, as cameras
// and editors leave metadata behind.
func pngWithText(t testing.TB, secret string) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 40, 30))
	for x := 0; x < 40; x++ {
		for y := 0; y < 30; y++ {
			img.Set(x, y, color.RGBA{uint8(x * 6), uint8(y * 8), 200, 255})
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	data := append([]byte("Comment\x00"), secret...)
	chunk := []byte{byte(len(data) >> 24), byte(len(data) >> 16), byte(len(data) >> 8), byte(len(data))}
	typed := append([]byte("tEXt"), data...)
	crc := crc32.ChecksumIEEE(typed)
	chunk = append(append(chunk, typed...), byte(crc>>24), byte(crc>>16), byte(crc>>8), byte(crc))
	const afterIHDR = 8 + 25
	return append(append(append([]byte{}, b[:afterIHDR]...), chunk...), b[afterIHDR:]...)
}

func upload(t testing.TB, a *testApp, path, filename string, data []byte, header map[string]string) response {
	t.Helper()
	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	part, _ := w.CreateFormFile("file", filename)
	part.Write(data)
	w.Close()
	req := httptest.NewRequest(http.MethodPost, path, &body)
	req.Header.Set("Content-Type", w.FormDataContentType())
	req.Header.Set("X-SDK-Version", "1.0.0")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	a.Handler().ServeHTTP(rec, req)
	return response{rec}
}

func TestAvatarAndCoverUploads(t *testing.T) {
	a := newTestApp(t, map[string]string{"JWT_SECRET": testSecret})
	token, id := a.login(t, newWallet(t), "agent-1")
	auth := bearer(token, "agent-1")
	const secret = "gps=52.5200,13.4050"

	r := upload(t, a, "/users/me/avatar", "holiday.jpg", pngWithText(t, secret), auth)
	if r.Code != 200 {
		t.Fatalf("PNG named .jpg: got %d %s", r.Code, r.Body)
	}
	avatarURL, _ := r.json(t)["avatarUrl"].(string)
	if !strings.HasPrefix(avatarURL, "/images/") {
		t.Fatalf("avatarUrl: got %q", avatarURL)
	}
	img := a.do(t, request{path: avatarURL})
	if img.Code != 200 || img.Header().Get("Content-Type") != "image/png" ||
		!strings.Contains(img.Header().Get("Cache-Control"), "max-age=31536000") || img.Header().Get("ETag") == "" {
		t.Fatalf("served avatar: %d %q %q", img.Code, img.Header().Get("Content-Type"), img.Header().Get("Cache-Control"))
	}
	served := img.Body.Bytes()
	if bytes.Contains(served, []byte(secret)) || bytes.Contains(served, []byte("tEXt")) {
		t.Error("the served avatar still carries the uploaded metadata")
	}
	if got, err := png.Decode(bytes.NewReader(served)); err != nil || got.Bounds().Dx() != 40 {
		t.Errorf("served avatar does not decode as the 40px picture: %v", err)
	}
	again := a.do(t, request{path: avatarURL, header: map[string]string{"If-None-Match": img.Header().Get("ETag")}})
	if again.Code != http.StatusNotModified {
		t.Errorf("conditional request: got %d, want 304", again.Code)
	}
	if got := a.do(t, request{path: "/users/" + id}).json(t)["avatarUrl"]; got != avatarURL {
		t.Errorf("profile avatarUrl: got %v, want %s", got, avatarURL)
	}

	upload(t, a, "/users/me/cover", "notes.png", []byte("hello, I am a text file"), auth).
		wantError(t, 400, "VALIDATION_ERROR")
	big := append(pngWithText(t, "x"), bytes.Repeat([]byte{0}, 3<<20)...)
	upload(t, a, "/users/me/cover", "big.png", big, auth).wantError(t, 413, "PAYLOAD_TOO_LARGE")
	upload(t, a, "/users/me/cover", "a.png", pngWithText(t, "x"), nil).wantError(t, 401, "UNAUTHORIZED")

	// Replacing the avatar removes the old image.
	r = upload(t, a, "/users/me/avatar", "b.png", pngWithText(t, "second"), auth)
	if r.Code != 200 || r.json(t)["avatarUrl"] == avatarURL {
		t.Fatalf("second avatar: got %d %s", r.Code, r.Body)
	}
	a.do(t, request{path: avatarURL}).wantError(t, 404, "NOT_FOUND")
}

func TestBrowserSessionAndCSRF(t *testing.T) {
	a := newTestApp(t, map[string]string{"JWT_SECRET": testSecret})
	w := newWallet(t)
	msg := a.requestChallenge(t, w, "web")
	r := a.do(t, request{method: http.MethodPost, path: "/session", header: map[string]string{"Origin": "http://example.com"},
		body: jsonBody(map[string]string{"address": w.address(), "signedMessage": w.sign(msg)})})
	if r.Code != 200 {
		t.Fatalf("/session: got %d %s", r.Code, r.Body)
	}
	var cookie *http.Cookie
	for _, c := range r.Result().Cookies() {
		if c.Name == "wager_session" {
			cookie = c
		}
	}
	if cookie == nil || !cookie.HttpOnly || cookie.SameSite != http.SameSiteLaxMode {
		t.Fatalf("session cookie: got %+v, want HttpOnly SameSite=Lax", cookie)
	}
	withCookie := map[string]string{"Cookie": "wager_session=" + cookie.Value}

	page := a.do(t, request{path: "/settings", header: withCookie})
	if page.Code != 200 {
		t.Fatalf("/settings signed in: got %d", page.Code)
	}
	html := page.Body.String()
	i := strings.Index(html, `name="csrf-token" content="`)
	if i < 0 {
		t.Fatal("settings page has no CSRF token")
	}
	csrf := html[i+len(`name="csrf-token" content="`):]
	csrf = csrf[:strings.IndexByte(csrf, '"')]

	form := func(extra map[string]string, values url.Values) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, "/settings/profile", strings.NewReader(values.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for k, v := range extra {
			req.Header.Set(k, v)
		}
		rec := httptest.NewRecorder()
		a.Handler().ServeHTTP(rec, req)
		return rec
	}
	values := url.Values{"username": {"csrf_tester"}, "displayName": {"C"}, "bio": {""}}
	if rec := form(withCookie, values); rec.Code != http.StatusForbidden {
		t.Errorf("profile form without the CSRF token: got %d, want 403", rec.Code)
	}
	values.Set("_csrf", "wrong")
	if rec := form(withCookie, values); rec.Code != http.StatusForbidden {
		t.Errorf("profile form with a wrong CSRF token: got %d, want 403", rec.Code)
	}
	values.Set("_csrf", csrf)
	if rec := form(withCookie, values); rec.Code != http.StatusSeeOther {
		t.Errorf("profile form with the CSRF token: got %d %s, want 303", rec.Code, rec.Body)
	}
	if got := a.do(t, request{path: "/users/username/csrf_tester"}); got.Code != 200 {
		t.Errorf("profile not saved: %d", got.Code)
	}

	// Logging out ends the session on the server, not only in the browser.
	req := httptest.NewRequest(http.MethodPost, "/logout", strings.NewReader(url.Values{"_csrf": {csrf}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Cookie", "wager_session="+cookie.Value)
	rec := httptest.NewRecorder()
	a.Handler().ServeHTTP(rec, req)
	if rec.Code != http.StatusSeeOther || !strings.Contains(rec.Header().Get("Set-Cookie"), "Max-Age=0") {
		t.Fatalf("logout: got %d, Set-Cookie %q", rec.Code, rec.Header().Get("Set-Cookie"))
	}
	if r := a.do(t, request{path: "/settings", header: withCookie}); r.Code != http.StatusSeeOther ||
		!strings.HasPrefix(r.Header().Get("Location"), "/login") {
		t.Errorf("/settings after logout: got %d to %q, want a redirect to /login", r.Code, r.Header().Get("Location"))
	}
}
