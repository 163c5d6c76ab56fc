package money

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/gagliardetto/solana-go"
	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"wager/chain"
	"wager/db"
	"wager/domain"
	"wager/domain/users"
)

// Withdrawal is a server-signed transfer from the vault to a user's wallet.
type Withdrawal struct {
	bun.BaseModel `bun:"table:withdrawals"`

	ID             string    `bun:"id,pk,type:uuid" json:"id"`
	UserID         string    `bun:"user_id,type:uuid" json:"-"`
	AmountMinor    int64     `bun:"amount_minor" json:"amountMinor"`
	IdempotencyKey *string   `bun:"idempotency_key" json:"-"`
	Signature      string    `bun:"signature" json:"signature"`
	Raw            []byte    `bun:"raw" json:"-"`
	LastValid      *int64    `bun:"last_valid_block_height" json:"-"` // the last block height its transaction can land at
	Status         string    `bun:"status" json:"status" enum:"pending,confirmed,failed" doc:"pending, confirmed or failed (refused or expired: the amount is back on the balance)"`
	Error          string    `bun:"error" json:"error,omitempty"`
	OpenedAccount  bool      `bun:"opened_account" json:"openedAccount" doc:"true when the platform opened your wallet's USDC account for it (once per user)"`
	CreatedAt      time.Time `bun:"created_at" json:"createdAt"`
	UpdatedAt      time.Time `bun:"updated_at" json:"updatedAt"`
}

// MaxIdempotencyKey is the longest idempotency key of a withdrawal, in
// characters.
const MaxIdempotencyKey = 255

// Withdraw debits the user's available balance and sends the amount from
// the vault to their wallet. The debit and the signed transaction are
// stored together before anything is sent, so the money leaves at most
// once; a refused transfer is credited back. A repeated idempotency key
// answers the first withdrawal. Errors: VALIDATION_ERROR, INSUFFICIENT_FUNDS,
// CONFLICT (refused by the chain; balance restored), UNAVAILABLE.
func (s *Service) Withdraw(ctx context.Context, u users.User, amount int64, idempotencyKey string) (Withdrawal, error) {
	if err := CheckAmount("amountMinor", amount); err != nil {
		return Withdrawal{}, err
	}
	if amount < MinWithdrawal {
		return Withdrawal{}, domain.Invalid(map[string]string{"amountMinor": fmt.Sprintf(
			"must be at least %s for a withdrawal", USDC(MinWithdrawal))})
	}
	if utf8.RuneCountInString(idempotencyKey) > MaxIdempotencyKey {
		return Withdrawal{}, domain.Invalid(map[string]string{"Idempotency-Key": "at most 255 characters"})
	}
	var key *string
	if idempotencyKey != "" {
		key = &idempotencyKey
		if w, found, err := s.withdrawalByKey(ctx, u.ID, idempotencyKey, amount); found || err != nil {
			return w, err
		}
	}
	if have, err := BalanceOf(ctx, s.db, Available(u.ID)); err != nil {
		return Withdrawal{}, err
	} else if have < amount {
		return s.keyedOr(ctx, u.ID, key, amount, domain.Errorf(domain.CodeInsufficientFunds,
			"your available balance is %s USDC, less than %s USDC", FormatUSDC(have), FormatUSDC(amount)))
	}
	to := solana.MustPublicKeyFromBase58(u.WalletAddress)
	open, err := s.mustOpenAccount(ctx, u.ID, to)
	if err != nil {
		return s.keyedOr(ctx, u.ID, key, amount, err)
	}
	if open && amount < MinWithdrawalOpening {
		return s.keyedOr(ctx, u.ID, key, amount, domain.Invalid(map[string]string{"amountMinor": fmt.Sprintf(
			"must be at least %s here: your wallet has no USDC account yet, and the platform opens it (and pays its rent) only for a withdrawal of that much",
			USDC(MinWithdrawalOpening))}))
	}
	bh, err := s.chain.Blockhash(ctx)
	if err != nil {
		return Withdrawal{}, ChainUnavailable(err)
	}
	id := uuid.NewString()
	vault := s.keys.Vault()
	tx, err := s.chain.Budgeted(ctx, chain.Transfer{FeePayer: s.keys.FeePayer().PublicKey(), DestinationExists: !open,
		From: vault.PublicKey(), To: to, Mint: s.mint, Amount: uint64(amount), Memo: "wager:withdrawal:" + id, Blockhash: bh.Hash}.Build)
	if err != nil {
		return Withdrawal{}, fmt.Errorf("build withdrawal %s of user %s: %w", id, u.ID, err)
	}
	if err := chain.SignWith(tx, s.keys.FeePayer(), vault); err != nil {
		return Withdrawal{}, fmt.Errorf("sign withdrawal %s: %w", id, err)
	}
	raw, err := tx.MarshalBinary()
	if err != nil {
		return Withdrawal{}, fmt.Errorf("serialize withdrawal %s: %w", id, err)
	}
	now := s.now()
	w := Withdrawal{ID: id, UserID: u.ID, AmountMinor: amount, IdempotencyKey: key, Signature: tx.Signatures[0].String(),
		Raw: raw, LastValid: new(int64(bh.LastValid)), Status: "pending", OpenedAccount: open, CreatedAt: now, UpdatedAt: now}
	// The keyed row first: a concurrent twin with the same key waits here
	// for the first to commit, then fails on the key, not on the balance.
	spend := chain.FeeOf(tx)
	if open {
		spend += chain.TokenAccountRent
	}
	err = db.Transact(ctx, s.db, func(ctx context.Context, dbtx db.Tx) error {
		if _, err := dbtx.NewInsert().Model(&w).Exec(ctx); err != nil {
			return fmt.Errorf("store withdrawal %s of user %s: %w", id, u.ID, err)
		}
		if err := s.chargeFeePayer(ctx, dbtx, u.ID, spend, true); err != nil {
			return err
		}
		_, err := Post(ctx, dbtx, s.tell, Posting{Kind: "withdrawal", Reference: "withdrawal:" + id,
			Entries: []Entry{{Available(u.ID), -amount}, {Vault, amount}}})
		return err
	})
	if err != nil {
		return s.keyedOr(ctx, u.ID, key, amount, err)
	}
	// Stored and debited, it is the platform's to finish: a client that
	// hangs up does not stop it.
	return s.finishWithdrawal(context.WithoutCancel(ctx), w, tx)
}

// mustOpenAccount reports whether a withdrawal to wallet must open its USDC
// token account. The platform pays that rent once per user (a wallet that
// deposited has the account; one that closed it since gets it back once):
// paying it every time would let a user farm the rent by closing the
// account after each withdrawal. After that, CONFLICT asks the user to
// open it themselves.
func (s *Service) mustOpenAccount(ctx context.Context, userID string, wallet solana.PublicKey) (bool, error) {
	exists, err := s.chain.AccountExists(ctx, chain.ATA(wallet, s.mint))
	if err != nil {
		return false, ChainUnavailable(err)
	}
	if exists {
		return false, nil
	}
	opened, err := s.db.NewSelect().Model((*Withdrawal)(nil)).
		Where("user_id = ? AND opened_account AND status <> 'failed'", userID).Exists(ctx)
	if err != nil {
		return false, fmt.Errorf("check whether a withdrawal opened the USDC account of user %s: %w", userID, err)
	}
	if opened {
		return false, domain.Errorf(domain.CodeConflict,
			"your wallet %s has no USDC account; the platform opened one for you once already. Open it again with your wallet "+
				"(receiving any USDC does it), then withdraw", wallet)
	}
	return true, nil
}

// withdrawalByKey returns the user's withdrawal made with an idempotency
// key, if any. Reusing a key for another amount is a CONFLICT: the key
// names one withdrawal.
func (s *Service) withdrawalByKey(ctx context.Context, userID, key string, amount int64) (Withdrawal, bool, error) {
	var w Withdrawal
	err := s.db.NewSelect().Model(&w).Where("user_id = ? AND idempotency_key = ?", userID, key).Scan(ctx)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return Withdrawal{}, false, nil
	case err != nil:
		return Withdrawal{}, false, fmt.Errorf("read the withdrawal of user %s by idempotency key: %w", userID, err)
	case w.AmountMinor != amount:
		return Withdrawal{}, true, domain.Errorf(domain.CodeConflict,
			"the Idempotency-Key %q was used for a withdrawal of %s USDC, not %s; use a new key for a new withdrawal",
			key, FormatUSDC(w.AmountMinor), FormatUSDC(amount))
	}
	return w, true, nil
}

// keyedOr answers a keyed withdrawal that failed with err: when a
// concurrent request with the same key got there first (its debit may be
// why this one saw too little balance), the answer is that withdrawal.
func (s *Service) keyedOr(ctx context.Context, userID string, key *string, amount int64, err error) (Withdrawal, error) {
	if key != nil {
		if w, found, kerr := s.withdrawalByKey(ctx, userID, *key, amount); found || kerr != nil {
			return w, kerr
		}
	}
	return Withdrawal{}, err
}

// finishWithdrawal sends a stored withdrawal and settles its outcome.
func (s *Service) finishWithdrawal(ctx context.Context, w Withdrawal, tx *solana.Transaction) (Withdrawal, error) {
	outcome, reason, err := s.chain.Drive(ctx, tx, uint64(*w.LastValid), confirmTimeout)
	switch outcome {
	case chain.Landed:
		return s.settleWithdrawal(ctx, w, "confirmed", "")
	case chain.Failed, chain.Expired:
		if outcome == chain.Expired {
			reason = expiredReason
		}
		w, err := s.settleWithdrawal(ctx, w, "failed", reason)
		if err != nil {
			return w, err
		}
		return w, domain.Errorf(domain.CodeConflict, "the network did not take the withdrawal (%s); your balance is restored", reason)
	}
	// Pending, or refused in preflight: a refusal proves nothing of a copy
	// the RPC took before, and an answer that never came may have been
	// taken. The resolver sends it again until it lands or expires.
	s.log.Warn("withdrawal not final yet; the resolver will finish it", "withdrawal", w.ID, "outcome", outcome, "reason", reason, "err", err)
	return w, nil // pending
}

// expiredReason is why a withdrawal whose transaction expired failed.
const expiredReason = "not seen on chain before its blockhash expired"

// settleWithdrawal marks a pending withdrawal confirmed or failed (with the
// credit back) exactly once, and writes the user's history line.
func (s *Service) settleWithdrawal(ctx context.Context, w Withdrawal, status, reason string) (Withdrawal, error) {
	err := db.Transact(ctx, s.db, func(ctx context.Context, tx db.Tx) error {
		if err := tx.NewSelect().Model(&w).WherePK().For("UPDATE").Scan(ctx); err != nil {
			return fmt.Errorf("lock withdrawal %s: %w", w.ID, err)
		}
		if w.Status != "pending" {
			return nil
		}
		if status == "failed" {
			if _, err := Post(ctx, tx, s.tell, Posting{Kind: "withdrawal_reversal", Reference: "withdrawal:" + w.ID + ":reversal",
				Entries: []Entry{{Available(w.UserID), w.AmountMinor}, {Vault, -w.AmountMinor}}}); err != nil {
				return err
			}
		}
		w.Status, w.Error, w.UpdatedAt = status, reason, s.now()
		if _, err := tx.NewUpdate().Model(&w).Column("status", "error", "updated_at").WherePK().Exec(ctx); err != nil {
			return fmt.Errorf("mark withdrawal %s %s: %w", w.ID, status, err)
		}
		return s.record(ctx, tx, Activity{UserID: w.UserID, Kind: KindWithdrawal, AmountMinor: -w.AmountMinor,
			Counterparty: s.DepositAddress().String(), Signature: w.Signature, Status: status})
	})
	return w, err
}

// ResolvePendingWithdrawals finishes withdrawals whose outcome was not
// known when they were sent: confirmed ones are marked, and ones that did
// not land while their blockhash was valid are credited back. It runs
// periodically on every instance; row locks keep it exactly-once.
func (s *Service) ResolvePendingWithdrawals(ctx context.Context) error {
	var pending []Withdrawal
	if err := s.db.NewSelect().Model(&pending).Where("status = 'pending' AND updated_at < ?", s.now().Add(-5*time.Second)).
		Order("updated_at").Limit(100).Scan(ctx); err != nil {
		return fmt.Errorf("read the pending withdrawals: %w", err)
	}
	var errs []error
	for _, w := range pending {
		if err := s.resolveWithdrawal(ctx, w); err != nil {
			errs = append(errs, fmt.Errorf("resolve withdrawal %s: %w", w.ID, err))
		}
	}
	return errors.Join(errs...)
}

// resolveWithdrawal settles or resends one pending withdrawal by what the
// chain says of it.
func (s *Service) resolveWithdrawal(ctx context.Context, w Withdrawal) error {
	tx, err := solana.TransactionFromBytes(w.Raw)
	if err != nil {
		return fmt.Errorf("parse the stored transaction: %w", err)
	}
	lastValid := uint64(0)
	if w.LastValid != nil {
		lastValid = uint64(*w.LastValid)
	} else if lastValid, err = s.chain.LastValidFrom(ctx); err != nil {
		return err
	} else if _, err := s.db.NewUpdate().Model((*Withdrawal)(nil)).Set("last_valid_block_height = ?", int64(lastValid)).
		Where("id = ? AND last_valid_block_height IS NULL", w.ID).Exec(ctx); err != nil {
		return fmt.Errorf("store the last valid height of withdrawal %s: %w", w.ID, err)
	}
	outcome, reason, err := s.chain.Observe(ctx, tx.Signatures[0], lastValid)
	switch {
	case err != nil:
	case outcome == chain.Failed:
		_, err = s.settleWithdrawal(ctx, w, "failed", reason)
	case outcome == chain.Landed:
		_, err = s.settleWithdrawal(ctx, w, "confirmed", "")
	case outcome == chain.Expired:
		_, err = s.settleWithdrawal(ctx, w, "failed", expiredReason)
	default:
		if _, serr := s.chain.Send(ctx, tx); serr != nil { // again, while it can still land
			s.log.Warn("resend withdrawal", "withdrawal", w.ID, "err", serr)
		}
	}
	return err
}

// RunResolvers finishes, every interval until ctx is done, what submits
// and withdrawals sent but did not see confirmed (ResolveSubmittedIntents,
// ResolvePendingWithdrawals).
func (s *Service) RunResolvers(ctx context.Context, interval time.Duration) {
	domain.Every(ctx, interval, s.log, "resolve submitted intents and withdrawals", func(ctx context.Context) error {
		return errors.Join(s.ResolveSubmittedIntents(ctx), s.ResolvePendingWithdrawals(ctx))
	})
}
