package chain

import (
	"context"
	"errors"
	"fmt"

	"github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/programs/token"
	"github.com/gagliardetto/solana-go/rpc"
)

// Compute budget of an x402 "exact" payment: a TransferChecked and a memo
// need about 7,000 units; the x402 reference client asks for 20,000.
const ExactComputeUnitLimit = 20_000

// ExactPayment describes a payment in the layout of the x402 "exact" scheme
// for Solana: SetComputeUnitLimit, SetComputeUnitPrice, TransferChecked
// from the payer's associated token account to PayTo's, and a memo that
// makes the transaction unique. The fee payer appears in no instruction.
type ExactPayment struct {
	FeePayer  solana.PublicKey
	From      solana.PublicKey // the wallet that owns the tokens and signs
	PayTo     solana.PublicKey // the merchant wallet; its ATA receives
	Mint      solana.PublicKey
	Amount    uint64
	Nonce     string // memo data: at least 16 random bytes, hex-encoded
	Blockhash solana.Hash
	Budget    Budget // zero: ExactComputeUnitLimit at ComputeUnitPrice
}

// BuildExactPayment returns the unsigned transaction of p. It fails for a
// zero amount, a payment to oneself or an empty nonce.
func BuildExactPayment(p ExactPayment) (*solana.Transaction, error) {
	switch {
	case p.Amount == 0:
		return nil, errors.New("amount must be positive")
	case p.From.Equals(p.PayTo):
		return nil, errors.New("source and destination are the same wallet")
	case p.Nonce == "":
		return nil, errors.New("an exact payment needs a memo nonce")
	}
	b := p.Budget.orDefault(Budget{Units: ExactComputeUnitLimit, Price: ComputeUnitPrice})
	ixs := []solana.Instruction{
		SetComputeUnitLimit(b.Units),
		SetComputeUnitPrice(b.Price),
		token.NewTransferCheckedInstruction(p.Amount, USDCDecimals,
			ATA(p.From, p.Mint), p.Mint, ATA(p.PayTo, p.Mint), p.From, nil).Build(),
		// No signer accounts: the memo only makes the transaction unique.
		solana.NewInstruction(MemoProgramID, solana.AccountMetaSlice{}, []byte(p.Nonce)),
	}
	tx, err := solana.NewTransaction(ixs, p.Blockhash, solana.TransactionPayer(p.FeePayer))
	if err != nil {
		return nil, fmt.Errorf("build exact payment: %w", err)
	}
	return tx, nil
}

// Build is BuildExactPayment of p with budget b: a BuildFunc for
// Client.Budgeted.
func (p ExactPayment) Build(b Budget) (*solana.Transaction, error) {
	p.Budget = b
	return BuildExactPayment(p)
}

// IsTokenAccount reports whether addr is an account of the SPL Token
// program (a token account or a mint) rather than a wallet.
func (c *Client) IsTokenAccount(ctx context.Context, addr solana.PublicKey) (bool, error) {
	owner, exists, err := c.accountOwner(ctx, addr)
	return exists && owner.Equals(TokenProgramID), err
}

// AccountExists reports whether an account exists on chain.
func (c *Client) AccountExists(ctx context.Context, addr solana.PublicKey) (bool, error) {
	_, exists, err := c.accountOwner(ctx, addr)
	return exists, err
}

// accountOwner reads the program that owns addr, and whether it exists.
func (c *Client) accountOwner(ctx context.Context, addr solana.PublicKey) (solana.PublicKey, bool, error) {
	info, err := c.RPC.GetAccountInfoWithOpts(ctx, addr, &rpc.GetAccountInfoOpts{Commitment: rpc.CommitmentConfirmed})
	if errors.Is(err, rpc.ErrNotFound) {
		return solana.PublicKey{}, false, nil
	}
	if err != nil {
		return solana.PublicKey{}, false, fmt.Errorf("get account %s: %w", addr, err)
	}
	return info.Value.Owner, true, nil
}
