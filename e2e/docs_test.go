package e2e

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/playwright-community/playwright-go"
)

// TestDocsRenderEveryOperationUnderAStrictCSP: the API reference shows
// every operation of /openapi.json with its schemas resolved, from this
// site only, under the server's Content-Security-Policy (no inline script
// or style, no eval: newPage fails the test on a breach), and the
// operation index opens the operation it names.
func TestDocsRenderEveryOperationUnderAStrictCSP(t *testing.T) {
	s := startServer(t, nil)
	page := newPage(t, s)

	res, err := http.Get(s.URL + "/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths map[string]map[string]any `json:"paths"`
	}
	err = json.NewDecoder(res.Body).Decode(&doc)
	res.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	operations := 0
	for _, item := range doc.Paths {
		operations += len(item)
	}

	// Every request is recorded.
	var mu sync.Mutex
	var offSite []string
	page.OnRequest(func(r playwright.Request) {
		u := r.URL()
		if !strings.HasPrefix(u, s.URL+"/") && !strings.HasPrefix(u, "data:") && !strings.HasPrefix(u, "blob:") {
			mu.Lock()
			offSite = append(offSite, u)
			mu.Unlock()
		}
	})
	docs, err := page.Goto("/docs")
	if err != nil {
		t.Fatalf("open docs: %v", err)
	}
	if csp := docs.Headers()["content-security-policy"]; !strings.Contains(csp, "script-src 'self';") ||
		!strings.Contains(csp, "frame-ancestors 'none'") {
		t.Errorf("Content-Security-Policy: %q, want script from this site only and no framing", csp)
	}
	blocks := page.Locator("#api-reference .opblock")
	if err := expect.Locator(blocks).ToHaveCount(operations); err != nil {
		t.Fatalf("Swagger UI operations: %v (the document has %d)", err, operations)
	}

	// The index opens the operation it names and scrolls to it.
	if err := page.Locator(`a[data-op-method="GET"][data-op-path="/games/{id}"]`).Click(); err != nil {
		t.Fatal(err)
	}
	opened := page.Locator("#operations-games-getGamesById")
	if err := expect.Locator(opened).ToHaveClass("opblock opblock-get is-open"); err != nil {
		t.Errorf("GET /games/{id} from the index: %v", err)
	}
	if err := expect.Locator(opened).ToBeInViewport(); err != nil {
		t.Errorf("GET /games/{id} from the index: %v", err)
	}
	if err := expect.Page(page).ToHaveURL(regexp.MustCompile(`/docs#/games/getGamesById$`)); err != nil {
		t.Errorf("deep link: %v", err)
	}

	screenshot(t, page, "docs")

	// Operations whose bodies nest references of every kind (a request
	// body, arrays, nullable and nested objects, a multipart upload) show
	// them resolved. (Every $ref of the document resolves: the handlers'
	// tests check that. Opening all operations here would take a minute.)
	checked, err := page.Evaluate(`async ids => {
		const until = async ok => {
			for (let i = 0; i < 500 && !ok(); i++) await new Promise(r => setTimeout(r, 20));
			return ok();
		};
		const out = {opened: [], refs: [], errors: []};
		for (const id of ids) {
			const block = () => document.querySelector("#api-reference .opblock[id$='-" + id + "']");
			if (!block()) continue;
			if (!block().classList.contains("is-open")) block().querySelector(".opblock-summary-control").click();
			if (await until(() => block().querySelector(".responses-wrapper .response"))) out.opened.push(id);
			const text = block().innerText;
			if (text.includes("$ref")) out.refs.push(id);
			if (block().querySelector(".errors-wrapper")) out.errors.push(id);
			block().querySelector(".opblock-summary-control").click(); // closed again: fewer to render
			await until(() => !block().classList.contains("is-open"));
		}
		return out;
	}`, []string{"postPaymentsPrepare", "getGamesById", "getGamesLive", "postChatByTypeByIdMessages",
		"getWalletsMeTransactions", "getAdminFeatureFlags", "postUsersMeAvatar", "getGamesByIdEvents"})
	if err != nil {
		t.Fatal(err)
	}
	c := checked.(map[string]any)
	if opened := c["opened"].([]any); len(opened) != 8 {
		t.Errorf("operations opened with their responses: %v, want 8", opened)
	}
	if refs := c["refs"].([]any); len(refs) > 0 {
		t.Errorf("operations showing $ref: %v", refs)
	}
	if errs := c["errors"].([]any); len(errs) > 0 {
		t.Errorf("operations with errors: %v", errs)
	}
	if n, _ := page.Locator("#api-reference .errors-wrapper").Count(); n > 0 {
		msg, _ := page.Locator("#api-reference .errors-wrapper").First().InnerText()
		t.Errorf("Swagger UI reports errors: %s", msg)
	}

	mu.Lock()
	defer mu.Unlock()
	if len(offSite) > 0 {
		t.Errorf("requests off the site: %v", offSite)
	}
}
