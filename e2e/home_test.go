package e2e

import (
	"testing"

	"github.com/playwright-community/playwright-go"
)

func TestHomeAndDocs(t *testing.T) {
	s := startServer(t, nil)
	page := newPage(t, s)

	if _, err := page.Goto("/"); err != nil {
		t.Fatalf("open home: %v", err)
	}
	heading := page.GetByRole("heading", playwright.PageGetByRoleOptions{Name: "Live head-to-head games"})
	if err := expect.Locator(heading).ToBeVisible(); err != nil {
		t.Errorf("heading: %v", err)
	}
	if err := expect.Locator(page.GetByTestId("live-games-empty")).ToBeVisible(); err != nil {
		t.Errorf("empty live games: %v", err)
	}
	// The layout paints the page background on <html> (bg-slate-950);
	// without app.css it stays transparent.
	bg, err := page.Locator("html").Evaluate("el => getComputedStyle(el).backgroundColor", nil)
	if err != nil {
		t.Fatalf("page background: %v", err)
	}
	if bg == "" || bg == "transparent" || bg == "rgba(0, 0, 0, 0)" {
		t.Errorf("page background is %q: the stylesheet did not load", bg)
	}
	screenshot(t, page, "home")

	if _, err := page.Goto("/docs"); err != nil {
		t.Fatalf("open docs: %v", err)
	}
	ops := page.Locator("details[data-op]")
	if err := expect.Locator(ops.First()).ToBeVisible(); err != nil {
		t.Errorf("docs operations: %v", err)
	}
	if n, err := ops.Count(); err != nil || n == 0 {
		t.Errorf("docs: %d operations (err %v), want at least one", n, err)
	}
}
