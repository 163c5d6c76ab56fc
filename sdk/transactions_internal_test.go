package wager

import (
	"errors"
	"strings"
	"testing"

	"github.com/gagliardetto/solana-go"
	computebudget "github.com/gagliardetto/solana-go/programs/compute-budget"
	"github.com/gagliardetto/solana-go/programs/token"
)

// ata is owner's associated token account of mint.
func ata(owner, mint solana.PublicKey) solana.PublicKey {
	a, _, err := solana.FindAssociatedTokenAddress(owner, mint)
	if err != nil {
		panic(err)
	}
	return a
}

// createATAIdempotent is the Associated Token Account program's
// CreateIdempotent (solana-go has no builder for it), paid by payer.
func createATAIdempotent(payer, owner, mint solana.PublicKey) solana.Instruction {
	return solana.NewInstruction(solana.SPLAssociatedTokenAccountProgramID, solana.AccountMetaSlice{
		solana.Meta(payer).WRITE().SIGNER(), solana.Meta(ata(owner, mint)).WRITE(), solana.Meta(owner), solana.Meta(mint),
		solana.Meta(solana.SystemProgramID), solana.Meta(solana.TokenProgramID),
	}, []byte{1})
}

// memo is a Memo program instruction signed by signer.
func memo(text string, signer solana.PublicKey) solana.Instruction {
	return solana.NewInstruction(solana.MemoProgramID, solana.AccountMetaSlice{solana.Meta(signer).SIGNER()}, []byte(text))
}

// TestExpectationAllowList checks the allow-list on transactions shaped
// as the platform prepares them (the end-to-end tests sign the platform's
// own), and on each way of straying from it.
func TestExpectationAllowList(t *testing.T) {
	wallet := solana.NewWallet().PublicKey()
	feePayer, to, mint, other := solana.NewWallet().PublicKey(), solana.NewWallet().PublicKey(),
		solana.NewWallet().PublicKey(), solana.NewWallet().PublicKey()
	want := expectation{feePayer: feePayer, mint: mint, to: to, amount: 250_000}
	transfer := func(amount uint64, mint, dst, authority solana.PublicKey) solana.Instruction {
		return token.NewTransferCheckedInstruction(amount, usdcDecimals, ata(wallet, mint), mint, dst, authority, nil).Build()
	}
	honest := transfer(250_000, mint, ata(to, mint), wallet)
	budget := []solana.Instruction{computebudget.NewSetComputeUnitLimitInstruction(200_000).Build(), computebudget.NewSetComputeUnitPriceInstruction(1_000).Build()}
	with := func(ixs ...solana.Instruction) []solana.Instruction {
		return append(append([]solana.Instruction{}, budget...), ixs...)
	}
	build := func(payer solana.PublicKey, ixs []solana.Instruction) *solana.Transaction {
		tx, err := solana.NewTransaction(ixs, solana.Hash{1}, solana.TransactionPayer(payer))
		if err != nil {
			t.Fatal(err)
		}
		return tx
	}
	for _, c := range []struct {
		name    string
		want    expectation
		payer   solana.PublicKey
		ixs     []solana.Instruction
		refused string // part of the refusal; "" when allowed
	}{
		{"a platform transfer", want, feePayer, with(createATAIdempotent(feePayer, to, mint), honest, memo("wager:deposit:x", wallet)), ""},
		{"an exact payment", want, feePayer, with(honest, solana.NewInstruction(solana.MemoProgramID, nil, []byte("nonce"))), ""},
		{"a tip whose sender opens the account", expectation{feePayer: feePayer, mint: mint, to: to, amount: 250_000, walletOpens: true},
			feePayer, with(createATAIdempotent(wallet, to, mint), honest), ""},
		{"the wallet opening a platform account", want, feePayer, with(createATAIdempotent(wallet, to, mint), honest), "creates the token account"},
		{"another fee payer", want, other, with(honest), "not the platform's"},
		{"more than asked", want, feePayer, with(transfer(250_001, mint, ata(to, mint), wallet)), "moves 250001"},
		{"less than asked", want, feePayer, with(transfer(1, mint, ata(to, mint), wallet)), "moves 1"},
		{"another token", want, feePayer, with(transfer(250_000, other, ata(to, other), wallet)), "moves 250000"},
		{"another payee", want, feePayer, with(transfer(250_000, mint, ata(other, mint), wallet)), "moves 250000"},
		{"two transfers", want, feePayer, with(honest, honest), "2 token transfers"},
		{"no transfer", want, feePayer, budget, "0 token transfers"},
		{"an approval", want, feePayer, with(honest, token.NewApproveInstruction(1, ata(wallet, mint), other, wallet, nil).Build()),
			"SPL Token instruction 4"},
		{"another account created", want, feePayer, with(createATAIdempotent(feePayer, other, mint), honest), "creates the token account"},
		{"a heap frame request", want, feePayer, with(honest, solana.NewInstruction(solana.ComputeBudget, nil, []byte{1, 0, 0, 1, 0})),
			"compute budget"},
		{"a zero amount asked", expectation{feePayer: feePayer, mint: mint, to: to}, feePayer, with(honest), "not positive"},
	} {
		err := c.want.check(build(c.payer, c.ixs), wallet)
		switch {
		case c.refused == "" && err != nil:
			t.Errorf("%s: refused: %v", c.name, err)
		case c.refused != "" && (!errors.Is(err, ErrTransactionRefused) || !strings.Contains(err.Error(), c.refused)):
			t.Errorf("%s: %v, want a refusal naming %q", c.name, err, c.refused)
		}
	}
}
