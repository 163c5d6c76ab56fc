package onchain_test

import (
	"context"
	"testing"
	"time"

	"github.com/gagliardetto/solana-go"

	"wager/chain"
	"wager/chain/localchain"
	"wager/db/dbtest"
	"wager/e2e/localnet"
)

// TestEmbeddedChainEstimatesTheUnitsLiteSVMConsumes simulates each kind of
// transaction the platform builds on both chains: the embedded chain's
// per-instruction estimate must be the units the real programs consume, so
// that a limit taken from simulating on it lands on a real cluster too.
func TestEmbeddedChainEstimatesTheUnitsLiteSVMConsumes(t *testing.T) {
	ctx := context.Background()
	keys := chain.NewKeys([]byte("units parity"))
	mint, authority := keys.LocalMint().PublicKey(), keys.LocalMintAuthority().PublicKey()
	payer, holder, emptied := keys.FeePayer(), keys.Derive("holder"), keys.Derive("emptied")

	l := localnet.Start(t)
	l.CreateMint(t, mint, chain.USDCDecimals, authority)
	l.Airdrop(t, payer.PublicKey(), 1_000_000_000)
	l.MintTo(t, mint, holder.PublicKey(), 5_000_000)
	l.MintTo(t, mint, emptied.PublicKey(), 7)
	lc, err := localchain.New(ctx, dbtest.DB(t), time.Now, mint, authority)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lc.Airdrop(ctx, payer.PublicKey(), 1_000_000_000); err != nil {
		t.Fatal(err)
	}
	for owner, amount := range map[solana.PublicKey]uint64{holder.PublicKey(): 5_000_000, emptied.PublicKey(): 7} {
		if _, err := lc.MintTo(ctx, owner, amount); err != nil {
			t.Fatal(err)
		}
	}
	memo := "wager:deposit:7f0c1c1e-8a0b-4a8e-9f0f-3f1d2c3b4a59"
	transfer := func(t chain.Transfer) func(solana.Hash) (*solana.Transaction, error) {
		return func(bh solana.Hash) (*solana.Transaction, error) {
			t.FeePayer, t.Mint, t.Memo, t.Blockhash = payer.PublicKey(), mint, memo, bh
			return t.Build(chain.Budget{Units: chain.MaxComputeUnits, Price: chain.MinComputeUnitPrice})
		}
	}
	kinds := []struct {
		name  string
		build func(solana.Hash) (*solana.Transaction, error)
	}{
		{"a transfer opening the recipient's account", transfer(chain.Transfer{From: holder.PublicKey(), To: keys.Derive("new").PublicKey(), Amount: 1})},
		{"a deposit into an open account", transfer(chain.Transfer{From: holder.PublicKey(), To: emptied.PublicKey(), Amount: 1})},
		{"a withdrawal to an open account", transfer(chain.Transfer{From: holder.PublicKey(), To: emptied.PublicKey(), Amount: 1, DestinationExists: true})},
		{"a sweep that closes the escrow", transfer(chain.Transfer{From: emptied.PublicKey(), To: holder.PublicKey(), Amount: 7, CloseSource: true})},
		{"an x402 exact payment", func(bh solana.Hash) (*solana.Transaction, error) {
			return chain.ExactPayment{FeePayer: payer.PublicKey(), From: holder.PublicKey(), PayTo: emptied.PublicKey(), Mint: mint,
				Amount: 1, Nonce: "00112233445566778899aabbccddeeff", Blockhash: bh}.Build(chain.Budget{Units: chain.MaxComputeUnits, Price: 1})
		}},
	}
	chains := map[string]*chain.Client{
		"litesvm":  chain.NewClient(l.URL, nil),
		"embedded": chain.NewClient("http://embedded", localchain.Transport{Chain: lc}),
	}
	for _, k := range kinds {
		units := map[string]uint64{}
		for name, c := range chains {
			bh, err := c.Blockhash(ctx)
			if err != nil {
				t.Fatal(err)
			}
			tx, err := k.build(bh.Hash)
			if err != nil {
				t.Fatal(err)
			}
			if units[name], err = c.SimulatedUnits(ctx, tx); err != nil {
				t.Fatalf("%s on %s: %v", k.name, name, err)
			}
		}
		t.Logf("%s: %d units on LiteSVM", k.name, units["litesvm"])
		if units["embedded"] != units["litesvm"] {
			t.Errorf("%s: the embedded chain estimates %d units, LiteSVM consumed %d", k.name, units["embedded"], units["litesvm"])
		}
	}
}
