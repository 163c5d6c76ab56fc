// Package onchain_test proves, with the real SPL Token and Associated Token
// Account programs (LiteSVM), that the transactions the server builds are
// accepted exactly as built, that tampered or unsigned ones are not, and
// that the embedded chain agrees with LiteSVM on balances and fees.
package onchain_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/programs/system"
	"github.com/gagliardetto/solana-go/programs/token"

	"wager/chain"
	"wager/chain/localchain"
	"wager/db/dbtest"
	"wager/e2e/apiclient"
	"wager/e2e/localnet"
	"wager/e2e/testserver"
)

// Its own database: the server here keeps its ledger against LiteSVM, not
// against the embedded chain other packages use.
func TestMain(m *testing.M) { dbtest.Main(m) }

const seedLiteSVM = "11aa11aa11aa11aa11aa11aa11aa11aa11aa11aa11aa11aa11aa11aa11aa11aa"

// liteSVMServer starts LiteSVM with a USDC-like mint and the whole server
// configured to use it as its Solana RPC.
func liteSVMServer(t testing.TB) (*localnet.Localnet, *testserver.Server, solana.PublicKey) {
	t.Helper()
	l := localnet.Start(t)
	keys := chain.NewKeys([]byte("litesvm-mint"))
	mint := keys.LocalMint().PublicKey()
	l.CreateMint(t, mint, chain.USDCDecimals, keys.LocalMintAuthority().PublicKey())
	s := testserver.Start(t, map[string]string{"SOLANA_RPC_URL": l.URL, "USDC_MINT": mint.String(),
		"MASTER_SEED": seedLiteSVM, "DEV_FAUCET": "false"})
	l.Airdrop(t, s.App.Keys.FeePayer().PublicKey(), 10_000_000_000)
	return l, s, mint
}

func newUser(t testing.TB, s *testserver.Server) *apiclient.Client {
	t.Helper()
	key, err := solana.NewRandomPrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	c := apiclient.New(s.URL, key)
	if err := c.Login(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Off the embedded chain, money goes in only from players who gave
	// their age.
	if err := c.Do(context.Background(), "POST", "/users/me/age-confirmation", map[string]string{"birthDate": "1990-01-01"}, nil); err != nil {
		t.Fatal(err)
	}
	return c
}

func TestServerBuiltTransactionsOnRealPrograms(t *testing.T) {
	l, s, mint := liteSVMServer(t)
	ctx := context.Background()
	rpc := chain.NewClient(l.URL, nil)
	user := newUser(t, s)
	l.MintTo(t, mint, user.Key.PublicKey(), 10_000_000)
	tokens := func(owner solana.PublicKey) int64 {
		n, err := rpc.TokenBalance(ctx, owner, mint)
		if err != nil {
			t.Fatal(err)
		}
		return int64(n)
	}
	vault := s.App.Keys.Vault().PublicKey()

	// A deposit: user-signed, platform fee payer, vault ATA created idempotently.
	if err := user.Deposit(ctx, 4_000_000); err != nil {
		t.Fatalf("deposit through LiteSVM: %v", err)
	}
	if got := tokens(vault); got != 4_000_000 {
		t.Fatalf("vault after deposit: %d, want 4000000", got)
	}
	// A second deposit: the vault's ATA exists, CreateIdempotent must not fail.
	if err := user.Deposit(ctx, 1_000_000); err != nil {
		t.Fatalf("second deposit: %v", err)
	}
	b, err := user.Balance(ctx)
	if err != nil || b.AvailableMinor != 5_000_000 || b.OnChain == nil || b.OnChain.USDCMinor != 5_000_000 {
		t.Fatalf("balance after deposits: %+v %v", b, err)
	}

	// A plain transfer from the user's wallet into a game escrow's new
	// token account (a donation's shape, except that the sender's wallet,
	// not the platform, pays the new account's rent).
	escrow := s.App.Keys.Escrow("game-1").PublicKey()
	l.Airdrop(t, user.Key.PublicKey(), 10_000_000)
	var receipt struct{ Signature string }
	if err := user.PrepareSignSubmit(ctx, "/wallets/transfer/prepare", "/wallets/transfer/submit",
		map[string]any{"toAddress": escrow.String(), "amountMinor": 250_000}, &receipt); err != nil {
		t.Fatalf("plain transfer into a new account: %v", err)
	}
	if got := tokens(escrow); got != 250_000 {
		t.Fatalf("escrow: %d, want 250000", got)
	}
	if lamports, err := rpc.Lamports(ctx, user.Key.PublicKey()); err != nil || lamports != 10_000_000-chain.TokenAccountRent {
		t.Fatalf("the sender's SOL after opening the escrow's account: %d %v, want %d", lamports, err, 10_000_000-chain.TokenAccountRent)
	}

	sweepClosingEscrow(t, s, rpc, escrow, mint, tokens)

	// A withdrawal: server-signed from the vault to the user's wallet. The
	// escrow's 0.25 USDC stays in the vault: it belongs to no ledger
	// account here, so the vault holds that much more than the ledger says.
	var w struct{ Status, Signature string }
	if err := user.Do(ctx, http.MethodPost, "/wallets/withdraw", map[string]any{"amountMinor": 1_500_000}, &w); err != nil || w.Status != "confirmed" {
		t.Fatalf("withdrawal through LiteSVM: %+v %v", w, err)
	}
	if got := tokens(user.Key.PublicKey()); got != 10_000_000-5_000_000-250_000+1_500_000 {
		t.Fatalf("user's wallet after withdrawal: %d", got)
	}
	rec, err := s.App.Money.Reconcile(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rec.LedgerTotalMinor != 0 || rec.Addresses[0].LedgerMinor != 3_500_000 || rec.Addresses[0].ChainMinor == nil || *rec.Addresses[0].ChainMinor != 3_750_000 {
		t.Fatalf("reconciliation: %+v", rec)
	}

	programsRefuseTampering(t, s, rpc, user, vault)
}

// sweepClosingEscrow sends a payout-shaped transfer of the escrow's 0.25
// USDC: server-signed from the escrow into the vault, the game's last, which
// closes the escrow's token account and gives its rent to the fee payer;
// tokens reads an owner's USDC.
func sweepClosingEscrow(t *testing.T, s *testserver.Server, rpc *chain.Client, escrow, mint solana.PublicKey,
	tokens func(solana.PublicKey) int64) {
	t.Helper()
	ctx := context.Background()
	vault := s.App.Keys.Vault().PublicKey()
	bh, err := rpc.Blockhash(ctx)
	if err != nil {
		t.Fatal(err)
	}
	payerBefore, err := rpc.Lamports(ctx, s.App.Keys.FeePayer().PublicKey())
	if err != nil {
		t.Fatal(err)
	}
	sweep, err := chain.BuildTransfer(chain.Transfer{FeePayer: s.App.Keys.FeePayer().PublicKey(), From: escrow, To: vault,
		Mint: mint, Amount: 250_000, Memo: "sweep game-1", Blockhash: bh.Hash, CloseSource: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := chain.SignWith(sweep, s.App.Keys.FeePayer(), s.App.Keys.Escrow("game-1")); err != nil {
		t.Fatal(err)
	}
	if _, err := rpc.SendAndConfirm(ctx, sweep, 10*time.Second); err != nil {
		t.Fatalf("sweep through LiteSVM: %v", err)
	}
	if tokens(escrow) != 0 || tokens(vault) != 5_250_000 {
		t.Fatalf("after sweep: escrow %d vault %d", tokens(escrow), tokens(vault))
	}
	if open, err := rpc.AccountExists(ctx, chain.ATA(escrow, mint)); err != nil || open {
		t.Fatalf("the escrow's token account after the last sweep: open %v %v, want closed", open, err)
	}
	if payerAfter, err := rpc.Lamports(ctx, s.App.Keys.FeePayer().PublicKey()); err != nil ||
		int64(payerAfter)-int64(payerBefore) < chain.TokenAccountRent-20_000 {
		t.Fatalf("the fee payer after the closing sweep: %d, was %d: want the account's rent back, less the fee (%v)", payerAfter, payerBefore, err)
	}
}

// programsRefuseTampering checks that the real programs refuse what the
// server refuses: a transfer changed after signing, or not signed by its
// owner; the untouched one is accepted.
func programsRefuseTampering(t *testing.T, s *testserver.Server, rpc *chain.Client, user *apiclient.Client, vault solana.PublicKey) {
	t.Helper()
	ctx := context.Background()
	var p apiclient.Prepared
	if err := user.Do(ctx, http.MethodPost, "/wallets/transfer/prepare",
		map[string]any{"toAddress": vault.String(), "amountMinor": 10_000}, &p); err != nil {
		t.Fatal(err)
	}
	signed, err := user.Sign(p)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := solana.TransactionFromBase64(signed)
	if err != nil {
		t.Fatal(err)
	}
	if err := chain.SignWith(tx, s.App.Keys.FeePayer()); err != nil {
		t.Fatal(err)
	}
	unsigned, _ := solana.TransactionFromBase64(p.Transaction)
	if err := chain.SignWith(unsigned, s.App.Keys.FeePayer()); err != nil {
		t.Fatal(err)
	}
	tampered, _ := solana.TransactionFromBase64(signed)
	tampered.Signatures = tx.Signatures
	for i, ix := range tampered.Message.Instructions {
		if tampered.Message.AccountKeys[ix.ProgramIDIndex].Equals(chain.TokenProgramID) {
			tampered.Message.Instructions[i].Data[1] = 0xff // amount changed after signing
		}
	}
	for name, bad := range map[string]*solana.Transaction{"tampered": tampered, "unsigned by the owner": unsigned} {
		_, err := rpc.Send(ctx, bad)
		var rejected *chain.RejectedError
		if !errors.As(err, &rejected) {
			t.Errorf("%s transaction: got %v, want a rejection by LiteSVM", name, err)
		}
	}
	// The untouched, fully signed one is accepted: the refusals were for the tampering.
	if _, err := rpc.SendAndConfirm(ctx, tx, 10*time.Second); err != nil {
		t.Errorf("the untampered transaction: %v", err)
	}
}

// TestEmbeddedChainMatchesLiteSVM sends the same transactions through both
// chains (transfers opening accounts at the fee payer's or at the sender's
// expense, and a token account closed for its rent) and compares every
// balance, lamports included.
func TestEmbeddedChainMatchesLiteSVM(t *testing.T) {
	ctx := context.Background()
	keys := chain.NewKeys([]byte("parity"))
	mint, authority := keys.LocalMint().PublicKey(), keys.LocalMintAuthority().PublicKey()
	payer, a, b, c, d := keys.FeePayer(), keys.Derive("a"), keys.Derive("b"), keys.Derive("c"), keys.Derive("d")

	l := localnet.Start(t)
	l.CreateMint(t, mint, chain.USDCDecimals, authority)
	l.Airdrop(t, payer.PublicKey(), 1_000_000_000)
	l.Airdrop(t, c.PublicKey(), 100_000_000)
	l.MintTo(t, mint, a.PublicKey(), 5_000_000)

	lc, err := localchain.New(ctx, dbtest.DB(t), time.Now, mint, authority)
	if err != nil {
		t.Fatal(err)
	}
	for _, drop := range []struct {
		to       solana.PublicKey
		lamports uint64
	}{{payer.PublicKey(), 1_000_000_000}, {c.PublicKey(), 100_000_000}} {
		if _, err := lc.Airdrop(ctx, drop.to, drop.lamports); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := lc.MintTo(ctx, a.PublicKey(), 5_000_000); err != nil {
		t.Fatal(err)
	}

	chains := map[string]*chain.Client{
		"litesvm":  chain.NewClient(l.URL, nil),
		"embedded": chain.NewClient("http://embedded", localchain.Transport{Chain: lc}),
	}
	transfer := func(from, to solana.PrivateKey, amount uint64, funder solana.PublicKey) func(solana.Hash) (*solana.Transaction, error) {
		return func(bh solana.Hash) (*solana.Transaction, error) {
			return chain.BuildTransfer(chain.Transfer{FeePayer: payer.PublicKey(), Funder: funder, From: from.PublicKey(),
				To: to.PublicKey(), Mint: mint, Amount: amount, Memo: "parity step", Blockhash: bh})
		}
	}
	steps := []struct {
		build   func(solana.Hash) (*solana.Transaction, error)
		signers []solana.PrivateKey
	}{
		{transfer(a, b, 1_500_000, solana.PublicKey{}), []solana.PrivateKey{payer, a}},
		{transfer(b, c, 500_000, solana.PublicKey{}), []solana.PrivateKey{payer, b}},
		{transfer(a, c, 1_000_000, solana.PublicKey{}), []solana.PrivateKey{payer, a}},
		{transfer(c, a, 1, solana.PublicKey{}), []solana.PrivateKey{payer, c}},
		// c opens d's account with its own lamports.
		{transfer(c, d, 250_000, c.PublicKey()), []solana.PrivateKey{payer, c}},
		// b empties its account and closes it: the rent goes back to b.
		{transfer(b, a, 1_000_000, solana.PublicKey{}), []solana.PrivateKey{payer, b}},
		{func(bh solana.Hash) (*solana.Transaction, error) {
			return solana.NewTransaction([]solana.Instruction{
				token.NewCloseAccountInstruction(chain.ATA(b.PublicKey(), mint), b.PublicKey(), b.PublicKey(), nil).Build(),
			}, bh, solana.TransactionPayer(payer.PublicKey()))
		}, []solana.PrivateKey{payer, b}},
	}
	type snapshot struct {
		a, b, c, d                          uint64 // USDC
		payerLamports, bLamports, cLamports uint64
		bHasAccount                         bool
	}
	got := map[string]snapshot{}
	for name, cl := range chains {
		for i, s := range steps {
			bh, err := cl.Blockhash(ctx)
			if err != nil {
				t.Fatal(err)
			}
			tx, err := s.build(bh.Hash)
			if err != nil {
				t.Fatal(err)
			}
			if err := chain.SignWith(tx, s.signers...); err != nil {
				t.Fatal(err)
			}
			if _, err := cl.SendAndConfirm(ctx, tx, 10*time.Second); err != nil {
				t.Fatalf("%s step %d: %v", name, i, err)
			}
		}
		var snap snapshot
		for _, x := range []struct {
			owner solana.PublicKey
			dst   *uint64
		}{{a.PublicKey(), &snap.a}, {b.PublicKey(), &snap.b}, {c.PublicKey(), &snap.c}, {d.PublicKey(), &snap.d}} {
			if *x.dst, err = cl.TokenBalance(ctx, x.owner, mint); err != nil {
				t.Fatal(err)
			}
		}
		for _, x := range []struct {
			owner solana.PublicKey
			dst   *uint64
		}{{payer.PublicKey(), &snap.payerLamports}, {b.PublicKey(), &snap.bLamports}, {c.PublicKey(), &snap.cLamports}} {
			if *x.dst, err = cl.Lamports(ctx, x.owner); err != nil {
				t.Fatal(err)
			}
		}
		if snap.bHasAccount, err = cl.AccountExists(ctx, chain.ATA(b.PublicKey(), mint)); err != nil {
			t.Fatal(err)
		}
		got[name] = snap
	}
	if got["embedded"] != got["litesvm"] {
		t.Fatalf("the chains disagree after the same transactions:\n embedded %+v\n litesvm  %+v", got["embedded"], got["litesvm"])
	}
	want := snapshot{a: 3_500_001, b: 0, c: 1_249_999, d: 250_000, payerLamports: got["embedded"].payerLamports,
		bLamports: chain.TokenAccountRent, cLamports: 100_000_000 - chain.TokenAccountRent}
	if got["embedded"] != want {
		t.Fatalf("balances: got %+v, want %+v", got["embedded"], want)
	}
}

// rentRefusal matches a refusal for rent, as LiteSVM words it
// ("InsufficientFundsForRent (account 1)") and as the runtime does
// ("Transaction results in an account (1) with insufficient funds for
// rent"); accountIndex finds the account it names.
var (
	rentRefusal  = regexp.MustCompile(`(?i)insufficient ?funds ?for ?rent`)
	accountIndex = regexp.MustCompile(`account \(?(\d+)\)?`)
)

// TestEmbeddedChainRentRuleMatchesLiteSVM sends the same transactions
// through both chains, each leaving a wallet just below, at, or at 0 of the
// rent-exempt minimum of a System account (chain.SystemAccountRent), and
// requires both chains to refuse exactly the same ones, for rent, naming
// the same account, and to end with the same lamports everywhere.
func TestEmbeddedChainRentRuleMatchesLiteSVM(t *testing.T) {
	ctx := context.Background()
	keys := chain.NewKeys([]byte("rent parity"))
	p := &rentParity{keys: keys, mint: keys.LocalMint().PublicKey(), payer: keys.FeePayer(),
		holder: keys.Derive("holder"), sink: keys.Derive("sink")}
	authority := keys.LocalMintAuthority().PublicKey()
	if localchain.RentExempt(0) != chain.SystemAccountRent {
		t.Fatalf("RentExempt(0) = %d, chain.SystemAccountRent = %d", localchain.RentExempt(0), chain.SystemAccountRent)
	}
	cases := p.cases()

	l := localnet.Start(t)
	lc, err := localchain.New(ctx, dbtest.DB(t), time.Now, p.mint, authority)
	if err != nil {
		t.Fatal(err)
	}
	chains := map[string]*chain.Client{
		"litesvm":  chain.NewClient(l.URL, nil),
		"embedded": chain.NewClient("http://embedded", localchain.Transport{Chain: lc}),
	}
	setups := map[string]chainSetup{
		"litesvm": {
			airdrop: func(to solana.PublicKey, n uint64) { l.Airdrop(t, to, n) },
			mintTo:  func(to solana.PublicKey, n uint64) { l.MintTo(t, p.mint, to, n) },
		},
		"embedded": {
			airdrop: func(to solana.PublicKey, n uint64) {
				if _, err := lc.Airdrop(ctx, to, n); err != nil {
					t.Fatal(err)
				}
			},
			mintTo: func(to solana.PublicKey, n uint64) {
				if _, err := lc.MintTo(ctx, to, n); err != nil {
					t.Fatal(err)
				}
			},
		},
	}
	l.CreateMint(t, p.mint, chain.USDCDecimals, authority)

	got := map[string][]rentResult{}
	payerAfter := map[string]uint64{}
	for name, cl := range chains {
		set := setups[name]
		set.airdrop(p.payer.PublicKey(), 1_000_000_000)
		set.mintTo(p.holder.PublicKey(), 1_000_000)
		set.mintTo(p.sink.PublicKey(), 1)
		for _, c := range cases {
			got[name] = append(got[name], p.run(t, name, cl, set, c))
		}
		if payerAfter[name], err = cl.Lamports(ctx, p.payer.PublicKey()); err != nil {
			t.Fatal(err)
		}
	}
	for i, c := range cases {
		e, s := got["embedded"][i], got["litesvm"][i]
		if e.outcome != s.outcome || fmt.Sprint(e.lamports) != fmt.Sprint(s.lamports) {
			t.Errorf("%s: the chains disagree:\n embedded %s %v\n litesvm  %s %v", c.name, e.outcome, e.lamports, s.outcome, s.lamports)
		}
	}
	if payerAfter["embedded"] != payerAfter["litesvm"] {
		t.Errorf("the platform's fee payer: embedded %d, litesvm %d lamports", payerAfter["embedded"], payerAfter["litesvm"])
	}
}

// rentParity is what the rent rule's cases are built from: the keys, the
// mint, the platform's fee payer, and a holder of tokens that sends to
// sink's existing account.
type rentParity struct {
	keys                *chain.Keys
	mint                solana.PublicKey
	payer, holder, sink solana.PrivateKey
}

// rentCase is a transaction sent through both chains. Each case's
// accounts are derived from its name and a role, so that both chains see
// the same keys in the same message order.
type rentCase struct {
	name     string
	lamports map[string]uint64 // airdropped to each role first
	tokens   map[string]uint64 // minted to each role first
	build    rentBuild
	refused  string            // the role the chains must name in a rent refusal; "" when accepted
	after    map[string]uint64 // lamports of each role afterwards
}

// rentBuild builds a case's transaction, with the keys of its roles, and
// returns it with its signers.
type rentBuild func(role func(string) solana.PrivateKey, bh solana.Hash) (*solana.Transaction, []solana.PrivateKey, error)

// chainSetup funds accounts on one chain.
type chainSetup struct {
	airdrop func(solana.PublicKey, uint64)
	mintTo  func(solana.PublicKey, uint64)
}

// rentResult is what a case did on one chain: its outcome, "accepted" or
// "refused for rent: account N" (or the refusal's own text when it is not
// about rent), and the lamports of its roles afterwards.
type rentResult struct {
	outcome  string
	lamports map[string]uint64
}

// senderFunds has the sender's wallet pay the rent of the recipient's new
// token account (a plain transfer); the platform pays the fee.
func (p *rentParity) senderFunds(role func(string) solana.PrivateKey, bh solana.Hash) (*solana.Transaction, []solana.PrivateKey, error) {
	tx, err := chain.BuildTransfer(chain.Transfer{FeePayer: p.payer.PublicKey(), Funder: role("sender").PublicKey(),
		From: role("sender").PublicKey(), To: role("recipient").PublicKey(), Mint: p.mint, Amount: 1, Blockhash: bh})
	return tx, []solana.PrivateKey{p.payer, role("sender")}, err
}

// feeOnly has a low fee payer and a transfer into an existing account:
// only the fee debits it.
func (p *rentParity) feeOnly(role func(string) solana.PrivateKey, bh solana.Hash) (*solana.Transaction, []solana.PrivateKey, error) {
	tx, err := chain.BuildTransfer(chain.Transfer{FeePayer: role("payer").PublicKey(), DestinationExists: true,
		From: p.holder.PublicKey(), To: p.sink.PublicKey(), Mint: p.mint, Amount: 1, Blockhash: bh})
	return tx, []solana.PrivateKey{role("payer"), p.holder}, err
}

// feeAndRent has a low fee payer that also pays the rent of the
// recipient's new account.
func (p *rentParity) feeAndRent(role func(string) solana.PrivateKey, bh solana.Hash) (*solana.Transaction, []solana.PrivateKey, error) {
	tx, err := chain.BuildTransfer(chain.Transfer{FeePayer: role("payer").PublicKey(),
		From: p.holder.PublicKey(), To: role("recipient").PublicKey(), Mint: p.mint, Amount: 1, Blockhash: bh})
	return tx, []solana.PrivateKey{role("payer"), p.holder}, err
}

// lamportsTransfer is a System transfer of n lamports from one role to
// another (the platform's fee payer when from or to is "").
func (p *rentParity) lamportsTransfer(from, to string, n uint64) rentBuild {
	return func(role func(string) solana.PrivateKey, bh solana.Hash) (*solana.Transaction, []solana.PrivateKey, error) {
		src := p.payer
		if from != "" {
			src = role(from)
		}
		dst := p.payer.PublicKey()
		if to != "" {
			dst = role(to).PublicKey()
		}
		tx, err := solana.NewTransaction([]solana.Instruction{system.NewTransferInstruction(n, src.PublicKey(), dst).Build()},
			bh, solana.TransactionPayer(p.payer.PublicKey()))
		return tx, []solana.PrivateKey{p.payer, src}, err
	}
}

// cases leave a wallet just below, at, or at 0 of the rent-exempt minimum
// of a System account.
func (p *rentParity) cases() []rentCase {
	const (
		rent    = chain.TokenAccountRent
		minimum = chain.SystemAccountRent
		fee2    = 2*localchain.FeePerSignature + 200 // two signatures, 200k units at 1000 micro-lamports
	)
	senderFunds, feeOnly, feeAndRent, lamportsTransfer := p.senderFunds, p.feeOnly, p.feeAndRent, p.lamportsTransfer
	return []rentCase{
		{name: "sender left between 0 and the minimum", lamports: map[string]uint64{"sender": 2_500_000},
			tokens: map[string]uint64{"sender": 10}, build: senderFunds, refused: "sender",
			after: map[string]uint64{"sender": 2_500_000}},
		{name: "sender left one lamport below the minimum", lamports: map[string]uint64{"sender": rent + minimum - 1},
			tokens: map[string]uint64{"sender": 10}, build: senderFunds, refused: "sender",
			after: map[string]uint64{"sender": rent + minimum - 1}},
		{name: "sender left with 0", lamports: map[string]uint64{"sender": rent},
			tokens: map[string]uint64{"sender": 10}, build: senderFunds,
			after: map[string]uint64{"sender": 0}},
		{name: "sender left with exactly the minimum", lamports: map[string]uint64{"sender": rent + minimum},
			tokens: map[string]uint64{"sender": 10}, build: senderFunds,
			after: map[string]uint64{"sender": minimum}},
		{name: "fee payer left below the minimum by the fee", lamports: map[string]uint64{"payer": fee2 + minimum - 1},
			build: feeOnly, refused: "payer", after: map[string]uint64{"payer": fee2 + minimum - 1}},
		{name: "fee payer left with 0 by the fee", lamports: map[string]uint64{"payer": fee2},
			build: feeOnly, after: map[string]uint64{"payer": 0}},
		{name: "fee payer left with exactly the minimum by the fee", lamports: map[string]uint64{"payer": fee2 + minimum},
			build: feeOnly, after: map[string]uint64{"payer": minimum}},
		{name: "fee payer funding a new account left below the minimum", lamports: map[string]uint64{"payer": fee2 + rent + 1000},
			build: feeAndRent, refused: "payer", after: map[string]uint64{"payer": fee2 + rent + 1000}},
		{name: "fee payer funding a new account left with 0", lamports: map[string]uint64{"payer": fee2 + rent},
			build: feeAndRent, after: map[string]uint64{"payer": 0}},
		{name: "System transfer creating an account below the minimum", build: lamportsTransfer("", "new", minimum-1),
			refused: "new", after: map[string]uint64{"new": 0}},
		{name: "System transfer creating an account with the minimum", build: lamportsTransfer("", "new", minimum),
			after: map[string]uint64{"new": minimum}},
		{name: "System transfer leaving the sender below the minimum", lamports: map[string]uint64{"sender": 2_000_000},
			build: lamportsTransfer("sender", "", 1_999_000), refused: "sender", after: map[string]uint64{"sender": 2_000_000}},
		{name: "System transfer leaving the sender with 0", lamports: map[string]uint64{"sender": 2_000_000},
			build: lamportsTransfer("sender", "", 2_000_000), after: map[string]uint64{"sender": 0}},
		// A wallet below the minimum before the transaction (only an
		// airdrop makes one): it may be credited, not debited.
		{name: "a wallet below the minimum credited", lamports: map[string]uint64{"wallet": 100_000},
			build: lamportsTransfer("", "wallet", 1000), after: map[string]uint64{"wallet": 101_000}},
		{name: "a wallet below the minimum debited", lamports: map[string]uint64{"wallet": 100_000},
			build: lamportsTransfer("wallet", "", 1000), refused: "wallet", after: map[string]uint64{"wallet": 100_000}},
	}
}

// run funds the roles of case c on the chain name (through cl and set),
// sends its transaction and checks the outcome and the lamports after it.
func (p *rentParity) run(t *testing.T, name string, cl *chain.Client, set chainSetup, c rentCase) rentResult {
	t.Helper()
	ctx := context.Background()
	role := func(r string) solana.PrivateKey { return p.keys.Derive(c.name + "/" + r) }
	for r, n := range c.lamports {
		set.airdrop(role(r).PublicKey(), n)
	}
	for r, n := range c.tokens {
		set.mintTo(role(r).PublicKey(), n)
	}
	bh, err := cl.Blockhash(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tx, signers, err := c.build(role, bh.Hash)
	if err != nil {
		t.Fatal(err)
	}
	if err := chain.SignWith(tx, signers...); err != nil {
		t.Fatal(err)
	}
	res := rentResult{outcome: "accepted", lamports: map[string]uint64{}}
	if _, err := cl.SendAndConfirm(ctx, tx, 10*time.Second); err != nil {
		var rejected *chain.RejectedError
		if !errors.As(err, &rejected) {
			t.Fatalf("%s: %s: %v", name, c.name, err)
		}
		res.outcome = rejected.Reason
		if m := accountIndex.FindStringSubmatch(rejected.Reason); rentRefusal.MatchString(rejected.Reason) && m != nil {
			res.outcome = "refused for rent: account " + m[1]
		}
	}
	if c.refused != "" {
		// The index the refusal must name: the role's place in the message.
		for i, k := range tx.Message.AccountKeys {
			if k.Equals(role(c.refused).PublicKey()) {
				c.refused = fmt.Sprintf("refused for rent: account %d", i)
			}
		}
	} else {
		c.refused = "accepted"
	}
	if res.outcome != c.refused {
		t.Errorf("%s: %s: %s, want %s", name, c.name, res.outcome, c.refused)
	}
	for r := range c.after {
		if res.lamports[r], err = cl.Lamports(ctx, role(r).PublicKey()); err != nil {
			t.Fatal(err)
		}
		if res.lamports[r] != c.after[r] {
			t.Errorf("%s: %s: %s holds %d lamports, want %d", name, c.name, r, res.lamports[r], c.after[r])
		}
	}
	return res
}

// BenchmarkDepositRoundTrip measures one prepare, sign and submit (until
// confirmed and credited) through the whole server.
func BenchmarkDepositRoundTrip(b *testing.B) {
	ctx := context.Background()
	run := func(b *testing.B, s *testserver.Server, fund func(solana.PublicKey)) {
		user := newUser(b, s)
		fund(user.Key.PublicKey())
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if err := user.Deposit(ctx, 1); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("embedded", func(b *testing.B) {
		s := testserver.Start(b, map[string]string{"MASTER_SEED": "22bb22bb22bb22bb22bb22bb22bb22bb22bb22bb22bb22bb22bb22bb22bb22bb"})
		run(b, s, func(pk solana.PublicKey) {
			if _, err := s.App.Money.Faucet(ctx, pk, 1_000_000_000); err != nil {
				b.Fatal(err)
			}
		})
	})
	b.Run("litesvm", func(b *testing.B) {
		l, s, mint := liteSVMServer(b)
		run(b, s, func(pk solana.PublicKey) { l.MintTo(b, mint, pk, 1_000_000_000) })
	})
}
