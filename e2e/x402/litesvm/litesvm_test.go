// Package litesvm_test runs the official x402 client against the server
// on LiteSVM, where the real SPL Token, Memo and ComputeBudget programs
// execute the client's own exact transaction. Its own database: the
// ledger here is kept against LiteSVM's vault.
package litesvm_test

import (
	"context"
	"io"
	"net/http"
	"testing"

	"github.com/gagliardetto/solana-go"

	"wager/chain"
	"wager/db/dbtest"
	"wager/domain/flags"
	"wager/domain/money"
	"wager/domain/x402"
	"wager/e2e/apiclient"
	"wager/e2e/localnet"
	"wager/e2e/testserver"
	official "wager/e2e/x402"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

func TestOfficialClientPaysOnRealPrograms(t *testing.T) {
	ctx := context.Background()
	l := localnet.Start(t)
	mintKeys := chain.NewKeys([]byte("x402-litesvm-mint"))
	mint := mintKeys.LocalMint().PublicKey()
	l.CreateMint(t, mint, chain.USDCDecimals, mintKeys.LocalMintAuthority().PublicKey())
	s := testserver.Start(t, map[string]string{"SOLANA_RPC_URL": l.URL, "USDC_MINT": mint.String(), "DEV_FAUCET": "false",
		"MASTER_SEED": "4020402040204020402040204020402040204020402040204020402040204020", "ABUSE_THRESHOLD": "1"})
	l.Airdrop(t, s.App.Keys.FeePayer().PublicKey(), 10_000_000_000)
	if _, err := s.App.Flags.Set(ctx, flags.AbuseControls, true, "x402 litesvm test"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.App.Flags.Set(context.Background(), flags.AbuseControls, false, "x402 litesvm test") })

	payer, err := solana.NewRandomPrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	l.MintTo(t, mint, payer.PublicKey(), 1_000_000)
	price := s.App.X402.Price()
	calls := official.Pay(t, official.Options{URL: s.URL + "/games/available", Count: 3, RPCURL: l.URL, Payer: payer,
		Headers: map[string]string{"X-App-Id": "x402-litesvm", "X-SDK-Version": "1.0.0"}, AllowAsset: mint.String(), MaxAmount: price})
	if len(calls) != 3 || calls[0].Status != 200 {
		t.Fatalf("calls: %+v", calls)
	}
	for _, c := range calls[1:] {
		if p := c.PaymentResponse; c.Status != 200 || p == nil || !p.Success || p.Payer != payer.PublicKey().String() {
			t.Fatalf("call %d: status %d, PAYMENT-RESPONSE %+v, body %s", c.Call, c.Status, p, c.Body)
		}
	}

	// The platform-prepared payment (prepare, sign, submit, retry) runs on
	// the real programs too.
	key, err := solana.NewRandomPrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	user := apiclient.New(s.URL, key)
	if err := user.Login(ctx); err != nil {
		t.Fatal(err)
	}
	l.MintTo(t, mint, key.PublicKey(), 1_000_000)
	auth := map[string]string{"Authorization": "Bearer " + user.Token, "X-App-Id": user.AppID}
	get(t, s.URL+"/users/me", auth)
	status, h := get(t, s.URL+"/users/me", auth)
	var pr x402.PaymentRequired
	if err := x402.DecodeHeader(h.Get("PAYMENT-REQUIRED"), &pr); status != 402 || err != nil {
		t.Fatalf("second call: %d, PAYMENT-REQUIRED %v", status, err)
	}
	var sub x402.Submitted
	if err := user.PrepareSignSubmit(ctx, "/payments/prepare", "/payments/submit", map[string]any{"paymentRequired": pr}, &sub); err != nil {
		t.Fatalf("prepare, sign and submit on LiteSVM: %v", err)
	}
	auth["PAYMENT-SIGNATURE"] = sub.PaymentSignature
	if status, h := get(t, s.URL+"/users/me", auth); status != 200 || h.Get("PAYMENT-RESPONSE") == "" {
		t.Fatalf("retry with the payment: %d", status)
	}
	if status, _ := get(t, s.URL+"/users/me", auth); status != 402 {
		t.Fatalf("replay: %d, want 402", status)
	}

	rpc := chain.NewClient(l.URL, nil)
	if got, err := rpc.TokenBalance(ctx, s.App.Money.DepositAddress(), mint); err != nil || int64(got) != 3*price {
		t.Errorf("vault on LiteSVM: %d (%v), want %d", got, err, 3*price)
	}
	if got, err := money.BalanceOf(ctx, s.App.DB, money.Treasury); err != nil || got != 3*price {
		t.Errorf("treasury: %d (%v), want %d", got, err, 3*price)
	}
	r, err := s.App.Money.Reconcile(ctx)
	if err != nil || !r.Balanced {
		t.Errorf("books: %v %+v", err, r)
	}
}

func get(t *testing.T, url string, headers map[string]string) (int, http.Header) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-SDK-Version", "1.0.0")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, resp.Header
}
