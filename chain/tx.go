// Package chain is the Solana adapter: the solana-go RPC client path used in
// every mode (a real cluster, the embedded local chain, LiteSVM in tests),
// transaction builders, confirmation by polling, and the platform's keys.
package chain

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/programs/token"
)

// Programs the platform's transactions use.
var (
	ComputeBudgetProgramID = solana.ComputeBudget
	MemoProgramID          = solana.MemoProgramID
	TokenProgramID         = solana.TokenProgramID
	ATAProgramID           = solana.SPLAssociatedTokenAccountProgramID
	SystemProgramID        = solana.SystemProgramID
)

// USDCDecimals is the number of decimals of USDC (1 USDC = 1000000 minor units).
const USDCDecimals = 6

// Compute budget of a platform transaction when the chain cannot be asked
// (DefaultBudget; Client.Budgeted asks it): enough for ATA creation, a
// TransferChecked and a memo, at a modest priority price.
const (
	ComputeUnitLimit = 200_000
	ComputeUnitPrice = 1_000 // micro-lamports per compute unit
)

// LamportsPerSignature is Solana's base fee for each signature of a
// transaction.
const LamportsPerSignature = 5_000

// FeeOf is what a transaction costs its fee payer: the base fee of each of
// its signatures and the priority fee of the compute budget it carries.
func FeeOf(tx *solana.Transaction) int64 {
	return int64(tx.Message.Header.NumRequiredSignatures)*LamportsPerSignature + BudgetOf(tx).PriorityFee()
}

// ATA returns the associated token account of owner for mint.
func ATA(owner, mint solana.PublicKey) solana.PublicKey {
	addr, _, err := solana.FindAssociatedTokenAddress(owner, mint)
	if err != nil {
		panic(err) // only for keys that cannot be on the curve's PDA space
	}
	return addr
}

// SetComputeUnitLimit is the ComputeBudget instruction of that name.
func SetComputeUnitLimit(units uint32) solana.Instruction {
	data := make([]byte, 5)
	data[0] = 2
	binary.LittleEndian.PutUint32(data[1:], units)
	return solana.NewInstruction(ComputeBudgetProgramID, nil, data)
}

// SetComputeUnitPrice is the ComputeBudget instruction of that name.
func SetComputeUnitPrice(microLamports uint64) solana.Instruction {
	data := make([]byte, 9)
	data[0] = 3
	binary.LittleEndian.PutUint64(data[1:], microLamports)
	return solana.NewInstruction(ComputeBudgetProgramID, nil, data)
}

// CreateATAIdempotent creates owner's associated token account for mint,
// paid by payer, and does nothing when it exists. solana-go has no builder
// for it.
func CreateATAIdempotent(payer, owner, mint solana.PublicKey) solana.Instruction {
	return solana.NewInstruction(ATAProgramID, solana.AccountMetaSlice{
		solana.Meta(payer).WRITE().SIGNER(),
		solana.Meta(ATA(owner, mint)).WRITE(),
		solana.Meta(owner),
		solana.Meta(mint),
		solana.Meta(SystemProgramID),
		solana.Meta(TokenProgramID),
	}, []byte{1})
}

// Memo is a Memo program instruction signed by signer.
func Memo(text string, signer solana.PublicKey) solana.Instruction {
	return solana.NewInstruction(MemoProgramID, solana.AccountMetaSlice{solana.Meta(signer).SIGNER()}, []byte(text))
}

// TokenAccountRent is the rent-exempt minimum of a 165-byte token account,
// in lamports: what opening someone's USDC account costs whoever funds it.
const TokenAccountRent = 2_039_280

// SystemAccountRent is the rent-exempt minimum of a 0-byte System account
// (a wallet), in lamports. A transaction may not leave a wallet it debits
// with a balance above 0 and below this: the runtime refuses it with
// InsufficientFundsForRent.
const SystemAccountRent = 890_880

// Transfer describes a USDC transfer between two wallets' associated token
// accounts. FeePayer pays the fees; the destination's token account is
// opened when missing, with the rent paid by Funder (FeePayer when zero),
// unless DestinationExists says the account must already be there.
type Transfer struct {
	FeePayer          solana.PublicKey
	Funder            solana.PublicKey // pays the rent of a new destination account; signs
	DestinationExists bool             // no account creation: the transfer fails without one
	From              solana.PublicKey // the wallet that owns the source tokens and signs
	To                solana.PublicKey // the receiving wallet (its ATA receives)
	Mint              solana.PublicKey
	Amount            uint64
	Memo              string
	Blockhash         solana.Hash
	Budget            Budget // zero: DefaultBudget
	// CloseSource closes the source token account after the transfer,
	// which must empty it: its rent goes back to the fee payer, who paid
	// it when the account was opened.
	CloseSource bool
}

// BuildTransfer returns the unsigned transaction of t: compute budget,
// CreateIdempotent of the destination's ATA (unless DestinationExists),
// TransferChecked, CloseAccount of the source's ATA (with CloseSource),
// and the memo (when set). It fails for a zero amount or
// a transfer to oneself.
func BuildTransfer(t Transfer) (*solana.Transaction, error) {
	if t.Amount == 0 {
		return nil, errors.New("amount must be positive")
	}
	if t.From.Equals(t.To) {
		return nil, errors.New("source and destination are the same wallet")
	}
	b := t.Budget.orDefault(DefaultBudget)
	ixs := []solana.Instruction{SetComputeUnitLimit(b.Units), SetComputeUnitPrice(b.Price)}
	if !t.DestinationExists {
		funder := t.Funder
		if funder.IsZero() {
			funder = t.FeePayer
		}
		ixs = append(ixs, CreateATAIdempotent(funder, t.To, t.Mint))
	}
	ixs = append(ixs, token.NewTransferCheckedInstruction(t.Amount, USDCDecimals,
		ATA(t.From, t.Mint), t.Mint, ATA(t.To, t.Mint), t.From, nil).Build())
	if t.CloseSource {
		ixs = append(ixs, token.NewCloseAccountInstruction(ATA(t.From, t.Mint), t.FeePayer, t.From, nil).Build())
	}
	if t.Memo != "" {
		ixs = append(ixs, Memo(t.Memo, t.From))
	}
	tx, err := solana.NewTransaction(ixs, t.Blockhash, solana.TransactionPayer(t.FeePayer))
	if err != nil {
		return nil, fmt.Errorf("build transfer: %w", err)
	}
	return tx, nil
}

// Build is BuildTransfer of t with budget b: a BuildFunc for
// Client.Budgeted.
func (t Transfer) Build(b Budget) (*solana.Transaction, error) {
	t.Budget = b
	return BuildTransfer(t)
}

// MessageBytes returns the serialized message: what every signer signs and
// what a prepared intent stores.
func MessageBytes(tx *solana.Transaction) ([]byte, error) {
	b, err := tx.Message.MarshalBinary()
	if err != nil {
		return nil, fmt.Errorf("serialize the transaction message: %w", err)
	}
	return b, nil
}

// SignWith adds the signatures of the given keys to tx, leaving the other
// signers' slots as they are.
func SignWith(tx *solana.Transaction, keys ...solana.PrivateKey) error {
	_, err := tx.PartialSign(func(pk solana.PublicKey) *solana.PrivateKey {
		for i := range keys {
			if keys[i].PublicKey().Equals(pk) {
				return &keys[i]
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("add signatures: %w", err)
	}
	return nil
}

// SignatureOf returns the signature of signer in tx and whether it is a
// valid signature of the message.
func SignatureOf(tx *solana.Transaction, signer solana.PublicKey) (solana.Signature, bool) {
	msg, err := tx.Message.MarshalBinary()
	if err != nil {
		return solana.Signature{}, false
	}
	for i, s := range tx.Message.Signers() {
		if s.Equals(signer) && i < len(tx.Signatures) {
			return tx.Signatures[i], tx.Signatures[i].Verify(signer, msg)
		}
	}
	return solana.Signature{}, false
}
