package localnet_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gagliardetto/solana-go"

	"wager/chain"
)

// platformTransfer is the platform's transfer from Alice to Bob (opening
// Bob's token account at the fee payer's cost), with budget b.
func (w *world) platformTransfer(bh solana.Hash, amount uint64) chain.Transfer {
	return chain.Transfer{FeePayer: w.payer.PublicKey(), From: w.alice.PublicKey(), To: w.bob.PublicKey(),
		Mint: w.mint, Amount: amount, Memo: "wager:transfer:7f0c1c1e-8a0b-4a8e-9f0f-3f1d2c3b4a59", Blockhash: bh}
}

// On the real SPL programs, a transfer that also opens the recipient's
// associated token account lands with the limit the client takes from
// simulation plus the margin, and the fee the fee payer's budget counts is
// what the chain took; a limit one unit below what it consumed fails.
func TestSimulationPlusMarginLandsOnTheRealPrograms(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	c := chain.NewClient(w.ln.URL, nil)

	bh := w.blockhash(t)
	short, err := w.platformTransfer(bh, 1).Build(chain.Budget{Units: chain.MaxComputeUnits, Price: 0})
	if err != nil {
		t.Fatal(err)
	}
	units, err := c.SimulatedUnits(ctx, short)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("LiteSVM: a transfer opening a token account consumed %d units", units)
	if short, err = w.platformTransfer(bh, 1).Build(chain.Budget{Units: uint32(units) - 1, Price: 1}); err != nil {
		t.Fatal(err)
	}
	if err := chain.SignWith(short, w.payer, w.alice); err != nil {
		t.Fatal(err)
	}
	_, err = c.SendAndConfirm(ctx, short, 5*time.Second)
	var rejected *chain.RejectedError
	// A program out of compute fails with ComputationalBudgetExceeded, or,
	// as the memo program here, with ProgramFailedToComplete.
	if !errors.As(err, &rejected) || !(strings.Contains(rejected.Reason, "Computational budget exceeded") ||
		strings.Contains(rejected.Reason, "ProgramFailedToComplete")) {
		t.Fatalf("a limit of %d, one below the units consumed: %v, want refused for the compute budget", units-1, err)
	}

	tx, err := c.Budgeted(ctx, w.platformTransfer(bh, 1).Build)
	if err != nil {
		t.Fatal(err)
	}
	b := chain.BudgetOf(tx)
	if want := chain.UnitLimit(units, 1); b.Units != want || uint64(want) != units+units/10+3_000+10_000 {
		t.Errorf("limit %d, want %d: %d simulated + 10 %% + 3000 + 10000 for the account it opens", b.Units, want, units)
	}
	before := w.lamports(t, w.payer.PublicKey())
	if err := chain.SignWith(tx, w.payer, w.alice); err != nil {
		t.Fatal(err)
	}
	if _, err := c.SendAndConfirm(ctx, tx, 5*time.Second); err != nil {
		t.Fatalf("the budgeted transfer on the real programs: %v", err)
	}
	if paid := int64(before - w.lamports(t, w.payer.PublicKey())); paid != chain.FeeOf(tx)+chain.TokenAccountRent {
		t.Errorf("the fee payer paid %d lamports, FeeOf counts %d and the rent is %d", paid, chain.FeeOf(tx), chain.TokenAccountRent)
	}
}

// With recent transactions paying high prices to write the accounts a new
// transfer writes, it pays their 75th percentile; a spike pays the cap.
func TestBusyAccountsSetThePriceOnLiteSVM(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	c := chain.NewClient(w.ln.URL, nil)
	land := func(prices ...uint64) {
		for i, p := range prices {
			tx, err := w.platformTransfer(w.blockhash(t), uint64(i+1)).Build(chain.Budget{Units: 60_000, Price: p})
			if err != nil {
				t.Fatal(err)
			}
			if err := chain.SignWith(tx, w.payer, w.alice); err != nil {
				t.Fatal(err)
			}
			if _, err := c.SendAndConfirm(ctx, tx, 5*time.Second); err != nil {
				t.Fatal(err)
			}
		}
	}
	land(5_000, 15_000, 25_000, 35_000)
	tx, err := c.Budgeted(ctx, w.platformTransfer(w.blockhash(t), 100).Build)
	if err != nil {
		t.Fatal(err)
	}
	if got := chain.BudgetOf(tx).Price; got != 25_000 {
		t.Errorf("price: %d, want 25000, the 75th percentile of 5000, 15000, 25000, 35000", got)
	}
	land(3_000_000, 3_000_000, 3_000_000, 3_000_000, 3_000_000)
	c.Fees.MaxPrice = 400_000
	if tx, err = c.Budgeted(ctx, w.platformTransfer(w.blockhash(t), 100).Build); err != nil {
		t.Fatal(err)
	}
	if got := chain.BudgetOf(tx).Price; got != 400_000 {
		t.Errorf("price in a spike: %d, want the cap 400000", got)
	}
	if err := chain.SignWith(tx, w.payer, w.alice); err != nil {
		t.Fatal(err)
	}
	if _, err := c.SendAndConfirm(ctx, tx, 5*time.Second); err != nil {
		t.Fatalf("the capped transfer: %v", err)
	}
}
