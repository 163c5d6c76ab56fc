package handlers_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/programs/token"

	"wager/chain"
	"wager/cmd/server/app"
	"wager/domain/flags"
	"wager/domain/money"
	"wager/domain/x402"
)

// abuseApp starts an app whose endpoints allow threshold requests per
// minute, with the abuse-controls flag on for the test.
func abuseApp(t *testing.T, threshold string, env map[string]string) *testApp {
	t.Helper()
	if env == nil {
		env = map[string]string{}
	}
	env["ABUSE_THRESHOLD"] = threshold
	a := newTestApp(t, env)
	// Counters outlive an app in the package's database: start afresh.
	if _, err := a.DB.ExecContext(context.Background(), "DELETE FROM abuse_counters"); err != nil {
		t.Fatal(err)
	}
	setFlag(t, a, flags.AbuseControls, true)
	return a
}

func setFlag(t *testing.T, a *testApp, name string, on bool) {
	t.Helper()
	if _, err := a.Flags.Set(context.Background(), name, on, "test"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Flags.Set(context.Background(), name, !on, "test") })
}

// challengeOf checks a 402 answer: PAYMENT_REQUIRED, and a PAYMENT-REQUIRED
// header that decodes to the body's paymentRequired. It returns both.
func challengeOf(t *testing.T, r response) (map[string]any, x402.PaymentRequired) {
	t.Helper()
	return decodeChallenge(t, r)
}

// refusalOf checks a 402 answer to a presented payment and returns its
// reason, which the body and PAYMENT-RESPONSE both carry.
func refusalOf(t *testing.T, r response) string {
	t.Helper()
	body, pr := challengeOf(t, r)
	var settled x402.SettlementResponse
	if err := x402.DecodeHeader(r.Header().Get("PAYMENT-RESPONSE"), &settled); err != nil || settled.Success {
		t.Errorf("refused payment: PAYMENT-RESPONSE %v %+v, want success false", err, settled)
	}
	reason, _ := body["reason"].(string)
	if settled.ErrorReason != reason || pr.Error != body["message"] {
		t.Errorf("refusal: body reason %q, PAYMENT-RESPONSE errorReason %q, challenge error %q, message %q",
			reason, settled.ErrorReason, pr.Error, body["message"])
	}
	return reason
}

func decodeChallenge(t *testing.T, r response) (map[string]any, x402.PaymentRequired) {
	t.Helper()
	body := r.wantError(t, http.StatusPaymentRequired, "PAYMENT_REQUIRED")
	header := r.Header().Get("PAYMENT-REQUIRED")
	raw, err := base64.StdEncoding.DecodeString(header)
	if err != nil {
		t.Fatalf("PAYMENT-REQUIRED %q is not base64: %v", header, err)
	}
	var fromHeader any
	if err := json.Unmarshal(raw, &fromHeader); err != nil {
		t.Fatalf("PAYMENT-REQUIRED is not JSON: %s", raw)
	}
	if !reflect.DeepEqual(fromHeader, body["paymentRequired"]) {
		t.Fatalf("PAYMENT-REQUIRED header decodes to\n%s\nbut the body's paymentRequired is\n%v", raw, body["paymentRequired"])
	}
	var pr x402.PaymentRequired
	if err := json.Unmarshal(raw, &pr); err != nil {
		t.Fatal(err)
	}
	return body, pr
}

func treasury(t *testing.T, a *testApp) int64 {
	t.Helper()
	n, err := money.BalanceOf(context.Background(), a.DB, money.Treasury)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestThresholdCrossingAnswers402(t *testing.T) {
	a := abuseApp(t, "3", nil)
	_, auth := a.funded(t, 1_000_000)
	for i := 1; i <= 3; i++ {
		if r := a.do(t, request{path: "/users/me", header: auth}); r.Code != 200 {
			t.Fatalf("request %d of 3: got %d %s", i, r.Code, r.Body)
		}
	}
	body, pr := challengeOf(t, a.do(t, request{path: "/users/me?x=1", header: auth}))
	if msg := body["message"].(string); !strings.Contains(msg, "GET /users/me") || !strings.Contains(msg, "0.01 USDC") {
		t.Errorf("message should name the endpoint and the price: %q", msg)
	}
	want := x402.Requirements{Scheme: "exact", Network: x402.NetworkDevnet, Amount: "10000",
		Asset: a.Money.Mint().String(), PayTo: a.Money.DepositAddress().String(), MaxTimeoutSeconds: 60,
		Extra: x402.ExactExtra{FeePayer: a.Keys.FeePayer().PublicKey().String()}}
	if pr.X402Version != 2 || len(pr.Accepts) != 1 || pr.Accepts[0] != want {
		t.Fatalf("paymentRequired: got %+v, want x402Version 2 accepting %+v", pr, want)
	}
	if !strings.HasSuffix(pr.Resource.URL, "/users/me?x=1") || !strings.HasPrefix(pr.Resource.URL, "http") {
		t.Errorf("resource.url: got %q, want the absolute URL of the request", pr.Resource.URL)
	}

	// Counters are per endpoint and per caller.
	if r := a.do(t, request{path: "/wallets/me/balance", header: auth}); r.Code != 200 {
		t.Errorf("another endpoint: got %d %s", r.Code, r.Body)
	}
	_, other := a.funded(t, 1)
	if r := a.do(t, request{path: "/users/me", header: other}); r.Code != 200 {
		t.Errorf("another caller: got %d %s", r.Code, r.Body)
	}
	// Anonymous callers count by app id and by IP: the same app from
	// another address is charged, another app from another address is not,
	// and new app ids from one address buy nothing.
	for i := 0; i < 3; i++ {
		a.do(t, request{path: "/games/available", header: appHeaders("bot-a"), remoteAddr: "198.51.100.1:4000"})
	}
	challengeOf(t, a.do(t, request{path: "/games/available", header: appHeaders("bot-a"), remoteAddr: "198.51.100.2:4000"}))
	if r := a.do(t, request{path: "/games/available", header: appHeaders("bot-b"), remoteAddr: "198.51.100.3:4000"}); r.Code != 200 {
		t.Errorf("another app id from another address: got %d", r.Code)
	}
	challengeOf(t, a.do(t, request{path: "/games/available", header: appHeaders("bot-c"), remoteAddr: "198.51.100.1:4000"}))

	// Never charged: operational endpoints, the payment flow, admins.
	for _, path := range []string{"/health", "/version", "/feature-flags", "/service_check_maintenance"} {
		for i := 0; i < 5; i++ {
			if r := a.do(t, request{path: path, header: auth}); r.Code != 200 {
				t.Fatalf("%s request %d: got %d %s", path, i, r.Code, r.Body)
			}
		}
	}
	for i := 0; i < 5; i++ {
		r := a.do(t, request{method: http.MethodPost, path: "/payments/prepare", header: auth, body: `{}`})
		if r.Code == http.StatusPaymentRequired {
			t.Fatalf("the payment flow itself was charged: %s", r.Body)
		}
	}

	// Off: nothing is counted or charged.
	setFlag(t, a, flags.AbuseControls, false)
	for i := 0; i < 5; i++ {
		if r := a.do(t, request{path: "/users/me", header: auth}); r.Code != 200 {
			t.Fatalf("abuse controls off: got %d %s", r.Code, r.Body)
		}
	}
}

func TestAdminsAreNeverCharged(t *testing.T) {
	admin := newWallet(t)
	a := abuseApp(t, "1", map[string]string{"ADMIN_WALLETS": admin.address()})
	token, _ := a.login(t, admin, "console")
	for i := 0; i < 4; i++ {
		if r := a.do(t, request{path: "/users/me", header: bearer(token, "console")}); r.Code != 200 {
			t.Fatalf("admin request %d: got %d %s", i, r.Code, r.Body)
		}
		if r := a.do(t, request{path: "/admin/feature-flags", header: bearer(token, "console")}); r.Code != 200 {
			t.Fatalf("admin route %d: got %d %s", i, r.Code, r.Body)
		}
	}
}

// overThreshold makes the caller's next request of path a 402 and returns
// its challenge.
func (a *testApp) overThreshold(t *testing.T, auth map[string]string, path string) x402.PaymentRequired {
	t.Helper()
	for i := 0; i < 10; i++ {
		r := a.do(t, request{path: path, header: auth})
		if r.Code == http.StatusPaymentRequired {
			_, pr := challengeOf(t, r)
			return pr
		}
	}
	t.Fatalf("%s never answered 402", path)
	return x402.PaymentRequired{}
}

func TestPreparedPaymentServesOneRequest(t *testing.T) {
	a := abuseApp(t, "2", nil)
	w, auth := a.funded(t, 1_000_000)
	pr := a.overThreshold(t, auth, "/users/me")
	before := treasury(t, a)

	// Prepare refuses a challenge that is not the platform's.
	cheap := pr
	cheap.Accepts = []x402.Requirements{pr.Accepts[0]}
	cheap.Accepts[0].Amount = "1"
	r := a.do(t, request{method: http.MethodPost, path: "/payments/prepare", header: auth,
		body: jsonBody(map[string]any{"paymentRequired": cheap})})
	if m := r.wantError(t, 400, "VALIDATION_ERROR"); !strings.Contains(jsonString(m["fields"]), "not the price") {
		t.Errorf("underpaying challenge: %v", m)
	}

	r = a.do(t, request{method: http.MethodPost, path: "/payments/prepare", header: auth,
		body: jsonBody(map[string]any{"paymentRequired": pr})})
	if r.Code != 200 {
		t.Fatalf("prepare: %d %s", r.Code, r.Body)
	}
	p := r.json(t)
	checkExactLayout(t, a, p["transaction"].(string), w)
	// A signed transaction that pays less than prepared is refused.
	underpaid := signPrepared(t, w, p["transaction"].(string), func(tx *solana.Transaction) {
		tx.Message.Instructions[2].Data[1] = 0x01 // the amount 10000 (0x2710) becomes 9985
	})
	r = a.do(t, request{method: http.MethodPost, path: "/payments/submit", header: auth,
		body: jsonBody(map[string]string{"intentId": p["intentId"].(string), "signedTransaction": underpaid})})
	if m := r.wantError(t, 400, "VALIDATION_ERROR"); !strings.Contains(jsonString(m["fields"]), "differs from the prepared transaction") {
		t.Errorf("tampered payment: %v", m)
	}
	signed := signPrepared(t, w, p["transaction"].(string), nil)
	r = a.do(t, request{method: http.MethodPost, path: "/payments/submit", header: auth,
		body: jsonBody(map[string]string{"intentId": p["intentId"].(string), "signedTransaction": signed})})
	if r.Code != 200 {
		t.Fatalf("submit: %d %s", r.Code, r.Body)
	}
	sub := r.json(t)
	sig, paySig := sub["signature"].(string), sub["paymentSignature"].(string)
	if sig == "" || paySig == "" {
		t.Fatalf("submit answer: %v", sub)
	}
	if got := treasury(t, a) - before; got != 10_000 {
		t.Errorf("treasury after the payment: +%d, want +10000", got)
	}
	var payload x402.PaymentPayload
	if err := x402.DecodeHeader(paySig, &payload); err != nil || payload.X402Version != 2 ||
		payload.Accepted.Scheme != "exact" || payload.Payload.Transaction == "" {
		t.Fatalf("paymentSignature is not an x402 PaymentPayload: %v %+v", err, payload)
	}

	// Not for another resource, not for another user.
	a.overThreshold(t, auth, "/wallets/me/balance")
	if got := refusalOf(t, a.do(t, request{path: "/wallets/me/balance", header: withPayment(auth, paySig)})); got != x402.ReasonResourceMismatch {
		t.Errorf("the payment on another resource: reason %q, want %q", got, x402.ReasonResourceMismatch)
	}
	_, other := a.funded(t, 1)
	a.overThreshold(t, other, "/users/me")
	if got := refusalOf(t, a.do(t, request{path: "/users/me", header: withPayment(other, paySig)})); got != x402.ReasonPayerMismatch {
		t.Errorf("another user's retry: reason %q, want %q", got, x402.ReasonPayerMismatch)
	}

	// The retry is served once, with PAYMENT-RESPONSE.
	r = a.do(t, request{path: "/users/me", header: withPayment(auth, paySig)})
	if r.Code != 200 {
		t.Fatalf("retry with the payment: %d %s", r.Code, r.Body)
	}
	var settled x402.SettlementResponse
	if err := x402.DecodeHeader(r.Header().Get("PAYMENT-RESPONSE"), &settled); err != nil ||
		!settled.Success || settled.Transaction != sig || settled.Payer != w.address() || settled.Network != x402.NetworkDevnet {
		t.Errorf("PAYMENT-RESPONSE: %v %+v, want success for %s paid by %s", err, settled, sig, w.address())
	}
	if got := refusalOf(t, a.do(t, request{path: "/users/me", header: withPayment(auth, paySig)})); got != x402.ReasonAlreadyUsed {
		t.Errorf("replay: reason %q, want %q", got, x402.ReasonAlreadyUsed)
	}

	// Submitting again moves nothing more.
	r = a.do(t, request{method: http.MethodPost, path: "/payments/submit", header: auth,
		body: jsonBody(map[string]string{"intentId": p["intentId"].(string), "signedTransaction": signed})})
	if r.Code != 200 || r.json(t)["paymentSignature"] != paySig {
		t.Errorf("second submit: %d %s", r.Code, r.Body)
	}
	if got := treasury(t, a) - before; got != 10_000 {
		t.Errorf("treasury after a second submit: +%d, want +10000", got)
	}
}

// checkExactLayout checks that a prepared payment has the x402 exact
// layout and passes the same verification as a standard client's.
func checkExactLayout(t *testing.T, a *testApp, b64 string, w wallet) {
	t.Helper()
	raw, _ := base64.StdEncoding.DecodeString(b64)
	tx, err := solana.TransactionFromBytes(raw)
	if err != nil {
		t.Fatal(err)
	}
	if err := chain.SignWith(tx, w.key); err != nil {
		t.Fatal(err)
	}
	if _, err := x402.VerifyExact(tx, a.X402.Requirements(), a.Keys.FeePayer().PublicKey()); err != nil {
		t.Errorf("the prepared payment fails exact verification: %v", err)
	}
}

func withPayment(auth map[string]string, paymentSignature string) map[string]string {
	h := map[string]string{"PAYMENT-SIGNATURE": paymentSignature}
	for k, v := range auth {
		h[k] = v
	}
	return h
}

func jsonString(v any) string { b, _ := json.Marshal(v); return string(b) }

// clientPayment builds what a standard x402 client sends: its own exact
// transaction, signed by the payer only, in a PaymentPayload.
func clientPayment(t *testing.T, a *testApp, w wallet, resource string, change func(*[]solana.Instruction)) string {
	t.Helper()
	req := a.X402.Requirements()
	mint, vault := a.Money.Mint(), a.Money.DepositAddress()
	nonce := make([]byte, 16)
	rand.Read(nonce)
	ixs := []solana.Instruction{
		chain.SetComputeUnitLimit(20_000), chain.SetComputeUnitPrice(1),
		token.NewTransferCheckedInstruction(10_000, 6, chain.ATA(w.key.PublicKey(), mint), mint,
			chain.ATA(vault, mint), w.key.PublicKey(), nil).Build(),
		solana.NewInstruction(chain.MemoProgramID, solana.AccountMetaSlice{}, []byte(hex.EncodeToString(nonce))),
	}
	if change != nil {
		change(&ixs)
	}
	bh, err := a.Money.Chain().Blockhash(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	tx, err := solana.NewTransaction(ixs, bh.Hash, solana.TransactionPayer(a.Keys.FeePayer().PublicKey()))
	if err != nil {
		t.Fatal(err)
	}
	if err := chain.SignWith(tx, w.key); err != nil {
		t.Fatal(err)
	}
	wire, _ := tx.MarshalBinary()
	return x402.EncodeHeader(x402.PaymentPayload{X402Version: 2, Resource: &x402.ResourceInfo{URL: resource},
		Accepted: req, Payload: x402.ExactPayload{Transaction: base64.StdEncoding.EncodeToString(wire)}})
}

func TestClientSignedPaymentIsSettledInline(t *testing.T) {
	a := abuseApp(t, "1", nil)
	w, auth := a.funded(t, 1_000_000)
	pr := a.overThreshold(t, auth, "/users/me")
	before := treasury(t, a)
	mint, vault := a.Money.Mint(), a.Money.DepositAddress()
	transfer := func(amount uint64, mint, dest solana.PublicKey) func(*[]solana.Instruction) {
		return func(ixs *[]solana.Instruction) {
			(*ixs)[2] = token.NewTransferCheckedInstruction(amount, 6, chain.ATA(w.key.PublicKey(), mint), mint,
				dest, w.key.PublicKey(), nil).Build()
		}
	}
	otherMint := solana.NewWallet().PublicKey()
	stranger := solana.NewWallet().PublicKey()
	for _, tc := range []struct {
		name, reason, says string
		change             func(*[]solana.Instruction)
	}{
		{"underpaid", x402.ReasonAmountMismatch, "pays 9999 minor units", transfer(9_999, mint, chain.ATA(vault, mint))},
		{"overpaid", x402.ReasonAmountMismatch, "exactly 10000", transfer(10_001, mint, chain.ATA(vault, mint))},
		{"wrong asset", x402.ReasonMintMismatch, otherMint.String(), transfer(10_000, otherMint, chain.ATA(vault, otherMint))},
		{"wrong destination", x402.ReasonRecipientMismatch, "associated token account of payTo",
			transfer(10_000, mint, chain.ATA(stranger, mint))},
		{"fee payer drained", x402.ReasonFeePayerInvolved, "may only pay the network fee", func(ixs *[]solana.Instruction) {
			fp := a.Keys.FeePayer().PublicKey()
			(*ixs)[3] = solana.NewInstruction(chain.MemoProgramID, solana.AccountMetaSlice{solana.Meta(fp).SIGNER()}, []byte("x"))
		}},
		{"priority fee too high", x402.ReasonComputePriceTooHigh, "priority fee", func(ixs *[]solana.Instruction) {
			(*ixs)[0] = chain.SetComputeUnitLimit(x402.MaxComputeUnits)
			(*ixs)[1] = chain.SetComputeUnitPrice(x402.MaxComputeUnitPriceMicroLp)
		}},
		{"no compute budget", x402.ReasonInstructionsLength, "3 to 7 instructions", func(ixs *[]solana.Instruction) {
			*ixs = (*ixs)[2:3]
		}},
	} {
		r := a.do(t, request{path: "/users/me", header: withPayment(auth, clientPayment(t, a, w, pr.Resource.URL, tc.change))})
		got := refusalOf(t, r)
		if msg := r.json(t)["message"].(string); got != tc.reason || !strings.Contains(msg, tc.says) {
			t.Errorf("%s: reason %q message %q; want %q saying %q", tc.name, got, msg, tc.reason, tc.says)
		}
	}
	if got := treasury(t, a) - before; got != 0 {
		t.Fatalf("refused payments moved money: treasury +%d", got)
	}

	// A payment for another resource is refused.
	other := clientPayment(t, a, w, "http://example.com/wallets/me/balance", nil)
	if got := refusalOf(t, a.do(t, request{path: "/users/me", header: withPayment(auth, other)})); got != x402.ReasonResourceMismatch {
		t.Errorf("payment for another resource: reason %q", got)
	}

	good := clientPayment(t, a, w, pr.Resource.URL, nil)
	r := a.do(t, request{path: "/users/me", header: withPayment(auth, good)})
	if r.Code != 200 {
		t.Fatalf("a standard client's payment: %d %s", r.Code, r.Body)
	}
	var settled x402.SettlementResponse
	if err := x402.DecodeHeader(r.Header().Get("PAYMENT-RESPONSE"), &settled); err != nil || !settled.Success ||
		settled.Payer != w.address() || settled.Transaction == "" {
		t.Fatalf("PAYMENT-RESPONSE: %v %+v", err, settled)
	}
	if ok, err := a.Money.Chain().Status(context.Background(), solana.MustSignatureFromBase58(settled.Transaction)); !ok || err != nil {
		t.Errorf("the settled transaction is not on chain: %v %v", ok, err)
	}
	if got := treasury(t, a) - before; got != 10_000 {
		t.Errorf("treasury: +%d, want +10000", got)
	}
	if got := refusalOf(t, a.do(t, request{path: "/users/me", header: withPayment(auth, good)})); got != x402.ReasonAlreadyUsed {
		t.Errorf("replayed client payment: reason %q, want %q", got, x402.ReasonAlreadyUsed)
	}
	if got := treasury(t, a) - before; got != 10_000 {
		t.Errorf("treasury after the replay: +%d, want +10000", got)
	}
	h := a.do(t, request{path: "/wallets/me/transactions", header: auth})
	if h.Code != 200 || !strings.Contains(h.Body.String(), `"kind":"payment"`) {
		t.Errorf("wallet history should list the payments: %d %s", h.Code, h.Body)
	}
}

func TestServiceCheckMaintenance(t *testing.T) {
	a := newTestApp(t, nil)
	r := a.do(t, request{path: "/service_check_maintenance", header: map[string]string{"X-SDK-Version": "0.0.1"}})
	if m := r.json(t); r.Code != 200 || m["maintenance"] != false || m["retryAfterSeconds"] != float64(0) {
		t.Fatalf("up: %d %s", r.Code, r.Body)
	}
	setFlag(t, a, flags.Maintenance, true)
	r = a.do(t, request{path: "/service_check_maintenance"})
	m := r.json(t)
	fl, _ := m["flags"].(map[string]any)
	if r.Code != 200 || m["maintenance"] != true || m["retryAfterSeconds"] != float64(60) || fl["maintenance-mode"] != true {
		t.Fatalf("in maintenance: %d %s", r.Code, r.Body)
	}
	if !strings.Contains(a.do(t, request{path: "/openapi.json"}).Body.String(), "/service_check_maintenance") {
		t.Error("the OpenAPI document does not list /service_check_maintenance")
	}
}

func TestAbuseOverrides(t *testing.T) {
	for _, bad := range []string{"POST /lobbies", "FETCH /x=1", "GET games=1", "GET /x=0", "GET /x=many"} {
		if _, err := app.LoadConfig(func(k string) string { return map[string]string{"ABUSE_OVERRIDES": bad}[k] }); err == nil ||
			!strings.Contains(err.Error(), "ABUSE_OVERRIDES=") {
			t.Errorf("ABUSE_OVERRIDES=%q: got %v, want an error naming the variable", bad, err)
		}
	}
	if _, err := app.LoadConfig(func(k string) string { return map[string]string{"ABUSE_PRICE_MINOR": "0"}[k] }); err == nil ||
		!strings.Contains(err.Error(), "ABUSE_PRICE_MINOR=") {
		t.Errorf("ABUSE_PRICE_MINOR=0: got %v", err)
	}

	a := abuseApp(t, "100", map[string]string{"ABUSE_OVERRIDES": "GET /users/me=1"})
	_, auth := a.funded(t, 1)
	a.do(t, request{path: "/users/me", header: auth})
	challengeOf(t, a.do(t, request{path: "/users/me", header: auth}))
	if r := a.do(t, request{path: "/wallets/me/balance", header: auth}); r.Code != 200 {
		t.Errorf("an endpoint without override: %d", r.Code)
	}

	cfg, err := app.LoadConfig(func(k string) string {
		return map[string]string{"ABUSE_OVERRIDES": "GET /no/such/route=5", "DATABASE_URL": a.Config.DatabaseURL,
			"DATA_DIR": t.TempDir(), "MASTER_SEED": testMasterSeed}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	if b, err := app.New(context.Background(), cfg, testLogger(t)); err == nil || !strings.Contains(err.Error(), "ABUSE_OVERRIDES") {
		if b != nil {
			b.Close()
		}
		t.Errorf("an override of an unknown endpoint: got %v, want an error naming ABUSE_OVERRIDES", err)
	}
}

func TestAPaymentServesOneRequestUnderConcurrency(t *testing.T) {
	a := abuseApp(t, "1", nil)
	w, auth := a.funded(t, 1_000_000)
	pr := a.overThreshold(t, auth, "/users/me")
	before := treasury(t, a)

	prepared := a.do(t, request{method: http.MethodPost, path: "/payments/prepare", header: auth,
		body: jsonBody(map[string]any{"paymentRequired": pr})}).json(t)
	r := a.do(t, request{method: http.MethodPost, path: "/payments/submit", header: auth,
		body: jsonBody(map[string]string{"intentId": prepared["intentId"].(string),
			"signedTransaction": signPrepared(t, w, prepared["transaction"].(string), nil)})})
	if r.Code != 200 {
		t.Fatalf("submit: %d %s", r.Code, r.Body)
	}
	submitted := r.json(t)["paymentSignature"].(string)
	inline := clientPayment(t, a, w, pr.Resource.URL, nil)

	for name, header := range map[string]string{"prepared": submitted, "client-signed": inline} {
		const n = 8
		codes := make(chan int, n)
		var wg sync.WaitGroup
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				codes <- a.do(t, request{path: "/users/me", header: withPayment(auth, header)}).Code
			}()
		}
		wg.Wait()
		close(codes)
		served := 0
		for c := range codes {
			switch c {
			case 200:
				served++
			case http.StatusPaymentRequired:
			default:
				t.Errorf("%s: unexpected status %d", name, c)
			}
		}
		if served != 1 {
			t.Errorf("%s payment sent %d times at once served %d requests, want 1", name, n, served)
		}
	}
	if got := treasury(t, a) - before; got != 20_000 {
		t.Errorf("treasury: +%d, want +20000 (two payments)", got)
	}
}
