package wager_test

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/programs/system"
	"github.com/gagliardetto/solana-go/programs/token"

	wager "wager.example.com/sdk"
	"wager.example.com/sdk/api"
	"wager/chain"
)

// tamperer is a server that answers like s but rewrites the transaction of
// every prepare answer with rewrite (none when nil), and, with payTo set,
// names payTo instead of the platform as the payee of its 402 challenges
// (and gives the real server the challenge it sent, so that it prepares
// the payment). It counts the signed transactions it is sent.
type tamperer struct {
	*httptest.Server
	rewrite rewriteFunc
	payTo   string
	submits atomic.Int32
}

func newTamperer(t *testing.T, s *server, tm *tamperer) *tamperer {
	t.Helper()
	target, err := url.Parse(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	vault := s.Money.DepositAddress().String()
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			path := pr.In.URL.Path
			if strings.HasSuffix(path, "/submit") || strings.HasSuffix(path, "/broadcast") {
				tm.submits.Add(1)
			}
			if tm.payTo != "" && path == "/payments/prepare" {
				body, _ := io.ReadAll(pr.Out.Body)
				body = bytes.ReplaceAll(body, []byte(tm.payTo), []byte(vault))
				pr.Out.Body, pr.Out.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
				pr.Out.Header.Set("Content-Length", strconv.Itoa(len(body)))
			}
		},
		ModifyResponse: func(resp *http.Response) error {
			path := resp.Request.URL.Path
			switch {
			case resp.StatusCode == http.StatusPaymentRequired && tm.payTo != "":
				if h := resp.Header.Get("PAYMENT-REQUIRED"); h != "" {
					raw, err := base64.StdEncoding.DecodeString(h)
					if err != nil {
						return err
					}
					resp.Header.Set("PAYMENT-REQUIRED", base64.StdEncoding.EncodeToString(bytes.ReplaceAll(raw, []byte(vault), []byte(tm.payTo))))
				}
				return editBody(resp, func(body []byte) []byte { return bytes.ReplaceAll(body, []byte(vault), []byte(tm.payTo)) })
			case resp.StatusCode == http.StatusOK && tm.rewrite != nil && strings.HasSuffix(path, "/prepare"):
				return editBody(resp, func(body []byte) []byte {
					var answer map[string]any
					if err := json.Unmarshal(body, &answer); err != nil {
						t.Errorf("a prepare answer that is not JSON: %s", body)
						return body
					}
					honest, err := solana.TransactionFromBase64(answer["transaction"].(string))
					if err != nil {
						t.Errorf("the prepared transaction: %v", err)
						return body
					}
					wire, err := tm.rewrite(t, honest).MarshalBinary()
					if err != nil {
						t.Errorf("encode the rewritten transaction: %v", err)
					}
					answer["transaction"] = base64.StdEncoding.EncodeToString(wire)
					out, _ := json.Marshal(answer)
					return out
				})
			}
			return nil
		},
	}
	tm.Server = httptest.NewServer(proxy)
	t.Cleanup(tm.Close)
	return tm
}

// editBody replaces resp's body by edit's result.
func editBody(resp *http.Response, edit func([]byte) []byte) error {
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return err
	}
	body = edit(body)
	resp.Body, resp.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
	return nil
}

// parts are the pieces of an honest prepared transaction a tampering
// server reuses.
type parts struct {
	ixs                    []solana.Instruction
	feePayer               solana.PublicKey
	source, mint, wallet   solana.PublicKey
	amount                 uint64
	blockhash              solana.Hash
	transferAt, creationAt int // indexes in ixs; -1 when absent
}

func partsOf(t *testing.T, tx *solana.Transaction) parts {
	t.Helper()
	p := parts{feePayer: tx.Message.AccountKeys[0], blockhash: tx.Message.RecentBlockhash, transferAt: -1, creationAt: -1}
	for i, ci := range tx.Message.Instructions {
		program, err := tx.Message.Program(ci.ProgramIDIndex)
		if err != nil {
			t.Fatal(err)
		}
		metas, err := ci.ResolveInstructionAccounts(&tx.Message)
		if err != nil {
			t.Fatal(err)
		}
		p.ixs = append(p.ixs, solana.NewInstruction(program, metas, ci.Data))
		switch {
		case program.Equals(solana.TokenProgramID) && len(ci.Data) == 10 && ci.Data[0] == 12:
			p.transferAt = i
			p.source, p.mint, p.wallet = metas[0].PublicKey, metas[1].PublicKey, metas[3].PublicKey
			p.amount = binary.LittleEndian.Uint64(ci.Data[1:9])
		case program.Equals(solana.SPLAssociatedTokenAccountProgramID):
			p.creationAt = i
		}
	}
	if p.transferAt < 0 {
		t.Fatalf("the honest transaction has no TransferChecked")
	}
	return p
}

func (p parts) build(t *testing.T, ixs []solana.Instruction, payer solana.PublicKey) *solana.Transaction {
	t.Helper()
	tx, err := solana.NewTransaction(ixs, p.blockhash, solana.TransactionPayer(payer))
	if err != nil {
		t.Fatal(err)
	}
	return tx
}

// rewriteFunc returns the transaction a tampering server answers instead
// of the honest one.
type rewriteFunc func(t *testing.T, honest *solana.Transaction) *solana.Transaction

// tampering is one way of making the wallet sign more than it asked for.
type tampering struct {
	name    string
	rewrite rewriteFunc
}

// attacker is who a tampering server pays.
var attacker = solana.NewWallet().PublicKey()

// tamperings are the ways a server could make the wallet sign more than
// it asked for.
var tamperings = []tampering{
	{"a System transfer of 5 SOL out of the wallet", func(t *testing.T, honest *solana.Transaction) *solana.Transaction {
		p := partsOf(t, honest)
		return p.build(t, append(p.ixs, system.NewTransferInstruction(5_000_000_000, p.wallet, attacker).Build()), p.feePayer)
	}},
	{"the wallet as fee payer of a 4.2 SOL priority fee", func(t *testing.T, honest *solana.Transaction) *solana.Transaction {
		p := partsOf(t, honest)
		// 200000 units at 21000000 lamports per million units: 4.2 SOL.
		ixs := []solana.Instruction{chain.SetComputeUnitLimit(200_000), chain.SetComputeUnitPrice(21_000_000_000_000)}
		for _, ix := range p.ixs {
			if !ix.ProgramID().Equals(solana.ComputeBudget) {
				ixs = append(ixs, ix)
			}
		}
		return p.build(t, ixs, p.wallet)
	}},
	{"a Burn of 1000 USDC from the wallet's token account", func(t *testing.T, honest *solana.Transaction) *solana.Transaction {
		p := partsOf(t, honest)
		return p.build(t, append(p.ixs, token.NewBurnInstruction(1_000_000_000, p.source, p.mint, p.wallet, nil).Build()), p.feePayer)
	}},
	{"a payment to a payee that is not the platform", func(t *testing.T, honest *solana.Transaction) *solana.Transaction {
		p := partsOf(t, honest)
		ixs := append([]solana.Instruction(nil), p.ixs...)
		ixs[p.transferAt] = token.NewTransferCheckedInstruction(p.amount, chain.USDCDecimals, p.source, p.mint,
			chain.ATA(attacker, p.mint), p.wallet, nil).Build()
		if p.creationAt >= 0 {
			ixs[p.creationAt] = chain.CreateATAIdempotent(p.feePayer, attacker, p.mint)
		}
		return p.build(t, ixs, p.feePayer)
	}},
}

// TestTamperedPrepareIsNotSigned runs every flow that signs a prepared
// transaction against a server that rewrites it to take more than asked:
// the client refuses before signing, so nothing is submitted and the
// wallet keeps what it had.
func TestTamperedPrepareIsNotSigned(t *testing.T) {
	s := startServer(t, nil)
	player, _, game := s.match(t, 3)
	flows := []struct {
		name string
		run  func(c *wager.Client) error
	}{
		{"Deposit", func(c *wager.Client) error { _, err := c.Deposit(t.Context(), 100_000); return err }},
		{"Donate", func(c *wager.Client) error { _, err := c.Donate(t.Context(), game, 100_000); return err }},
		{"Bet", func(c *wager.Client) error { _, err := c.Bet(t.Context(), game, player.UserID(), 100_000); return err }},
		{"Tip", func(c *wager.Client) error { _, err := c.Tip(t.Context(), player.UserID(), 100_000, nil); return err }},
	}
	for _, f := range flows {
		for _, tc := range tamperings {
			t.Run(f.name+"/"+tc.name, func(t *testing.T) {
				key := solana.NewWallet().PrivateKey
				honest := clientAt(t, s.URL, key)
				fund(t, honest, 2_000_000)
				tm := newTamperer(t, s, &tamperer{rewrite: tc.rewrite})
				c := clientAt(t, tm.URL, key)
				before := balanceOf(t, honest)

				err := f.run(c)
				t.Log(err)
				if err == nil || !strings.Contains(err.Error(), "nothing was signed") {
					t.Errorf("%s of a tampered transaction: %v, want a refusal before signing", f.name, err)
				}
				if n := tm.submits.Load(); n != 0 {
					t.Errorf("the client sent %d signed transactions, want none", n)
				}
				if after := balanceOf(t, honest); after != before {
					t.Errorf("the wallet went from %+v to %+v, want unchanged", before, after)
				}
			})
		}
		t.Run(f.name+"/honest", func(t *testing.T) {
			key := solana.NewWallet().PrivateKey
			honest := clientAt(t, s.URL, key)
			fund(t, honest, 2_000_000)
			tm := newTamperer(t, s, &tamperer{})
			if err := f.run(clientAt(t, tm.URL, key)); err != nil {
				t.Fatalf("%s through a server that changes nothing: %v", f.name, err)
			}
			if tm.submits.Load() != 1 {
				t.Fatalf("%d submits, want 1", tm.submits.Load())
			}
		})
	}
}

// TestTamperedPaymentIsNotSigned is TestTamperedPrepareIsNotSigned for
// the automatic payment of a 402, and for a challenge that names another
// payee than the platform.
func TestTamperedPaymentIsNotSigned(t *testing.T) {
	s := abuseServer(t)
	price := s.Config.AbusePrice
	// The last one names the attacker in the challenge too.
	cases := append(append([]tampering{}, tamperings...), tampering{"a challenge and a payment to a payee that is not the platform", nil})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			key := solana.NewWallet().PrivateKey
			honest := clientAt(t, s.URL, key)
			fund(t, honest, 1_000_000)
			tm := &tamperer{rewrite: tc.rewrite}
			if tc.rewrite == nil {
				tm.payTo, tm.rewrite = attacker.String(), tamperings[3].rewrite
			}
			newTamperer(t, s, tm)
			c := clientAt(t, tm.URL, key, wager.WithAutoPay(price, 10*price))
			me(t, c) // the one free request of the minute
			before, fees := balanceOf(t, honest), treasury(t, s)

			_, err := c.API.GetUsersMeWithResponse(t.Context(), nil)
			var pe *wager.PaymentRequiredError
			if !errors.As(err, &pe) {
				t.Fatalf("GET /users/me over the threshold: %v, want a *PaymentRequiredError", err)
			}
			if pe.Paid {
				t.Errorf("the payment may have been made: %v", err)
			}
			t.Log(pe.Reason)
			if !strings.Contains(pe.Reason, "nothing was signed") {
				t.Errorf("the reason: %q, want a refusal before signing", pe.Reason)
			}
			if n := tm.submits.Load(); n != 0 {
				t.Errorf("the client sent %d signed payments, want none", n)
			}
			if after := balanceOf(t, honest); after != before {
				t.Errorf("the wallet went from %+v to %+v, want unchanged", before, after)
			}
			if got := treasury(t, s) - fees; got != 0 {
				t.Errorf("the treasury got %d, want nothing", got)
			}
			if got := c.SpentLastHour(); got != 0 {
				t.Errorf("SpentLastHour: %d, want 0", got)
			}
		})
	}
	t.Run("honest", func(t *testing.T) {
		key := solana.NewWallet().PrivateKey
		fund(t, clientAt(t, s.URL, key), 1_000_000)
		tm := newTamperer(t, s, &tamperer{})
		c := clientAt(t, tm.URL, key, wager.WithAutoPay(price, 10*price))
		me(t, c)
		me(t, c) // paid
		if tm.submits.Load() != 1 || c.SpentLastHour() != price {
			t.Fatalf("%d submits, %d spent; want one payment of %d", tm.submits.Load(), c.SpentLastHour(), price)
		}
	})
}

// clientAt returns a client of the server at url with the wallet key.
func clientAt(t *testing.T, url string, key solana.PrivateKey, opts ...wager.Option) *wager.Client {
	t.Helper()
	c, err := wager.New(url, append([]wager.Option{wager.WithWallet(key), wager.WithAppID("sdk-test")}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// balanceOf is what the client's wallet holds on chain.
func balanceOf(t *testing.T, c *wager.Client) api.MoneyOnChain {
	t.Helper()
	r, err := c.API.GetWalletsMeBalanceWithResponse(t.Context(), nil)
	if err != nil {
		t.Fatalf("balance: %v", err)
	}
	if r.JSON200 == nil || r.JSON200.OnChain == nil {
		t.Fatalf("balance without the wallet's on-chain holdings: %d %s", r.StatusCode(), r.Body)
	}
	return *r.JSON200.OnChain
}
