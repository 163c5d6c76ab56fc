package handlers_test

import (
	"net/http"
	"slices"
	"testing"

	"wager/chain"
)

// tip prepares a tip from p with body and broadcasts it signed; it
// answers the broadcast (or the refused prepare) and the broadcast body.
func (a *testApp) tip(t testing.TB, p player, body map[string]any) (response, string) {
	t.Helper()
	r := a.do(t, request{method: http.MethodPost, path: "/tips/prepare", header: p.auth, body: jsonBody(body)})
	if r.Code != 200 {
		return r, ""
	}
	prep := r.json(t)
	signed := signPrepared(t, p.wallet, prep["transaction"].(string), nil)
	send := jsonBody(map[string]string{"intentId": prep["intentId"].(string), "signedTransaction": signed})
	return a.do(t, request{method: http.MethodPost, path: "/tips/broadcast", header: p.auth, body: send}), send
}

func TestATipMovesUSDCWalletToWalletOnce(t *testing.T) {
	a := newTestApp(t, ownDB(t, nil))
	tipper, friend := a.spectatorWith(t, 2_000_000), a.spectatorWith(t, 1_000_000)
	vault := a.onChain(t, a.Money.DepositAddress())

	r, body := a.tip(t, tipper, map[string]any{"toUserId": friend.id, "amountMinor": 250_000})
	if r.Code != 200 {
		t.Fatalf("tip: %d %s", r.Code, r.Body)
	}
	got := r.json(t)
	if got["toUserId"] != friend.id || got["amountMinor"] != float64(250_000) || got["signature"] == "" {
		t.Errorf("tip answer: %v", got)
	}
	if m, ok := got["message"]; !ok || m != nil {
		t.Errorf("a tip without a context: message = %v (present %v), want null", m, ok)
	}
	if n := a.onChain(t, tipper.key.PublicKey()); n != 1_750_000 {
		t.Errorf("tipper's wallet: %d, want 1750000", n)
	}
	if n := a.onChain(t, friend.key.PublicKey()); n != 1_250_000 {
		t.Errorf("recipient's wallet: %d, want 1250000", n)
	}
	if n := a.onChain(t, a.Money.DepositAddress()); n != vault {
		t.Errorf("the vault moved from %d to %d: a tip never passes through the platform", vault, n)
	}

	// Broadcasting again moves nothing more and answers the same.
	again := a.do(t, request{method: http.MethodPost, path: "/tips/broadcast", header: tipper.auth, body: body})
	if again.Code != 200 || again.Body.String() != r.Body.String() {
		t.Errorf("second broadcast: %d %s, want 200 %s", again.Code, again.Body, r.Body)
	}
	if n := a.onChain(t, friend.key.PublicKey()); n != 1_250_000 {
		t.Errorf("recipient's wallet after a second broadcast: %d, want 1250000", n)
	}
	var tips int
	if err := a.DB.NewSelect().Table("tips").ColumnExpr("count(*)").Where("to_user_id = ?", friend.id).Scan(t.Context(), &tips); err != nil || tips != 1 {
		t.Errorf("tips recorded: %d %v, want 1", tips, err)
	}
	// Someone else cannot broadcast it.
	a.do(t, request{method: http.MethodPost, path: "/tips/broadcast", header: friend.auth, body: body}).wantError(t, 404, "NOT_FOUND")

	// The recipient is told, once, with who and how much.
	ns, _ := a.notifications(t, friend, "")
	var seen int
	for _, n := range ns {
		if n.Type != "tip" {
			continue
		}
		seen++
		from, _ := n.Data["from"].(map[string]any)
		if from["userId"] != tipper.id || n.Data["amountMinor"] != float64(250_000) || n.Data["signature"] != got["signature"] ||
			n.Data["context"] != nil {
			t.Errorf("tip notification: %v", n.Data)
		}
	}
	if seen != 1 {
		t.Errorf("%d tip notifications, want 1", seen)
	}

	// Both histories show it in plain words; the feed and the tipper's
	// achievements have it.
	kinds := func(p player) map[string]float64 {
		items := a.do(t, request{path: "/wallets/me/transactions", header: p.auth}).list(t)
		out := map[string]float64{}
		for _, it := range items {
			m := it.(map[string]any)
			out[m["kind"].(string)] += m["amountMinor"].(float64)
		}
		return out
	}
	if k := kinds(tipper); k["tip sent"] != -250_000 {
		t.Errorf("tipper's history: %v", k)
	}
	if k := kinds(friend); k["tip received"] != 250_000 {
		t.Errorf("recipient's history: %v", k)
	}
	feed, _ := a.feed(t, "")
	i := slices.IndexFunc(feed, func(e feedEntry) bool { return e.Type == "tip" })
	if i < 0 || feed[i].Actor.UserID != tipper.id || feed[i].Data["amountMinor"] != float64(250_000) ||
		feed[i].Data["to"].(map[string]any)["userId"] != friend.id {
		t.Errorf("feed: %+v", feed)
	}
	if ids := a.achievementIDs(t, tipper.id); !slices.Contains(ids, "first-tip") {
		t.Errorf("tipper's achievements: %v", ids)
	}
	checkBooks(t, a)
}

func TestTipRules(t *testing.T) {
	a := newTestApp(t, nil)
	tipper, friend := a.spectatorWith(t, 1_000_000), a.newPlayer(t)
	prep := func(p player, body map[string]any) response {
		return a.do(t, request{method: http.MethodPost, path: "/tips/prepare", header: p.auth, body: jsonBody(body)})
	}
	prep(tipper, map[string]any{"toUserId": friend.id, "amountMinor": 9_999}).wantError(t, 400, "VALIDATION_ERROR")
	prep(tipper, map[string]any{"toUserId": tipper.id, "amountMinor": 10_000}).wantError(t, 400, "VALIDATION_ERROR")
	prep(tipper, map[string]any{"toUserId": "00000000-0000-0000-0000-000000000000", "amountMinor": 10_000}).wantError(t, 404, "NOT_FOUND")
	prep(tipper, map[string]any{"toUserId": "nobody", "amountMinor": 10_000}).wantError(t, 404, "NOT_FOUND")
	prep(tipper, map[string]any{"toUserId": friend.id, "amountMinor": 10_000,
		"context": map[string]any{"type": "lobby", "id": friend.id}}).wantError(t, 400, "VALIDATION_ERROR")
	prep(tipper, map[string]any{"toUserId": friend.id, "amountMinor": 10_000,
		"context": map[string]any{"type": "game", "id": "00000000-0000-0000-0000-000000000000"}}).wantError(t, 404, "NOT_FOUND")
	prep(tipper, map[string]any{"toUserId": friend.id, "amountMinor": 10_000,
		"context": map[string]any{"type": "dm", "id": "00000000-0000-0000-0000-000000000000"}}).wantError(t, 404, "NOT_FOUND")
	prep(tipper, map[string]any{"toUserId": friend.id, "amountMinor": 2_000_000}).wantError(t, 409, "INSUFFICIENT_FUNDS")
	a.do(t, request{method: http.MethodPost, path: "/tips/prepare", body: jsonBody(map[string]any{"toUserId": friend.id, "amountMinor": 10_000})}).
		wantError(t, 401, "UNAUTHORIZED")

	// A block either way stops tips, in the conversation or without one
	// (each would notify the user who blocked), like messages.
	if r := a.do(t, request{method: http.MethodPost, path: "/users/" + tipper.id + "/block", header: friend.auth}); r.Code >= 300 {
		t.Fatalf("block: %d %s", r.Code, r.Body)
	}
	prep(tipper, map[string]any{"toUserId": friend.id, "amountMinor": 10_000,
		"context": map[string]any{"type": "dm", "id": friend.id}}).wantError(t, 403, "FORBIDDEN")
	prep(tipper, map[string]any{"toUserId": friend.id, "amountMinor": 10_000}).wantError(t, 403, "FORBIDDEN")
	if r := a.do(t, request{method: http.MethodDelete, path: "/users/" + tipper.id + "/block", header: friend.auth}); r.Code >= 300 {
		t.Fatalf("lift the block: %d %s", r.Code, r.Body)
	}

	// The smallest tip goes through (without a context: no conversation).
	if r, _ := a.tip(t, tipper, map[string]any{"toUserId": friend.id, "amountMinor": 10_000}); r.Code != 200 {
		t.Fatalf("smallest tip: %d %s", r.Code, r.Body)
	}
}

func TestATipToAWalletWithoutAUSDCAccountPaysItsRentFromTheTipper(t *testing.T) {
	a := newTestApp(t, nil)
	tipper, fresh := a.spectatorWith(t, 1_000_000), a.newPlayer(t)
	ata := chain.ATA(fresh.key.PublicKey(), a.Money.Mint())
	if exists, err := a.Money.Chain().AccountExists(t.Context(), ata); err != nil || exists {
		t.Fatalf("the recipient's USDC account exists already (%v, %v)", exists, err)
	}
	tipperSOL, platformSOL := a.lamports(t, tipper.key.PublicKey()), a.lamports(t, a.Keys.FeePayer().PublicKey())
	if r, _ := a.tip(t, tipper, map[string]any{"toUserId": fresh.id, "amountMinor": 300_000}); r.Code != 200 {
		t.Fatalf("tip: %d %s", r.Code, r.Body)
	}
	if n := a.onChain(t, fresh.key.PublicKey()); n != 300_000 {
		t.Errorf("recipient's wallet: %d, want 300000", n)
	}
	if paid := tipperSOL - a.lamports(t, tipper.key.PublicKey()); paid != chain.TokenAccountRent {
		t.Errorf("the tipper paid %d lamports, want the rent %d", paid, chain.TokenAccountRent)
	}
	if paid := platformSOL - a.lamports(t, a.Keys.FeePayer().PublicKey()); paid <= 0 || paid >= chain.TokenAccountRent {
		t.Errorf("the fee payer paid %d lamports, want only the fee", paid)
	}
}

func TestATipInAChatIsAnnouncedThere(t *testing.T) {
	a := newTestApp(t, nil)
	p1, _, game := a.match(t, `{"rounds": 3}`)
	fan := a.spectatorWith(t, 1_000_000)
	fanName := a.do(t, request{path: "/users/me", header: fan.auth}).json(t)["username"].(string)
	p1Name := a.do(t, request{path: "/users/me", header: p1.auth}).json(t)["username"].(string)

	r, _ := a.tip(t, fan, map[string]any{"toUserId": p1.id, "amountMinor": 1_500_000 / 3,
		"context": map[string]any{"type": "game", "id": game}})
	if r.Code != 200 {
		t.Fatalf("tip in a game: %d %s", r.Code, r.Body)
	}
	want := fanName + " tipped " + p1Name + " 0.50 USDC"
	msg, _ := r.json(t)["message"].(map[string]any)
	if msg == nil || msg["text"] != want {
		t.Fatalf("answer's message: %v, want text %q", msg, want)
	}
	h := a.history(t, p1, "game", game, "")
	last := h[0]
	meta := last["metadata"].(map[string]any)
	if last["text"] != want || meta["role"] != "system" || meta["kind"] != "tip" || meta["amountMinor"] != float64(500_000) {
		t.Errorf("game chat's newest message: %v", last)
	}
	ns, _ := a.notifications(t, p1, "")
	if len(ns) == 0 || ns[0].Type != "tip" {
		t.Fatalf("notifications: %+v", ns)
	}
	if c, _ := ns[0].Data["context"].(map[string]any); c["type"] != "game" || c["id"] != game {
		t.Errorf("notification's context: %v", ns[0].Data)
	}

	// In a conversation: both see it there, as a system message.
	r, _ = a.tip(t, fan, map[string]any{"toUserId": p1.id, "amountMinor": 20_000,
		"context": map[string]any{"type": "dm", "id": p1.id}})
	if r.Code != 200 {
		t.Fatalf("tip in a conversation: %d %s", r.Code, r.Body)
	}
	want = fanName + " tipped " + p1Name + " 0.02 USDC"
	for _, side := range []struct {
		p     player
		other string
	}{{fan, p1.id}, {p1, fan.id}} {
		h := a.history(t, side.p, "dm", side.other, "")
		if len(h) == 0 {
			t.Fatalf("no messages in the conversation")
		}
		meta := h[0]["metadata"].(map[string]any)
		if h[0]["text"] != want || meta["role"] != "system" || meta["kind"] != "tip" || meta["amountMinor"] != float64(20_000) {
			t.Errorf("conversation's newest message: %v", h[0])
		}
	}
}
