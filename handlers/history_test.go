package handlers_test

import (
	"html"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// historyItems reads the first page of a user's wallet history from the
// JSON API.
func (a *testApp) historyItems(t testing.TB, p player) []map[string]any {
	t.Helper()
	var items []map[string]any
	r := a.do(t, request{path: "/wallets/me/transactions", header: p.auth})
	if r.Code != http.StatusOK {
		t.Fatalf("history: %d %s", r.Code, r.Body)
	}
	if err := jsonDecode(r.Body.Bytes(), &items); err != nil {
		t.Fatal(err)
	}
	return items
}

var (
	hiddenParts = regexp.MustCompile(`(?s)<script.*?</script>|<head>.*?</head>`)
	inlineTags  = regexp.MustCompile(`(?s)</?(a|b|i|em|strong|code)\b[^>]*>`)
	tags        = regexp.MustCompile(`(?s)<[^>]*>`)
	spaces      = regexp.MustCompile(`\s+`)
)

// visibleText is the text of an HTML fragment as a reader sees it, its
// white space collapsed: links and emphasis run on in their sentence,
// other elements stand apart.
func visibleText(fragment string) string {
	text := tags.ReplaceAllString(inlineTags.ReplaceAllString(hiddenParts.ReplaceAllString(fragment, " "), ""), " ")
	return strings.TrimSpace(spaces.ReplaceAllString(html.UnescapeString(text), " "))
}

// historyRows returns the wallet page's history rows, newest first: the
// text of each and its markup.
func historyRows(t testing.TB, page string) (texts, markup []string) {
	t.Helper()
	parts := strings.Split(page, `data-testid="history-row"`)
	for _, p := range parts[1:] {
		row, _, ok := strings.Cut(p, "</tr>")
		if !ok {
			t.Fatalf("a history row does not end: %.300s", p)
		}
		_, row, _ = strings.Cut(row, ">") // the rest of the <tr> tag
		texts, markup = append(texts, visibleText(row)), append(markup, row)
	}
	return texts, markup
}

// Every movement of a staked game's money is a line in the history of the
// one whose money moved, naming the game: the stakes, the winnings, and a
// spectator's donation with its signature. The JSON lines keep their
// fields and gain gameId; lines without a game have none.
func TestWalletHistoryNamesTheGameOfEachMovement(t *testing.T) {
	a := newTestApp(t, noWorkers)
	p1, p2, game := a.stakedGame(t, 1_000_000, `{"rounds": 1}`)
	spectator := a.spectatorWith(t, 1_000_000)
	r, _ := a.donate(t, spectator, game, 250_000)
	if r.Code != http.StatusOK {
		t.Fatalf("donation: %d %s", r.Code, r.Body)
	}
	donation := r.json(t)["signature"].(string)
	a.act(t, p1, game, `{"type": "move", "move": "rock"}`)
	a.act(t, p2, game, `{"type": "move", "move": "scissors"}`)

	type line struct {
		kind      string
		amount    float64
		gameID    string // "" for none: no gameId member
		signature string // "" for none
	}
	for _, tc := range []struct {
		who  string
		p    player
		want []line
	}{
		// The pot of 2.25 USDC less the 1% fee.
		{"winner", p1, []line{{"winnings", 2_227_500, game, ""}, {"stake", -1_000_000, game, ""}, {"deposit", 1_000_000, "", "*"}}},
		{"loser", p2, []line{{"stake", -1_000_000, game, ""}, {"deposit", 1_000_000, "", "*"}}},
		{"donor", spectator, []line{{"donation", -250_000, game, donation}}},
	} {
		items := a.historyItems(t, tc.p)
		if len(items) != len(tc.want) {
			t.Errorf("%s's history: got %v, want %d lines", tc.who, items, len(tc.want))
			continue
		}
		for i, w := range tc.want {
			it := items[i]
			for _, field := range []string{"id", "kind", "amountMinor", "counterparty", "signature", "status", "createdAt"} {
				if _, ok := it[field]; !ok {
					t.Errorf("%s's line %d lacks %s: %v", tc.who, i, field, it)
				}
			}
			gameID, hasGame := it["gameId"]
			sig, _ := it["signature"].(string)
			if it["kind"] != w.kind || it["amountMinor"] != w.amount || it["status"] != "confirmed" ||
				(w.gameID == "" && hasGame) || (w.gameID != "" && gameID != w.gameID) ||
				(w.signature == "" && sig != "") || (w.signature == "*" && sig == "") || (len(w.signature) > 1 && sig != w.signature) {
				t.Errorf("%s's line %d: got %v, want %+v", tc.who, i, it, w)
			}
		}
	}

	// The pages say the same in words, link the game and the transaction.
	for _, tc := range []struct {
		who  string
		p    player
		want [][]string // per row, the pieces of its text, in order
	}{
		{"winner", p1, [][]string{
			{"Winnings", "The Rock, paper, scissors game", "+2.2275", "Confirmed"},
			{"Stake in a game", "The Rock, paper, scissors game", "-1", "Confirmed"},
			{"Deposit", "+1", "Confirmed"},
		}},
		{"donor", spectator, [][]string{
			{"Donation to a game", "The Rock, paper, scissors game", "-0.25", "Confirmed", donation[:6] + "…" + donation[len(donation)-6:]},
		}},
	} {
		cookie := a.sessionCookie(t, tc.p.wallet)
		page := a.do(t, request{path: "/wallet", header: map[string]string{"Cookie": cookie}})
		if page.Code != http.StatusOK {
			t.Fatalf("%s's wallet page: %d", tc.who, page.Code)
		}
		texts, markup := historyRows(t, page.Body.String())
		if len(texts) != len(tc.want) {
			t.Fatalf("%s's wallet page rows: %q, want %d", tc.who, texts, len(tc.want))
		}
		for i, pieces := range tc.want {
			rest := texts[i]
			for _, piece := range pieces {
				_, after, ok := strings.Cut(rest, piece)
				if !ok {
					t.Errorf("%s's row %d %q lacks %q (after what came before)", tc.who, i, texts[i], piece)
					break
				}
				rest = after
			}
			link := `href="/game/` + game + `"`
			if inGame := pieces[1] == "The Rock, paper, scissors game"; inGame != strings.Contains(markup[i], link) {
				t.Errorf("%s's row %d links the game: %v, want %v: %s", tc.who, i, !inGame, inGame, markup[i])
			}
		}
		if tc.who == "donor" && !strings.Contains(markup[0], "/tx/"+donation) {
			t.Errorf("the donation row does not link its transaction in the explorer: %s", markup[0])
		}
		if r := a.do(t, request{path: "/game/" + game, header: map[string]string{"Cookie": cookie}}); r.Code != http.StatusOK ||
			!strings.Contains(r.Body.String(), "Rock, paper, scissors") {
			t.Errorf("the linked game page: %d", r.Code)
		}
	}
}
