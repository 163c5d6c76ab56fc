package handlers_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"wager/domain"
	"wager/handlers"
)

// TestCORSServesListedOriginsWithTokensOnly is the attack of a page on an
// origin listed in CORS_ORIGINS that rides a signed-in user's session
// cookie: the cookie is dropped (401), while the same page's bearer token
// works and its answers are readable; other origins get no CORS headers.
func TestCORSServesListedOriginsWithTokensOnly(t *testing.T) {
	a := newTestApp(t, map[string]string{"CORS_ORIGINS": "https://app.example, http://localhost:5173"})
	p := a.newPlayer(t)
	cookie := a.sessionCookie(t, p.wallet)
	const origin = "https://app.example"

	pre := a.do(t, request{method: http.MethodOptions, path: "/wallets/me/balance", header: map[string]string{"Origin": origin,
		"Access-Control-Request-Method": "GET", "Access-Control-Request-Headers": "authorization, x-app-id, x-sdk-version"}})
	if pre.Code != http.StatusNoContent || pre.Header().Get("Access-Control-Allow-Origin") != origin ||
		!strings.Contains(pre.Header().Get("Access-Control-Allow-Headers"), "Authorization") ||
		pre.Header().Get("Access-Control-Allow-Credentials") != "" {
		t.Errorf("preflight: %d %v, want 204 allowing the origin and Authorization, never credentials", pre.Code, pre.Header())
	}
	withToken := a.do(t, request{path: "/users/me", header: map[string]string{"Origin": origin,
		"Authorization": p.auth["Authorization"], "X-App-Id": p.auth["X-App-Id"]}})
	if withToken.Code != http.StatusOK || withToken.Header().Get("Access-Control-Allow-Origin") != origin ||
		!strings.Contains(withToken.Header().Get("Access-Control-Expose-Headers"), "X-API-Version") {
		t.Errorf("a bearer request from %s: %d %v", origin, withToken.Code, withToken.Header())
	}
	withCookie := a.do(t, request{path: "/users/me", header: map[string]string{"Origin": origin, "Cookie": cookie}})
	if withCookie.Code != http.StatusUnauthorized {
		t.Errorf("a cookie request from %s: %d %s, want 401: cookies never cross origins", origin, withCookie.Code, withCookie.Body)
	}
	if own := a.do(t, request{path: "/users/me", header: map[string]string{"Cookie": cookie}}); own.Code != http.StatusOK {
		t.Errorf("the site's own cookie request: %d, want 200", own.Code)
	}
	other := a.do(t, request{path: "/games/live", header: map[string]string{"Origin": "https://evil.example"}})
	if other.Header().Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("an unlisted origin got %q", other.Header().Get("Access-Control-Allow-Origin"))
	}
	if pre := a.do(t, request{method: http.MethodOptions, path: "/games/live", header: map[string]string{"Origin": "https://evil.example",
		"Access-Control-Request-Method": "GET"}}); pre.Header().Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("an unlisted origin's preflight was allowed: %v", pre.Header())
	}
	if none := newTestApp(t, nil).do(t, request{path: "/games/live", header: map[string]string{"Origin": origin}}); none.Header().Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("without CORS_ORIGINS an origin got %q", none.Header().Get("Access-Control-Allow-Origin"))
	}
}

// TestEveryGETRouteAnswersHEAD: the same status and headers as GET, no
// body.
func TestEveryGETRouteAnswersHEAD(t *testing.T) {
	a := newTestApp(t, nil)
	p := a.newPlayer(t)
	for _, rt := range a.HTTP.Echo.Routes() {
		if rt.Method != http.MethodGet || strings.Contains(rt.Path, ":") || strings.Contains(rt.Path, "*") || rt.Path == "/ws" {
			continue
		}
		get := a.do(t, request{path: rt.Path, header: p.auth})
		head := a.do(t, request{method: http.MethodHead, path: rt.Path, header: p.auth})
		if head.Code != get.Code || head.Body.Len() != 0 || head.Header().Get("Content-Type") != get.Header().Get("Content-Type") {
			t.Errorf("HEAD %s: %d with %d bytes (%s), GET: %d (%s)", rt.Path, head.Code, head.Body.Len(),
				head.Header().Get("Content-Type"), get.Code, get.Header().Get("Content-Type"))
		}
	}
	game := a.do(t, request{method: http.MethodHead, path: "/games/00000000-0000-0000-0000-000000000000"})
	if game.Code != http.StatusNotFound || game.Body.Len() != 0 {
		t.Errorf("HEAD of an unknown game: %d %q, want 404 without a body", game.Code, game.Body)
	}
}

// TestDocumentsCarryETagsAndGzip: /openapi.json and /asyncapi.json answer
// with an ETag, 304 to If-None-Match, and gzip to clients that take it.
func TestDocumentsCarryETagsAndGzip(t *testing.T) {
	a := newTestApp(t, nil)
	for _, path := range []string{"/openapi.json", "/asyncapi.json"} {
		plain := a.do(t, request{path: path})
		etag := plain.Header().Get("ETag")
		if plain.Code != http.StatusOK || etag == "" || !json.Valid(plain.Body.Bytes()) {
			t.Fatalf("GET %s: %d, ETag %q", path, plain.Code, etag)
		}
		if r := a.do(t, request{path: path, header: map[string]string{"If-None-Match": etag}}); r.Code != http.StatusNotModified || r.Body.Len() != 0 {
			t.Errorf("GET %s with If-None-Match: %d with %d bytes, want 304 without a body", path, r.Code, r.Body.Len())
		}
		z := a.do(t, request{path: path, header: map[string]string{"Accept-Encoding": "br, gzip;q=0.8"}})
		if z.Header().Get("Content-Encoding") != "gzip" || z.Header().Get("ETag") != etag {
			t.Fatalf("GET %s accepting gzip: Content-Encoding %q", path, z.Header().Get("Content-Encoding"))
		}
		zipped := z.Body.Len()
		zr, err := gzip.NewReader(z.Body)
		if err != nil {
			t.Fatal(err)
		}
		unzipped, _ := io.ReadAll(zr)
		if !bytes.Equal(unzipped, plain.Body.Bytes()) {
			t.Errorf("GET %s: the gzip body is not the document", path)
		}
		t.Logf("%s: %d bytes, %d gzip-encoded", path, plain.Body.Len(), zipped)
		if r := a.do(t, request{path: path, header: map[string]string{"Accept-Encoding": "gzip;q=0"}}); r.Header().Get("Content-Encoding") != "" {
			t.Errorf("GET %s refusing gzip got %q", path, r.Header().Get("Content-Encoding"))
		}
	}
}

// TestLiveProtocolListsEveryDeclaredName: the AsyncAPI document has a
// message for every event name and notice kind package domain declares,
// with the type of its data, and for no other: an event added without its
// data type, or a message for a name nobody sends, fails here.
func TestLiveProtocolListsEveryDeclaredName(t *testing.T) {
	doc, err := json.Marshal(handlers.Documents(handlers.Options{}).Protocol.Document())
	if err != nil {
		t.Fatal(err)
	}
	type schema struct {
		Ref        string `json:"$ref"`
		Properties struct {
			Event, Notice struct {
				Const string `json:"const"`
			}
			Data map[string]any `json:"data"`
		} `json:"properties"`
	}
	var d struct {
		Components struct {
			Messages map[string]struct {
				Payload schema `json:"payload"`
			} `json:"messages"`
			Schemas map[string]schema `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(doc, &d); err != nil {
		t.Fatal(err)
	}
	var events, notices []string
	for id, m := range d.Components.Messages {
		p := m.Payload
		if name, ok := strings.CutPrefix(p.Ref, "#/components/schemas/"); ok {
			p = d.Components.Schemas[name]
		}
		event, notice := p.Properties.Event.Const, p.Properties.Notice.Const
		if event == "" && notice == "" {
			continue
		}
		if len(p.Properties.Data) == 0 {
			t.Errorf("%s: no data schema", id)
		}
		if event != "" {
			events = append(events, event)
		} else {
			notices = append(notices, notice)
		}
	}
	var declaredEvents []string
	for _, n := range slices.Concat(domain.GameEvents, domain.TournamentEvents, []domain.EventName{domain.EventSpectators}) {
		declaredEvents = append(declaredEvents, string(n))
	}
	var declaredNotices []string
	for _, n := range domain.Notices {
		declaredNotices = append(declaredNotices, string(n))
	}
	for _, c := range []struct {
		what                 string
		documented, declared []string
	}{{"events", events, declaredEvents}, {"notices", notices, declaredNotices}} {
		slices.Sort(c.documented)
		slices.Sort(c.declared)
		if !slices.Equal(c.documented, c.declared) {
			t.Errorf("%s: documented, not declared: %v; declared, not documented: %v; documented: %v", c.what,
				slices.DeleteFunc(slices.Clone(c.documented), func(n string) bool { return slices.Contains(c.declared, n) }),
				slices.DeleteFunc(slices.Clone(c.declared), func(n string) bool { return slices.Contains(c.documented, n) }), c.documented)
		}
	}
}
