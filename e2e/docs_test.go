package e2e

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/playwright-community/playwright-go"
)

// TestDocsShowBothDocumentsAccessiblyAndFast: the API reference shows
// every operation of /openapi.json and every message of /asyncapi.json,
// with the schemas they name one link away, from this site only, under
// the server's Content-Security-Policy (newPage fails the test on a
// breach); axe-core finds no serious or critical violation at desktop and
// phone sizes, opened and closed, and the page is ready well within a
// second.
func TestDocsShowBothDocumentsAccessiblyAndFast(t *testing.T) {
	s := startServer(t, nil)
	page := newPage(t, s)

	count := func(path string, each func(map[string]any) int) int {
		res, err := http.Get(s.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var doc map[string]any
		if err := json.NewDecoder(res.Body).Decode(&doc); err != nil {
			t.Fatal(err)
		}
		return each(doc)
	}
	operations := count("/openapi.json", func(d map[string]any) int {
		n := 0
		for _, item := range d["paths"].(map[string]any) {
			n += len(item.(map[string]any))
		}
		return n
	})
	messages := count("/asyncapi.json", func(d map[string]any) int {
		return len(d["components"].(map[string]any)["messages"].(map[string]any))
	})

	var mu sync.Mutex
	var offSite []string
	page.OnRequest(func(r playwright.Request) {
		if u := r.URL(); !strings.HasPrefix(u, s.URL+"/") && !strings.HasPrefix(u, "data:") {
			mu.Lock()
			offSite = append(offSite, u)
			mu.Unlock()
		}
	})
	for _, v := range viewports {
		if err := page.SetViewportSize(v.width, v.height); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		docs, err := page.Goto("/docs", playwright.PageGotoOptions{WaitUntil: playwright.WaitUntilStateLoad})
		if err != nil {
			t.Fatalf("open docs: %v", err)
		}
		loaded := time.Since(start)
		t.Logf("/docs at %s: loaded in %v", v.name, loaded.Round(time.Millisecond))
		if loaded > 3*time.Second {
			t.Errorf("/docs took %v to load at %s", loaded, v.name)
		}
		if csp := docs.Headers()["content-security-policy"]; !strings.Contains(csp, "script-src 'self';") {
			t.Errorf("Content-Security-Policy: %q", csp)
		}
		// It opens on where to start, for people, bot authors and agents,
		// and the reference on what everyone may call, the staff's last.
		contains(t, page.GetByTestId("quickstart-people"), "A game against a bot is free and starts at once", "the quickstart for people")
		contains(t, page.GetByTestId("quickstart-bots"), "the SDK", "the quickstart for bot authors")
		contains(t, page.GetByTestId("quickstart-agents"), "The MCP server", "the quickstart for agents")
		if first, err := page.Locator("#api-reference section h2").First().TextContent(); err != nil || first == "admin" || first == "dev" {
			t.Errorf("the reference opens on %q (%v), not on what everyone may call", first, err)
		}
		if n, _ := page.Locator("#api-reference details[data-op]").Count(); n != operations {
			t.Errorf("operations shown: %d, the document has %d", n, operations)
		}
		if n, _ := page.Locator("#api-reference details[data-message]").Count(); n != messages {
			t.Errorf("live messages shown: %d, the AsyncAPI document has %d", n, messages)
		}
		for _, v := range axeViolations(t, page) {
			t.Errorf("docs: axe %s (%s): %s\n  %s", v.ID, v.Impact, v.Help, strings.Join(v.Targets(), "\n  "))
		}
		screenshot(t, page, "docs-"+v.name)
	}

	// An operation opens in place, and the schema it names is a link away.
	op := page.Locator(`details[data-op="GET /games/{id}/market"]`)
	if err := op.Locator("summary").Click(); err != nil {
		t.Fatal(err)
	}
	if err := expect.Locator(op).ToHaveAttribute("open", ""); err != nil {
		t.Fatalf("the operation did not open: %v", err)
	}
	if err := op.Locator(`a[href="#schema-MarketView"]`).First().Click(); err != nil {
		t.Fatal(err)
	}
	schema := page.Locator("#schema-MarketView")
	if err := schema.Locator("summary").Click(); err != nil {
		t.Fatal(err)
	}
	if err := expect.Locator(schema).ToContainText("resolution"); err != nil {
		t.Errorf("MarketView: %v", err)
	}
	if err := expect.Locator(schema).ToContainText("or null"); err != nil {
		t.Errorf("MarketView does not say resolution may be null: %v", err)
	}
	event := page.Locator(`details[data-message="event.game.rps.round.reveal"]`)
	if err := event.Locator("summary").Click(); err != nil {
		t.Fatal(err)
	}
	if err := expect.Locator(event.Locator(`a[href="#schema-RulesRPSRound"]`)).ToBeVisible(); err != nil {
		t.Errorf("the reveal event does not link its data's schema: %v", err)
	}
	// Opened, the page is still accessible.
	for _, v := range axeViolations(t, page) {
		t.Errorf("docs with details open: axe %s (%s): %s\n  %s", v.ID, v.Impact, v.Help, strings.Join(v.Targets(), "\n  "))
	}
	screenshot(t, page, "docs-open")

	mu.Lock()
	defer mu.Unlock()
	if len(offSite) > 0 {
		t.Errorf("requests off the site: %v", offSite)
	}
}
