package rpcfaults_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/rpc"

	"wager/chain"
	"wager/chain/localchain"
	"wager/chain/rpcfaults"
	"wager/db/dbtest"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

// embedded is the embedded chain served over HTTP, as /dev/solana-rpc
// serves it, with a test clock.
type embedded struct {
	url               string
	clock             *clock
	mint              solana.PublicKey
	payer, alice, bob solana.PrivateKey
	direct            *chain.Client
}

func newEmbedded(t *testing.T) *embedded {
	t.Helper()
	ctx := context.Background()
	keys := chain.NewKeys([]byte(t.Name()))
	clk := &clock{t: time.Now()}
	c, err := localchain.New(ctx, dbtest.DB(t), clk.now, keys.LocalMint().PublicKey(), keys.LocalMintAuthority().PublicKey())
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(c)
	t.Cleanup(srv.Close)
	e := &embedded{url: srv.URL, clock: clk, mint: c.Mint, payer: keys.FeePayer(), alice: keys.Derive("alice"),
		bob: keys.Derive("bob"), direct: chain.NewClient(srv.URL, nil)}
	if _, err := c.Airdrop(ctx, e.payer.PublicKey(), 1_000_000_000); err != nil {
		t.Fatal(err)
	}
	if _, err := c.MintTo(ctx, e.alice.PublicKey(), 5_000_000); err != nil {
		t.Fatal(err)
	}
	return e
}

// proxied is a proxy in front of the chain, its URL and a client through it.
type proxied struct {
	url    string
	client *chain.Client
	proxy  *rpcfaults.Proxy
}

// through returns a proxy in front of the chain with f.
func (e *embedded) through(t *testing.T, f rpcfaults.Faults) proxied {
	t.Helper()
	p, err := rpcfaults.New(e.url, f, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	p.Now = e.clock.now
	p.Sleep = func(ctx context.Context, _ time.Duration) error { return ctx.Err() }
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	return proxied{url: srv.URL, client: chain.NewClient(srv.URL, nil), proxy: p}
}

// transfer returns Alice's transfer of amount to Bob, signed, on a
// blockhash read through client, and the last block height it can land at.
func (e *embedded) transfer(t *testing.T, client *chain.Client, amount uint64) (*solana.Transaction, uint64) {
	t.Helper()
	bh, err := client.Blockhash(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	tx, err := chain.BuildTransfer(chain.Transfer{FeePayer: e.payer.PublicKey(), From: e.alice.PublicKey(),
		To: e.bob.PublicKey(), Mint: e.mint, Amount: amount, Blockhash: bh.Hash})
	if err != nil {
		t.Fatal(err)
	}
	if err := chain.SignWith(tx, e.payer, e.alice); err != nil {
		t.Fatal(err)
	}
	return tx, bh.LastValid
}

func (e *embedded) bobHas(t *testing.T) uint64 {
	t.Helper()
	b, err := e.direct.TokenBalance(context.Background(), e.bob.PublicKey(), e.mint)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestDroppedSendNeverLandsOnTheEmbeddedChain(t *testing.T) {
	ctx := context.Background()
	e := newEmbedded(t)
	dropping := e.through(t, rpcfaults.Faults{DropSend: 1})
	faulty, clean := dropping.client, e.through(t, rpcfaults.Faults{}).client

	// Dropped, then sent again before its blockhash expires: it lands once.
	tx, lastValid := e.transfer(t, faulty, 1_000)
	sig, err := faulty.Send(ctx, tx)
	if err != nil || sig != tx.Signatures[0] {
		t.Fatalf("send through the proxy: %s %v, want %s", sig, err, tx.Signatures[0])
	}
	if outcome, _, err := e.direct.Observe(ctx, sig, lastValid); outcome != chain.Pending || err != nil {
		t.Fatalf("the chain says %v %v of a dropped transaction, want pending", outcome, err)
	}
	if got := e.bobHas(t); got != 0 {
		t.Fatalf("a dropped transfer moved %d", got)
	}
	for range 2 {
		if _, err := clean.SendAndConfirm(ctx, tx, 5*time.Second); err != nil {
			t.Fatalf("sending it again: %v", err)
		}
	}
	if got := e.bobHas(t); got != 1_000 {
		t.Fatalf("Bob has %d after the transfer was sent again twice, want 1000", got)
	}

	// Dropped and left: it expires unlanded, and cannot land later.
	tx, lastValid = e.transfer(t, faulty, 2_000)
	if _, err := faulty.Send(ctx, tx); err != nil {
		t.Fatal(err)
	}
	e.clock.advance(localchain.BlockhashLifetime + time.Second)
	if outcome, _, err := e.direct.Observe(ctx, tx.Signatures[0], lastValid); outcome != chain.Expired || err != nil {
		t.Fatalf("the chain says %v %v, want expired", outcome, err)
	}
	var rejected *chain.RejectedError
	if _, err := clean.Send(ctx, tx); !errors.As(err, &rejected) {
		t.Fatalf("sending the expired transaction: %v, want refused", err)
	}
	if got := e.bobHas(t); got != 1_000 {
		t.Fatalf("Bob has %d, want 1000", got)
	}
	if c := dropping.proxy.Stats().Methods["sendTransaction"]; c.Dropped != 2 || c.Forwarded != 0 {
		t.Errorf("stats %+v", c)
	}
}

func TestLostAnswerLandsOnTheEmbeddedChain(t *testing.T) {
	ctx := context.Background()
	e := newEmbedded(t)
	lossy := e.through(t, rpcfaults.Faults{LoseAnswer: 1})
	tx, _ := e.transfer(t, e.direct, 5_000)
	short, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	var rejected *chain.RejectedError
	if _, err := lossy.client.Send(short, tx); err == nil || errors.As(err, &rejected) {
		t.Fatalf("send with its answer lost: %v, want an unknown outcome", err)
	}
	// The proxy may still be forwarding it.
	if err := e.direct.Confirm(ctx, tx.Signatures[0], 5*time.Second); err != nil {
		t.Fatalf("the chain: %v, want landed", err)
	}
	if got := e.bobHas(t); got != 5_000 {
		t.Fatalf("Bob has %d, want 5000", got)
	}
}

func TestLateStatusOnTheEmbeddedChain(t *testing.T) {
	ctx := context.Background()
	e := newEmbedded(t)
	faulty := e.through(t, rpcfaults.Faults{HideStatus: 1, HideFor: 5 * time.Second}).client
	tx, _ := e.transfer(t, faulty, 3_000)
	sig, err := faulty.Send(ctx, tx)
	if err != nil {
		t.Fatal(err)
	}
	if landed, err := e.direct.Status(ctx, sig); !landed || err != nil {
		t.Fatalf("the chain: %v %v, want landed", landed, err)
	}
	if landed, err := faulty.Status(ctx, sig); landed || err != nil {
		t.Fatalf("through the proxy at once: %v %v, want not seen", landed, err)
	}
	e.clock.advance(5 * time.Second)
	if landed, err := faulty.Status(ctx, sig); !landed || err != nil {
		t.Fatalf("through the proxy after HideFor: %v %v, want landed", landed, err)
	}
}

// TestEmbeddedChainThroughTheProxy: at rate 0 the proxy answers the
// chain's own bytes, and solana-go reads every method the chain serves
// through it, also with statuses never finalized.
func TestEmbeddedChainThroughTheProxy(t *testing.T) {
	ctx := context.Background()
	e := newEmbedded(t)
	clean := e.through(t, rpcfaults.Faults{})
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"getHealth"}`,
		`{"jsonrpc":"2.0","id":2,"method":"getVersion"}`,
		`{"jsonrpc":"2.0","id":3,"method":"getMinimumBalanceForRentExemption","params":[165]}`,
		`{"jsonrpc":"2.0","id":4,"method":"getBalance","params":["` + e.payer.PublicKey().String() + `"]}`,
		`{"jsonrpc":"2.0","id":5,"method":"getAccountInfo","params":["` + e.mint.String() + `",{"encoding":"base64"}]}`,
		`{"jsonrpc":"2.0","id":6,"method":"getSignatureStatuses","params":[["` + solana.Signature{1}.String() + `"]]}`,
		`{"jsonrpc":"2.0","id":7,"method":"noSuchMethod"}`,
		`[{"jsonrpc":"2.0","id":8,"method":"getHealth"},{"jsonrpc":"2.0","id":9,"method":"getSlot"}]`,
	} {
		wantCode, _, want := post(t, e.url, body)
		code, _, got := post(t, clean.url, body)
		if code != wantCode || got != want {
			t.Errorf("%s\nthrough the proxy: %d %s\ndirectly:          %d %s", body, code, got, wantCode, want)
		}
	}

	unfinal := e.through(t, rpcfaults.Faults{NeverFinalize: 1})
	c := unfinal.client.RPC
	tx, _ := e.transfer(t, unfinal.client, 4_000)
	sig, err := unfinal.client.SendAndConfirm(ctx, tx, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	st, err := c.GetSignatureStatuses(ctx, true, sig)
	if err != nil || len(st.Value) != 1 || st.Value[0] == nil || st.Value[0].ConfirmationStatus != rpc.ConfirmationStatusConfirmed {
		t.Fatalf("status through the proxy: %+v %v, want confirmed", st, err)
	}
	if _, err := c.GetHealth(ctx); err != nil {
		t.Error(err)
	}
	if _, err := c.GetVersion(ctx); err != nil {
		t.Error(err)
	}
	if v, err := c.IsBlockhashValid(ctx, tx.Message.RecentBlockhash, rpc.CommitmentConfirmed); err != nil || !v.Value {
		t.Errorf("isBlockhashValid: %+v %v", v, err)
	}
	if b, err := c.GetBalance(ctx, e.payer.PublicKey(), rpc.CommitmentConfirmed); err != nil || b.Value == 0 {
		t.Errorf("getBalance: %+v %v", b, err)
	}
	if a, err := c.GetAccountInfo(ctx, e.mint); err != nil || len(a.Value.Data.GetBinary()) != 82 {
		t.Errorf("getAccountInfo: %+v %v", a, err)
	}
	if b, err := c.GetTokenAccountBalance(ctx, chain.ATA(e.bob.PublicKey(), e.mint), rpc.CommitmentConfirmed); err != nil || b.Value.Amount != "4000" {
		t.Errorf("getTokenAccountBalance: %+v %v", b, err)
	}
	if r, err := c.GetMinimumBalanceForRentExemption(ctx, 165, ""); err != nil || r != localchain.TokenAccountRent {
		t.Errorf("getMinimumBalanceForRentExemption: %d %v", r, err)
	}
	if s, err := c.RequestAirdrop(ctx, e.bob.PublicKey(), 1_000_000, ""); err != nil || s.IsZero() {
		t.Errorf("requestAirdrop: %s %v", s, err)
	}
}
