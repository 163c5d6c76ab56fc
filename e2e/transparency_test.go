package e2e

import (
	"encoding/json"
	"regexp"
	"testing"
	"time"

	"github.com/playwright-community/playwright-go"
)

// A player deposits, and the transparency page proves their share of the
// reserves in their own browser: the page's script hashes their leaf and
// climbs their path to the published root, and says so in words. The
// same page shows the log, its anchor on chain, and the reserves' figures;
// a finished game's page says which record of the log holds it.
func TestTheTransparencyPageChecksMyShareInTheBrowser(t *testing.T) {
	s := startServer(t, nil)
	page := newPage(t, s)
	if _, err := page.Goto("/transparency"); err != nil {
		t.Fatal(err)
	}
	if err := expect.Locator(page.GetByTestId("transparency-reserves")).ToContainText("Sign in to check that your balance is counted."); err != nil {
		t.Errorf("signed out: %v", err)
	}

	signInWithDevWallet(t, page)
	if _, err := page.Goto("/wallet"); err != nil {
		t.Fatal(err)
	}
	click(t, page, "faucet")
	wantText(t, page.GetByTestId("balance-onchain"), "100.00", "on chain after the faucet")
	fill(t, page, "deposit-amount", "4")
	click(t, page, "deposit-submit")
	wantText(t, page.GetByTestId("balance-available"), "4.00", "available after the deposit")

	snap, err := s.App.Reserves.Take(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	// This turn anchors the snapshot, or the workers' turn that holds the
	// lock does.
	for deadline := time.Now().Add(15 * time.Second); !anchored(t, s, snap.SnapshotID); time.Sleep(100 * time.Millisecond) {
		if err := s.App.Anchors.Once(t.Context(), time.Hour); err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("snapshot %s is not anchored 15 s after it was taken", snap.SnapshotID)
		}
	}
	if _, err := page.Goto("/transparency"); err != nil {
		t.Fatal(err)
	}
	if err := expect.Locator(page.GetByTestId("reserves-verdict")).ToContainText("The assets on chain cover everything owed to"); err != nil {
		t.Errorf("the reserves' verdict: %v", err)
	}
	if err := expect.Locator(page.GetByTestId("anchor").Filter(playwright.LocatorFilterOptions{
		HasText: "Proof of reserves " + snap.SnapshotID + ", slot"})).ToHaveCount(1); err != nil {
		t.Errorf("the reserves' anchor: %v", err)
	}
	click(t, page, "reserves-check")
	if err := expect.Locator(page.GetByTestId("reserves-result")).ToHaveText(regexp.MustCompile(
		`^Your balance of 4\.00 USDC is counted in proof of reserves `+snap.SnapshotID+`: your path of \d+ steps leads to its root, which sums [\d.]+ USDC owed to \d+ users?, signed by the log's key `+regexp.QuoteMeta(s.App.Config.LogOrigin)+`\.$`),
		playwright.LocatorAssertionsToHaveTextOptions{Timeout: playwright.Float(10_000)}); err != nil {
		t.Errorf("the browser's check of my share: %v", err)
	}

	// A server that says it counts one minor unit more than the tree
	// holds: the browser's own hashing refuses it.
	oneMore(t, page, `/users/me/reserves-proof$`, "balanceMinor")
	click(t, page, "reserves-check")
	if err := expect.Locator(page.GetByTestId("reserves-result")).ToHaveText(
		"Your path does not lead to the published root: your balance of 4.000001 USDC is not counted in proof of reserves " + snap.SnapshotID + "."); err != nil {
		t.Errorf("the browser's check of a proof one unit off: %v", err)
	}

	// A server that says it owes one minor unit more than it signed: the
	// browser's own Ed25519 check refuses the snapshot.
	oneMore(t, page, `/reserves$`, "liabilitiesMinor")
	click(t, page, "reserves-check")
	if err := expect.Locator(page.GetByTestId("reserves-result")).ToHaveText(
		"Proof of reserves " + snap.SnapshotID + " is not signed by the log's key: its figures are not the ones the platform signed."); err != nil {
		t.Errorf("the browser's check of a snapshot one unit off: %v", err)
	}
}

// oneMore makes the server's JSON answers to the paths matching pattern
// say one minor unit more in member, as a dishonest server would.
func oneMore(t *testing.T, page playwright.Page, pattern, member string) {
	t.Helper()
	if err := page.Route(regexp.MustCompile(pattern), func(r playwright.Route) {
		res, err := r.Fetch()
		if err != nil {
			t.Error(err)
			return
		}
		var answer map[string]any
		if err := json.Unmarshal(must(res.Body()), &answer); err != nil {
			t.Error(err)
			return
		}
		answer[member] = answer[member].(float64) + 1
		if err := r.Fulfill(playwright.RouteFulfillOptions{Status: playwright.Int(200), ContentType: playwright.String("application/json"),
			Body: must(json.Marshal(answer))}); err != nil {
			t.Error(err)
		}
	}); err != nil {
		t.Fatal(err)
	}
}

// anchored reports whether the reserves snapshot id is anchored on chain.
func anchored(t *testing.T, s *server, id string) bool {
	t.Helper()
	list, err := s.App.Anchors.Landed(t.Context(), 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range list {
		if a.SnapshotID != nil && *a.SnapshotID == id {
			return true
		}
	}
	return false
}
