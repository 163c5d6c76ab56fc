package localchain_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gagliardetto/solana-go"
	"github.com/uptrace/bun"

	"wager/chain"
	"wager/chain/localchain"
	"wager/db/dbtest"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

// clock is a test clock shared by the chain.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

type fixture struct {
	chain   *localchain.Chain
	client  *chain.Client
	clock   *clock
	mint    solana.PublicKey
	payer   solana.PrivateKey
	alice   solana.PrivateKey
	bob     solana.PrivateKey
	context context.Context
	db      *bun.DB
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	keys := chain.NewKeys([]byte(t.Name()))
	clk := &clock{t: time.Now()}
	db := dbtest.DB(t)
	c, err := localchain.New(ctx, db, clk.now, keys.LocalMint().PublicKey(), keys.LocalMintAuthority().PublicKey())
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{chain: c, client: chain.NewClient("http://localchain", localchain.Transport{Chain: c}), clock: clk,
		mint: keys.LocalMint().PublicKey(), payer: keys.FeePayer(), alice: keys.Derive("alice"), bob: keys.Derive("bob"), context: ctx, db: db}
	if _, err := c.Airdrop(ctx, f.payer.PublicKey(), 1_000_000_000); err != nil {
		t.Fatal(err)
	}
	if _, err := c.MintTo(ctx, f.alice.PublicKey(), 5_000_000); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fixture) transfer(t *testing.T, amount uint64, signers ...solana.PrivateKey) *solana.Transaction {
	t.Helper()
	bh, err := f.client.Blockhash(f.context)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := chain.BuildTransfer(chain.Transfer{FeePayer: f.payer.PublicKey(), From: f.alice.PublicKey(),
		To: f.bob.PublicKey(), Mint: f.mint, Amount: amount, Memo: "test", Blockhash: bh.Hash})
	if err != nil {
		t.Fatal(err)
	}
	if err := chain.SignWith(tx, signers...); err != nil {
		t.Fatal(err)
	}
	return tx
}

func (f *fixture) balances(t *testing.T) (alice, bob, payer uint64) {
	t.Helper()
	var err error
	if alice, err = f.client.TokenBalance(f.context, f.alice.PublicKey(), f.mint); err != nil {
		t.Fatal(err)
	}
	if bob, err = f.client.TokenBalance(f.context, f.bob.PublicKey(), f.mint); err != nil {
		t.Fatal(err)
	}
	if payer, err = f.client.Lamports(f.context, f.payer.PublicKey()); err != nil {
		t.Fatal(err)
	}
	return
}

func wantRejected(t *testing.T, err error, reason string) {
	t.Helper()
	var rejected *chain.RejectedError
	if !errors.As(err, &rejected) || !strings.Contains(rejected.Reason, reason) {
		t.Fatalf("got %v, want a rejection mentioning %q", err, reason)
	}
}

func TestTransferThroughSolanaGoClient(t *testing.T) {
	f := newFixture(t)
	tx := f.transfer(t, 1_500_000, f.payer, f.alice)
	sig, err := f.client.SendAndConfirm(f.context, tx, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	alice, bob, payer := f.balances(t)
	// 2 signatures, 200k units at 1000 micro-lamports, and the rent of Bob's new token account.
	wantFee := uint64(2*5000 + 200)
	if alice != 3_500_000 || bob != 1_500_000 || payer != 1_000_000_000-wantFee-localchain.TokenAccountRent {
		t.Fatalf("after transfer: alice %d bob %d payer %d; want 3500000 1500000 %d",
			alice, bob, payer, 1_000_000_000-wantFee-localchain.TokenAccountRent)
	}

	// The chain refuses the replay ("already been processed"); the client
	// reads that as sent, and nothing moves again.
	if again, err := f.client.Send(f.context, tx); err != nil || again != sig {
		t.Fatalf("sending a processed transaction again: %s %v, want its signature %s", again, err, sig)
	}
	if a2, b2, p2 := f.balances(t); a2 != alice || b2 != bob || p2 != payer {
		t.Fatalf("the replay moved money: alice %d bob %d payer %d", a2, b2, p2)
	}
	if _, err := f.client.SendAndConfirm(f.context, tx, time.Second); err != nil {
		t.Errorf("re-submitting a landed transaction should confirm it, got %v", err)
	}

	// The chain keeps its state: a new Chain over the same database sees it.
	again, err := localchain.New(f.context, dbtest.DB(t), f.clock.now, f.mint, solana.PublicKey{})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, ok, _ := again.SignatureStatus(f.context, sig.String()); !ok {
		t.Error("the transaction is gone after reopening the chain")
	}
}

func TestRefusedTransactionsChangeNothing(t *testing.T) {
	f := newFixture(t)
	// Fund Bob's account first so rent does not blur the comparisons.
	if _, err := f.client.SendAndConfirm(f.context, f.transfer(t, 1, f.payer, f.alice), 5*time.Second); err != nil {
		t.Fatal(err)
	}
	a0, b0, p0 := f.balances(t)

	t.Run("tampered amount after signing", func(t *testing.T) {
		tx := f.transfer(t, 1000, f.payer, f.alice)
		for i, ix := range tx.Message.Instructions {
			if tx.Message.AccountKeys[ix.ProgramIDIndex].Equals(chain.TokenProgramID) {
				tx.Message.Instructions[i].Data[1] ^= 0xff
			}
		}
		_, err := f.client.Send(f.context, tx)
		wantRejected(t, err, "signature verification")
	})
	t.Run("missing owner signature", func(t *testing.T) {
		tx := f.transfer(t, 1000, f.payer)
		_, err := f.client.Send(f.context, tx)
		wantRejected(t, err, "signature verification")
	})
	t.Run("signed by the wrong owner", func(t *testing.T) {
		tx := f.transfer(t, 1000, f.payer, f.alice)
		mallory := chain.NewKeys([]byte("m")).Derive("mallory")
		sig, _ := mallory.Sign(mustMessage(t, tx))
		for i, s := range tx.Message.Signers() {
			if s.Equals(f.alice.PublicKey()) {
				tx.Signatures[i] = sig
			}
		}
		_, err := f.client.Send(f.context, tx)
		wantRejected(t, err, "signature verification")
	})
	t.Run("more than the balance", func(t *testing.T) {
		_, err := f.client.Send(f.context, f.transfer(t, 10_000_000, f.payer, f.alice))
		wantRejected(t, err, "0x1")
	})
	t.Run("expired blockhash", func(t *testing.T) {
		tx := f.transfer(t, 1000, f.payer, f.alice)
		f.clock.advance(localchain.BlockhashLifetime + time.Second)
		_, err := f.client.Send(f.context, tx)
		wantRejected(t, err, "Blockhash not found")
	})
	t.Run("unknown blockhash", func(t *testing.T) {
		tx := f.transfer(t, 1000)
		tx.Message.RecentBlockhash = solana.Hash{1, 2, 3}
		tx.Signatures = nil
		if err := chain.SignWith(tx, f.payer, f.alice); err != nil {
			t.Fatal(err)
		}
		_, err := f.client.Send(f.context, tx)
		wantRejected(t, err, "Blockhash not found")
	})
	a1, b1, p1 := f.balances(t)
	if a0 != a1 || b0 != b1 || p0 != p1 {
		t.Fatalf("refused transactions moved money: before %d/%d/%d after %d/%d/%d", a0, b0, p0, a1, b1, p1)
	}
}

func mustMessage(t *testing.T, tx *solana.Transaction) []byte {
	b, err := chain.MessageBytes(tx)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestAccountInfoShapes(t *testing.T) {
	f := newFixture(t)
	info, err := f.client.RPC.GetAccountInfo(f.context, f.mint)
	if err != nil {
		t.Fatal(err)
	}
	if data := info.Value.Data.GetBinary(); len(data) != 82 || data[44] != 6 || !info.Value.Owner.Equals(chain.TokenProgramID) {
		t.Errorf("mint account: %d bytes, decimals %d, owner %s", len(data), data[44], info.Value.Owner)
	}
	bal, err := f.client.RPC.GetTokenAccountBalance(f.context, chain.ATA(f.alice.PublicKey(), f.mint), "")
	if err != nil || bal.Value.Amount != "5000000" || bal.Value.Decimals != 6 {
		t.Errorf("token balance: %+v %v", bal, err)
	}
	rent, err := f.client.RPC.GetMinimumBalanceForRentExemption(f.context, 165, "")
	if err != nil || rent != localchain.TokenAccountRent {
		t.Errorf("rent for 165 bytes: got %d %v, want %d", rent, err, localchain.TokenAccountRent)
	}
}

// TestWalletLeftBelowRentMinimum: a sender that pays the rent of the
// recipient's new token account may end with nothing or with at least
// SystemAccountRent, not in between (e2e/onchain holds the full parity
// test against LiteSVM).
func TestWalletLeftBelowRentMinimum(t *testing.T) {
	f := newFixture(t)
	if localchain.SystemAccountRent != localchain.RentExempt(0) {
		t.Fatalf("SystemAccountRent %d, RentExempt(0) %d", localchain.SystemAccountRent, localchain.RentExempt(0))
	}
	send := func(funded uint64) error {
		t.Helper()
		if _, err := f.chain.Airdrop(f.context, f.alice.PublicKey(), funded); err != nil {
			t.Fatal(err)
		}
		bh, err := f.client.Blockhash(f.context)
		if err != nil {
			t.Fatal(err)
		}
		to := chain.NewKeys([]byte(t.Name())).Derive(fmt.Sprint(funded)).PublicKey()
		tx, err := chain.BuildTransfer(chain.Transfer{FeePayer: f.payer.PublicKey(), Funder: f.alice.PublicKey(),
			From: f.alice.PublicKey(), To: to, Mint: f.mint, Amount: 1, Blockhash: bh.Hash})
		if err != nil {
			t.Fatal(err)
		}
		if err := chain.SignWith(tx, f.payer, f.alice); err != nil {
			t.Fatal(err)
		}
		_, err = f.client.SendAndConfirm(f.context, tx, 5*time.Second)
		return err
	}
	_, _, p0 := f.balances(t)
	wantRejected(t, send(2_500_000), "Transaction results in an account (1) with insufficient funds for rent")
	if lamports, _ := f.client.Lamports(f.context, f.alice.PublicKey()); lamports != 2_500_000 {
		t.Fatalf("the refused transaction left the sender %d lamports, want 2500000", lamports)
	}
	if _, _, p1 := f.balances(t); p1 != p0 {
		t.Fatalf("the refused transaction charged the fee payer %d", p0-p1)
	}
	// Topped up to rent + minimum: the sender keeps exactly the minimum.
	if err := send(localchain.TokenAccountRent + localchain.SystemAccountRent - 2_500_000); err != nil {
		t.Fatal(err)
	}
	if lamports, _ := f.client.Lamports(f.context, f.alice.PublicKey()); lamports != localchain.SystemAccountRent {
		t.Fatalf("the sender keeps %d lamports, want %d", lamports, localchain.SystemAccountRent)
	}
}

// losingSends is a transport that loses the first n sendTransaction calls
// on their way to a leader: it answers each with the transaction's
// signature, as a node does, and never forwards it.
type losingSends struct {
	next localchain.Transport
	mu   sync.Mutex
	n    int
	sent int // calls that reached the chain
}

func (l *losingSends) Do(req *http.Request) (*http.Response, error) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		return nil, err
	}
	var call struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params []json.RawMessage
	}
	if err := json.Unmarshal(body, &call); err != nil {
		return nil, err
	}
	if call.Method == "sendTransaction" {
		l.mu.Lock()
		lose := l.n > 0
		if lose {
			l.n--
		} else {
			l.sent++
		}
		l.mu.Unlock()
		if lose {
			var wire string
			if err := json.Unmarshal(call.Params[0], &wire); err != nil {
				return nil, err
			}
			raw, err := base64.StdEncoding.DecodeString(wire)
			if err != nil {
				return nil, err
			}
			tx, err := solana.TransactionFromBytes(raw)
			if err != nil {
				return nil, err
			}
			answer := fmt.Sprintf(`{"jsonrpc":"2.0","result":%q,"id":%s}`, tx.Signatures[0].String(), call.ID)
			return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}},
				Body: io.NopCloser(strings.NewReader(answer)), Request: req}, nil
		}
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	return l.next.Do(req)
}

func (l *losingSends) CloseIdleConnections() {}

// A transaction lost on its way to a leader is sent again, the same bytes,
// until the chain has it: it lands once.
func TestALostTransactionIsSentAgainUntilItLands(t *testing.T) {
	f := newFixture(t)
	lossy := &losingSends{next: localchain.Transport{Chain: f.chain}, n: 2}
	client := chain.NewClient("http://localchain", lossy)
	client.ResendEvery = 10 * time.Millisecond
	tx := f.transfer(t, 1_000_000, f.payer, f.alice)
	if _, err := client.SendAndConfirm(f.context, tx, 10*time.Second); err != nil {
		t.Fatalf("a transaction lost twice: %v", err)
	}
	if lossy.n != 0 || lossy.sent != 1 {
		t.Errorf("sends lost left %d, reached the chain %d; want both lost, then one that landed", lossy.n, lossy.sent)
	}
	if got, err := f.client.TokenBalance(f.context, f.bob.PublicKey(), f.mint); err != nil || got != 1_000_000 {
		t.Errorf("the recipient: %d %v, want the transfer once", got, err)
	}
}
