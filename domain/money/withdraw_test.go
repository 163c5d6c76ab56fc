package money_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/gagliardetto/solana-go"

	"wager/chain"
	"wager/chain/localchain"
	"wager/db/dbtest"
	"wager/domain"
	"wager/domain/money"
	"wager/domain/users"
)

// bank is the money service on the embedded chain, whose vault holds real
// (local) USDC.
type bank struct {
	money  *money.Service
	chain  *localchain.Chain
	client *chain.Client
	keys   *chain.Keys
}

func newBank(t testing.TB) *bank {
	t.Helper()
	ctx := context.Background()
	keys := chain.NewKeys(make([]byte, 32))
	lc, err := localchain.New(ctx, dbtest.DB(t), time.Now, keys.LocalMint().PublicKey(), keys.LocalMintAuthority().PublicKey())
	if err != nil {
		t.Fatal(err)
	}
	client := chain.NewClient("http://embedded-chain", localchain.Transport{Chain: lc})
	if _, err := lc.Airdrop(ctx, keys.FeePayer().PublicKey(), 10_000_000_000); err != nil {
		t.Fatal(err)
	}
	m := money.New(dbtest.DB(t), client, keys, lc.Mint, domain.SystemClock, slog.New(slog.DiscardHandler), money.Confirmers{}, money.Deps{Faucet: lc})
	return &bank{money: m, chain: lc, client: client, keys: keys}
}

func (b *bank) usdc(t testing.TB, owner solana.PublicKey) int64 {
	t.Helper()
	n, err := b.client.TokenBalance(context.Background(), owner, b.chain.Mint)
	if err != nil {
		t.Fatal(err)
	}
	return int64(n)
}

// fundVault puts amount of USDC in the vault on chain and credits it to
// the user, as a confirmed deposit does.
func (b *bank) fundVault(t testing.TB, u users.User, amount int64) {
	t.Helper()
	if _, err := b.chain.MintTo(context.Background(), b.money.DepositAddress(), uint64(amount)); err != nil {
		t.Fatal(err)
	}
	deposit(t, u.ID, amount)
}

func (b *bank) history(t testing.TB, u users.User) []money.Activity {
	t.Helper()
	h, err := b.money.History(context.Background(), u.ID, 10, 0)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestWithdraw(t *testing.T) {
	ctx := context.Background()
	b := newBank(t)
	u := newUser(t)
	b.fundVault(t, u, 10*1_000_000)
	wallet := solana.MustPublicKeyFromBase58(u.WalletAddress)
	vaultBefore, ledgerVaultBefore := b.usdc(t, b.money.DepositAddress()), balance(t, money.Vault)

	w, err := b.money.Withdraw(ctx, u, 3_500_000, "")
	if err != nil {
		t.Fatal(err)
	}
	if w.Status != "confirmed" || w.AmountMinor != 3_500_000 || !w.OpenedAccount {
		t.Errorf("withdrawal: got %+v, want confirmed, 3500000, having opened the wallet's USDC account", w)
	}
	if got := balance(t, money.Available(u.ID)); got != 6_500_000 {
		t.Errorf("available balance: got %d, want 6500000", got)
	}
	if got := b.usdc(t, wallet); got != 3_500_000 {
		t.Errorf("wallet on chain: got %d, want 3500000", got)
	}
	if got := vaultBefore - b.usdc(t, b.money.DepositAddress()); got != 3_500_000 {
		t.Errorf("vault on chain: got -%d, want -3500000", got)
	}
	if got := balance(t, money.Vault) - ledgerVaultBefore; got != 3_500_000 {
		t.Errorf("vault in the ledger: got %+d, want +3500000 (minus what the vault holds)", got)
	}
	if h := b.history(t, u); len(h) == 0 || h[0].Kind != "withdrawal" || h[0].AmountMinor != -3_500_000 || h[0].Status != "confirmed" {
		t.Errorf("wallet history: got %+v, want a confirmed withdrawal of -3500000 first", h)
	}
	wantTotalsZero(t)

	// The account is open now: the next withdrawal does not open it.
	w2, err := b.money.Withdraw(ctx, u, 500_000, "")
	if err != nil || w2.OpenedAccount || w2.Status != "confirmed" {
		t.Errorf("second withdrawal: got %+v, %v; want confirmed without opening an account", w2, err)
	}
	if got := balance(t, money.Available(u.ID)); got != 6_000_000 {
		t.Errorf("available balance: got %d, want 6000000", got)
	}
}

func TestWithdrawRefusals(t *testing.T) {
	ctx := context.Background()
	b := newBank(t)
	u := newUser(t)
	b.fundVault(t, u, 2_000_000)
	for _, tc := range []struct {
		name   string
		amount int64
		key    string
		code   string
	}{
		{"nothing", 0, "", domain.CodeValidation},
		{"a negative amount", -5, "", domain.CodeValidation},
		{"over the maximum", money.MaxAmount + 1, "", domain.CodeValidation},
		{"more than the balance", 2_000_001, "", domain.CodeInsufficientFunds},
		{"an idempotency key too long", 1, strings.Repeat("k", money.MaxIdempotencyKey+1), domain.CodeValidation},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := b.money.Withdraw(ctx, u, tc.amount, tc.key)
			wantCode(t, "Withdraw", err, tc.code)
			if got := balance(t, money.Available(u.ID)); got != 2_000_000 {
				t.Errorf("available balance: got %d, want 2000000", got)
			}
		})
	}
}

func TestWithdrawIsIdempotentByKey(t *testing.T) {
	ctx := context.Background()
	b := newBank(t)
	u := newUser(t)
	b.fundVault(t, u, 5_000_000)
	first, err := b.money.Withdraw(ctx, u, 1_000_000, "rent-march")
	if err != nil {
		t.Fatal(err)
	}
	again, err := b.money.Withdraw(ctx, u, 1_000_000, "rent-march")
	if err != nil || again.ID != first.ID || again.Signature != first.Signature {
		t.Errorf("the same key again: got %+v, %v; want the first withdrawal %s", again, err, first.ID)
	}
	_, err = b.money.Withdraw(ctx, u, 2_000_000, "rent-march")
	wantCode(t, "the same key for another amount", err, domain.CodeConflict)
	if got := balance(t, money.Available(u.ID)); got != 4_000_000 {
		t.Errorf("available balance: got %d, want 4000000 (debited once)", got)
	}
	if got := b.usdc(t, solana.MustPublicKeyFromBase58(u.WalletAddress)); got != 1_000_000 {
		t.Errorf("wallet on chain: got %d, want 1000000 (sent once)", got)
	}
	// Keys belong to their user: another user's same key is a new withdrawal.
	v := newUser(t)
	b.fundVault(t, v, 1_000_000)
	other, err := b.money.Withdraw(ctx, v, 1_000_000, "rent-march")
	if err != nil || other.ID == first.ID {
		t.Errorf("another user's same key: got %+v, %v; want a withdrawal of their own", other, err)
	}
}

// A withdrawal the chain refuses stays pending while a copy of it sent
// before could still land (a refusal proves nothing of that one); once the
// finalized height has passed its last valid one, unseen, the resolver
// fails it and gives the money back: the debit is reversed by a posting of
// its own and the history shows it failed.
func TestRefusedWithdrawalRestoresTheBalanceOnceItCanNoLongerLand(t *testing.T) {
	ctx := context.Background()
	b := newBank(t)
	u := newUser(t)
	// More on the user's balance than the vault holds on chain.
	held := b.usdc(t, b.money.DepositAddress())
	amount := held + 1_000_000
	deposit(t, u.ID, amount)

	w, err := b.money.Withdraw(ctx, u, amount, "")
	if err != nil || w.Status != "pending" {
		t.Fatalf("a withdrawal the vault cannot pay: %+v, %v; want it pending", w, err)
	}
	if got := balance(t, money.Available(u.ID)); got != 0 {
		t.Errorf("available balance while it is pending: got %d, want 0", got)
	}

	// The chain moves on: its blockhash expires, and the finalized height
	// passes its last valid one.
	tx, err := solana.TransactionFromBytes(w.Raw)
	if err != nil {
		t.Fatal(err)
	}
	db := dbtest.DB(t)
	if _, err := db.ExecContext(ctx, "UPDATE localchain.blockhashes SET created_at = now() - interval '10 minutes' WHERE hash = ?",
		tx.Message.RecentBlockhash.String()); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `UPDATE withdrawals SET last_valid_block_height = last_valid_block_height - 10000,
		updated_at = now() - interval '1 minute' WHERE id = ?`, w.ID); err != nil {
		t.Fatal(err)
	}
	if err := b.money.ResolvePendingWithdrawals(ctx); err != nil {
		t.Fatal(err)
	}
	var status, reason string
	if err := db.QueryRowContext(ctx, "SELECT status, error FROM withdrawals WHERE id = ?", w.ID).Scan(&status, &reason); err != nil {
		t.Fatal(err)
	}
	if status != "failed" || !strings.Contains(reason, "blockhash expired") {
		t.Errorf("withdrawal: got status %q, error %q; want failed, saying it expired", status, reason)
	}
	if got := balance(t, money.Available(u.ID)); got != amount {
		t.Errorf("available balance: got %d, want %d (restored)", got, amount)
	}
	if h := b.history(t, u); len(h) == 0 || h[0].Status != "failed" {
		t.Errorf("wallet history: got %+v, want the failed withdrawal first", h)
	}
	if got := b.usdc(t, b.money.DepositAddress()); got != held {
		t.Errorf("vault on chain: got %d, want %d (unchanged)", got, held)
	}
	wantTotalsZero(t)
}

func wantCode(t testing.TB, what string, err error, code string) {
	t.Helper()
	if got := domain.ErrorCode(err); err == nil || got != code {
		t.Errorf("%s: got error %v, want code %s", what, err, code)
	}
}
