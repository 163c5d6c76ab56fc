package money

import (
	"context"
	"encoding/base64"

	"github.com/gagliardetto/solana-go"
	"github.com/google/uuid"

	"wager/chain"
	"wager/domain"
)

// BuildFunc builds the unsigned transaction of a new intent (whose id it
// is given) on a fresh blockhash.
type BuildFunc func(intentID string, blockhash solana.Hash) (*solana.Transaction, error)

// PrepareWith is Prepare for a transaction in another layout than
// BuildTransfer's (an x402 "exact" payment): build makes it, and the
// intent stores its exact message so that Submit and its OnConfirm hook
// work unchanged. The transaction must move p.Amount of USDC from the
// user's wallet (checked on chain: INSUFFICIENT_FUNDS) with the platform as
// fee payer.
func (s *Service) PrepareWith(ctx context.Context, p PrepareSpec, build BuildFunc) (Prepared, error) {
	from, err := solana.PublicKeyFromBase58(p.User.WalletAddress)
	if err != nil {
		return Prepared{}, err
	}
	held, err := s.chain.TokenBalance(ctx, from, s.mint)
	if err != nil {
		return Prepared{}, chainUnavailable(err)
	}
	if held < uint64(p.Amount) {
		return Prepared{}, domain.Errorf(domain.CodeInsufficientFunds,
			"your wallet holds %s USDC on chain, less than %s", FormatUSDC(int64(held)), FormatUSDC(p.Amount))
	}
	bh, err := s.chain.Blockhash(ctx)
	if err != nil {
		return Prepared{}, chainUnavailable(err)
	}
	id := uuid.NewString()
	tx, err := build(id, bh)
	if err != nil {
		return Prepared{}, err
	}
	msg, err := chain.MessageBytes(tx)
	if err != nil {
		return Prepared{}, err
	}
	now := s.now()
	in := Intent{ID: id, Kind: p.Kind, UserID: p.User.ID, AmountMinor: p.Amount, Destination: p.To.String(),
		Reference: p.Reference, Message: msg, Status: "prepared", ExpiresAt: now.Add(IntentLifetime), CreatedAt: now, UpdatedAt: now}
	if _, err := s.db.NewInsert().Model(&in).Exec(ctx); err != nil {
		return Prepared{}, err
	}
	wire, err := tx.MarshalBinary()
	if err != nil {
		return Prepared{}, err
	}
	return Prepared{IntentID: id, Kind: p.Kind, Transaction: base64.StdEncoding.EncodeToString(wire), AmountMinor: p.Amount,
		Destination: in.Destination, FeePayer: s.keys.FeePayer().PublicKey().String(), ExpiresAt: in.ExpiresAt}, nil
}
