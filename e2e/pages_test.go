package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/playwright-community/playwright-go"
)

// viewports are the sizes every page is checked at: a laptop and a phone.
var viewports = []struct {
	name          string
	width, height int
}{
	{"desktop", 1280, 800},
	{"phone", 390, 844},
}

// TestEveryPageIsAccessibleAndFitsAPhone opens the main pages, signed in
// as an admin who plays a bot, at desktop and phone sizes: axe-core finds
// no serious or critical violation, no page scrolls sideways on the phone,
// and each leaves a screenshot in e2e/screenshots/.
func TestEveryPageIsAccessibleAndFitsAPhone(t *testing.T) {
	adminAddress, adminKey := devKey(t)
	s := startServer(t, map[string]string{"DEMO_BOTS": "3", "ADMIN_WALLETS": adminAddress})
	page := newPage(t, s)

	// Signed out: the home page and TV (which waits for the bots' game).
	check(t, page, "home-signed-out", "/", nil)
	check(t, page, "tv", "/tv", page.GetByTestId("tv-banner"))

	usePreset(t, page, adminKey)
	signInWithDevWallet(t, page)
	name, err := page.GetByTestId("nav-user").TextContent()
	if err != nil {
		t.Fatal(err)
	}
	check(t, page, "play", "/play", nil)
	// By keyboard alone: Tab to "Play a bot", Enter.
	tabTo(t, page, "play-bot-rps")
	if err := page.Keyboard().Press("Enter"); err != nil {
		t.Fatal(err)
	}
	visible(t, page.GetByTestId("move-controls"), "the game against the bot starts")
	game := strings.TrimPrefix(page.URL(), s.URL)
	check(t, page, "game-live", game, page.GetByTestId("move-controls"))

	// check leaves the phone size: the game and its chat are one tab each.
	chat := page.GetByRole("heading", playwright.PageGetByRoleOptions{Name: "Chat"})
	hidden(t, chat, "the phone shows the game first")
	click(t, page, "tab-chat")
	visible(t, chat, "the chat tab shows the chat")
	hidden(t, page.GetByTestId("scoreboard"), "the chat tab hides the game")
	click(t, page, "tab-game")
	visible(t, page.GetByTestId("move-controls"), "the game tab shows the moves again")
	if err := page.SetViewportSize(1280, 800); err != nil {
		t.Fatal(err)
	}
	playRockUntilTheEnd(t, page)
	wantText(t, page.GetByTestId("chat-closed"), "The game is over: the chat stays here to read.", "the chat after the end")
	check(t, page, "game-finished", game, page.GetByTestId("result"))
	check(t, page, "home", "/", nil)
	check(t, page, "wallet", "/wallet", nil)
	check(t, page, "profile", "/u/"+strings.TrimSpace(name), nil)
	check(t, page, "admin", "/admin", nil)
	// Two flag changes, on and off again, give the audit log rows to show.
	for _, pressed := range []string{"true", "false"} {
		click(t, page, "toggle-abuse-controls")
		visible(t, page.Locator(`[data-testid="toggle-abuse-controls"][aria-pressed="`+pressed+`"]`), "the flag changed")
	}
	check(t, page, "audit", "/admin/audit", page.GetByTestId("audit-row").First())
	check(t, page, "friends", "/friends", nil)
	check(t, page, "referrals", "/referrals", nil)
	check(t, page, "notifications", "/notifications", nil)
	check(t, page, "leaderboards", "/leaderboards", nil)
}

// check opens path at every viewport, waits for ready (when not nil) and
// then checks the page: axe-core, sideways scrolling on the phone, and a
// screenshot named name-<viewport>.
func check(t *testing.T, page playwright.Page, name, path string, ready playwright.Locator) {
	t.Helper()
	for _, v := range viewports {
		if err := page.SetViewportSize(v.width, v.height); err != nil {
			t.Fatal(err)
		}
		if _, err := page.Goto(path); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if ready != nil {
			visible(t, ready, name+" is ready")
		}
		where := fmt.Sprintf("%s at %dx%d", name, v.width, v.height)
		for _, v := range axeViolations(t, page) {
			t.Errorf("%s: axe %s (%s): %s\n  %s", where, v.ID, v.Impact, v.Help, strings.Join(v.Targets(), "\n  "))
		}
		if v.name == "phone" {
			wide, err := page.Evaluate(`[document.documentElement.scrollWidth, window.innerWidth]`)
			if err != nil {
				t.Fatal(err)
			}
			if w := wide.([]any); toInt(w[0]) > toInt(w[1]) {
				t.Errorf("%s scrolls sideways: the page is %v px wide", where, w[0])
			}
		}
		screenshot(t, page, name+"-"+v.name)
	}
}

// tabTo presses Tab until the element with the test id has the focus.
func tabTo(t *testing.T, page playwright.Page, testID string) {
	t.Helper()
	for range 60 {
		if err := page.Keyboard().Press("Tab"); err != nil {
			t.Fatal(err)
		}
		focused, err := page.Evaluate(`document.activeElement ? document.activeElement.dataset.testid || "" : ""`)
		if err != nil {
			t.Fatal(err)
		}
		if focused == testID {
			return
		}
	}
	t.Fatalf("%s cannot be reached with the Tab key", testID)
}

func hidden(t *testing.T, loc playwright.Locator, what string) {
	t.Helper()
	if err := expect.Locator(loc).ToBeHidden(); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func toInt(v any) int {
	switch n := v.(type) {
	case int:
		return n
	case float64:
		return int(n)
	}
	return 0
}

// axeViolation is one rule axe-core found broken, with the nodes that
// break it.
type axeViolation struct {
	ID     string `json:"id"`
	Impact string `json:"impact"`
	Help   string `json:"help"`
	Nodes  []struct {
		Target  []any  `json:"target"`
		Summary string `json:"failureSummary"`
	} `json:"nodes"`
}

// Targets lists the broken nodes' selectors with axe's summary.
func (v axeViolation) Targets() []string {
	var out []string
	for _, n := range v.Nodes {
		out = append(out, fmt.Sprint(n.Target)+": "+strings.ReplaceAll(n.Summary, "\n", " "))
	}
	return out
}

var (
	axeOnce   sync.Once
	axeSource string
	axeErr    error
)

// axeViolations runs axe-core (npm, node_modules/axe-core) in the page and
// returns its serious and critical violations of WCAG 2.1 A and AA. The
// script is evaluated through the driver, which the page's
// Content-Security-Policy does not govern.
func axeViolations(t *testing.T, page playwright.Page) []axeViolation {
	t.Helper()
	axeOnce.Do(func() {
		var b []byte
		b, axeErr = os.ReadFile(filepath.Join("..", "node_modules", "axe-core", "axe.min.js"))
		axeSource = string(b)
	})
	if axeErr != nil {
		t.Fatalf("axe-core is not installed (run make test): %v", axeErr)
	}
	if _, err := page.Evaluate(axeSource); err != nil {
		t.Fatalf("load axe-core: %v", err)
	}
	raw, err := page.Evaluate(`async () => {
		const r = await axe.run(document, {runOnly: {type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]}});
		return JSON.stringify(r.violations.filter((v) => v.impact === "serious" || v.impact === "critical"));
	}`)
	if err != nil {
		t.Fatalf("run axe-core: %v", err)
	}
	var out []axeViolation
	if err := json.Unmarshal([]byte(raw.(string)), &out); err != nil {
		t.Fatalf("read axe-core's answer: %v", err)
	}
	return out
}
