package handlers_test

import (
	"context"
	"encoding/base64"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/gagliardetto/solana-go"

	"wager/chain"
)

// globalSpentToday reads what the fee payer has spent today for everyone,
// as the global budget counts it (the package's tests share the database).
func globalSpentToday(t testing.TB, a *testApp) int64 {
	t.Helper()
	var spent int64
	if err := a.DB.NewRaw(`SELECT coalesce((SELECT lamports FROM fee_payer_global_spend
		WHERE day = (now() AT TIME ZONE 'utc')::date), 0)`).Scan(t.Context(), &spent); err != nil {
		t.Fatal(err)
	}
	return spent
}

// feeOf is what the fee payer pays for a prepared transaction.
func feeOf(t testing.TB, b64 string) int64 {
	t.Helper()
	raw, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := solana.TransactionFromBytes(raw)
	if err != nil {
		t.Fatal(err)
	}
	return chain.FeeOf(tx)
}

// Many accounts, each well within its own daily budget, together spend the
// fee payer's global one: past it their deposits are refused, on every
// instance and however many arrive at once, while a withdrawal still goes
// through.
func TestManyAccountsCannotDrainTheFeePayer(t *testing.T) {
	const accounts, fit = 9, 3
	// No background workers: the package's earlier games leave settlement
	// transfers that a worker would send meanwhile, and the rent of an
	// escrow account they close comes back to the fee payer.
	setup := newTestApp(t, noWorkers)
	setup.depositor(t, 10_000) // the platform opens the vault's own USDC account once, on the first deposit
	type attempt struct {
		p              player
		intent, signed string
	}
	var tries []attempt
	var fee int64
	for range accounts {
		w, auth := setup.funded(t, 100_000)
		p := setup.prepare(t, auth, setup.depositAddress(t, auth), 100_000)
		fee = feeOf(t, p["transaction"].(string)) // the same for every deposit
		tries = append(tries, attempt{player{wallet: w, auth: auth}, p["intentId"].(string),
			signPrepared(t, w, p["transaction"].(string), nil)})
	}

	// Two instances whose global budget leaves room for 3 more deposits
	// today (and half of a fourth).
	budget := globalSpentToday(t, setup) + fit*fee + fee/2
	env := map[string]string{"JWT_SECRET": testSecret, "WORKERS": "false", "FEE_PAYER_GLOBAL_DAILY_LAMPORTS": strconv.FormatInt(budget, 10)}
	one, two := newTestApp(t, env), newTestApp(t, env)
	feePayer := one.Keys.FeePayer().PublicKey()
	before := one.lamports(t, feePayer)

	answers := make([]response, accounts)
	var wg sync.WaitGroup
	for i, try := range tries {
		instance := []*testApp{one, two}[i%2]
		wg.Go(func() { answers[i] = instance.submit(t, try.p.auth, try.intent, try.signed) })
	}
	wg.Wait()
	var paid []player
	for i, r := range answers {
		switch r.Code {
		case http.StatusOK:
			paid = append(paid, tries[i].p)
		case http.StatusTooManyRequests:
			if wait := retryAfter(t, r); wait > 24*60*60+1 {
				t.Errorf("Retry-After %d s, want at most until the next UTC day", wait)
			}
		default:
			t.Fatalf("deposit %d: %d %s", i, r.Code, r.Body)
		}
	}
	if len(paid) != fit {
		t.Fatalf("%d of %d concurrent deposits went through, want the %d the global budget pays for", len(paid), accounts, fit)
	}
	if spent := before - one.lamports(t, feePayer); spent != fit*fee {
		t.Errorf("the fee payer spent %d lamports, want %d (%d fees of %d): a refused deposit was sent", spent, fit*fee, fit, fee)
	}
	for _, a := range []*testApp{one, two} {
		if left := metric(t, a, "fee_payer_global_budget_left_lamports"); left != float64(fee/2) {
			t.Errorf("/metrics: %v lamports of the budget left, want %d", left, fee/2)
		}
	}

	// A user can still take their money out; it counts all the same.
	if r := two.do(t, request{method: http.MethodPost, path: "/wallets/withdraw", header: paid[0].auth,
		body: `{"amountMinor": 100000}`}); r.Code != http.StatusOK {
		t.Fatalf("a withdrawal past the global budget: %d %s", r.Code, r.Body)
	}
	if left := metric(t, one, "fee_payer_global_budget_left_lamports"); left != 0 {
		t.Errorf("/metrics after the withdrawal: %v lamports left, want 0", left)
	}
	// And what the fee payer would pay for stays refused.
	w, auth := one.funded(t, 100_000)
	p := one.prepare(t, auth, one.depositAddress(t, auth), 100_000)
	retryAfter(t, one.submit(t, auth, p["intentId"].(string), signPrepared(t, w, p["transaction"].(string), nil)))
}

// A transfer of 1 minor unit to another user costs the fee payer about
// ten thousand times what it moves: it is refused, as under 0.01 USDC is.
func TestATinyTransferBetweenUsersIsRefused(t *testing.T) {
	a := newTestApp(t, nil)
	sender, recipient := a.spectatorWith(t, 1_000_000), a.spectatorWith(t, 10_000)
	prepare := func(to string, amount int64) response {
		return a.do(t, request{method: http.MethodPost, path: "/wallets/transfer/prepare", header: sender.auth,
			body: jsonBody(map[string]any{"toAddress": to, "amountMinor": amount})})
	}
	for _, amount := range []int64{1, 9_999} {
		e := prepare(recipient.address(), amount).wantError(t, 400, "VALIDATION_ERROR")
		if reason, _ := e["fields"].(map[string]any)["amountMinor"].(string); !strings.Contains(reason, "at least 0.01 USDC") {
			t.Errorf("a transfer of %d: %v, want amountMinor to say at least 0.01 USDC", amount, e)
		}
	}
	if r := prepare(recipient.address(), 10_000); r.Code != http.StatusOK || r.json(t)["kind"] != "transfer" {
		t.Fatalf("a transfer of 10000 to another user: %d %s", r.Code, r.Body)
	}
	p := a.prepare(t, sender.auth, a.depositAddress(t, sender.auth), 10_000)
	if r := a.submit(t, sender.auth, p["intentId"].(string), signPrepared(t, sender.wallet, p["transaction"].(string), nil)); r.Code != http.StatusOK {
		t.Fatalf("a deposit of 10000: %d %s", r.Code, r.Body)
	}
}

// Asking, withdrawing and asking again is a way to send someone a
// notification each time: they hear of one request a day from one user.
func TestAskingToBefriendAgainAndAgainNotifiesOnce(t *testing.T) {
	a := newTestApp(t, nil)
	ann, bob, cat := a.newPlayer(t), a.newPlayer(t), a.newPlayer(t)
	ask := func(from, to player) {
		t.Helper()
		if r := a.do(t, request{method: http.MethodPost, path: "/friends/" + to.id, header: from.auth}); r.Code != http.StatusCreated ||
			r.json(t)["status"] != "pending" {
			t.Fatalf("friend request: %d %s", r.Code, r.Body)
		}
	}
	withdraw := func(from, to player) {
		t.Helper()
		if r := a.do(t, request{method: http.MethodDelete, path: "/friends/" + to.id, header: from.auth}); r.Code != http.StatusNoContent {
			t.Fatalf("withdraw: %d %s", r.Code, r.Body)
		}
	}
	requestsFrom := func(p player) int {
		ns, _ := a.notifications(t, bob, "")
		return len(slices.DeleteFunc(ns, func(n notification) bool { return n.Type != "friend_request" || n.Data["userId"] != p.id }))
	}
	for range 10 {
		ask(ann, bob)
		withdraw(ann, bob)
	}
	ask(ann, bob)
	if n := requestsFrom(ann); n != 1 {
		t.Errorf("bob was notified of %d requests from ann, want 1", n)
	}
	// The request itself stands, and another user's notifies.
	if r := a.do(t, request{path: "/friends/requests/incoming", header: bob.auth}); !strings.Contains(r.Body.String(), ann.id) {
		t.Errorf("bob's incoming requests lack ann's: %s", r.Body)
	}
	ask(cat, bob)
	if n := requestsFrom(cat); n != 1 {
		t.Errorf("bob was notified of %d requests from cat, want 1", n)
	}
	// A day later, asking again notifies again.
	withdraw(ann, bob)
	if _, err := a.DB.ExecContext(t.Context(), "UPDATE friend_request_notices SET notified_at = notified_at - interval '24 hours' WHERE from_id = ?",
		ann.id); err != nil {
		t.Fatal(err)
	}
	ask(ann, bob)
	if n := requestsFrom(ann); n != 2 {
		t.Errorf("a day later: bob was notified of %d requests from ann, want 2", n)
	}
}

// Each challenge notifies its recipient: one sender has at most 10 pending
// at once, also when they are sent concurrently.
func TestPendingChallengesPerSenderAreBounded(t *testing.T) {
	a := newTestApp(t, nil)
	challenge := func(from, to player) response {
		return a.do(t, request{method: http.MethodPost, path: "/challenges", header: from.auth,
			body: jsonBody(map[string]any{"toUserId": to.id, "gameType": "rps", "stakeMinor": 0, "settings": map[string]any{"rounds": 1}})})
	}
	sender := a.newPlayer(t)
	var ids []string
	for range 10 {
		r := challenge(sender, a.newPlayer(t))
		if r.Code != http.StatusCreated {
			t.Fatalf("challenge %d: %d %s", len(ids)+1, r.Code, r.Body)
		}
		ids = append(ids, r.json(t)["id"].(string))
	}
	victim := a.newPlayer(t)
	e := challenge(sender, victim).wantError(t, http.StatusConflict, "CONFLICT")
	if msg, _ := e["message"].(string); !strings.Contains(msg, "10 pending challenges") {
		t.Errorf("the 11th challenge's message %q does not say why", msg)
	}
	if ns, _ := a.notifications(t, victim, ""); len(ns) != 0 {
		t.Errorf("a refused challenge notified: %+v", ns)
	}

	// Cancelling one frees its place; so does one that expired.
	if r := a.do(t, request{method: http.MethodDelete, path: "/challenges/" + ids[0], header: sender.auth}); r.Code != http.StatusOK {
		t.Fatalf("cancel: %d %s", r.Code, r.Body)
	}
	if r := challenge(sender, victim); r.Code != http.StatusCreated {
		t.Fatalf("a challenge after cancelling one: %d %s", r.Code, r.Body)
	}
	challenge(sender, a.newPlayer(t)).wantError(t, http.StatusConflict, "CONFLICT")
	if _, err := a.DB.ExecContext(t.Context(), "UPDATE challenges SET expires_at = now() - interval '1 second' WHERE id = ?", ids[1]); err != nil {
		t.Fatal(err)
	}
	if r := challenge(sender, a.newPlayer(t)); r.Code != http.StatusCreated {
		t.Fatalf("a challenge after one expired: %d %s", r.Code, r.Body)
	}

	// 30 at once from a new sender: 10 pass.
	rusher, target := a.newPlayer(t), a.newPlayer(t)
	codes := make([]int, 30)
	var wg sync.WaitGroup
	for i := range codes {
		wg.Go(func() { codes[i] = challenge(rusher, target).Code })
	}
	wg.Wait()
	if created := countOf(codes, http.StatusCreated); created != 10 || countOf(codes, http.StatusConflict) != 20 {
		t.Errorf("30 concurrent challenges: %d created, answers %v; want 10 created and 20 CONFLICT", created, codes)
	}
}

func countOf(codes []int, code int) int {
	n := 0
	for _, c := range codes {
		if c == code {
			n++
		}
	}
	return n
}

// One user opening 100 tickets at once fills the staff's queue: 5 open at
// a time, however they arrive.
func TestConcurrentSupportTicketsAreBoundedPerUser(t *testing.T) {
	a := newTestApp(t, nil)
	p := a.newPlayer(t)
	codes := make([]int, 100)
	var wg sync.WaitGroup
	for i := range codes {
		wg.Go(func() {
			codes[i] = a.do(t, request{method: http.MethodPost, path: "/support", header: p.auth,
				body: jsonBody(map[string]string{"subject": "Help " + strconv.Itoa(i), "message": "Please"})}).Code
		})
	}
	wg.Wait()
	if created := countOf(codes, http.StatusCreated); created != 5 || countOf(codes, http.StatusConflict) != 95 {
		t.Fatalf("100 concurrent tickets: %d created; answers %v; want 5 created and 95 CONFLICT", created, codes)
	}
	mine := decodeAs[[]ticket](t, a.do(t, request{path: "/support/me", header: p.auth}), http.StatusOK)
	if len(mine) != 5 {
		t.Fatalf("the user has %d tickets, want 5", len(mine))
	}
	e := a.do(t, request{method: http.MethodPost, path: "/support", header: p.auth,
		body: `{"subject": "One more", "message": "Please"}`}).wantError(t, http.StatusConflict, "CONFLICT")
	if msg, _ := e["message"].(string); !strings.Contains(msg, "5 support tickets") {
		t.Errorf("the 6th ticket's message %q does not say why", msg)
	}
	// A closed ticket leaves the count.
	if r := a.do(t, request{method: http.MethodPatch, path: "/support/me/" + mine[0].ID + "/close", header: p.auth}); r.Code != http.StatusOK {
		t.Fatalf("close: %d %s", r.Code, r.Body)
	}
	a.openTicket(t, p, "One more")
}

// A tip with a chat context posts a system message there: only into a
// chat of the people it is between, an active game that one of them
// plays or their own conversation.
func TestATipIsAnnouncedOnlyInTheChatOfItsPeople(t *testing.T) {
	a := newTestApp(t, nil)
	p1, p2, active := a.match(t, `{"rounds": 3}`)
	q1, _, finished := a.match(t, `{"rounds": 3}`)
	a.act(t, q1, finished, `{"type": "resign"}`)
	tipper, stranger := a.spectatorWith(t, 1_000_000), a.newPlayer(t)
	tipsIn := func(game string) int {
		n := 0
		for _, m := range a.history(t, p1, "game", game, "") {
			if meta, _ := m["metadata"].(map[string]any); meta["kind"] == "tip" {
				n++
			}
		}
		return n
	}
	for name, c := range map[string]struct {
		to      player
		context map[string]any
	}{
		"a finished game the recipient played": {q1, map[string]any{"type": "game", "id": finished}},
		"a game neither plays":                 {stranger, map[string]any{"type": "game", "id": active}},
		"someone else's conversation":          {p1, map[string]any{"type": "dm", "id": p2.id}},
	} {
		r := a.do(t, request{method: http.MethodPost, path: "/tips/prepare", header: tipper.auth,
			body: jsonBody(map[string]any{"toUserId": c.to.id, "amountMinor": 10_000, "context": c.context})})
		e := r.wantError(t, 400, "VALIDATION_ERROR")
		if _, ok := e["fields"].(map[string]any)["context"]; !ok {
			t.Errorf("a tip in %s: %v, want the error to name context", name, e)
		}
	}
	if n := tipsIn(finished) + tipsIn(active); n != 0 {
		t.Errorf("%d tip messages in the games' chats, want none", n)
	}
	if h := a.history(t, p1, "dm", p2.id, ""); len(h) != 0 {
		t.Errorf("messages in p1 and p2's conversation: %v", h)
	}

	// In the active game of the recipient it is announced.
	if r, _ := a.tip(t, tipper, map[string]any{"toUserId": p1.id, "amountMinor": 10_000,
		"context": map[string]any{"type": "game", "id": active}}); r.Code != http.StatusOK {
		t.Fatalf("a tip in the recipient's game: %d %s", r.Code, r.Body)
	}
	if n := tipsIn(active); n != 1 {
		t.Errorf("%d tip messages in the recipient's game, want 1", n)
	}
}

// A block stops the blocked user's challenges and tips as it stops their
// friend requests and messages: a create-then-cancel loop of challenges
// reached a user who had blocked the sender, once per challenge.
func TestABlockStopsChallengesAndTips(t *testing.T) {
	a := newTestApp(t, noWorkers)
	victim, pest := a.newPlayer(t), a.depositor(t, 100_000)
	a.fund(t, pest, 100_000)
	if r := a.do(t, request{method: http.MethodPost, path: "/users/" + pest.id + "/block", header: victim.auth}); r.Code != http.StatusOK {
		t.Fatalf("block: %d %s", r.Code, r.Body)
	}
	a.do(t, request{method: http.MethodPost, path: "/challenges", header: pest.auth,
		body: jsonBody(map[string]any{"toUserId": victim.id, "gameType": "rps", "stakeMinor": 0})}).wantError(t, 403, "FORBIDDEN")
	a.do(t, request{method: http.MethodPost, path: "/challenges", header: victim.auth,
		body: jsonBody(map[string]any{"toUserId": pest.id, "gameType": "rps", "stakeMinor": 0})}).wantError(t, 403, "FORBIDDEN")
	r, _ := a.tip(t, pest, map[string]any{"toUserId": victim.id, "amountMinor": 10_000})
	r.wantError(t, 403, "FORBIDDEN")
	if ns, _ := a.notifications(t, victim, ""); len(ns) != 0 {
		t.Errorf("the blocking user was told: %+v", ns)
	}
}

// A donation opens its game's escrow token account at the fee payer's
// expense (some 0.002 SOL of rent): the game's last settlement transfer
// closes it and the rent comes back, so that a 0.01 USDC donation to a
// free game no longer costs the platform 0.002 SOL.
func TestTheEscrowsAccountIsClosedByItsLastTransfer(t *testing.T) {
	a := newTestApp(t, noWorkers)
	a.depositor(t, 10_000) // the vault's account is open: the sweep pays no rent for it
	p1, _, game := a.stakedGame(t, 0, `{"rounds": 1}`)
	s := a.spectatorWith(t, 100_000)
	if _, err := a.Settlement.ProcessTransfers(context.Background()); err != nil {
		t.Fatal(err)
	}
	payer := a.Keys.FeePayer().PublicKey()
	before := a.lamports(t, payer)
	if r, _ := a.donate(t, s, game, 10_000); r.Code != 200 {
		t.Fatalf("donation: %d %s", r.Code, r.Body)
	}
	escrowAccount := chain.ATA(a.Settlement.EscrowAddress(game), a.Money.Mint())
	if open, err := a.Money.Chain().AccountExists(context.Background(), escrowAccount); err != nil || !open {
		t.Fatalf("the donation did not open the escrow's account: %v %v", open, err)
	}
	a.act(t, p1, game, `{"type": "resign"}`)
	if n, err := a.Settlement.ProcessTransfers(context.Background()); err != nil || n != 1 {
		t.Fatalf("settlement transfers: %d %v, want the sweep", n, err)
	}
	if open, err := a.Money.Chain().AccountExists(context.Background(), escrowAccount); err != nil || open {
		t.Errorf("the escrow's account after its last transfer: open %v (%v), want closed", open, err)
	}
	if spent := before - a.lamports(t, payer); spent < 0 || spent > 50_000 {
		t.Errorf("the fee payer spent %d lamports on the donation and its sweep, want the fees alone (under 50000), the rent back", spent)
	}
}
