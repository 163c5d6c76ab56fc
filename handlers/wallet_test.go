package handlers_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/programs/token"
	"github.com/gagliardetto/solana-go/rpc"

	"wager/chain"
	"wager/chain/chaintest"
	"wager/db"
	"wager/db/dbtest"
	"wager/domain/money"
)

// funded signs a new wallet in and gives it on-chain USDC from the faucet.
func (a *testApp) funded(t testing.TB, usdc int64) (wallet, map[string]string) {
	t.Helper()
	w := newWallet(t)
	token, _ := a.login(t, w, "agent-1")
	r := a.do(t, request{method: http.MethodPost, path: "/dev/faucet",
		body: jsonBody(map[string]any{"address": w.address(), "amountMinor": usdc})})
	if r.Code != 200 {
		t.Fatalf("faucet: %d %s", r.Code, r.Body)
	}
	return w, bearer(token, "agent-1")
}

// signPrepared signs the base64 transaction of a prepare answer with w,
// after letting tamper change it.
func signPrepared(t testing.TB, w wallet, b64 string, tamper func(*solana.Transaction)) string {
	t.Helper()
	raw, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := solana.TransactionFromBytes(raw)
	if err != nil {
		t.Fatal(err)
	}
	if tamper != nil {
		tamper(tx)
	}
	if err := chain.SignWith(tx, w.key); err != nil {
		t.Fatal(err)
	}
	out, err := tx.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(out)
}

func (a *testApp) prepare(t testing.TB, auth map[string]string, to string, amount int64) map[string]any {
	t.Helper()
	r := a.do(t, request{method: http.MethodPost, path: "/wallets/transfer/prepare", header: auth,
		body: jsonBody(map[string]any{"toAddress": to, "amountMinor": amount})})
	if r.Code != 200 {
		t.Fatalf("prepare: %d %s", r.Code, r.Body)
	}
	return r.json(t)
}

func (a *testApp) submit(t testing.TB, auth map[string]string, intentID, signed string) response {
	t.Helper()
	return a.do(t, request{method: http.MethodPost, path: "/wallets/transfer/submit", header: auth,
		body: jsonBody(map[string]string{"intentId": intentID, "signedTransaction": signed})})
}

type balances struct{ available, locked, onChain int64 }

func (a *testApp) balances(t testing.TB, auth map[string]string) balances {
	t.Helper()
	r := a.do(t, request{path: "/wallets/me/balance", header: auth})
	if r.Code != 200 {
		t.Fatalf("balance: %d %s", r.Code, r.Body)
	}
	m := r.json(t)
	on, ok := m["onChain"].(map[string]any)
	if !ok {
		t.Fatalf("balance without the wallet's on-chain holdings: %s", r.Body)
	}
	num := func(v any) int64 { n, _ := v.(float64); return int64(n) }
	return balances{num(m["availableMinor"]), num(m["lockedMinor"]), num(on["usdcMinor"])}
}

func (a *testApp) depositAddress(t testing.TB, auth map[string]string) string {
	return a.do(t, request{path: "/wallets/me/balance", header: auth}).json(t)["depositAddress"].(string)
}

func TestDepositCreditsOnceUnderConcurrentSubmits(t *testing.T) {
	a := newTestApp(t, nil)
	w, auth := a.funded(t, 5_000_000)
	p := a.prepare(t, auth, a.depositAddress(t, auth), 1_250_000)
	if p["kind"] != "deposit" {
		t.Fatalf("a transfer to the deposit address should be a deposit: %v", p)
	}
	signed := signPrepared(t, w, p["transaction"].(string), nil)

	const n = 50
	var wg sync.WaitGroup
	results := make(chan response, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); results <- a.submit(t, auth, p["intentId"].(string), signed) }()
	}
	wg.Wait()
	close(results)
	sigs := map[string]int{}
	for r := range results {
		if r.Code != 200 {
			t.Errorf("concurrent submit: %d %s", r.Code, r.Body)
			continue
		}
		sigs[r.json(t)["signature"].(string)]++
	}
	if len(sigs) != 1 {
		t.Errorf("submits answered %d different signatures, want 1: %v", len(sigs), sigs)
	}
	b := a.balances(t, auth)
	if b.available != 1_250_000 || b.onChain != 3_750_000 {
		t.Fatalf("after 50 submits of one deposit: available %d on chain %d; want 1250000 and 3750000", b.available, b.onChain)
	}
	// History shows it once, with its signature.
	h := a.do(t, request{path: "/wallets/me/transactions", header: auth}).list(t)
	if len(h) != 1 || h[0].(map[string]any)["kind"] != "deposit" {
		t.Errorf("history: %v", h)
	}
}

func TestTamperedTransactionsMoveNothing(t *testing.T) {
	a := newTestApp(t, nil)
	w, auth := a.funded(t, 5_000_000)
	deposit := a.depositAddress(t, auth)
	attacker := newWallet(t).key.PublicKey()
	tokenIx := func(tx *solana.Transaction) *solana.CompiledInstruction {
		for i, ix := range tx.Message.Instructions {
			if tx.Message.AccountKeys[ix.ProgramIDIndex].Equals(chain.TokenProgramID) {
				return &tx.Message.Instructions[i]
			}
		}
		t.Fatal("no token instruction")
		return nil
	}
	for name, tamper := range map[string]func(*solana.Transaction){
		"other amount": func(tx *solana.Transaction) { tokenIx(tx).Data[1]++ },
		"other destination": func(tx *solana.Transaction) {
			ix := tokenIx(tx)
			tx.Message.AccountKeys[ix.Accounts[2]] = chain.ATA(attacker, a.Money.Mint())
		},
		"other fee payer": func(tx *solana.Transaction) { tx.Message.AccountKeys[0] = attacker },
		"other blockhash": func(tx *solana.Transaction) { tx.Message.RecentBlockhash = solana.Hash{9} },
	} {
		t.Run(name, func(t *testing.T) {
			before := a.balances(t, auth)
			p := a.prepare(t, auth, deposit, 1_000_000)
			signed := signPrepared(t, w, p["transaction"].(string), tamper)
			a.submit(t, auth, p["intentId"].(string), signed).wantError(t, 400, "VALIDATION_ERROR")
			if after := a.balances(t, auth); after != before {
				t.Fatalf("a refused submit moved money: before %+v after %+v", before, after)
			}
		})
	}
	t.Run("signed by another wallet", func(t *testing.T) {
		p := a.prepare(t, auth, deposit, 1_000_000)
		signed := signPrepared(t, newWallet(t), p["transaction"].(string), nil)
		a.submit(t, auth, p["intentId"].(string), signed).wantError(t, 400, "VALIDATION_ERROR")
	})
	t.Run("someone else's intent", func(t *testing.T) {
		p := a.prepare(t, auth, deposit, 1_000_000)
		_, otherAuth := a.funded(t, 1)
		a.submit(t, otherAuth, p["intentId"].(string), signPrepared(t, w, p["transaction"].(string), nil)).
			wantError(t, 404, "NOT_FOUND")
	})
}

func TestExpiredIntentsAndBlockhashesAreRefused(t *testing.T) {
	a := newTestApp(t, nil)
	w, auth := a.funded(t, 5_000_000)
	deposit := a.depositAddress(t, auth)
	ctx := context.Background()

	p := a.prepare(t, auth, deposit, 1_000_000)
	if _, err := a.DB.ExecContext(ctx, "UPDATE intents SET expires_at = now() - interval '1 second' WHERE id = ?", p["intentId"]); err != nil {
		t.Fatal(err)
	}
	a.submit(t, auth, p["intentId"].(string), signPrepared(t, w, p["transaction"].(string), nil)).wantError(t, 409, "CONFLICT")

	// The intent is still open, but the chain no longer accepts its blockhash.
	p = a.prepare(t, auth, deposit, 1_000_000)
	raw, _ := base64.StdEncoding.DecodeString(p["transaction"].(string))
	tx, _ := solana.TransactionFromBytes(raw)
	if _, err := a.DB.ExecContext(ctx, "UPDATE localchain.blockhashes SET created_at = now() - interval '10 minutes' WHERE hash = ?",
		tx.Message.RecentBlockhash.String()); err != nil {
		t.Fatal(err)
	}
	if _, err := a.DB.ExecContext(ctx, "UPDATE intents SET last_valid_block_height = last_valid_block_height - 10000 WHERE id = ?",
		p["intentId"]); err != nil {
		t.Fatal(err)
	}
	m := a.submit(t, auth, p["intentId"].(string), signPrepared(t, w, p["transaction"].(string), nil)).wantError(t, 409, "CONFLICT")
	if msg := m["message"].(string); !strings.Contains(msg, "expired") {
		t.Errorf("the submit of a transaction on an expired blockhash: %q, want it called expired", msg)
	}
	if b := a.balances(t, auth); b.available != 0 || b.onChain != 5_000_000 {
		t.Fatalf("refused deposits moved money: %+v", b)
	}
}

func TestWithdrawalCannotOverdrawUnderConcurrency(t *testing.T) {
	a := newTestApp(t, nil)
	w, auth := a.funded(t, 20_000_000)
	p := a.prepare(t, auth, a.depositAddress(t, auth), 10_000_000)
	if r := a.submit(t, auth, p["intentId"].(string), signPrepared(t, w, p["transaction"].(string), nil)); r.Code != 200 {
		t.Fatalf("deposit: %d %s", r.Code, r.Body)
	}

	const n = 10
	var wg sync.WaitGroup
	codes := make(chan int, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := a.do(t, request{method: http.MethodPost, path: "/wallets/withdraw", header: auth, body: `{"amountMinor": 3000000}`})
			if r.Code != 200 && r.Code != 409 {
				t.Errorf("withdraw: %d %s", r.Code, r.Body)
			}
			codes <- r.Code
		}()
	}
	wg.Wait()
	close(codes)
	ok := 0
	for c := range codes {
		if c == 200 {
			ok++
		}
	}
	b := a.balances(t, auth)
	if ok != 3 || b.available != 1_000_000 || b.onChain != 10_000_000+9_000_000 {
		t.Fatalf("10 concurrent withdrawals of 3 from 10 USDC: %d succeeded, available %d, on chain %d; want 3, 1000000, 19000000",
			ok, b.available, b.onChain)
	}

	// An idempotency key makes a retried withdrawal answer the first one.
	key := map[string]string{"Idempotency-Key": "retry-1"}
	for k, v := range auth {
		key[k] = v
	}
	first := a.do(t, request{method: http.MethodPost, path: "/wallets/withdraw", header: key, body: `{"amountMinor": 500000}`})
	again := a.do(t, request{method: http.MethodPost, path: "/wallets/withdraw", header: key, body: `{"amountMinor": 500000}`})
	if first.Code != 200 || again.Code != 200 || first.json(t)["id"] != again.json(t)["id"] {
		t.Fatalf("idempotent withdrawal: %d %s / %d %s", first.Code, first.Body, again.Code, again.Body)
	}
	if b := a.balances(t, auth); b.available != 500_000 {
		t.Errorf("after an idempotent retry: available %d, want 500000", b.available)
	}
	a.do(t, request{method: http.MethodPost, path: "/wallets/withdraw", header: key, body: `{"amountMinor": 400000}`}).
		wantError(t, 409, "CONFLICT")

	// Retries racing with the same key, for more than half the balance:
	// all of them answer the one withdrawal (202 while it is pending), none
	// says the balance is short.
	key["Idempotency-Key"] = "retry-2"
	answers := make([]response, 5)
	for i := range answers {
		wg.Go(func() {
			answers[i] = a.do(t, request{method: http.MethodPost, path: "/wallets/withdraw", header: key, body: `{"amountMinor": 300000}`})
		})
	}
	wg.Wait()
	for _, r := range answers {
		if (r.Code != 200 && r.Code != 202) || r.json(t)["id"] != answers[0].json(t)["id"] {
			t.Errorf("racing retries with one key: %d %s, want the withdrawal %v", r.Code, r.Body, answers[0].json(t)["id"])
		}
	}
	if b := a.balances(t, auth); b.available != 200_000 {
		t.Errorf("after racing retries: available %d, want 200000", b.available)
	}
	a.do(t, request{method: http.MethodPost, path: "/wallets/withdraw", header: auth, body: `{"amountMinor": 0}`}).
		wantError(t, 400, "VALIDATION_ERROR")
	a.do(t, request{method: http.MethodPost, path: "/wallets/withdraw", header: auth, body: `{"amountMinor": 1.5}`}).
		wantError(t, 400, "VALIDATION_ERROR")
	a.do(t, request{method: http.MethodPost, path: "/wallets/withdraw", header: auth, body: `{"amountMinor": 999999999}`}).
		wantError(t, 409, "INSUFFICIENT_FUNDS")
}

func TestTransferValidationAndPlainTransfers(t *testing.T) {
	a := newTestApp(t, nil)
	w, auth := a.funded(t, 2_000_000)
	for _, body := range []string{
		`{"toAddress": "nope", "amountMinor": 5}`, `{"toAddress": "` + w.address() + `", "amountMinor": 5}`,
		`{"toAddress": "` + newWallet(t).address() + `", "amountMinor": 0}`,
		`{"toAddress": "` + newWallet(t).address() + `", "amountMinor": -4}`,
	} {
		a.do(t, request{method: http.MethodPost, path: "/wallets/transfer/prepare", header: auth, body: body}).
			wantError(t, 400, "VALIDATION_ERROR")
	}
	a.do(t, request{method: http.MethodPost, path: "/wallets/transfer/prepare", header: auth,
		body: `{"toAddress": "` + newWallet(t).address() + `", "amountMinor": 3000000}`}).wantError(t, 409, "INSUFFICIENT_FUNDS")

	// The friend has no USDC account yet: the sender's wallet pays its
	// rent, the platform only the fee.
	friend := newWallet(t)
	senderSOL, platformSOL := a.lamports(t, w.key.PublicKey()), a.lamports(t, a.Keys.FeePayer().PublicKey())
	p := a.prepare(t, auth, friend.address(), 700_000)
	if r := a.submit(t, auth, p["intentId"].(string), signPrepared(t, w, p["transaction"].(string), nil)); r.Code != 200 {
		t.Fatalf("plain transfer: %d %s", r.Code, r.Body)
	}
	got, err := a.Money.Chain().TokenBalance(context.Background(), friend.key.PublicKey(), a.Money.Mint())
	if err != nil || got != 700_000 {
		t.Fatalf("friend's wallet: %d %v, want 700000", got, err)
	}
	if b := a.balances(t, auth); b.available != 0 || b.onChain != 1_300_000 {
		t.Errorf("a plain transfer must not touch the platform balance: %+v", b)
	}
	if paid := senderSOL - a.lamports(t, w.key.PublicKey()); paid != chain.TokenAccountRent {
		t.Errorf("the sender paid %d lamports, want the rent %d", paid, chain.TokenAccountRent)
	}
	if paid := platformSOL - a.lamports(t, a.Keys.FeePayer().PublicKey()); paid <= 0 || paid >= chain.TokenAccountRent {
		t.Errorf("the fee payer paid %d lamports, want only the fee", paid)
	}

	// A wallet without SOL cannot open an account, but can send to one
	// that exists (the platform pays the fee).
	poor := newWallet(t)
	if _, err := a.LocalChain.MintTo(context.Background(), poor.key.PublicKey(), 500_000); err != nil {
		t.Fatal(err)
	}
	token, _ := a.login(t, poor, "agent-1")
	poorAuth := bearer(token, "agent-1")
	r := a.do(t, request{method: http.MethodPost, path: "/wallets/transfer/prepare", header: poorAuth,
		body: jsonBody(map[string]any{"toAddress": newWallet(t).address(), "amountMinor": 100_000})})
	if m := r.wantError(t, 409, "INSUFFICIENT_FUNDS"); !strings.Contains(m["message"].(string), "rent") {
		t.Errorf("transfer to a new account without SOL: %v", m)
	}
	p = a.prepare(t, poorAuth, friend.address(), 100_000)
	if r := a.submit(t, poorAuth, p["intentId"].(string), signPrepared(t, poor, p["transaction"].(string), nil)); r.Code != 200 {
		t.Fatalf("transfer to an existing account without SOL: %d %s", r.Code, r.Body)
	}

	// A wallet holding just more than the rent: opening the account would
	// leave it below the rent-exempt minimum of a wallet, which Solana
	// refuses, so prepare does. With exactly the rent (left with nothing)
	// it goes through.
	if _, err := a.LocalChain.Airdrop(context.Background(), poor.key.PublicKey(), chain.TokenAccountRent+1000); err != nil {
		t.Fatal(err)
	}
	r = a.do(t, request{method: http.MethodPost, path: "/wallets/transfer/prepare", header: poorAuth,
		body: jsonBody(map[string]any{"toAddress": newWallet(t).address(), "amountMinor": 100_000})})
	if m := r.wantError(t, 409, "INSUFFICIENT_FUNDS"); !strings.Contains(m["message"].(string), "rent") {
		t.Errorf("transfer to a new account leaving the sender below the minimum: %v", m)
	}
	exact := newWallet(t)
	if _, err := a.LocalChain.MintTo(context.Background(), exact.key.PublicKey(), 500_000); err != nil {
		t.Fatal(err)
	}
	if _, err := a.LocalChain.Airdrop(context.Background(), exact.key.PublicKey(), chain.TokenAccountRent); err != nil {
		t.Fatal(err)
	}
	token, _ = a.login(t, exact, "agent-2")
	exactAuth := bearer(token, "agent-2")
	p = a.prepare(t, exactAuth, newWallet(t).address(), 100_000)
	if r := a.submit(t, exactAuth, p["intentId"].(string), signPrepared(t, exact, p["transaction"].(string), nil)); r.Code != 200 {
		t.Fatalf("transfer to a new account paid with exactly the rent: %d %s", r.Code, r.Body)
	}
	if left := a.lamports(t, exact.key.PublicKey()); left != 0 {
		t.Errorf("the sender keeps %d lamports, want 0", left)
	}
}

func (a *testApp) lamports(t testing.TB, owner solana.PublicKey) int64 {
	t.Helper()
	n, err := a.Money.Chain().Lamports(context.Background(), owner)
	if err != nil {
		t.Fatal(err)
	}
	return int64(n)
}

// closeTokenAccount closes the wallet's empty USDC account, as wallets do
// to get its rent back.
func (a *testApp) closeTokenAccount(t testing.TB, w wallet) {
	t.Helper()
	owner := w.key.PublicKey()
	a.sendAsWallet(t, w, "closing the token account", token.NewCloseAccountInstruction(chain.ATA(owner, a.Money.Mint()), owner, owner, nil).Build())
}

// openTokenAccount opens the wallet's USDC account again, at the wallet's
// own cost.
func (a *testApp) openTokenAccount(t testing.TB, w wallet) {
	t.Helper()
	owner := w.key.PublicKey()
	a.sendAsWallet(t, w, "opening the token account", chain.CreateATAIdempotent(owner, owner, a.Money.Mint()))
}

// sendAsWallet sends ix in a transaction the wallet pays for and signs,
// and waits for its confirmation.
func (a *testApp) sendAsWallet(t testing.TB, w wallet, what string, ix solana.Instruction) {
	t.Helper()
	ctx := context.Background()
	c := a.Money.Chain()
	bh, err := c.Blockhash(ctx)
	if err != nil {
		t.Fatal(err)
	}
	owner := w.key.PublicKey()
	tx, err := solana.NewTransaction([]solana.Instruction{
		ix, chain.Memo(what+" "+time.Now().String(), owner), // a new transaction each time, even on one blockhash
	}, bh.Hash, solana.TransactionPayer(owner))
	if err != nil {
		t.Fatal(err)
	}
	if err := chain.SignWith(tx, w.key); err != nil {
		t.Fatal(err)
	}
	if _, err := c.SendAndConfirm(ctx, tx, 10*time.Second); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func TestWithdrawalOpensAClosedAccountOnce(t *testing.T) {
	a := newTestApp(t, nil)
	p := a.depositor(t, 3_000_000)
	a.closeTokenAccount(t, p.wallet)

	platformSOL := a.lamports(t, a.Keys.FeePayer().PublicKey())
	r := a.do(t, request{method: http.MethodPost, path: "/wallets/withdraw", header: p.auth, body: `{"amountMinor": 1000000}`})
	if r.Code != 200 || r.json(t)["openedAccount"] != true {
		t.Fatalf("withdrawal to a closed account: %d %s, want it confirmed with openedAccount", r.Code, r.Body)
	}
	if paid := platformSOL - a.lamports(t, a.Keys.FeePayer().PublicKey()); paid < chain.TokenAccountRent {
		t.Errorf("the fee payer paid %d lamports, want the rent %d and the fee", paid, chain.TokenAccountRent)
	}
	if b := a.balances(t, p.auth); b.available != 2_000_000 || b.onChain != 1_000_000 {
		t.Fatalf("after the withdrawal: %+v", b)
	}

	// Deposited back and closed again: the platform does not pay twice.
	dep := a.prepare(t, p.auth, a.depositAddress(t, p.auth), 1_000_000)
	if r := a.submit(t, p.auth, dep["intentId"].(string), signPrepared(t, p.wallet, dep["transaction"].(string), nil)); r.Code != 200 {
		t.Fatalf("deposit: %d %s", r.Code, r.Body)
	}
	a.closeTokenAccount(t, p.wallet)
	r = a.do(t, request{method: http.MethodPost, path: "/wallets/withdraw", header: p.auth, body: `{"amountMinor": 1000000}`})
	if m := r.wantError(t, 409, "CONFLICT"); !strings.Contains(m["message"].(string), "no USDC account") {
		t.Errorf("second withdrawal to a closed account: %v", m)
	}
	if b := a.balances(t, p.auth); b.available != 3_000_000 {
		t.Errorf("a refused withdrawal moved money: %+v", b)
	}
}

func TestReconciliationAndLedgerGuards(t *testing.T) {
	admin := newWallet(t)
	a := newTestApp(t, map[string]string{"ADMIN_WALLETS": admin.address()})
	w, auth := a.funded(t, 3_000_000)
	before, err := a.Money.Reconcile(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	p := a.prepare(t, auth, a.depositAddress(t, auth), 2_000_000)
	a.submit(t, auth, p["intentId"].(string), signPrepared(t, w, p["transaction"].(string), nil))
	adminToken, _ := a.login(t, admin, "console")
	r := a.do(t, request{path: "/admin/reconciliation", header: bearer(adminToken, "console")})
	var rec money.Reconciliation
	if err := jsonDecode(r.Body.Bytes(), &rec); err != nil || r.Code != 200 {
		t.Fatalf("reconciliation: %d %s", r.Code, r.Body)
	}
	if !rec.Balanced || before.Addresses[0].ChainMinor == nil || rec.Addresses[0].ChainMinor == nil ||
		*rec.Addresses[0].ChainMinor-*before.Addresses[0].ChainMinor != 2_000_000 ||
		rec.Addresses[0].LedgerMinor != *rec.Addresses[0].ChainMinor {
		t.Fatalf("reconciliation after a 2 USDC deposit: %+v", rec)
	}
	a.do(t, request{path: "/admin/reconciliation", header: auth}).wantError(t, 403, "ADMIN_ONLY")

	// The database itself refuses unbalanced or edited books.
	ctx := context.Background()
	_, err = a.DB.ExecContext(ctx, `WITH t AS (INSERT INTO ledger_transactions (kind, reference) VALUES ('bad', 'unbalanced') RETURNING id)
		INSERT INTO ledger_entries (transaction_id, account_id, amount) SELECT id, 'treasury', 5 FROM t`)
	if err == nil {
		t.Error("an unbalanced ledger transaction was accepted")
	}
	if _, err := a.DB.ExecContext(ctx, "UPDATE ledger_entries SET amount = amount + 1"); err == nil {
		t.Error("ledger entries could be edited")
	}
	if _, err := a.DB.ExecContext(ctx, "DELETE FROM ledger_transactions"); err == nil {
		t.Error("ledger transactions could be deleted")
	}
}

func ExampleFormatUSDC() {
	fmt.Println(money.FormatUSDC(2_557_500), money.FormatUSDC(10_000), money.FormatUSDC(-3_000_000))
	// Output: 2.5575 0.01 -3.00
}

// reconciliationLine is an address of GET /admin/reconciliation as a client
// reads it.
type reconciliationLine struct {
	Label             string `json:"label"`
	Address           string `json:"address"`
	ChainMinor        int64  `json:"chainMinor"`
	LedgerMinor       int64  `json:"ledgerMinor"`
	UnattributedMinor int64  `json:"unattributedMinor"`
	ShortfallMinor    int64  `json:"shortfallMinor"`
}

// The attack: one minor unit sent straight to the vault on chain, without
// an intent, made the reconciliation unbalanced for good and hid any real
// discrepancy behind the false alarm. Now it is listed as unattributed and
// the books still balance; only a shortfall (the chain holding less than
// the ledger says) unbalances them, and the admin page says which is which.
func TestUnattributedUSDCIsListedAndOnlyAShortfallUnbalancesTheBooks(t *testing.T) {
	adminWallet := newWallet(t)
	// A database of its own: the vault's surplus stays on its chain.
	a := newTestApp(t, map[string]string{"WORKERS": "false", "ADMIN_WALLETS": adminWallet.address(), "DATABASE_URL": dbtest.Fresh(t)})
	admin := a.admin(t, adminWallet)
	cookie := a.sessionCookie(t, adminWallet)
	ctx := context.Background()
	vault := a.Money.DepositAddress()
	reconcile := func() (balanced bool, line reconciliationLine) {
		t.Helper()
		var rec struct {
			Balanced  bool                 `json:"balanced"`
			Addresses []reconciliationLine `json:"addresses"`
		}
		a.getJSON(t, admin, "/admin/reconciliation", &rec)
		for _, l := range rec.Addresses {
			if l.Address == vault.String() {
				return rec.Balanced, l
			}
		}
		t.Fatalf("the reconciliation lists no vault: %+v", rec)
		return false, line
	}
	books := func() string {
		return section(a.do(t, request{path: "/admin", header: map[string]string{"Cookie": cookie}}).Body.String(), "admin-books")
	}

	if _, err := a.LocalChain.MintTo(ctx, vault, 1); err != nil {
		t.Fatal(err)
	}
	if balanced, v := reconcile(); !balanced || v.UnattributedMinor != 1 || v.ShortfallMinor != 0 || v.ChainMinor != v.LedgerMinor+1 {
		t.Errorf("1 minor unit sent to the vault without an intent: balanced %t, vault %+v; want balanced, unattributedMinor 1", balanced, v)
	}
	text := books()
	for _, want := range []string{"The books balance.", "0.000001 USDC arrived without a matching deposit or payment: it is unattributed"} {
		if !strings.Contains(text, want) {
			t.Errorf("the admin's books do not say %q: %q", want, text)
		}
	}
	if strings.Contains(text, "do not balance") || strings.Contains(text, "short") {
		t.Errorf("the admin's books raise an alarm over unattributed USDC: %q", text)
	}

	// The ledger says the vault holds 2 more minor units; the chain has 1
	// more: 1 short.
	err := db.Transact(ctx, a.DB, func(ctx context.Context, tx db.Tx) error {
		_, err := money.Post(ctx, tx, nil, money.Posting{Kind: "test_shortfall", Reference: "test:shortfall:" + vault.String(),
			Entries: []money.Entry{{Account: money.Vault, Amount: -2}, {Account: money.Treasury, Amount: 2}}})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if balanced, v := reconcile(); balanced || v.ShortfallMinor != 1 || v.UnattributedMinor != 0 {
		t.Errorf("the ledger 1 minor unit above the chain: balanced %t, vault %+v; want unbalanced, shortfallMinor 1", balanced, v)
	}
	text = books()
	for _, want := range []string{"The books do not balance: the chain holds less than the ledger says (0.000001 USDC short).", "short by 0.000001 USDC"} {
		if !strings.Contains(text, want) {
			t.Errorf("the admin's books do not say %q: %q", want, text)
		}
	}

	// The missing unit arrives: the books are exact again.
	if _, err := a.LocalChain.MintTo(ctx, vault, 1); err != nil {
		t.Fatal(err)
	}
	if balanced, v := reconcile(); !balanced || v.ShortfallMinor != 0 || v.UnattributedMinor != 0 {
		t.Errorf("the books made exact: balanced %t, vault %+v", balanced, v)
	}
}

// Nothing is credited before the chain reports it at CREDIT_COMMITMENT: a
// deposit that has landed but is only confirmed waits, and is credited once
// the chain reports it finalized.
func TestADepositIsCreditedOnlyAtTheCreditCommitment(t *testing.T) {
	clk := newTestClock()
	a := newTestAppAt(t, map[string]string{"WORKERS": "false", "JWT_SECRET": testSecret, "CREDIT_COMMITMENT": "finalized",
		"CHAIN_FINALIZE_SLOTS": "10"}, clk.now)
	w, auth := a.funded(t, 2_000_000)
	p := a.prepare(t, auth, a.depositAddress(t, auth), 1_000_000)
	_, sig := a.sentUnconfirmed(t, w, p, true)

	st, err := a.Money.Chain().RPC.GetSignatureStatuses(t.Context(), false, solana.MustSignatureFromBase58(sig))
	if err != nil || st.Value[0] == nil || st.Value[0].ConfirmationStatus != rpc.ConfirmationStatusConfirmed {
		t.Fatalf("the deposit's status on chain: %+v %v, want confirmed", st, err)
	}
	if err := resolveIntents(a); err != nil {
		t.Fatal(err)
	}
	if b := a.balances(t, auth); b.available != 0 || b.onChain != 1_000_000 {
		t.Errorf("while the deposit is only confirmed: %+v, want it out of the wallet and nothing credited", b)
	}
	if status, _ := a.intentStatus(t, p["intentId"]); status != "submitted" {
		t.Errorf("the intent while only confirmed: %s, want submitted", status)
	}
	clk.advance(10 * 400 * time.Millisecond) // ten slots: finalized
	if err := resolveIntents(a); err != nil {
		t.Fatal(err)
	}
	if b := a.balances(t, auth); b.available != 1_000_000 {
		t.Errorf("once the deposit is finalized: %+v, want it credited", b)
	}
}

// chainFaults are the ways the Solana RPC fails a read: it answers 503,
// or it hangs until the request gives up.
var chainFaults = []struct {
	name string
	down chaintest.Down
}{{"503", chaintest.Down{}}, {"hanging", chaintest.Down{Hang: true}}}

// patient gives a's requests a deadline far past any bounded wait, so
// that a read waiting on a hanging chain fails instead of hanging the
// test.
func (a *testApp) patient(t testing.TB) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	a.ctx = ctx
	t.Cleanup(func() { a.ctx = nil })
}

// The attack an operator found: with one RPC call failing, GET
// /wallets/me/balance answered 503 and a player could not even see the
// platform balance the platform holds. Now it answers the platform
// balance with onChain null, and the wallet page says in words that the
// wallet could not be read, with the platform balance beside it.
func TestTheBalanceIsServedWhenTheChainDoesNotAnswer(t *testing.T) {
	a := newTestApp(t, noWorkers)
	p := a.depositor(t, 1_250_000)
	cookie := a.sessionCookie(t, p.wallet)
	for _, fault := range chainFaults {
		t.Run(fault.name, func(t *testing.T) {
			chaintest.TakeDown(t, a.Money.Chain(), fault.down)
			a.patient(t)

			r := a.do(t, request{path: "/wallets/me/balance", header: p.auth})
			var b struct {
				AvailableMinor int64           `json:"availableMinor"`
				DepositAddress string          `json:"depositAddress"`
				OnChain        json.RawMessage `json:"onChain"`
			}
			if r.Code != http.StatusOK || jsonDecode(r.Body.Bytes(), &b) != nil {
				t.Fatalf("GET /wallets/me/balance with the chain down: %d %s; want 200 with the platform balance", r.Code, r.Body)
			}
			if b.AvailableMinor != 1_250_000 || b.DepositAddress != a.Money.DepositAddress().String() || string(b.OnChain) != "null" {
				t.Errorf("GET /wallets/me/balance with the chain down: %s; want availableMinor 1250000, the deposit address and onChain null", r.Body)
			}

			page := a.do(t, request{path: "/wallet", header: map[string]string{"Cookie": cookie}})
			text := visibleText(page.Body.String())
			want := "Your wallet's on-chain balance could not be read just now: the Solana network did not answer."
			if page.Code != http.StatusOK || !strings.Contains(text, want) {
				t.Fatalf("the wallet page with the chain down: %d %q; want 200 saying %q", page.Code, text, want)
			}
			if got := section(page.Body.String(), "wallet-balances"); !strings.Contains(got, "1.25 USDC available") {
				t.Errorf("the wallet page with the chain down does not show the platform balance: %q", got)
			}
		})
	}
	// The chain is back: so are its figures.
	if b := a.balances(t, p.auth); b.available != 1_250_000 || b.onChain != 0 {
		t.Errorf("the balance once the chain answers again: %+v", b)
	}
}

// With the chain down, the reconciliation still answers (200, not 503):
// the ledger's totals, and every platform address it could not read named
// as unread, with chainMinor null. balanced stays honest: false while an
// address is unread. The admin page says the same in words.
func TestTheReconciliationNamesTheAddressesItCouldNotRead(t *testing.T) {
	adminWallet := newWallet(t)
	a := newTestApp(t, map[string]string{"WORKERS": "false", "ADMIN_WALLETS": adminWallet.address()})
	admin := a.admin(t, adminWallet)
	cookie := a.sessionCookie(t, adminWallet)
	vault := a.Money.DepositAddress().String()
	for _, fault := range chainFaults {
		t.Run(fault.name, func(t *testing.T) {
			chaintest.TakeDown(t, a.Money.Chain(), fault.down)
			a.patient(t)

			r := a.do(t, request{path: "/admin/reconciliation", header: admin.auth})
			var rec struct {
				Balanced        bool     `json:"balanced"`
				UnreadAddresses []string `json:"unreadAddresses"`
				Addresses       []struct {
					Address    string `json:"address"`
					ChainMinor *int64 `json:"chainMinor"`
				} `json:"addresses"`
			}
			if r.Code != http.StatusOK || jsonDecode(r.Body.Bytes(), &rec) != nil {
				t.Fatalf("GET /admin/reconciliation with the chain down: %d %s; want 200 naming the unread addresses", r.Code, r.Body)
			}
			if rec.Balanced || !slices.Contains(rec.UnreadAddresses, vault) || len(rec.UnreadAddresses) != len(rec.Addresses) {
				t.Errorf("the reconciliation with the chain down: %s; want balanced false and every address unread, the vault %s among them", r.Body, vault)
			}
			for _, l := range rec.Addresses {
				if l.ChainMinor != nil {
					t.Errorf("the unread address %s has chainMinor %d, want null", l.Address, *l.ChainMinor)
				}
			}

			page := a.do(t, request{path: "/admin", header: map[string]string{"Cookie": cookie}})
			text := section(page.Body.String(), "admin-books")
			if page.Code != http.StatusOK || !strings.Contains(text, "The books could not be checked: the Solana network did not answer for") ||
				!strings.Contains(text, vault+" not read") || strings.Contains(text, "The books balance.") {
				t.Errorf("the admin's books with the chain down: %d %q", page.Code, text)
			}
		})
	}
}
