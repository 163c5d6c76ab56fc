package money_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"testing"
	"time"

	"github.com/gagliardetto/solana-go"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"

	"wager/db"
	"wager/db/dbtest"
	"wager/domain"
	"wager/domain/money"
	"wager/domain/users"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

// newUser stores a user with a fresh wallet and returns it.
func newUser(t testing.TB) users.User {
	t.Helper()
	b := make([]byte, 6)
	rand.Read(b)
	u := users.User{WalletAddress: solana.NewWallet().PublicKey().String(), Username: "u_" + hex.EncodeToString(b),
		CreatedAt: time.Now(), UpdatedAt: time.Now()}
	if _, err := dbtest.DB(t).NewInsert().Model(&u).Returning("id").Exec(context.Background()); err != nil {
		t.Fatalf("create a user: %v", err)
	}
	return u
}

// post records p in a transaction of its own and reports whether it was
// recorded.
func post(t testing.TB, p money.Posting) (bool, error) {
	t.Helper()
	var posted bool
	err := db.Transact(context.Background(), dbtest.DB(t), func(ctx context.Context, tx db.Tx) error {
		var err error
		posted, err = money.Post(ctx, tx, nil, p)
		return err
	})
	return posted, err
}

// deposit credits a user's available balance from the vault, as a
// confirmed deposit does.
func deposit(t testing.TB, userID string, amount int64) {
	t.Helper()
	if _, err := post(t, money.Posting{Kind: money.KindDeposit, Reference: "deposit:" + uuid.NewString(),
		Entries: []money.Entry{{Account: money.Available(userID), Amount: amount}, {Account: money.Vault, Amount: -amount}}}); err != nil {
		t.Fatalf("deposit %d for %s: %v", amount, userID, err)
	}
}

func balance(t testing.TB, account string) int64 {
	t.Helper()
	b, err := money.BalanceOf(context.Background(), dbtest.DB(t), account)
	if err != nil {
		t.Fatalf("balance of %s: %v", account, err)
	}
	return b
}

// wantTotalsZero fails the test unless every balance and every entry of
// the ledger sum to zero.
func wantTotalsZero(t testing.TB) {
	t.Helper()
	balances, entries, err := money.Totals(context.Background(), dbtest.DB(t))
	if err != nil {
		t.Fatal(err)
	}
	if balances != 0 || entries != 0 {
		t.Errorf("ledger totals: got balances %d, entries %d; want 0 and 0", balances, entries)
	}
}

func referenceExists(t testing.TB, reference string) bool {
	t.Helper()
	ok, err := dbtest.DB(t).NewSelect().Table("ledger_transactions").Where("reference = ?", reference).Exists(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

func TestPostRefusesPostingsThatDoNotBalance(t *testing.T) {
	u := newUser(t)
	deposit(t, u.ID, 1_000)
	for _, tc := range []struct {
		name    string
		entries []money.Entry
	}{
		{"credit without a debit", []money.Entry{{money.Available(u.ID), 100}}},
		{"entries summing to +1", []money.Entry{{money.Available(u.ID), 101}, {money.Vault, -100}}},
		{"entries summing to -1", []money.Entry{{money.Available(u.ID), -100}, {money.Treasury, 99}}},
		{"a zero entry", []money.Entry{{money.Available(u.ID), 0}, {money.Treasury, 0}}},
		{"a zero entry beside a balanced pair", []money.Entry{{money.Available(u.ID), -5}, {money.Treasury, 5}, {money.Vault, 0}}},
		{"no entries", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ref := "unbalanced:" + uuid.NewString()
			posted, err := post(t, money.Posting{Kind: "test", Reference: ref, Entries: tc.entries})
			if err == nil || posted {
				t.Fatalf("Post: got posted=%v err=%v, want an error", posted, err)
			}
			if referenceExists(t, ref) {
				t.Errorf("a refused posting left its ledger transaction %s", ref)
			}
			if got := balance(t, money.Available(u.ID)); got != 1_000 {
				t.Errorf("available balance: got %d, want 1000 (unchanged)", got)
			}
			wantTotalsZero(t)
		})
	}
}

// The database refuses an unbalanced transaction at commit even when the
// Go check is bypassed.
func TestDatabaseRefusesUnbalancedEntries(t *testing.T) {
	ctx := context.Background()
	u := newUser(t)
	deposit(t, u.ID, 500)
	err := db.Transact(ctx, dbtest.DB(t), func(ctx context.Context, tx db.Tx) error {
		var id int64
		if err := tx.QueryRowContext(ctx, "INSERT INTO ledger_transactions (kind, reference) VALUES ('test', ?) RETURNING id",
			"raw:"+uuid.NewString()).Scan(&id); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, "INSERT INTO ledger_entries (transaction_id, account_id, amount) VALUES (?, ?, 7)",
			id, money.Available(u.ID))
		return err
	})
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "23514" {
		t.Fatalf("commit of entries summing to 7: got %v, want a check violation (23514)", err)
	}
	if got := balance(t, money.Available(u.ID)); got != 500 {
		t.Errorf("available balance: got %d, want 500 (unchanged)", got)
	}
	wantTotalsZero(t)
}

func TestPostIsIdempotentByReference(t *testing.T) {
	u := newUser(t)
	ref := "once:" + uuid.NewString()
	p := money.Posting{Kind: money.KindDeposit, Reference: ref,
		Entries: []money.Entry{{money.Available(u.ID), 250}, {money.Vault, -250}}}
	for i, want := range []bool{true, false, false} {
		posted, err := post(t, p)
		if err != nil {
			t.Fatalf("post %d: %v", i+1, err)
		}
		if posted != want {
			t.Errorf("post %d: got posted=%v, want %v", i+1, posted, want)
		}
	}
	// The same reference with other entries records nothing either: the
	// reference names one movement of money.
	other := money.Posting{Kind: money.KindDeposit, Reference: ref,
		Entries: []money.Entry{{money.Available(u.ID), 9_999}, {money.Vault, -9_999}}}
	if posted, err := post(t, other); err != nil || posted {
		t.Errorf("other entries under a used reference: got posted=%v err=%v, want false, nil", posted, err)
	}
	if got := balance(t, money.Available(u.ID)); got != 250 {
		t.Errorf("available balance: got %d, want 250 (credited once)", got)
	}
	var n int
	if err := dbtest.DB(t).QueryRowContext(context.Background(),
		"SELECT count(*) FROM ledger_entries e JOIN ledger_transactions x ON x.id = e.transaction_id WHERE x.reference = ?", ref).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Errorf("entries under %s: got %d, want 2", ref, n)
	}
	wantTotalsZero(t)
}

// PostAll posts in order, skips references posted before and refuses a
// reference twice in one call, which would record one transaction with
// both postings' entries.
func TestPostAllPostsEachReferenceOnce(t *testing.T) {
	u := newUser(t)
	before := "once:" + uuid.NewString()
	if _, err := post(t, money.Posting{Kind: money.KindDeposit, Reference: before,
		Entries: []money.Entry{{money.Available(u.ID), 100}, {money.Vault, -100}}}); err != nil {
		t.Fatal(err)
	}
	postAll := func(ps ...money.Posting) (int, error) {
		var n int
		err := db.Transact(context.Background(), dbtest.DB(t), func(ctx context.Context, tx db.Tx) error {
			var err error
			n, err = money.PostAll(ctx, tx, nil, ps)
			return err
		})
		return n, err
	}
	deposit := func(ref string, amount int64) money.Posting {
		return money.Posting{Kind: money.KindDeposit, Reference: ref,
			Entries: []money.Entry{{money.Available(u.ID), amount}, {money.Vault, -amount}}}
	}
	fresh := "new:" + uuid.NewString()
	if n, err := postAll(deposit(before, 100), deposit(fresh, 20), deposit("new:"+uuid.NewString(), 3)); err != nil || n != 2 {
		t.Fatalf("three postings, one posted before: %d %v, want 2 new", n, err)
	}
	if _, err := postAll(deposit("twice:"+fresh, 1), deposit("twice:"+fresh, 1)); err == nil {
		t.Error("a reference twice in one call was taken")
	}
	if got := balance(t, money.Available(u.ID)); got != 123 {
		t.Errorf("available balance: got %d, want 100 + 20 + 3", got)
	}
	wantTotalsZero(t)
}

func TestBalanceOf(t *testing.T) {
	u := newUser(t)
	if got := balance(t, money.Available(u.ID)); got != 0 {
		t.Errorf("a user's account before any posting: got %d, want 0", got)
	}
	if got := balance(t, "no-such-account"); got != 0 {
		t.Errorf("an unknown account: got %d, want 0", got)
	}
	deposit(t, u.ID, 1_000)
	deposit(t, u.ID, 234)
	if _, err := post(t, money.Posting{Kind: "stake", Reference: "stake:" + uuid.NewString(),
		Entries: []money.Entry{{money.Available(u.ID), -400}, {money.Locked(u.ID), 400}}}); err != nil {
		t.Fatal(err)
	}
	for account, want := range map[string]int64{money.Available(u.ID): 834, money.Locked(u.ID): 400} {
		if got := balance(t, account); got != want {
			t.Errorf("%s: got %d, want %d", account, got, want)
		}
	}
}

// Accounts of users, game pots and the treasury may not go negative; the
// chain mirrors (vault and escrows) carry minus what the platform holds on
// chain and may.
func TestAccountsThatMayNotGoNegative(t *testing.T) {
	gameID := uuid.NewString()
	for _, tc := range []struct {
		name    string
		account func(u users.User) string
		refused bool
	}{
		{"user available", func(u users.User) string { return money.Available(u.ID) }, true},
		{"user locked", func(u users.User) string { return money.Locked(u.ID) }, true},
		{"spectator pot", func(users.User) string { return money.SpectatorPot(gameID) }, true},
		{"treasury", func(users.User) string { return money.Treasury }, true},
		{"vault", func(users.User) string { return money.Vault }, false},
		{"game escrow", func(users.User) string { return money.Escrow(gameID) }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := newUser(t)
			account := tc.account(u)
			before := balance(t, account)
			debit := before + 1 // one minor unit more than the account holds
			if !tc.refused {
				debit = 1_000 // a chain mirror's balance is minus what the platform holds
			}
			ref := "overdraft:" + uuid.NewString()
			_, err := post(t, money.Posting{Kind: "test", Reference: ref,
				Entries: []money.Entry{{account, -debit}, {money.Available(u.ID), debit}}})
			if !tc.refused {
				if err != nil {
					t.Fatalf("debit of %d from %s: %v", debit, account, err)
				}
				if got := balance(t, account); got != before-debit {
					t.Errorf("%s: got %d, want %d", account, got, before-debit)
				}
				return
			}
			if code := domain.ErrorCode(err); code != domain.CodeInsufficientFunds {
				t.Fatalf("debit of %d from %s holding %d: got %v, want %s", debit, account, before, err, domain.CodeInsufficientFunds)
			}
			if referenceExists(t, ref) {
				t.Errorf("the refused overdraft left its ledger transaction")
			}
			if got := balance(t, account); got != before {
				t.Errorf("%s: got %d, want %d (unchanged)", account, got, before)
			}
			if got := balance(t, money.Available(u.ID)); got != 0 {
				t.Errorf("credited side: got %d, want 0 (unchanged)", got)
			}
			wantTotalsZero(t)
		})
	}
}

// The overdraft rule is the database's, not only Post's: a raw entry that
// would take a user's balance below zero fails at once.
func TestDatabaseRefusesAUserOverdraft(t *testing.T) {
	ctx := context.Background()
	u := newUser(t)
	deposit(t, u.ID, 100)
	err := db.Transact(ctx, dbtest.DB(t), func(ctx context.Context, tx db.Tx) error {
		var id int64
		if err := tx.QueryRowContext(ctx, "INSERT INTO ledger_transactions (kind, reference) VALUES ('test', ?) RETURNING id",
			"raw:"+uuid.NewString()).Scan(&id); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO ledger_entries (transaction_id, account_id, amount) VALUES (?, ?, -101), (?, ?, 101)`,
			id, money.Available(u.ID), id, money.Vault)
		return err
	})
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.ConstraintName != "ledger_accounts_no_overdraft" {
		t.Fatalf("raw overdraft: got %v, want a violation of ledger_accounts_no_overdraft", err)
	}
	if got := balance(t, money.Available(u.ID)); got != 100 {
		t.Errorf("available balance: got %d, want 100", got)
	}
}

func TestLedgerIsAppendOnly(t *testing.T) {
	ctx := context.Background()
	u := newUser(t)
	ref := "deposit:" + uuid.NewString()
	if _, err := post(t, money.Posting{Kind: money.KindDeposit, Reference: ref,
		Entries: []money.Entry{{money.Available(u.ID), 70}, {money.Vault, -70}}}); err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{
		"UPDATE ledger_entries SET amount = amount * 2 WHERE transaction_id = (SELECT id FROM ledger_transactions WHERE reference = ?)",
		"DELETE FROM ledger_entries WHERE transaction_id = (SELECT id FROM ledger_transactions WHERE reference = ?)",
		"UPDATE ledger_transactions SET memo = 'edited' WHERE reference = ?",
		"DELETE FROM ledger_transactions WHERE reference = ?",
	} {
		if _, err := dbtest.DB(t).ExecContext(ctx, stmt, ref); err == nil {
			t.Errorf("%s: the database accepted it, want a refusal", stmt)
		}
	}
	if got := balance(t, money.Available(u.ID)); got != 70 {
		t.Errorf("available balance: got %d, want 70", got)
	}
}

func TestFormatUSDC(t *testing.T) {
	for _, tc := range []struct {
		minor int64
		want  string
	}{
		{0, "0.00"}, {1, "0.000001"}, {10_000, "0.01"}, {1_000_000, "1.00"}, {1_500_000, "1.50"},
		{123_456_789, "123.456789"}, {-2_500_000, "-2.50"}, {100_000 * 1_000_000, "100000.00"}, {1_230_000, "1.23"},
	} {
		if got := money.FormatUSDC(tc.minor); got != tc.want {
			t.Errorf("FormatUSDC(%d): got %q, want %q", tc.minor, got, tc.want)
		}
		if got := money.USDC(tc.minor); got != tc.want+" USDC" {
			t.Errorf("USDC(%d): got %q, want %q", tc.minor, got, tc.want+" USDC")
		}
	}
}
