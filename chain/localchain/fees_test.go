package localchain_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/gagliardetto/solana-go"

	"wager/chain"
	"wager/chain/localchain"
)

// landAt sends, at each price, a transfer from Alice to Bob paid by the fee
// payer: recent transactions writing the accounts a platform transfer
// writes.
func (f *fixture) landAt(t *testing.T, prices ...uint64) {
	t.Helper()
	for i, p := range prices {
		bh, err := f.client.Blockhash(f.context)
		if err != nil {
			t.Fatal(err)
		}
		tx, err := chain.Transfer{FeePayer: f.payer.PublicKey(), From: f.alice.PublicKey(), To: f.bob.PublicKey(),
			Mint: f.mint, Amount: uint64(i + 1), Memo: "busy", Blockhash: bh.Hash}.Build(chain.Budget{Units: 50_000, Price: p})
		if err != nil {
			t.Fatal(err)
		}
		if err := chain.SignWith(tx, f.payer, f.alice); err != nil {
			t.Fatal(err)
		}
		if _, err := f.client.SendAndConfirm(f.context, tx, 5*time.Second); err != nil {
			t.Fatal(err)
		}
	}
}

// budgeted prepares a platform transfer from Alice to Bob through the
// client's one budgeting path.
func (f *fixture) budgeted(t *testing.T, c *chain.Client) *solana.Transaction {
	t.Helper()
	bh, err := c.Blockhash(f.context)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := c.Budgeted(f.context, chain.Transfer{FeePayer: f.payer.PublicKey(), From: f.alice.PublicKey(),
		To: f.bob.PublicKey(), Mint: f.mint, Amount: 1, Memo: "wager:transfer:x", Blockhash: bh.Hash}.Build)
	if err != nil {
		t.Fatal(err)
	}
	return tx
}

func TestABusyAccountSetsThePriceAndASpikeIsCapped(t *testing.T) {
	f := newFixture(t)
	// Eight recent transactions wrote the accounts a new transfer writes,
	// at rising prices: the new one pays the 75th percentile (the 6th of 8).
	f.landAt(t, 10_000, 20_000, 30_000, 40_000, 50_000, 60_000, 70_000, 80_000)
	if got := chain.BudgetOf(f.budgeted(t, f.client)).Price; got != 60_000 {
		t.Errorf("price after busy slots: %d micro-lamports per unit, want the 75th percentile 60000", got)
	}

	// A spike above MAX_PRIORITY_FEE_MICROLAMPORTS: the transaction pays
	// the cap, not the spike.
	f.landAt(t, 9_000_000, 9_000_000, 9_000_000, 9_000_000, 9_000_000, 9_000_000, 9_000_000, 9_000_000)
	capped := *f.client
	capped.Fees.MaxPrice = 250_000
	if got := chain.BudgetOf(f.budgeted(t, &capped)).Price; got != 250_000 {
		t.Errorf("price in a spike: %d, want the cap 250000", got)
	}
	if got := chain.BudgetOf(f.budgeted(t, f.client)).Price; got != chain.DefaultMaxPriorityFee {
		t.Errorf("price in a spike with the default cap: %d, want %d", got, chain.DefaultMaxPriorityFee)
	}
}

func TestAQuietAccountPaysTheFloorPrice(t *testing.T) {
	f := newFixture(t)
	if got := chain.BudgetOf(f.budgeted(t, f.client)).Price; got != chain.MinComputeUnitPrice {
		t.Errorf("price with no recent transactions: %d, want the floor %d", got, chain.MinComputeUnitPrice)
	}
}

// The compute unit limit is the simulated units plus the margin, the
// transaction lands within it, and the fee the fee payer's budget counts
// (chain.FeeOf) is the fee the chain charged.
func TestTheLimitIsSimulationPlusMarginAndTheFeeIsWhatTheChainCharged(t *testing.T) {
	f := newFixture(t)
	tx := f.budgeted(t, f.client)
	units, err := f.client.SimulatedUnits(f.context, tx)
	if err != nil {
		t.Fatal(err)
	}
	// Compute budget 2 x 150, opening Bob's account 13,525 + 1,500 per
	// bump tried, TransferChecked 105, a memo with one signer 513.
	_, bump, _ := solana.FindAssociatedTokenAddress(f.bob.PublicKey(), f.mint)
	if want := uint64(300 + 13_525 + 1_500*(255-int(bump)) + 105 + 513); units != want {
		t.Errorf("simulated units: %d, want %d", units, want)
	}
	b := chain.BudgetOf(tx)
	if want := units + units/10 + 3_000 + 10_000; uint64(b.Units) != want {
		t.Errorf("limit %d, want %d simulated + 10 %% + 3000 + 10000 for the account it opens", b.Units, want)
	}
	_, _, before := f.balances(t)
	if err := chain.SignWith(tx, f.payer, f.alice); err != nil {
		t.Fatal(err)
	}
	if _, err := f.client.SendAndConfirm(f.context, tx, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	_, _, after := f.balances(t)
	var charged int64
	if err := f.db.NewSelect().Table("localchain.transactions").Column("fee").
		Where("signature = ?", tx.Signatures[0].String()).Scan(f.context, &charged); err != nil {
		t.Fatal(err)
	}
	if fee := chain.FeeOf(tx); fee != charged || int64(before-after) != fee+chain.TokenAccountRent {
		t.Errorf("FeeOf %d, the chain charged %d, the fee payer paid %d (with %d of rent)", fee, charged, before-after, chain.TokenAccountRent)
	}
}

func TestALimitBelowTheSimulatedUnitsFails(t *testing.T) {
	f := newFixture(t)
	tx := f.budgeted(t, f.client)
	units, err := f.client.SimulatedUnits(f.context, tx)
	if err != nil {
		t.Fatal(err)
	}
	bh := tx.Message.RecentBlockhash
	short, err := chain.Transfer{FeePayer: f.payer.PublicKey(), From: f.alice.PublicKey(), To: f.bob.PublicKey(),
		Mint: f.mint, Amount: 1, Memo: "wager:transfer:x", Blockhash: bh}.Build(chain.Budget{Units: uint32(units) - 1, Price: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := chain.SignWith(short, f.payer, f.alice); err != nil {
		t.Fatal(err)
	}
	_, err = f.client.SendAndConfirm(f.context, short, 5*time.Second)
	wantRejected(t, err, "Computational budget exceeded")
}

func TestSimulationChangesNothing(t *testing.T) {
	f := newFixture(t)
	a0, b0, p0 := f.balances(t)
	tx := f.transfer(t, 1_000) // unsigned
	if _, err := f.client.SimulatedUnits(f.context, tx); err != nil {
		t.Fatal(err)
	}
	if a, b, p := f.balances(t); a != a0 || b != b0 || p != p0 {
		t.Errorf("after a simulation: alice %d bob %d payer %d, want %d %d %d", a, b, p, a0, b0, p0)
	}
	if open, err := f.client.AccountExists(f.context, chain.ATA(f.bob.PublicKey(), f.mint)); err != nil || open {
		t.Errorf("Bob's token account after a simulation: open %v (%v), want none", open, err)
	}
	// A transaction that would fail says why and changes nothing either.
	huge := f.transfer(t, 1_000_000_000)
	if _, err := f.client.SimulatedUnits(f.context, huge); err == nil {
		t.Error("simulating a transfer of more than Alice holds: no error")
	}
}

// failing answers an RPC error to the named methods and passes the others
// to the chain.
type failing struct {
	chain   *localchain.Chain
	methods map[string]bool
}

func (f failing) Do(req *http.Request) (*http.Response, error) {
	body, _ := io.ReadAll(req.Body)
	var call struct {
		Method string `json:"method"`
	}
	_ = json.Unmarshal(body, &call)
	if f.methods[call.Method] {
		return nil, errors.New("connection reset by peer")
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	return localchain.Transport{Chain: f.chain}.Do(req)
}

func (failing) CloseIdleConnections() {}

func TestWhenTheRPCCannotTellTheTransactionGetsTheDefaultBudget(t *testing.T) {
	f := newFixture(t)
	c := chain.NewClient("http://localchain", failing{chain: f.chain,
		methods: map[string]bool{"getRecentPrioritizationFees": true, "simulateTransaction": true}})
	tx := f.budgeted(t, c)
	if got := chain.BudgetOf(tx); got != chain.DefaultBudget {
		t.Errorf("budget when the RPC fails: %+v, want %+v", got, chain.DefaultBudget)
	}
	if err := chain.SignWith(tx, f.payer, f.alice); err != nil {
		t.Fatal(err)
	}
	if _, err := f.client.SendAndConfirm(context.Background(), tx, 5*time.Second); err != nil {
		t.Fatalf("the transaction with the default budget: %v", err)
	}
}
