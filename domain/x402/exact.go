package x402

import (
	"encoding/binary"
	"strconv"

	"github.com/gagliardetto/solana-go"

	"wager/chain"
)

// Sponsor limits of the fee payer for inline settlement. The first two are
// the x402 Solana exact spec's reference caps; on their own they would let
// one payment cost the platform a 2,000,000-lamport priority fee, so the
// fee itself (limit x price) has a budget too, far above what clients ask
// for (the official client: 20,000 units at 1 micro-lamport).
const (
	MaxComputeUnits            = 400_000
	MaxComputeUnitPriceMicroLp = 5_000_000 // 5 lamports per compute unit
	MaxPriorityFeeLamports     = 10_000
)

// LighthouseProgramID is the wallet-protection program that Phantom and
// Solflare add to transactions; the exact scheme allows it after the
// transfer.
var LighthouseProgramID = solana.MustPublicKeyFromBase58("L2TExMFKdjpN9kozasaurPirfHy9P8sbXoAN1qA3S95")

// Token-2022 program id: transfers through it cannot move a classic SPL
// Token mint such as USDC.
var token2022ProgramID = solana.MustPublicKeyFromBase58("TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb")

// VerifyExact checks, before the fee payer signs, that tx is a payment of
// the x402 Solana "exact" scheme that satisfies req and that the platform
// may sponsor (the checks the scheme's spec lists for its static layout):
//
//   - no address lookup tables (every account must be visible);
//   - the fee payer is feePayer, appears in no instruction, and the only
//     other required signer is the token authority, whose signature is
//     valid;
//   - 3 to 7 instructions: SetComputeUnitLimit (at most MaxComputeUnits),
//     SetComputeUnitPrice (at most MaxComputeUnitPriceMicroLp, and a
//     priority fee of at most MaxPriorityFeeLamports),
//     TransferChecked of exactly req.Amount of req.Asset to the associated
//     token account of req.PayTo, then only Memo or Lighthouse.
//
// It returns the payer (the transfer's authority), or a *Refusal naming
// the first check that failed.
func VerifyExact(tx *solana.Transaction, req Requirements, feePayer solana.PublicKey) (solana.PublicKey, error) {
	none := solana.PublicKey{}
	msg := tx.Message
	if msg.IsVersioned() && msg.NumLookups() > 0 {
		return none, refuse(ReasonLookupTables, "the transaction uses address lookup tables; list every account in the message")
	}
	keys := msg.AccountKeys
	if len(keys) == 0 || !keys[0].Equals(feePayer) {
		return none, refuse(ReasonFeePayerMismatch, "the fee payer must be the platform's %s (extra.feePayer)", feePayer)
	}
	signers := int(msg.Header.NumRequiredSignatures)
	if signers < 2 || signers > len(keys) || len(tx.Signatures) != signers {
		return none, refuse(ReasonSignatureInvalid, "the transaction needs exactly the payer's and the fee payer's signature slots")
	}
	if signers > 2 {
		return none, refuse(ReasonExcessiveSigners, "the transaction requires %d signatures; only the payer and the fee payer may sign", signers)
	}
	raw, err := msg.MarshalBinary()
	if err != nil {
		return none, refuse(ReasonUndecodable, "the message cannot be serialized: %v", err)
	}
	if !tx.Signatures[1].Verify(keys[1], raw) {
		return none, refuse(ReasonSignatureInvalid, "the signature of %s is missing or does not match the message", keys[1])
	}

	ixs := msg.Instructions
	if len(ixs) < 3 || len(ixs) > 7 {
		return none, refuse(ReasonInstructionsLength,
			"the exact layout has 3 to 7 instructions (compute limit, compute price, TransferChecked, memos); this one has %d", len(ixs))
	}
	for i, ix := range ixs {
		if int(ix.ProgramIDIndex) >= len(keys) {
			return none, refuse(ReasonUndecodable, "instruction %d names a missing program account", i)
		}
		if ix.ProgramIDIndex == 0 {
			return none, refuse(ReasonFeePayerInvolved, "instruction %d invokes the fee payer as a program", i)
		}
		for _, a := range ix.Accounts {
			if int(a) >= len(keys) {
				return none, refuse(ReasonUndecodable, "instruction %d names a missing account", i)
			}
			if a == 0 {
				return none, refuse(ReasonFeePayerInvolved,
					"instruction %d uses the fee payer %s; it may only pay the network fee", i, feePayer)
			}
		}
	}
	program := func(i int) solana.PublicKey { return keys[ixs[i].ProgramIDIndex] }

	limit, price := ixs[0].Data, ixs[1].Data
	if !program(0).Equals(chain.ComputeBudgetProgramID) || len(limit) != 5 || limit[0] != 2 {
		return none, refuse(ReasonComputeLimit, "the first instruction must be ComputeBudget SetComputeUnitLimit")
	}
	units := uint64(binary.LittleEndian.Uint32(limit[1:]))
	if units > MaxComputeUnits {
		return none, refuse(ReasonComputeLimitTooHigh, "compute unit limit %d is above %d", units, MaxComputeUnits)
	}
	if !program(1).Equals(chain.ComputeBudgetProgramID) || len(price) != 9 || price[0] != 3 {
		return none, refuse(ReasonComputePrice, "the second instruction must be ComputeBudget SetComputeUnitPrice")
	}
	p := binary.LittleEndian.Uint64(price[1:])
	if p > MaxComputeUnitPriceMicroLp {
		return none, refuse(ReasonComputePriceTooHigh, "compute unit price %d micro-lamports is above %d", p, MaxComputeUnitPriceMicroLp)
	}
	if fee := (units*p + 999_999) / 1_000_000; fee > MaxPriorityFeeLamports {
		return none, refuse(ReasonComputePriceTooHigh,
			"the priority fee (%d units at %d micro-lamports = %d lamports) is above the %d lamports the platform sponsors",
			units, p, fee, MaxPriorityFeeLamports)
	}

	transfer := ixs[2]
	switch {
	case program(2).Equals(token2022ProgramID):
		return none, refuse(ReasonMintMismatch, "the asset %s is a classic SPL Token mint; transfer it with the Token program, not Token-2022", req.Asset)
	case !program(2).Equals(chain.TokenProgramID) || len(transfer.Data) != 10 || transfer.Data[0] != 12 || len(transfer.Accounts) < 4:
		return none, refuse(ReasonNoTransfer, "the third instruction must be an SPL Token TransferChecked")
	}
	mint, dest, authority := keys[transfer.Accounts[1]], keys[transfer.Accounts[2]], keys[transfer.Accounts[3]]
	if !authority.Equals(keys[1]) {
		return none, refuse(ReasonExcessiveSigners, "the transfer's authority %s must be the transaction's only signer besides the fee payer", authority)
	}
	asset, err := solana.PublicKeyFromBase58(req.Asset)
	if err != nil || !mint.Equals(asset) {
		return none, refuse(ReasonMintMismatch, "the transfer moves the token %s; the payment must be in %s (USDC)", mint, req.Asset)
	}
	if transfer.Data[9] != chain.USDCDecimals {
		return none, refuse(ReasonMintMismatch, "TransferChecked states %d decimals; USDC has %d", transfer.Data[9], chain.USDCDecimals)
	}
	payTo, err := solana.PublicKeyFromBase58(req.PayTo)
	if err != nil || !dest.Equals(chain.ATA(payTo, asset)) {
		return none, refuse(ReasonRecipientMismatch,
			"the transfer goes to %s; it must go to %s, the associated token account of payTo %s", dest, chain.ATA(payTo, asset), req.PayTo)
	}
	want, err := strconv.ParseUint(req.Amount, 10, 64)
	if got := binary.LittleEndian.Uint64(transfer.Data[1:9]); err != nil || got != want {
		return none, refuse(ReasonAmountMismatch, "the transfer pays %d minor units; the price is exactly %s", got, req.Amount)
	}
	for i := 3; i < len(ixs); i++ {
		if p := program(i); !p.Equals(chain.MemoProgramID) && !p.Equals(LighthouseProgramID) {
			return none, refuse(ReasonUnknownInstruction, "instruction %d calls %s; after the transfer only Memo and Lighthouse are allowed", i, p)
		}
	}
	return authority, nil
}
