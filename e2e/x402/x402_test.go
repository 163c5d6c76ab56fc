package x402_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/gagliardetto/solana-go"

	"wager/db/dbtest"
	"wager/domain/flags"
	"wager/domain/money"
	"wager/domain/x402"
	"wager/e2e/testserver"
	official "wager/e2e/x402"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

// startServer starts the whole server with the given threshold and the
// abuse-controls flag on.
func startServer(t testing.TB, threshold string) *testserver.Server {
	t.Helper()
	s := testserver.Start(t, map[string]string{"ABUSE_THRESHOLD": threshold})
	if _, err := s.App.Flags.Set(context.Background(), flags.AbuseControls, true, "x402 test"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.App.Flags.Set(context.Background(), flags.AbuseControls, false, "x402 test") })
	return s
}

func post(t testing.TB, url string, body any) {
	t.Helper()
	b, _ := json.Marshal(body)
	resp, err := http.Post(url, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		out, _ := io.ReadAll(resp.Body)
		t.Fatalf("POST %s: %d %s", url, resp.StatusCode, out)
	}
}

// TestOfficialClientPays runs the official x402 V2 TypeScript client
// (@x402/fetch + @x402/svm's exact scheme, unchanged) against the whole
// server: past the threshold it gets a 402, builds and signs its own exact
// transaction against the embedded chain's JSON-RPC (/dev/solana-rpc), and
// the server settles it inline, credits the treasury and serves the
// request.
func TestOfficialClientPays(t *testing.T) {
	s := startServer(t, "1")
	ctx := context.Background()
	payer, err := solana.NewRandomPrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	post(t, s.URL+"/dev/faucet", map[string]any{"address": payer.PublicKey().String(), "amountMinor": 1_000_000})
	before, err := money.BalanceOf(ctx, s.App.DB, money.Treasury)
	if err != nil {
		t.Fatal(err)
	}
	price := s.App.X402.Price()

	// Three calls with a threshold of 1: the first is free, the next two
	// are each answered 402, paid and served.
	calls := official.Pay(t, official.Options{URL: s.URL + "/games/available", Count: 3, RPCURL: s.URL + "/dev/solana-rpc",
		Payer: payer, Headers: map[string]string{"X-App-Id": "x402-interop", "X-SDK-Version": "1.0.0"},
		AllowAsset: s.App.Money.Mint().String(), MaxAmount: price})
	if len(calls) != 3 {
		t.Fatalf("the client made %d calls, want 3: %+v", len(calls), calls)
	}
	if c := calls[0]; c.Status != 200 || c.PaymentResponse != nil {
		t.Errorf("call 1 (under the threshold): status %d, payment %+v; want 200 without payment", c.Status, c.PaymentResponse)
	}
	seen := map[string]bool{}
	for _, c := range calls[1:] {
		p := c.PaymentResponse
		if c.Status != 200 || p == nil || !p.Success || p.Payer != payer.PublicKey().String() || p.Network != x402.NetworkDevnet {
			t.Fatalf("call %d: status %d, PAYMENT-RESPONSE %+v, body %s; want 200 paid by %s", c.Call, c.Status, p, c.Body, payer.PublicKey())
		}
		if seen[p.Transaction] {
			t.Errorf("call %d reused the payment %s", c.Call, p.Transaction)
		}
		seen[p.Transaction] = true
		// The ledger credited the treasury under the transaction's signature.
		var entry int64
		err := s.App.DB.QueryRowContext(ctx, `SELECT e.amount FROM ledger_entries e
			JOIN ledger_transactions x ON x.id = e.transaction_id
			WHERE x.reference = ? AND x.kind = 'payment' AND e.account_id = ?`, p.Transaction, money.Treasury).Scan(&entry)
		if err != nil || entry != price {
			t.Errorf("ledger entry of %s to the treasury: %d (%v), want %d", p.Transaction, entry, err, price)
		}
		// The client built its own version 0 transaction; the embedded
		// chain executed it as sent, with the fee payer's signature added.
		var raw []byte
		if err := s.App.DB.QueryRowContext(ctx, "SELECT raw FROM localchain.transactions WHERE signature = ?", p.Transaction).Scan(&raw); err != nil {
			t.Fatal(err)
		}
		if tx, err := solana.TransactionFromBytes(raw); err != nil || !tx.Message.IsVersioned() || len(tx.Message.Instructions) != 4 {
			t.Errorf("settled transaction %s: %v; want the client's v0 exact layout (4 instructions)", p.Transaction, err)
		}
	}
	after, err := money.BalanceOf(ctx, s.App.DB, money.Treasury)
	if err != nil {
		t.Fatal(err)
	}
	if after-before != 2*price {
		t.Errorf("treasury: +%d, want +%d", after-before, 2*price)
	}
	held, err := s.App.Money.Chain().TokenBalance(ctx, payer.PublicKey(), s.App.Money.Mint())
	if err != nil || int64(held) != 1_000_000-2*price {
		t.Errorf("payer's USDC on chain: %d (%v), want %d", held, err, 1_000_000-2*price)
	}
	r, err := s.App.Money.Reconcile(ctx)
	if err != nil || !r.Balanced {
		t.Errorf("books after the payments: %v %+v", err, r)
	}
}

// BenchmarkAbuseControl measures what abuse control adds to a request
// over HTTP: the same public endpoint with the flag off (no query) and on
// (one counter statement per request, under the threshold).
func BenchmarkAbuseControl(b *testing.B) {
	s := testserver.Start(b, map[string]string{"ABUSE_THRESHOLD": "1000000000"})
	ctx := context.Background()
	get := func(b *testing.B) {
		req, _ := http.NewRequest(http.MethodGet, s.URL+"/games/available", nil)
		req.Header.Set("X-SDK-Version", "1.0.0")
		req.Header.Set("X-App-Id", "bench")
		for b.Loop() {
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				b.Fatalf("status %d", resp.StatusCode)
			}
		}
	}
	b.Run("off", get)
	if _, err := s.App.Flags.Set(ctx, flags.AbuseControls, true, "bench"); err != nil {
		b.Fatal(err)
	}
	defer s.App.Flags.Set(ctx, flags.AbuseControls, false, "bench")
	b.Run("on", get)
}
