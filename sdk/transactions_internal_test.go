package wager

import (
	"errors"
	"strings"
	"testing"

	"github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/programs/token"

	"wager/chain"
)

// TestExpectationAllowList checks the allow-list on transactions built
// the way the platform builds them, and on each way of straying from it.
func TestExpectationAllowList(t *testing.T) {
	wallet := solana.NewWallet().PublicKey()
	feePayer, to, mint, other := solana.NewWallet().PublicKey(), solana.NewWallet().PublicKey(),
		solana.NewWallet().PublicKey(), solana.NewWallet().PublicKey()
	want := expectation{feePayer: feePayer, mint: mint, to: to, amount: 250_000}
	transfer := func(amount uint64, mint, dst, authority solana.PublicKey) solana.Instruction {
		return token.NewTransferCheckedInstruction(amount, chain.USDCDecimals, chain.ATA(wallet, mint), mint, dst, authority, nil).Build()
	}
	honest := transfer(250_000, mint, chain.ATA(to, mint), wallet)
	budget := []solana.Instruction{chain.SetComputeUnitLimit(chain.ComputeUnitLimit), chain.SetComputeUnitPrice(chain.ComputeUnitPrice)}
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
		{"a platform transfer", want, feePayer, with(chain.CreateATAIdempotent(feePayer, to, mint), honest, chain.Memo("wager:deposit:x", wallet)), ""},
		{"an exact payment", want, feePayer, with(honest, solana.NewInstruction(chain.MemoProgramID, nil, []byte("nonce"))), ""},
		{"a tip whose sender opens the account", expectation{feePayer: feePayer, mint: mint, to: to, amount: 250_000, walletOpens: true},
			feePayer, with(chain.CreateATAIdempotent(wallet, to, mint), honest), ""},
		{"the wallet opening a platform account", want, feePayer, with(chain.CreateATAIdempotent(wallet, to, mint), honest), "creates the token account"},
		{"another fee payer", want, other, with(honest), "not the platform's"},
		{"more than asked", want, feePayer, with(transfer(250_001, mint, chain.ATA(to, mint), wallet)), "moves 250001"},
		{"less than asked", want, feePayer, with(transfer(1, mint, chain.ATA(to, mint), wallet)), "moves 1"},
		{"another token", want, feePayer, with(transfer(250_000, other, chain.ATA(to, other), wallet)), "moves 250000"},
		{"another payee", want, feePayer, with(transfer(250_000, mint, chain.ATA(other, mint), wallet)), "moves 250000"},
		{"two transfers", want, feePayer, with(honest, honest), "2 token transfers"},
		{"no transfer", want, feePayer, budget, "0 token transfers"},
		{"an approval", want, feePayer, with(honest, token.NewApproveInstruction(1, chain.ATA(wallet, mint), other, wallet, nil).Build()),
			"SPL Token instruction 4"},
		{"another account created", want, feePayer, with(chain.CreateATAIdempotent(feePayer, other, mint), honest), "creates the token account"},
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
