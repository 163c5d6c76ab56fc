package handlers_test

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"wager.example.com/sdk/sumtree"
	"wager/db"
	"wager/db/dbtest"
	"wager/domain/money"
)

// wantReserves takes a proof of reserves and checks it as its users would,
// over the API: the snapshot is signed by the log's published key, its
// liabilities are what the ledger owes (every account but the treasury's
// and the chain mirrors'), its assets cover them, each of people finds
// their leaf in the root through their own path (with at least their
// platform balance in it), and their leaves with what others (the users
// of the package's other tests) are owed are all of the liabilities:
// nobody owed anything is left out.
func (a *testApp) wantReserves(t testing.TB, people []player, others int64) {
	t.Helper()
	if _, err := a.Reserves.Take(context.Background()); err != nil {
		t.Fatal(err)
	}
	var snap sumtree.Snapshot
	if err := json.Unmarshal(a.do(t, request{path: "/reserves"}).Body.Bytes(), &snap); err != nil {
		t.Fatal(err)
	}
	key := strings.TrimSpace(a.do(t, request{path: "/transparency/key"}).Body.String())
	if err := snap.CheckSignature(key); err != nil {
		t.Fatal(err)
	}
	if owed := a.liabilities(t); snap.LiabilitiesMinor != owed {
		t.Fatalf("the snapshot's liabilities are %d, the ledger owes %d", snap.LiabilitiesMinor, owed)
	}
	if err := snap.CheckAssets(); err != nil {
		t.Fatal(err)
	}
	var sum int64
	for _, p := range people {
		r := a.do(t, request{path: "/users/me/reserves-proof", header: p.auth})
		if r.Code == 404 {
			if b := a.balances(t, p.auth); b.available+b.locked != 0 {
				t.Fatalf("user %s holds %d on the platform and has no leaf in the reserves", p.id, b.available+b.locked)
			}
			continue
		}
		var proof sumtree.Proof
		if err := json.Unmarshal(r.Body.Bytes(), &proof); err != nil {
			t.Fatalf("proof of %s: %d %s", p.id, r.Code, r.Body)
		}
		if err := proof.Check(snap); err != nil {
			t.Fatalf("the proof of user %s: %v", p.id, err)
		}
		if b := a.balances(t, p.auth); proof.UserID != p.id || proof.BalanceMinor < b.available+b.locked {
			t.Fatalf("the leaf of user %s is %s's of %d, less than their platform balance %d", p.id, proof.UserID, proof.BalanceMinor,
				b.available+b.locked)
		}
		sum += proof.BalanceMinor
	}
	if sum+others != snap.LiabilitiesMinor {
		t.Fatalf("the users' leaves add up to %d and others are owed %d, the liabilities are %d: someone owed is left out",
			sum, others, snap.LiabilitiesMinor)
	}
}

// liabilities is what the ledger says the platform owes its users: every
// account but the treasury's and the chain mirrors'.
func (a *testApp) liabilities(t testing.TB) int64 {
	t.Helper()
	var owed int64
	if err := a.DB.NewRaw("SELECT coalesce(sum(balance), 0) FROM ledger_accounts WHERE kind NOT IN ('treasury', 'chain')").
		Scan(context.Background(), &owed); err != nil {
		t.Fatal(err)
	}
	return owed
}

// The attack the alert is for: a platform that credits balances it does
// not hold. A user is credited 5 USDC the vault never received; the next
// proof of reserves counts it in the liabilities, its assets fall short by
// exactly that, reserves_shortfall_minor on /metrics says so, and the
// admin's books say it in red; once the USDC arrives, both are quiet.
func TestAssetsBelowLiabilitiesAlertOnMetricsAndTheBooksPage(t *testing.T) {
	adminWallet := newWallet(t)
	// A database of its own: its liabilities and assets are this test's.
	a := newTestApp(t, map[string]string{"WORKERS": "false", "ADMIN_WALLETS": adminWallet.address(), "DATABASE_URL": dbtest.Fresh(t)})
	cookie := a.sessionCookie(t, adminWallet)
	ctx := context.Background()
	books := func() string {
		return section(a.do(t, request{path: "/admin", header: map[string]string{"Cookie": cookie}}).Body.String(), "admin-books")
	}
	if text := books(); !strings.Contains(text, "No proof of reserves has been taken yet.") {
		t.Errorf("the books before any snapshot: %q", text)
	}
	if n := metric(t, a, "reserves_shortfall_minor"); !math.IsNaN(n) {
		t.Errorf("reserves_shortfall_minor before any snapshot: %v, want NaN", n)
	}
	p := a.depositor(t, 2_000_000)
	a.wantReserves(t, []player{p}, 0)
	if n := metric(t, a, "reserves_shortfall_minor"); n != 0 {
		t.Errorf("reserves_shortfall_minor with every unit held: %v", n)
	}
	if text := books(); !strings.Contains(text, "the assets on chain, 2.00 USDC, cover the liabilities, 2.00 USDC owed to 1 user.") {
		t.Errorf("the books with every unit held: %q", text)
	}
	if page := a.do(t, request{path: "/transparency"}).Body.String(); !strings.Contains(page, "The assets on chain cover everything owed to 1 user.") ||
		!strings.Contains(page, "100.00 %") {
		t.Errorf("the transparency page with every unit held does not say so: %s", section(page, "transparency-reserves"))
	}

	err := db.Transact(ctx, a.DB, func(ctx context.Context, tx db.Tx) error {
		_, err := money.Post(ctx, tx, nil, money.Posting{Kind: "test_credit", Reference: "test:credit:" + p.id,
			Entries: []money.Entry{{Account: money.Vault, Amount: -5_000_000}, {Account: money.Available(p.id), Amount: 5_000_000}}})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Reserves.Take(ctx); err != nil {
		t.Fatal(err)
	}
	if n := metric(t, a, "reserves_shortfall_minor"); n != 5_000_000 {
		t.Errorf("reserves_shortfall_minor with 5 USDC credited and never received: %v, want 5000000", n)
	}
	text := books()
	if want := "the assets on chain, 2.00 USDC, are below the liabilities, 7.00 USDC owed to 1 user: 5.00 USDC short."; !strings.Contains(text, want) {
		t.Errorf("the books do not say %q: %q", want, text)
	}
	if page := a.do(t, request{path: "/transparency"}).Body.String(); !strings.Contains(page, "The assets on chain are below what is owed to 1 user.") ||
		!strings.Contains(page, "28.57 %") {
		t.Errorf("the transparency page with 5 USDC short does not say so: %s", section(page, "transparency-reserves"))
	}

	if _, err := a.LocalChain.MintTo(ctx, a.Money.DepositAddress(), 5_000_000); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Reserves.Take(ctx); err != nil {
		t.Fatal(err)
	}
	if n := metric(t, a, "reserves_shortfall_minor"); n != 0 {
		t.Errorf("reserves_shortfall_minor once the USDC arrived: %v", n)
	}
}
