package handlers_test

import (
	"context"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gagliardetto/solana-go"
	"github.com/labstack/echo/v4"

	"wager/chain"
	"wager/chain/localchain"
	"wager/domain"
	"wager/domain/flags"
	"wager/domain/x402"
	"wager/web"
)

// sentUnconfirmed does what a submit of a prepared intent does up to the
// send: the intent marked submitted with its signature and signed bytes (long enough ago
// for the resolver), the fee payer's signature added, the transaction sent
// when send is true. Then it stops, as a submit whose request ended before
// the confirmation does. It returns the user-signed transaction (what the
// client would submit again) and the signature.
func (a *testApp) sentUnconfirmed(t *testing.T, w wallet, prepared map[string]any, send bool) (string, string) {
	t.Helper()
	ctx := context.Background()
	signed := signPrepared(t, w, prepared["transaction"].(string), nil)
	tx := a.withFeePayer(t, signed)
	sig := tx.Signatures[0].String()
	raw, err := tx.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.DB.ExecContext(ctx, "UPDATE intents SET status = 'submitted', signature = ?, raw = ?, updated_at = now() - interval '1 minute' WHERE id = ?",
		sig, raw, prepared["intentId"]); err != nil {
		t.Fatal(err)
	}
	if send {
		if _, err := a.Money.Chain().Send(ctx, tx); err != nil {
			t.Fatal(err)
		}
	}
	return signed, sig
}

// withFeePayer returns the user-signed transaction with the fee payer's
// signature added, as submit sends it.
func (a *testApp) withFeePayer(t *testing.T, signedB64 string) *solana.Transaction {
	t.Helper()
	raw, _ := base64.StdEncoding.DecodeString(signedB64)
	tx, err := solana.TransactionFromBytes(raw)
	if err != nil {
		t.Fatal(err)
	}
	if err := chain.SignWith(tx, a.Keys.FeePayer()); err != nil {
		t.Fatal(err)
	}
	return tx
}

// resolveEverywhere runs resolve on every app at once, then once more on
// the first.
func resolveEverywhere(t *testing.T, resolve func(*testApp) error, apps ...*testApp) {
	t.Helper()
	var wg sync.WaitGroup
	for _, a := range apps {
		wg.Go(func() {
			if err := resolve(a); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if err := resolve(apps[0]); err != nil {
		t.Error(err)
	}
}

func resolveIntents(a *testApp) error { return a.Money.ResolveSubmittedIntents(context.Background()) }

func (a *testApp) intentStatus(t *testing.T, id any) (string, string) {
	t.Helper()
	var status, reason string
	if err := a.DB.QueryRowContext(context.Background(), "SELECT status, error FROM intents WHERE id = ?", id).Scan(&status, &reason); err != nil {
		t.Fatal(err)
	}
	return status, reason
}

func TestSentButUnconfirmedDepositIsCreditedOnce(t *testing.T) {
	one, two := newTestApp(t, noWorkers), newTestApp(t, noWorkers)
	w, auth := one.funded(t, 5_000_000)
	p := one.prepare(t, auth, one.depositAddress(t, auth), 1_250_000)
	signed, sig := one.sentUnconfirmed(t, w, p, true)
	if b := one.balances(t, auth); b.available != 0 || b.onChain != 3_750_000 {
		t.Fatalf("after the send: %+v, want the USDC moved on chain and nothing credited yet", b)
	}

	// Both instances resolve at once, and again: credited once.
	resolveEverywhere(t, resolveIntents, one, two)
	if b := one.balances(t, auth); b.available != 1_250_000 || b.onChain != 3_750_000 {
		t.Fatalf("after resolving: %+v, want 1250000 available and 3750000 on chain", b)
	}
	if status, _ := one.intentStatus(t, p["intentId"]); status != "confirmed" {
		t.Errorf("intent: %s, want confirmed", status)
	}
	h := one.do(t, request{path: "/wallets/me/transactions", header: auth}).list(t)
	if len(h) != 1 || h[0].(map[string]any)["kind"] != "deposit" || h[0].(map[string]any)["signature"] != sig {
		t.Errorf("history: %v, want the one deposit %s", h, sig)
	}

	// The client's late re-submit answers the receipt and moves nothing.
	r := one.submit(t, auth, p["intentId"].(string), signed)
	if m := r.json(t); r.Code != 200 || m["signature"] != sig || m["status"] != "confirmed" || m["amountMinor"] != float64(1_250_000) {
		t.Fatalf("re-submit: %d %s, want the confirmed receipt of %s", r.Code, r.Body, sig)
	}
	if b := one.balances(t, auth); b.available != 1_250_000 || b.onChain != 3_750_000 {
		t.Fatalf("after the re-submit: %+v", b)
	}
}

// laggingNode refuses every sendTransaction as an RPC node that is behind
// the cluster does ("Blockhash not found") and passes other calls to the
// embedded chain. It stands in for a load-balanced RPC whose nodes
// disagree, which one embedded chain cannot be.
type laggingNode struct{ next localchain.Transport }

func (l laggingNode) Do(req *http.Request) (*http.Response, error) {
	call, err := readRPC(req)
	if err != nil {
		return nil, err
	}
	if call.Method == "sendTransaction" {
		out := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32002,"message":"Transaction simulation failed: Blockhash not found"}}`, call.ID)
		return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
			Body: io.NopCloser(strings.NewReader(out)), Request: req}, nil
	}
	return l.next.Do(req)
}

func (laggingNode) CloseIdleConnections() {}

// TestResubmitRefusedByALaggingNodeDoesNotFailASentDeposit: the first
// submit sent the deposit and its request ended; the client's re-submit
// reaches a node that refuses the bytes. The deposit may still land, so
// the intent is not failed, and once it lands it is credited once.
func TestResubmitRefusedByALaggingNodeDoesNotFailASentDeposit(t *testing.T) {
	a := newTestApp(t, noWorkers)
	w, auth := a.funded(t, 5_000_000)
	p := a.prepare(t, auth, a.depositAddress(t, auth), 1_250_000)
	signed, sig := a.sentUnconfirmed(t, w, p, false) // sent; still on its way

	client := a.Money.Chain()
	saved := *client
	t.Cleanup(func() { *client = saved })
	*client = *chain.NewClient("http://lagging-node", laggingNode{localchain.Transport{Chain: a.LocalChain}})
	r := a.submit(t, auth, p["intentId"].(string), signed)
	*client = saved
	r.wantError(t, http.StatusServiceUnavailable, "UNAVAILABLE")
	if status, reason := a.intentStatus(t, p["intentId"]); status != "submitted" {
		t.Fatalf("intent after the refused re-submit: %s (%s), want still submitted", status, reason)
	}

	// The first send lands; the next re-submit credits it, once.
	tx := a.withFeePayer(t, signed)
	if _, err := a.Money.Chain().SendAndConfirm(context.Background(), tx, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		r = a.submit(t, auth, p["intentId"].(string), signed)
		if m := r.json(t); r.Code != 200 || m["signature"] != sig || m["status"] != "confirmed" {
			t.Fatalf("re-submit after landing: %d %s, want the confirmed receipt of %s", r.Code, r.Body, sig)
		}
	}
	if b := a.balances(t, auth); b.available != 1_250_000 || b.onChain != 3_750_000 {
		t.Fatalf("balances: %+v, want 1250000 credited once and 3750000 left on chain", b)
	}
}

func TestSentButUnconfirmedDonationFillsThePotOnce(t *testing.T) {
	a := newTestApp(t, noWorkers)
	_, _, game := a.stakedGame(t, 0, `{"rounds": 1}`)
	spectator := a.spectatorWith(t, 1_000_000)
	r := a.do(t, request{method: http.MethodPost, path: "/games/" + game + "/donations/prepare", header: spectator.auth,
		body: jsonBody(map[string]any{"amountMinor": 60_000})})
	if r.Code != 200 {
		t.Fatalf("prepare: %d %s", r.Code, r.Body)
	}
	prep := r.json(t)
	signed, sig := a.sentUnconfirmed(t, spectator.wallet, prep, true)

	resolveEverywhere(t, resolveIntents, a, a)
	if pot := a.do(t, request{path: "/games/" + game + "/pot"}).json(t); pot["spectatorPotMinor"] != float64(60_000) {
		t.Fatalf("pot after resolving: %v, want a spectator pot of 60000", pot)
	}
	if got := a.onChain(t, a.Settlement.EscrowAddress(game)); got != 60_000 {
		t.Errorf("escrow holds %d, want 60000", got)
	}
	again := a.do(t, request{method: http.MethodPost, path: "/games/" + game + "/donations/submit", header: spectator.auth,
		body: jsonBody(map[string]string{"intentId": prep["intentId"].(string), "signedTransaction": signed})})
	if again.Code != 200 || again.json(t)["signature"] != sig {
		t.Fatalf("re-submit: %d %s, want the donation %s", again.Code, again.Body, sig)
	}
	var list []map[string]any
	if err := jsonDecode(a.do(t, request{path: "/games/" + game + "/donations"}).Body.Bytes(), &list); err != nil || len(list) != 1 {
		t.Errorf("donations: %v (%v), want one", list, err)
	}
}

// A deposit whose send was lost on its way to a leader, and whose submit
// ended before it could send it again, is sent again by the resolver from
// its stored bytes, and credited once. Before the bytes were kept, the
// resolver could only wait for it to expire: the deposit failed.
func TestALostDepositIsSentAgainByTheResolverAndCreditedOnce(t *testing.T) {
	a := newTestApp(t, noWorkers)
	w, auth := a.funded(t, 5_000_000)
	p := a.prepare(t, auth, a.depositAddress(t, auth), 1_000_000)
	signed, sig := a.sentUnconfirmed(t, w, p, false) // lost before it reached the chain

	for range 3 {
		if err := resolveIntents(a); err != nil {
			t.Fatal(err)
		}
	}
	if status, reason := a.intentStatus(t, p["intentId"]); status != "confirmed" {
		t.Fatalf("the lost deposit after the resolver's rounds: %s (%s), want confirmed", status, reason)
	}
	if b := a.balances(t, auth); b.available != 1_000_000 || b.onChain != 4_000_000 {
		t.Fatalf("balances: %+v, want 1000000 credited once and 4000000 left on chain", b)
	}
	if r := a.submit(t, auth, p["intentId"].(string), signed); r.Code != 200 || r.json(t)["signature"] != sig {
		t.Fatalf("the client's re-submit: %d %s, want the receipt of %s", r.Code, r.Body, sig)
	}
}

// A sent deposit the chain never saw is expired once the finalized block
// height has passed its last valid one, and only then: nothing moved, and
// a re-submit says so.
func TestASubmittedIntentNeverSeenExpiresOnceItsLastValidHeightIsFinalized(t *testing.T) {
	clk := newTestClock()
	a := newTestAppAt(t, map[string]string{"WORKERS": "false", "JWT_SECRET": testSecret, "CHAIN_FINALIZE_SLOTS": "10"}, clk.now)
	w, auth := a.funded(t, 5_000_000)
	p := a.prepare(t, auth, a.depositAddress(t, auth), 1_000_000)
	signed, _ := a.sentUnconfirmed(t, w, p, false) // lost before it reached the chain
	if _, err := a.DB.ExecContext(context.Background(), "UPDATE intents SET raw = NULL WHERE id = ?", p["intentId"]); err != nil {
		t.Fatal(err) // and not kept, as before the bytes were: nobody sends it again
	}

	// Past its last valid height, but not yet by the finalized height: a
	// status reported late could still show it, so it is left alone.
	clk.advance(localchain.BlockhashLifetime + 2*400*time.Millisecond)
	if err := resolveIntents(a); err != nil {
		t.Fatal(err)
	}
	if status, _ := a.intentStatus(t, p["intentId"]); status != "submitted" {
		t.Fatalf("intent before its last valid height is finalized: %s, want still submitted", status)
	}
	clk.advance(12 * 400 * time.Millisecond) // ten slots later, it is finalized
	if err := resolveIntents(a); err != nil {
		t.Fatal(err)
	}
	if status, reason := a.intentStatus(t, p["intentId"]); status != "expired" || !strings.Contains(reason, "blockhash expired") {
		t.Fatalf("intent after its last valid height was finalized: %s %q, want expired saying why", status, reason)
	}
	m := a.submit(t, auth, p["intentId"].(string), signed).wantError(t, 409, "CONFLICT")
	if msg := m["message"].(string); !strings.Contains(msg, "blockhash expired") || !strings.Contains(msg, "Prepare a new one") {
		t.Errorf("re-submit of the expired intent: %q", msg)
	}
	if b := a.balances(t, auth); b.available != 0 || b.onChain != 5_000_000 {
		t.Fatalf("a transaction that never landed moved money: %+v", b)
	}
}

// settlingUnconfirmed does what an inline settlement of a client's payment
// does up to the send: its row in settling, created age ago, the fee
// payer's signature added, the transaction sent when send is true. Then it
// stops, as a request that ended before the confirmation does. It returns
// the signature.
func (a *testApp) settlingUnconfirmed(t *testing.T, header string, payer wallet, by x402.Caller, age time.Duration, send bool) string {
	t.Helper()
	ctx := context.Background()
	var p x402.PaymentPayload
	if err := x402.DecodeHeader(header, &p); err != nil {
		t.Fatal(err)
	}
	raw, _ := base64.StdEncoding.DecodeString(p.Payload.Transaction)
	tx, err := solana.TransactionFromBytes(raw)
	if err != nil {
		t.Fatal(err)
	}
	if err := chain.SignWith(tx, a.Keys.FeePayer()); err != nil {
		t.Fatal(err)
	}
	sig := tx.Signatures[0].String()
	created := time.Now().Add(-age)
	resource, _ := x402.ResourcePath(p.Resource.URL)
	presenter := &by.Key
	if by.UserID != "" {
		presenter = nil
	}
	if _, err := a.DB.ExecContext(ctx, `INSERT INTO x402_payments (signature, resource, amount_minor, payer, user_id, presented_by, status, created_at, updated_at)
		VALUES (?, ?, ?, ?, NULLIF(?, '')::uuid, ?, 'settling', ?, ?)`,
		sig, resource, a.X402.Price(), payer.address(), by.UserID, presenter, created, created); err != nil {
		t.Fatal(err)
	}
	if send {
		if _, err := a.Money.Chain().Send(ctx, tx); err != nil {
			t.Fatal(err)
		}
	}
	return sig
}

func (a *testApp) paymentRow(t *testing.T, sig string) (status string, used bool, found bool) {
	t.Helper()
	err := a.DB.QueryRowContext(context.Background(), "SELECT status, used_at IS NOT NULL FROM x402_payments WHERE signature = ?", sig).
		Scan(&status, &used)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		t.Fatal(err)
	}
	return status, used, err == nil
}

func TestInlinePaymentLeftSettlingIsCreditedAndServesTheRepeatOnce(t *testing.T) {
	a := abuseApp(t, "1", map[string]string{"WORKERS": "false"})
	two := newTestApp(t, noWorkers)
	w, auth := a.funded(t, 1_000_000)
	me := a.do(t, request{path: "/users/me", header: auth}).json(t)["id"].(string)
	pr := a.overThreshold(t, auth, "/users/me")
	before := treasury(t, a)
	// The vault's token account exists before any payment is settled
	// (preparing one makes sure of it).
	if r := a.do(t, request{method: http.MethodPost, path: "/payments/prepare", header: auth,
		body: jsonBody(map[string]any{"paymentRequired": pr})}); r.Code != 200 {
		t.Fatalf("prepare: %d %s", r.Code, r.Body)
	}

	header := clientPayment(t, a, w, pr.Resource.URL, nil)
	sig := a.settlingUnconfirmed(t, header, w, x402.Caller{UserID: me}, time.Minute, true)
	if got := a.onChain(t, w.key.PublicKey()); got != 990_000 {
		t.Fatalf("payer's wallet after the send: %d, want 990000", got)
	}
	resolve := func(a *testApp) error { return a.X402.ResolveSettling(context.Background()) }
	resolveEverywhere(t, resolve, a, two)
	if got := treasury(t, a) - before; got != 10_000 {
		t.Fatalf("treasury after resolving: +%d, want +10000", got)
	}
	if status, used, _ := a.paymentRow(t, sig); status != "settled" || used {
		t.Fatalf("resolved payment: %s used %v, want settled and unused", status, used)
	}

	// The client repeats the request with the same payment: served once.
	r := a.do(t, request{path: "/users/me", header: withPayment(auth, header)})
	if r.Code != 200 {
		t.Fatalf("repeat with the resolved payment: %d %s", r.Code, r.Body)
	}
	var settled x402.SettlementResponse
	if err := x402.DecodeHeader(r.Header().Get("PAYMENT-RESPONSE"), &settled); err != nil || !settled.Success ||
		settled.Transaction != sig || settled.Payer != w.address() {
		t.Errorf("PAYMENT-RESPONSE: %v %+v, want success for %s", err, settled, sig)
	}
	if got := refusalOf(t, a.do(t, request{path: "/users/me", header: withPayment(auth, header)})); got != x402.ReasonAlreadyUsed {
		t.Errorf("second repeat: reason %q, want %q", got, x402.ReasonAlreadyUsed)
	}
	if got := treasury(t, a) - before; got != 10_000 {
		t.Errorf("treasury after the repeats: +%d, want +10000", got)
	}

	// Not landed: left while it might still land, forgotten once it cannot.
	recent := a.settlingUnconfirmed(t, clientPayment(t, a, w, pr.Resource.URL, nil), w, x402.Caller{UserID: me}, time.Minute, false)
	stale := a.settlingUnconfirmed(t, clientPayment(t, a, w, pr.Resource.URL, nil), w, x402.Caller{UserID: me}, 10*time.Minute, false)
	if err := resolve(a); err != nil {
		t.Fatal(err)
	}
	if status, _, found := a.paymentRow(t, recent); !found || status != "settling" {
		t.Errorf("a recent unlanded payment: %q found %v, want left settling", status, found)
	}
	if _, _, found := a.paymentRow(t, stale); found {
		t.Error("a payment that can no longer land was not forgotten")
	}
	// A client that never sends it again leaves nothing for later tests.
	if _, err := a.DB.ExecContext(context.Background(), "DELETE FROM x402_payments WHERE signature = ?", recent); err != nil {
		t.Fatal(err)
	}
	if got := treasury(t, a) - before; got != 10_000 {
		t.Errorf("treasury after unlanded payments: +%d, want +10000", got)
	}
}

func TestAPaymentSpentOnAServerErrorIsGivenBack(t *testing.T) {
	a := abuseApp(t, "1", nil)
	w, auth := a.funded(t, 1_000_000)
	const path = "/test/flaky"
	mode := "ok"
	a.HTTP.Echo.GET(path, func(c echo.Context) error {
		switch mode {
		case "error":
			return errors.New("the database went away")
		case "panic":
			panic("a bug")
		case "written 503":
			return c.JSON(http.StatusServiceUnavailable, map[string]string{"code": "UNAVAILABLE", "message": "try again"})
		case "client error":
			return domain.Invalid(map[string]string{"q": "is wrong"})
		}
		return c.JSON(http.StatusOK, map[string]string{"served": "yes"})
	}, web.Authenticate(a.Auth, web.AuthRequired), (&web.AbuseControl{X402: a.X402, Log: testLogger(t),
		Enabled: func() bool { return a.Flags.Enabled(flags.AbuseControls) }}).For(http.MethodGet, path, web.AuthRequired))

	if r := a.do(t, request{path: path, header: auth}); r.Code != 200 {
		t.Fatalf("first request: %d %s", r.Code, r.Body)
	}
	pr := a.overThreshold(t, auth, path)
	before := treasury(t, a)
	header := clientPayment(t, a, w, pr.Resource.URL, nil)
	for _, failure := range []struct {
		mode   string
		status int
	}{{"error", 500}, {"panic", 500}, {"written 503", 503}} {
		mode = failure.mode
		r := a.do(t, request{path: path, header: withPayment(auth, header)})
		if r.Code != failure.status {
			t.Fatalf("%s: %d %s, want %d", failure.mode, r.Code, r.Body, failure.status)
		}
		if r.Header().Get("PAYMENT-RESPONSE") != "" {
			t.Errorf("%s: the answer says the payment was spent (PAYMENT-RESPONSE)", failure.mode)
		}
	}
	mode = "ok"
	r := a.do(t, request{path: path, header: withPayment(auth, header)})
	if r.Code != 200 {
		t.Fatalf("repeat after the server errors: %d %s, want the payment to serve it", r.Code, r.Body)
	}
	var settled x402.SettlementResponse
	if err := x402.DecodeHeader(r.Header().Get("PAYMENT-RESPONSE"), &settled); err != nil || !settled.Success {
		t.Fatalf("PAYMENT-RESPONSE: %v %+v", err, settled)
	}
	// Another caller cannot give it back; the payment stays spent.
	if err := a.X402.Release(context.Background(), settled.Transaction, "user:someone-else"); err != nil {
		t.Fatal(err)
	}
	if got := refusalOf(t, a.do(t, request{path: path, header: withPayment(auth, header)})); got != x402.ReasonAlreadyUsed {
		t.Errorf("after the served request: reason %q, want %q", got, x402.ReasonAlreadyUsed)
	}

	// A client error keeps the payment spent.
	second := clientPayment(t, a, w, pr.Resource.URL, nil)
	mode = "client error"
	a.do(t, request{path: path, header: withPayment(auth, second)}).wantError(t, 400, "VALIDATION_ERROR")
	mode = "ok"
	if got := refusalOf(t, a.do(t, request{path: path, header: withPayment(auth, second)})); got != x402.ReasonAlreadyUsed {
		t.Errorf("after a client error: reason %q, want %q", got, x402.ReasonAlreadyUsed)
	}
	if got := treasury(t, a) - before; got != 20_000 {
		t.Errorf("treasury: +%d, want +20000 (each payment once)", got)
	}
}

// TestAnonymousPaymentServesOnlyTheCallerThatPresentedIt: anyone can copy
// a landed payment's transaction from the chain; another caller presenting
// that copy is refused, while the payment is settling and once the
// resolver has settled it unused, and the caller that paid is served.
func TestAnonymousPaymentServesOnlyTheCallerThatPresentedIt(t *testing.T) {
	a := abuseApp(t, "1", map[string]string{"WORKERS": "false"})
	w, _ := a.funded(t, 1_000_000)
	bot := request{path: "/games/available", header: appHeaders("bot-a"), remoteAddr: "198.51.100.1:4000"}
	other := request{path: "/games/available", header: appHeaders("bot-b"), remoteAddr: "198.51.100.9:4000"}
	paying := func(r request, header string) request {
		r.header = withPayment(r.header, header)
		return r
	}
	a.do(t, other) // within its allowance
	a.do(t, bot)
	_, pr := challengeOf(t, a.do(t, bot))
	// Paid inline and served (which also opens the vault's token account).
	if r := a.do(t, paying(bot, clientPayment(t, a, w, pr.Resource.URL, nil))); r.Code != 200 {
		t.Fatalf("inline payment: %d %s", r.Code, r.Body)
	}

	// The next payment is sent, and its request ends before the confirmation.
	header := clientPayment(t, a, w, pr.Resource.URL, nil)
	sig := a.settlingUnconfirmed(t, header, w, x402.Caller{Key: "app:bot-a"}, time.Minute, true)
	if got := refusalOf(t, a.do(t, paying(other, header))); got != x402.ReasonPayerMismatch {
		t.Errorf("a copy presented by another caller while settling: reason %q, want %q", got, x402.ReasonPayerMismatch)
	}
	if err := a.X402.ResolveSettling(context.Background()); err != nil {
		t.Fatal(err)
	}
	if status, used, _ := a.paymentRow(t, sig); status != "settled" || used {
		t.Fatalf("resolved payment: %s used %v, want settled and unused", status, used)
	}
	if got := refusalOf(t, a.do(t, paying(other, header))); got != x402.ReasonPayerMismatch {
		t.Errorf("a copy presented by another caller once settled: reason %q, want %q", got, x402.ReasonPayerMismatch)
	}
	if r := a.do(t, paying(bot, header)); r.Code != 200 {
		t.Fatalf("the paying caller's repeat: %d %s", r.Code, r.Body)
	}
}
