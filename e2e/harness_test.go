package e2e

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/playwright-community/playwright-go"

	"wager/e2e/testserver"
)

// chromiumPath is Debian's Chromium; make test installs it from apt.
const chromiumPath = "/usr/bin/chromium"

// driverVersion is the playwright-core version playwright-go expects;
// package.json pins the same one.
const driverVersion = "1.52.0"

var chromiumArgs = []string{
	"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
	"--disable-background-networking", "--disable-component-update", "--disable-sync",
}

// expect holds the web-first assertions (they retry until the default 5s
// timeout).
var expect = playwright.NewPlaywrightAssertions()

var (
	browserOnce sync.Once
	sharedPW    *playwright.Playwright
	sharedB     playwright.Browser
	browserErr  error
)

// browser returns the package's Chromium, starting it on first use. A
// missing driver or browser fails the test: e2e tests never skip.
func browser(t testing.TB) playwright.Browser {
	t.Helper()
	browserOnce.Do(func() { sharedPW, sharedB, browserErr = launch() })
	if browserErr != nil {
		t.Fatalf("e2e: cannot start the browser: %v\nRun `make test`: it installs the Playwright driver (npm) and Chromium (apt).", browserErr)
	}
	return sharedB
}

// launch starts the Playwright driver from node_modules/playwright-core
// with the system node, and Chromium from chromiumPath. It never downloads
// anything: it calls playwright.Run, never playwright.Install.
func launch() (*playwright.Playwright, playwright.Browser, error) {
	if _, err := os.Stat(chromiumPath); err != nil {
		return nil, nil, fmt.Errorf("chromium not found: %w", err)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, nil, fmt.Errorf("node not found: %w", err)
	}
	root, err := filepath.Abs("..") // go test runs in the package directory
	if err != nil {
		return nil, nil, err
	}
	core := filepath.Join(root, "node_modules", "playwright-core")
	pkg, err := os.ReadFile(filepath.Join(core, "package.json"))
	if err != nil {
		return nil, nil, fmt.Errorf("playwright-core is not installed: %w", err)
	}
	if !regexp.MustCompile(`"version":\s*"` + regexp.QuoteMeta(driverVersion) + `"`).Match(pkg) {
		return nil, nil, fmt.Errorf("%s is not version %s, which playwright-go needs", core, driverVersion)
	}

	// playwright-go wants a directory holding "node" and "package"; link
	// both. The links are only read at start, so the directory goes when
	// the driver is up.
	dir, err := os.MkdirTemp("", "playwright-driver-")
	if err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(dir)
	if err := errors.Join(
		os.Symlink(core, filepath.Join(dir, "package")),
		os.Symlink(node, filepath.Join(dir, "node")),
	); err != nil {
		return nil, nil, err
	}

	pw, err := playwright.Run(&playwright.RunOptions{
		DriverDirectory:     dir,
		SkipInstallBrowsers: true,
		Verbose:             false,
		Stdout:              os.Stderr,
		Stderr:              os.Stderr,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("start the Playwright driver: %w", err)
	}
	b, err := pw.Chromium.Launch(playwright.BrowserTypeLaunchOptions{
		ExecutablePath: playwright.String(chromiumPath),
		Headless:       playwright.Bool(true),
		Args:           chromiumArgs,
	})
	if err != nil {
		pw.Stop()
		return nil, nil, fmt.Errorf("launch %s: %w", chromiumPath, err)
	}
	return pw, b, nil
}

// server is the whole app, served over HTTP on a loopback port.
type server = testserver.Server

// startServer starts the app on the package's test database; see
// testserver.Start.
func startServer(t *testing.T, env map[string]string) *server { return testserver.Start(t, env) }

// pagesOf counts the pages each test opened, to tell their failure
// screenshots apart.
var pagesOf = struct {
	sync.Mutex
	n map[*testing.T]int
}{n: map[*testing.T]int{}}

// newPage opens a page in a fresh browser context (its own cookies and
// storage) whose base URL is the server's, so page.Goto("/docs") works.
// Uncaught JavaScript errors and breaches of the server's
// Content-Security-Policy fail the test when it ends; other console errors
// are logged. A failed test leaves a screenshot of each page it opened.
func newPage(t *testing.T, s *server) playwright.Page {
	t.Helper()
	pagesOf.Lock()
	pagesOf.n[t]++
	number := pagesOf.n[t]
	pagesOf.Unlock()
	if number == 1 { // the first page's cleanup runs last: the count goes then
		t.Cleanup(func() {
			pagesOf.Lock()
			delete(pagesOf.n, t)
			pagesOf.Unlock()
		})
	}
	bctx, err := browser(t).NewContext(playwright.BrowserNewContextOptions{
		BaseURL: playwright.String(s.URL),
	})
	if err != nil {
		t.Fatalf("new browser context: %v", err)
	}

	// Events arrive on the driver's goroutine, possibly after the test
	// body returns: record them and report in the cleanup.
	var (
		mu            sync.Mutex
		pageErrors    []string
		consoleErrors []string
	)
	bctx.OnWebError(func(e playwright.WebError) {
		mu.Lock()
		defer mu.Unlock()
		where := ""
		if p := e.Page(); p != nil {
			where = " on " + p.URL()
		}
		pageErrors = append(pageErrors, fmt.Sprintf("%v%s", e.Error(), where))
	})
	bctx.OnConsole(func(m playwright.ConsoleMessage) {
		if m.Type() != "error" {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		where := ""
		if l := m.Location(); l != nil && l.URL != "" {
			where = fmt.Sprintf(" (%s:%d)", l.URL, l.LineNumber)
		}
		consoleErrors = append(consoleErrors, m.Text()+where)
	})

	page, err := bctx.NewPage()
	if err != nil {
		bctx.Close()
		t.Fatalf("new page: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() && !page.IsClosed() {
			screenshot(t, page, fmt.Sprintf("FAILED-%s-page%d", t.Name(), number))
		}
		if err := bctx.Close(); err != nil {
			t.Errorf("close browser context: %v", err)
		}
		mu.Lock()
		defer mu.Unlock()
		for _, e := range consoleErrors {
			// The server's Content-Security-Policy forbids inline script and
			// style: a page that breaks it fails its test.
			if strings.Contains(e, "Content Security Policy") {
				t.Errorf("the page breaks its Content-Security-Policy: %s", e)
			} else {
				t.Logf("browser console error: %s", e)
			}
		}
		if len(pageErrors) > 0 {
			t.Errorf("uncaught JavaScript errors in the page:\n  %s", strings.Join(pageErrors, "\n  "))
		}
	})
	return page
}

// screenshot saves the page as e2e/screenshots/<name>.png (git-ignored).
func screenshot(t *testing.T, page playwright.Page, name string) {
	t.Helper()
	name = regexp.MustCompile(`[^A-Za-z0-9._-]+`).ReplaceAllString(name, "_")
	path := filepath.Join("screenshots", name+".png")
	if err := os.MkdirAll("screenshots", 0o755); err != nil {
		t.Errorf("screenshot %s: %v", name, err)
		return
	}
	if _, err := page.Screenshot(playwright.PageScreenshotOptions{
		Path:     playwright.String(path),
		FullPage: playwright.Bool(true),
	}); err != nil {
		t.Errorf("screenshot %s: %v", name, err)
		return
	}
	t.Logf("screenshot: e2e/%s", path)
}
