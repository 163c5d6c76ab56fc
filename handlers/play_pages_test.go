package handlers_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// playError is the text of the play page's error, as a reader sees it,
// and its markup.
func playError(t testing.TB, page string) (string, string) {
	t.Helper()
	_, rest, ok := strings.Cut(page, `data-testid="play-error">`)
	if !ok {
		t.Fatalf("the page shows no error: %.3000s", page)
	}
	markup, _, _ := strings.Cut(rest, "</div>")
	return visibleText(markup), markup
}

// A stake the player's balance does not cover is refused in words: what
// the game needs, what they have, and a link to deposit, whether they
// open a table or join one from the list. The API keeps the code and
// names both amounts.
func TestAStakeRefusedSaysWhatToDo(t *testing.T) {
	a := newTestApp(t, noWorkers)
	poor := a.depositor(t, 1_000_000)
	cookie := a.sessionCookie(t, poor.wallet)
	csrf := a.csrfOf(t, cookie)
	form := func(path string, values url.Values) response {
		values.Set("_csrf", csrf)
		return a.do(t, request{method: http.MethodPost, path: path, body: values.Encode(),
			header: map[string]string{"Cookie": cookie, "Content-Type": "application/x-www-form-urlencoded"}})
	}
	const want = "This game needs 2.50 USDC and you have 1.00 USDC available. Deposit USDC in your wallet, then try again."

	r := form("/play", url.Values{"gameType": {"rps"}, "stake": {"2.5"}, "rounds": {"1"}, "roundSeconds": {"20"}})
	if r.Code != http.StatusConflict {
		t.Fatalf("opening a table staking more than the balance: %d, want 409", r.Code)
	}
	text, markup := playError(t, r.Body.String())
	if text != want {
		t.Errorf("opening a table: the page says %q, want %q", text, want)
	}
	if !strings.Contains(markup, `href="/wallet"`) {
		t.Errorf("opening a table: no link to the wallet in %s", markup)
	}

	rich := a.depositor(t, 2_500_000)
	lobby := a.lobby(t, rich, `{"gameType": "rps", "stakeMinor": 2500000}`)
	a.join(t, rich, lobby)
	r = form("/play/join/"+lobby, url.Values{})
	if r.Code != http.StatusConflict {
		t.Fatalf("joining a table staking more than the balance: %d, want 409", r.Code)
	}
	if text, markup := playError(t, r.Body.String()); text != want || !strings.Contains(markup, `href="/wallet"`) {
		t.Errorf("joining a table: the page says %q (%s), want %q with a link to the wallet", text, markup, want)
	}

	// Other refusals keep their own words and no deposit link.
	r = form("/play", url.Values{"gameType": {"rps"}, "stake": {"abc"}})
	if text, _ := playError(t, r.Body.String()); strings.Contains(text, "Deposit") || text == "" {
		t.Errorf("a malformed stake: the page says %q", text)
	}

	m := a.do(t, request{method: http.MethodPost, path: "/lobbies/" + lobby + "/join-queue", header: poor.auth}).
		wantError(t, http.StatusConflict, "INSUFFICIENT_FUNDS")
	if m["neededMinor"] != float64(2_500_000) || m["availableMinor"] != float64(1_000_000) {
		t.Errorf("the API error: %v, want neededMinor 2500000 and availableMinor 1000000", m)
	}
	if b := a.balances(t, poor.auth); b.available != 1_000_000 || b.locked != 0 {
		t.Errorf("the refused player's balance: %+v, want it untouched", b)
	}
}
