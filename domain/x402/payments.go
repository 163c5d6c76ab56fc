package x402

import (
	"cmp"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gagliardetto/solana-go"
	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"wager/chain"
	"wager/db"
	"wager/domain"
	"wager/domain/money"
	"wager/domain/users"
)

// KindPayment is the intent kind and ledger kind of an x402 payment.
const KindPayment = "payment"

// MaxTimeout is how long a client has to pay a challenge (maxTimeoutSeconds):
// about the lifetime of the blockhash the payment is built on.
const MaxTimeout = 60 * time.Second

// settleTimeout bounds how long an inline settlement waits for
// confirmation before answering that it is pending.
const settleTimeout = 30 * time.Second

// Config is what the payments need to know besides the services.
type Config struct {
	PriceMinor int64  // what one request past the threshold costs
	Network    string // CAIP-2 id told to clients (NetworkOf)
}

// Service issues 402 challenges, prepares and settles payments, and
// redeems them for one request each.
type Service struct {
	db      *bun.DB
	money   *money.Service
	keys    *chain.Keys
	now     domain.Clock
	log     *slog.Logger
	cfg     Config
	Limiter *Limiter

	vaultATAReady atomic.Bool
}

// New returns a Service; ConfirmPayment is what confirms its intents.
func New(bdb *bun.DB, m *money.Service, keys *chain.Keys, limiter *Limiter, now domain.Clock, log *slog.Logger, cfg Config) *Service {
	return &Service{db: bdb, money: m, keys: keys, now: now, log: log, cfg: cfg, Limiter: limiter}
}

// Price is what one charged request costs, in USDC minor units.
func (s *Service) Price() int64 { return s.cfg.PriceMinor }

// Requirements is the one way to pay the platform: exactly the price in
// USDC to the vault, the platform paying the network fee.
func (s *Service) Requirements() Requirements {
	return Requirements{Scheme: SchemeExact, Network: s.cfg.Network, Amount: strconv.FormatInt(s.cfg.PriceMinor, 10),
		Asset: s.money.Mint().String(), PayTo: s.money.DepositAddress().String(),
		MaxTimeoutSeconds: int(MaxTimeout.Seconds()), Extra: ExactExtra{FeePayer: s.keys.FeePayer().PublicKey().String()}}
}

// Challenge is the PaymentRequired of a 402 for resourceURL; why says,
// for humans, why a presented payment was refused (empty: no payment was
// presented).
func (s *Service) Challenge(resourceURL, why string) PaymentRequired {
	if why == "" {
		why = "PAYMENT-SIGNATURE header is required"
	}
	return PaymentRequired{X402Version: X402Version, Error: why,
		Resource: ResourceInfo{URL: resourceURL, Description: "One request past the fair-use threshold of this endpoint",
			MimeType: "application/json"},
		Accepts: []Requirements{s.Requirements()}}
}

// Caller is who redeems a payment.
type Caller struct {
	Key    string // the abuse-control caller key (user, app or IP)
	UserID string // "" for anonymous callers
}

// owner is what a payment names as the one it serves: the user's id, or
// for an anonymous caller its key (see payment.PresentedBy).
func (c Caller) owner() string { return cmp.Or(c.UserID, c.Key) }

// ResourcePath returns the path of a resource URL (absolute or not): a
// payment is good for the resource at that path.
func ResourcePath(resourceURL string) (string, bool) {
	u, err := url.Parse(resourceURL)
	if err != nil || !strings.HasPrefix(u.Path, "/") {
		return "", false
	}
	return u.Path, true
}

// Prepare builds, for the signed-in user, the exact-scheme payment that
// satisfies pr: the price in USDC from the user's wallet to the vault's
// token account, the platform as fee payer, a memo nonce. Errors:
// VALIDATION_ERROR when pr is not a challenge of this platform (another
// network, asset, recipient or amount), INSUFFICIENT_FUNDS, UNAVAILABLE.
func (s *Service) Prepare(ctx context.Context, u users.User, pr PaymentRequired) (money.Prepared, error) {
	bad := func(reason string) error { return domain.Invalid(map[string]string{"paymentRequired": reason}) }
	if pr.X402Version != X402Version {
		return money.Prepared{}, bad(fmt.Sprintf("x402Version must be %d", X402Version))
	}
	if _, ok := ResourcePath(pr.Resource.URL); !ok || len(pr.Resource.URL) > 2048 {
		return money.Prepared{}, bad("resource.url must be the URL of the request that answered 402")
	}
	want := s.Requirements()
	found := false
	for _, r := range pr.Accepts {
		if r.Scheme == want.Scheme && r.Network == want.Network && r.Asset == want.Asset && r.PayTo == want.PayTo {
			if r.Amount != want.Amount {
				return money.Prepared{}, bad(fmt.Sprintf("amount %s is not the price %s", r.Amount, want.Amount))
			}
			found = true
		}
	}
	if !found {
		return money.Prepared{}, bad(fmt.Sprintf("accepts has no %s requirement for %s in %s to %s; pass the paymentRequired of the 402 unchanged",
			want.Scheme, want.Network, want.Asset, want.PayTo))
	}
	if err := s.ensureVaultATA(ctx); err != nil {
		return money.Prepared{}, err
	}
	spec := money.PrepareSpec{Kind: KindPayment, User: u, To: s.money.DepositAddress(), Amount: s.cfg.PriceMinor,
		Reference: pr.Resource.URL}
	return s.money.PrepareWith(ctx, spec, func(from solana.PublicKey, intentID string, bh solana.Hash, b chain.Budget) (*solana.Transaction, error) {
		id := uuid.MustParse(intentID)
		return chain.BuildExactPayment(chain.ExactPayment{FeePayer: s.keys.FeePayer().PublicKey(), From: from,
			PayTo: s.money.DepositAddress(), Mint: s.money.Mint(), Amount: uint64(s.cfg.PriceMinor),
			Nonce: hex.EncodeToString(id[:]), Blockhash: bh, Budget: b})
	})
}

// Submitted is the answer to a payment submit.
type Submitted struct {
	Signature        string `json:"signature" doc:"the settled transaction"`
	PaymentSignature string `json:"paymentSignature" doc:"base64 JSON x402 PaymentPayload: repeat the original request with it in the PAYMENT-SIGNATURE header"`
}

// Submit settles a prepared payment (money.Service.SubmitFor: the exact
// prepared message, signed by the user's wallet; idempotent) and returns
// the PaymentPayload that redeems it. Errors are SubmitFor's.
func (s *Service) Submit(ctx context.Context, userID, intentID, signedB64 string) (Submitted, error) {
	var resource string
	intentID, ok := domain.CanonicalID(intentID)
	if !ok {
		return Submitted{}, domain.Errorf(domain.CodeNotFound, "no such payment intent")
	}
	err := s.db.NewSelect().Table("intents").Column("reference").
		Where("id = ? AND user_id = ? AND kind = ?", intentID, userID, KindPayment).Scan(ctx, &resource)
	if errors.Is(err, sql.ErrNoRows) {
		return Submitted{}, domain.Errorf(domain.CodeNotFound, "no such payment intent")
	} else if err != nil {
		return Submitted{}, fmt.Errorf("read payment intent %s: %w", intentID, err)
	}
	r, err := s.money.SubmitFor(ctx, userID, intentID, signedB64, resource, KindPayment)
	if err != nil {
		return Submitted{}, err
	}
	// The fee payer's ed25519 signature is deterministic: adding it again
	// gives exactly the transaction that was sent. (A repeated submit of a
	// confirmed intent is not checked by SubmitFor: check it here.)
	wire, ok := s.settledWire(signedB64, r.Signature)
	if !ok {
		return Submitted{}, domain.Invalid(map[string]string{
			"signedTransaction": "is not the signed transaction that settled this payment"})
	}
	req := s.Requirements()
	req.Amount = strconv.FormatInt(r.AmountMinor, 10)
	payload := PaymentPayload{X402Version: X402Version, Resource: &ResourceInfo{URL: resource}, Accepted: req,
		Payload: ExactPayload{Transaction: base64.StdEncoding.EncodeToString(wire)}}
	return Submitted{Signature: r.Signature, PaymentSignature: EncodeHeader(payload)}, nil
}

// settledWire returns the user-signed transaction with the fee payer's
// signature added, when that is the transaction with signature sig.
func (s *Service) settledWire(signedB64, sig string) ([]byte, bool) {
	raw, err := base64.StdEncoding.DecodeString(signedB64)
	if err != nil {
		return nil, false
	}
	tx, err := solana.TransactionFromBytes(raw)
	if err != nil || chain.SignWith(tx, s.keys.FeePayer()) != nil || len(tx.Signatures) == 0 || tx.Signatures[0].String() != sig {
		return nil, false
	}
	wire, err := tx.MarshalBinary()
	return wire, err == nil
}

// ConfirmPayment records a confirmed payment intent: the treasury earns it
// (the vault holds it on chain) and it waits, unused, for its request.
func (s *Service) ConfirmPayment(ctx context.Context, tx db.Tx, in money.Intent) error {
	path, _ := ResourcePath(in.Reference)
	var wallet string
	if err := tx.NewSelect().Table("users").Column("wallet_address").Where("id = ?", in.UserID).Scan(ctx, &wallet); err != nil {
		return fmt.Errorf("read the wallet of user %s: %w", in.UserID, err)
	}
	now := s.now()
	p := payment{Signature: *in.Signature, Resource: path, AmountMinor: in.AmountMinor, Payer: wallet, UserID: &in.UserID,
		IntentID: &in.ID, Status: "settled", CreatedAt: now, UpdatedAt: now}
	if _, err := tx.NewInsert().Model(&p).On("CONFLICT (signature) DO NOTHING").Exec(ctx); err != nil {
		return fmt.Errorf("store payment %s: %w", p.Signature, err)
	}
	return s.credit(ctx, tx, p)
}

// credit posts a settled payment to the ledger (once per signature) and to
// the paying user's wallet history.
func (s *Service) credit(ctx context.Context, tx db.Tx, p payment) error {
	// Paid from the wallet on chain into the treasury: no platform balance
	// moves, so nobody is told one.
	posted, err := money.Post(ctx, tx, nil, money.Posting{Kind: KindPayment, Reference: p.Signature,
		Memo:    "x402 payment for " + p.Resource,
		Entries: []money.Entry{{Account: money.Treasury, Amount: p.AmountMinor}, {Account: money.Vault, Amount: -p.AmountMinor}}})
	if err != nil || !posted {
		return err
	}
	var userID string
	err = tx.NewSelect().Table("users").Column("id").Where("wallet_address = ?", p.Payer).Scan(ctx, &userID)
	if errors.Is(err, sql.ErrNoRows) {
		return nil // an anonymous wallet: no history to write
	} else if err != nil {
		return fmt.Errorf("find the user of wallet %s: %w", p.Payer, err)
	}
	return money.RecordActivity(ctx, tx, money.Activity{UserID: userID, Kind: KindPayment, AmountMinor: -p.AmountMinor,
		Counterparty: s.money.DepositAddress().String(), Signature: p.Signature}, s.now())
}

// payment is a row of x402_payments.
type payment struct {
	bun.BaseModel `bun:"table:x402_payments"`

	Signature   string     `bun:"signature,pk"`
	Resource    string     `bun:"resource"`
	AmountMinor int64      `bun:"amount_minor"`
	Payer       string     `bun:"payer"`
	UserID      *string    `bun:"user_id,type:uuid"`
	IntentID    *string    `bun:"intent_id,type:uuid"`
	Status      string     `bun:"status"`
	UsedAt      *time.Time `bun:"used_at"`
	UsedBy      *string    `bun:"used_by"`
	PresentedBy *string    `bun:"presented_by"`            // an anonymous inline payment's first presenter
	Raw         []byte     `bun:"raw"`                     // the signed transaction, kept before it is first sent
	LastValid   *int64     `bun:"last_valid_block_height"` // a bound on the last block height it can land at
	CreatedAt   time.Time  `bun:"created_at"`
	UpdatedAt   time.Time  `bun:"updated_at"`
}

// Redeem spends the payment in a PAYMENT-SIGNATURE header on one request
// of resourcePath by caller, and returns the SettlementResponse for the
// PAYMENT-RESPONSE header. A payment settled through Submit is checked
// (settled, for this resource, by this user, unused) and marked used; a
// standard client's partially signed exact transaction is verified
// (VerifyExact), signed by the fee payer, sent, confirmed, credited and
// marked used in this call; presented again after the request that sent
// it ended too soon, it is marked used once settled (ResolveSettling). A
// payment that is not accepted is a *Refusal; other errors leave the
// payment as it was, or pending on chain.
func (s *Service) Redeem(ctx context.Context, header string, caller Caller, resourcePath string) (SettlementResponse, error) {
	var p PaymentPayload
	if err := DecodeHeader(header, &p); err != nil {
		return SettlementResponse{}, refuse(ReasonInvalidPayload, "PAYMENT-SIGNATURE must be base64 JSON of an x402 PaymentPayload: %v", err)
	}
	if p.X402Version != X402Version {
		return SettlementResponse{}, refuse(ReasonInvalidPayload, "x402Version %d is not supported; use %d", p.X402Version, X402Version)
	}
	if p.Resource != nil && p.Resource.URL != "" {
		if path, ok := ResourcePath(p.Resource.URL); !ok || path != resourcePath {
			return SettlementResponse{}, refuse(ReasonResourceMismatch, "this payment is for %s, not %s", p.Resource.URL, resourcePath)
		}
	}
	raw, err := base64.StdEncoding.DecodeString(p.Payload.Transaction)
	if err != nil {
		return SettlementResponse{}, refuse(ReasonUndecodable, "payload.transaction must be a base64 Solana transaction")
	}
	tx, err := solana.TransactionFromBytes(raw)
	if err != nil || len(tx.Signatures) == 0 {
		return SettlementResponse{}, refuse(ReasonUndecodable, "payload.transaction must be a base64 Solana transaction")
	}
	feePayer := s.keys.FeePayer().PublicKey()
	if sig, ok := chain.SignatureOf(tx, feePayer); ok {
		return s.redeemSettled(ctx, sig.String(), caller, resourcePath)
	}
	return s.settleInline(ctx, p, tx, caller, resourcePath)
}

// redeemSettled marks a payment settled through Submit as used by this
// request.
func (s *Service) redeemSettled(ctx context.Context, sig string, caller Caller, resourcePath string) (SettlementResponse, error) {
	now := s.now()
	var p payment
	err := s.db.NewUpdate().Model(&p).Set("used_at = ?", now).Set("used_by = ?", caller.Key).Set("updated_at = ?", now).
		Where("signature = ? AND status = 'settled' AND used_at IS NULL AND resource = ? AND amount_minor >= ?",
			sig, resourcePath, s.cfg.PriceMinor).
		Where("coalesce(user_id::text, presented_by, ?) = ?", caller.owner(), caller.owner()).
		Returning("*").Scan(ctx)
	if err == nil {
		return SettlementResponse{Success: true, Transaction: sig, Network: s.cfg.Network, Payer: p.Payer}, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return SettlementResponse{}, fmt.Errorf("redeem payment %s: %w", sig, err)
	}
	// Say why.
	if err := s.db.NewSelect().Model(&p).Where("signature = ?", sig).Scan(ctx); errors.Is(err, sql.ErrNoRows) {
		return SettlementResponse{}, refuse(ReasonUnknownPayment, "the transaction %s is not a payment to this platform", sig)
	} else if err != nil {
		return SettlementResponse{}, fmt.Errorf("read payment %s: %w", sig, err)
	}
	switch {
	case p.Status != "settled":
		return SettlementResponse{}, refuse(ReasonSettlementPending, "the payment %s is not settled yet; try again shortly", sig)
	case p.UsedAt != nil:
		return SettlementResponse{}, refuse(ReasonAlreadyUsed, "the payment %s already paid for a request at %s; each payment serves one request",
			sig, p.UsedAt.UTC().Format(time.RFC3339))
	case p.Resource != resourcePath:
		return SettlementResponse{}, refuse(ReasonResourceMismatch, "the payment %s is for %s, not %s", sig, p.Resource, resourcePath)
	case p.AmountMinor < s.cfg.PriceMinor:
		return SettlementResponse{}, refuse(ReasonAmountMismatch, "the payment %s paid %d minor units; the price is now %d", sig, p.AmountMinor, s.cfg.PriceMinor)
	}
	return SettlementResponse{}, refuse(ReasonPayerMismatch, "the payment %s was made by another account", sig)
}

// settleInline verifies and settles a standard x402 client's partially
// signed exact transaction, as a facilitator's verify and settle would,
// and spends it on this request.
func (s *Service) settleInline(ctx context.Context, p PaymentPayload, tx *solana.Transaction, caller Caller, resourcePath string) (SettlementResponse, error) {
	want := s.Requirements()
	a := p.Accepted
	switch {
	case a.Scheme != SchemeExact:
		return SettlementResponse{}, refuse(ReasonUnsupportedScheme, "scheme %q is not supported; pay with %q", a.Scheme, SchemeExact)
	case a.Network != want.Network:
		return SettlementResponse{}, refuse(ReasonNetworkMismatch, "network %q is not %q", a.Network, want.Network)
	case a.Extra.FeePayer != want.Extra.FeePayer:
		return SettlementResponse{}, refuse(ReasonFeePayerNotManaged, "extra.feePayer %q is not the platform's fee payer %s", a.Extra.FeePayer, want.Extra.FeePayer)
	case a.Asset != want.Asset || a.PayTo != want.PayTo || a.Amount != want.Amount:
		return SettlementResponse{}, refuse(ReasonRequirementsMismatch,
			"accepted requirements (%s %s to %s) are not the platform's (%s %s to %s)", a.Amount, a.Asset, a.PayTo, want.Amount, want.Asset, want.PayTo)
	}
	payer, err := VerifyExact(tx, want, s.keys.FeePayer().PublicKey())
	if err != nil {
		return SettlementResponse{}, err
	}
	if err := s.ensureVaultATA(ctx); err != nil {
		return SettlementResponse{}, err
	}
	if err := chain.SignWith(tx, s.keys.FeePayer()); err != nil {
		return SettlementResponse{}, fmt.Errorf("sign the payment of %s as fee payer: %w", payer, err)
	}
	sig := tx.Signatures[0].String()
	raw, err := tx.MarshalBinary()
	if err != nil {
		return SettlementResponse{}, fmt.Errorf("serialize the payment %s: %w", sig, err)
	}
	// The client chose the blockhash: its last valid height is bounded by
	// the newest blockhash's.
	lastValid, err := s.money.Chain().LastValidFrom(ctx)
	if err != nil {
		return SettlementResponse{}, money.ChainUnavailable(err)
	}
	now := s.now()
	row := payment{Signature: sig, Resource: resourcePath, AmountMinor: s.cfg.PriceMinor, Payer: payer.String(),
		Raw: raw, LastValid: new(int64(lastValid)), Status: "settling", CreatedAt: now, UpdatedAt: now}
	if caller.UserID != "" {
		row.UserID = &caller.UserID
	} else {
		row.PresentedBy = &caller.Key
	}
	res, err := s.db.NewInsert().Model(&row).On("CONFLICT (signature) DO NOTHING").Exec(ctx)
	if err != nil {
		return SettlementResponse{}, fmt.Errorf("store settling payment %s: %w", sig, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return s.resumeSettlement(ctx, tx.Signatures[0], caller, resourcePath)
	}
	// The fee payer pays for it: it counts towards the global budget.
	if err := s.money.ChargeFeePayer(ctx, chain.FeeOf(tx)); err != nil {
		if derr := s.forget(ctx, sig); derr != nil {
			return SettlementResponse{}, derr
		}
		return SettlementResponse{}, err
	}
	// Sent, it is the platform's to finish: a client that hangs up does
	// not stop it.
	ctx = context.WithoutCancel(ctx)
	switch outcome, reason, err := s.money.Chain().Drive(ctx, tx, lastValid, settleTimeout); outcome {
	case chain.Failed, chain.Refused, chain.Expired:
		// It did not land and will not: forget it, so that the client can
		// pay again.
		if derr := s.forget(ctx, sig); derr != nil {
			return SettlementResponse{}, derr
		}
		return SettlementResponse{}, refuse(ReasonTransactionFailed, "the network did not take the payment: %s", cmp.Or(reason, "its blockhash expired"))
	case chain.Pending:
		s.log.Warn("x402 settlement: outcome unknown", "signature", sig, "err", err)
		return SettlementResponse{}, refuse(ReasonSettlementPending,
			"the payment %s was sent but is not confirmed yet; repeat the request with the same PAYMENT-SIGNATURE", sig)
	}
	return s.finishInline(ctx, sig, caller, resourcePath)
}

// forget deletes a settling payment whose transaction did not and cannot
// land.
func (s *Service) forget(ctx context.Context, sig string) error {
	if _, err := s.db.NewDelete().Model((*payment)(nil)).Where("signature = ? AND status = 'settling'", sig).Exec(ctx); err != nil {
		return fmt.Errorf("forget payment %s: %w", sig, err)
	}
	return nil
}

// resumeSettlement handles a transaction that was presented before: a
// replay of a spent payment, a concurrent duplicate, or a retry of one
// whose confirmation was not seen. A settled payment that no request has
// used (its request ended before seeing it land, and the resolver settled
// it) serves this request, as redeemSettled checks.
func (s *Service) resumeSettlement(ctx context.Context, sig solana.Signature, caller Caller, resourcePath string) (SettlementResponse, error) {
	var p payment
	err := s.db.NewSelect().Model(&p).Where("signature = ?", sig.String()).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) { // the request that presented it first saw the network refuse it
		return SettlementResponse{}, refuse(ReasonTransactionFailed, "the network refused the payment %s; sign a new one", sig)
	} else if err != nil {
		return SettlementResponse{}, fmt.Errorf("read payment %s: %w", sig, err)
	}
	if p.Status == "settled" {
		return s.redeemSettled(ctx, sig.String(), caller, resourcePath)
	}
	if p.Resource != resourcePath {
		return SettlementResponse{}, refuse(ReasonResourceMismatch, "the payment %s is for %s, not %s", sig, p.Resource, resourcePath)
	}
	if owner := cmp.Or(p.UserID, p.PresentedBy); owner != nil && *owner != caller.owner() {
		return SettlementResponse{}, refuse(ReasonPayerMismatch, "the payment %s was made by another account", sig)
	}
	landed, err := s.money.Chain().Status(ctx, sig)
	if err != nil || !landed {
		return SettlementResponse{}, refuse(ReasonDuplicateSettlement,
			"the payment %s is being settled by another request; try again shortly", sig)
	}
	return s.finishInline(ctx, sig.String(), caller, resourcePath)
}

// finishInline credits a confirmed inline payment and spends it on the
// caller's request, once. One settled meanwhile (by a concurrent request,
// or by the resolver without being used) is redeemed as redeemSettled
// does.
func (s *Service) finishInline(ctx context.Context, sig string, caller Caller, resourcePath string) (SettlementResponse, error) {
	var p payment
	err := db.Transact(ctx, s.db, func(ctx context.Context, tx db.Tx) error {
		now := s.now()
		err := tx.NewUpdate().Model(&p).Set("status = 'settled'").Set("used_at = ?", now).Set("used_by = ?", caller.Key).
			Set("updated_at = ?", now).Where("signature = ? AND status = 'settling'", sig).Returning("*").Scan(ctx)
		if err != nil {
			return err // sql.ErrNoRows is looked at below
		}
		return s.credit(ctx, tx, p)
	})
	if errors.Is(err, sql.ErrNoRows) {
		return s.redeemSettled(ctx, sig, caller, resourcePath)
	}
	if err != nil {
		return SettlementResponse{}, fmt.Errorf("settle payment %s: %w", sig, err)
	}
	return SettlementResponse{Success: true, Transaction: sig, Network: s.cfg.Network, Payer: p.Payer}, nil
}

// Release gives back a payment that callerKey spent on a request the
// server failed to serve: the same PAYMENT-SIGNATURE pays for a repeat of
// the request. A payment spent by another caller, or not spent, is left as
// it is.
func (s *Service) Release(ctx context.Context, signature, callerKey string) error {
	if _, err := s.db.NewUpdate().Model((*payment)(nil)).Set("used_at = NULL").Set("used_by = NULL").
		Set("updated_at = ?", s.now()).Where("signature = ? AND used_by = ?", signature, callerKey).Exec(ctx); err != nil {
		return fmt.Errorf("release payment %s: %w", signature, err)
	}
	return nil
}

// Margins of ResolveSettling. It looks at a settling payment, and sends it
// again, from resolveSettlingAfter after its row was made: the request
// settling it inline may still be driving it, but the same bytes land once
// and the row's conditional updates settle it once. A row kept before rows
// held their transaction's last valid height is bounded by its age: a
// Solana blockhash is valid for about 150 slots (60 to 90 seconds), so a
// transaction not landed abandonSettlingAfter after its row was made never
// will.
const (
	resolveSettlingAfter = 2 * chain.DefaultResendEvery
	abandonSettlingAfter = 5 * time.Minute
)

// ResolveSettling finishes inline settlements whose request ended before
// their outcome was known. A landed payment is settled and credited to the
// treasury once, and left unused: the client's repeat of the request with
// the same PAYMENT-SIGNATURE is served by it. One the chain refused, or
// that can no longer land, is forgotten, so that the client can pay again.
// It runs periodically on every instance; conditional updates keep it
// exactly-once.
func (s *Service) ResolveSettling(ctx context.Context) error {
	now := s.now()
	var settling []payment
	if err := s.db.NewSelect().Model(&settling).Where("status = 'settling' AND created_at < ?", now.Add(-resolveSettlingAfter)).
		Order("created_at").Limit(100).Scan(ctx); err != nil {
		return fmt.Errorf("read the settling payments: %w", err)
	}
	var errs []error
	for _, p := range settling {
		if err := s.resolveSettling(ctx, p, now); err != nil {
			errs = append(errs, fmt.Errorf("resolve settling payment %s: %w", p.Signature, err))
		}
	}
	return errors.Join(errs...)
}

// resolveSettling settles, forgets or sends again one settling payment by
// what the chain says of its transaction.
func (s *Service) resolveSettling(ctx context.Context, p payment, now time.Time) error {
	sig, err := solana.SignatureFromBase58(p.Signature)
	if err != nil {
		return fmt.Errorf("parse the stored signature: %w", err)
	}
	lastValid := uint64(math.MaxUint64) // kept before the height was: it may still land
	switch {
	case p.LastValid != nil:
		lastValid = uint64(*p.LastValid)
	case p.CreatedAt.Before(now.Add(-abandonSettlingAfter)):
		lastValid = 0 // a row that old had an expired blockhash when now was taken, before the chain was asked
	}
	outcome, _, err := s.money.Chain().Observe(ctx, sig, lastValid)
	switch {
	case err != nil:
		return err // names the transaction or the height
	case outcome == chain.Failed || outcome == chain.Expired:
		return s.forget(ctx, p.Signature)
	case outcome == chain.Landed:
		return s.settleUnused(ctx, p.Signature)
	case p.Raw != nil:
		tx, err := solana.TransactionFromBytes(p.Raw)
		if err != nil {
			return fmt.Errorf("parse the stored transaction: %w", err)
		}
		if _, err := s.money.Chain().Send(ctx, tx); err != nil {
			s.log.Warn("resend x402 payment", "signature", p.Signature, "err", err)
		}
	}
	return nil
}

// settleUnused marks a landed inline payment settled and credits it, once,
// without spending it on a request.
func (s *Service) settleUnused(ctx context.Context, sig string) error {
	return db.Transact(ctx, s.db, func(ctx context.Context, tx db.Tx) error {
		var p payment
		err := tx.NewUpdate().Model(&p).Set("status = 'settled'").Set("updated_at = ?", s.now()).
			Where("signature = ? AND status = 'settling'", sig).Returning("*").Scan(ctx)
		if errors.Is(err, sql.ErrNoRows) {
			return nil // its request or another instance settled it
		}
		if err != nil {
			return fmt.Errorf("mark payment %s settled: %w", sig, err)
		}
		return s.credit(ctx, tx, p)
	})
}

// ensureVaultATA makes sure the vault's USDC account exists: an exact
// payment has no instruction that creates it. The platform's fee payer
// creates it once, idempotently.
func (s *Service) ensureVaultATA(ctx context.Context) error {
	if s.vaultATAReady.Load() {
		return nil
	}
	c := s.money.Chain()
	vault, mint := s.money.DepositAddress(), s.money.Mint()
	ok, err := c.AccountExists(ctx, chain.ATA(vault, mint))
	if err != nil {
		return money.ChainUnavailable(err)
	}
	if !ok {
		bh, err := c.Blockhash(ctx)
		if err != nil {
			return money.ChainUnavailable(err)
		}
		payer := s.keys.FeePayer()
		nonce := make([]byte, 16)
		rand.Read(nonce)
		tx, err := c.Budgeted(ctx, func(b chain.Budget) (*solana.Transaction, error) {
			return solana.NewTransaction([]solana.Instruction{
				chain.SetComputeUnitLimit(b.Units), chain.SetComputeUnitPrice(b.Price),
				chain.CreateATAIdempotent(payer.PublicKey(), vault, mint),
				chain.Memo("wager:vault-ata:"+hex.EncodeToString(nonce), payer.PublicKey()),
			}, bh.Hash, solana.TransactionPayer(payer.PublicKey()))
		})
		if err != nil {
			return fmt.Errorf("build the transaction that opens the vault's USDC account: %w", err)
		}
		if err := chain.SignWith(tx, payer); err != nil {
			return fmt.Errorf("sign the transaction that opens the vault's USDC account: %w", err)
		}
		if _, err := c.SendAndConfirm(ctx, tx, settleTimeout); err != nil {
			return money.ChainUnavailable(err)
		}
	}
	s.vaultATAReady.Store(true)
	return nil
}

// RunResolvers settles, every interval until ctx is done, the inline
// payments whose request ended before they were confirmed
// (ResolveSettling), and prunes old abuse counters every minute. It
// returns once both ended.
func (s *Service) RunResolvers(ctx context.Context, interval time.Duration) {
	var prune sync.WaitGroup
	defer prune.Wait()
	prune.Go(func() { domain.Every(ctx, time.Minute, s.log, "prune abuse counters", s.Limiter.Prune) })
	domain.Every(ctx, interval, s.log, "resolve inline payments", s.ResolveSettling)
}
