package money

import (
	"context"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gagliardetto/solana-go"
	"github.com/google/uuid"
	"github.com/uptrace/bun"

	"wager/chain"
	"wager/db"
	"wager/domain"
	"wager/domain/users"
)

// Limits of user-initiated money movements, in USDC minor units.
const (
	MinAmount = 1
	MaxAmount = 1_000_000 * 1_000_000 // one million USDC
	// MinDeposit is the smallest deposit: the platform pays its network fee.
	MinDeposit = 10_000
	// MinTransfer is the smallest plain transfer to another wallet, for
	// the same reason: the fee payer pays about 0.00001 SOL for each.
	MinTransfer = 10_000
	// MinWithdrawal is the smallest withdrawal, and MinWithdrawalOpening
	// the smallest one for which the platform opens the wallet's USDC
	// account (and pays its rent).
	MinWithdrawal        = 100_000
	MinWithdrawalOpening = 1_000_000
)

// IntentLifetime is how long a prepared transaction can be submitted: less
// than its blockhash stays valid, so an accepted submit can still land.
const IntentLifetime = 50 * time.Second

// confirmTimeout bounds how long a submit waits for confirmation.
const confirmTimeout = 45 * time.Second

// Faucet gives test funds; only the embedded chain has one.
type Faucet interface {
	Airdrop(ctx context.Context, to solana.PublicKey, lamports uint64) (solana.Signature, error)
	MintTo(ctx context.Context, owner solana.PublicKey, amount uint64) (solana.Signature, error)
}

// ConfirmFunc records the effect of a confirmed intent inside the
// transaction that marks it confirmed (a deposit credits the ledger, a
// donation fills a pot). It runs exactly once per intent.
type ConfirmFunc func(ctx context.Context, tx db.Tx, in Intent) error

// Confirmers maps an intent kind to what its confirmation does. The
// service confirms deposits and plain transfers itself; the services that
// prepare other kinds (donations, payments) are added where the server is
// put together, before it serves.
type Confirmers map[string]ConfirmFunc

// Service moves money.
type Service struct {
	db     *bun.DB
	chain  *chain.Client
	keys   *chain.Keys
	mint   solana.PublicKey
	now    domain.Clock
	log    *slog.Logger
	faucet Faucet

	confirmers Confirmers

	tell                Teller
	feePayerDaily       int64
	feePayerGlobalDaily int64
	protect             Protection
}

// Protection is what player protection says about money a user puts in
// with an intent: a deposit as it is prepared (CheckDeposit: its limits
// included), and any intent as it is first sent (CheckSent: what closed
// since its prepare, such as a time-out started in between).
type Protection interface {
	CheckDeposit(ctx context.Context, idb bun.IDB, userID string, amount int64) error
	CheckSent(ctx context.Context, idb bun.IDB, userID, kind, intentID string, amount int64) error
}

// Deps are the Service's optional collaborators and bounds.
type Deps struct {
	// Faucet gives test funds (nil: there is none, and Faucet must not be
	// called).
	Faucet Faucet
	// Tell is told users' new balances after deposits and withdrawals
	// commit (see Post); nil tells nobody.
	Tell Teller
	// FeePayerDaily bounds the lamports the platform's fee payer spends
	// for one user in a UTC day (fees and the rent of accounts it opens
	// for them); 0 is no bound.
	FeePayerDaily int64
	// FeePayerGlobalDaily bounds the lamports the fee payer spends for all
	// users together in a UTC day; past it, everything it would pay for
	// but withdrawals is refused. 0 is no bound.
	FeePayerGlobalDaily int64
	// Protect answers player protection's rules of money put in with an
	// intent (nil: none).
	Protect Protection
}

// New returns a Service that confirms intents with confirmers (to which it
// adds deposits and transfers).
func New(bdb *bun.DB, client *chain.Client, keys *chain.Keys, mint solana.PublicKey, now domain.Clock, log *slog.Logger,
	confirmers Confirmers, d Deps) *Service {
	s := &Service{db: bdb, chain: client, keys: keys, mint: mint, now: now, log: log, faucet: d.Faucet, confirmers: confirmers,
		tell: d.Tell, feePayerDaily: d.FeePayerDaily, feePayerGlobalDaily: d.FeePayerGlobalDaily, protect: d.Protect}
	confirmers[KindDeposit] = s.confirmDeposit
	confirmers[KindTransfer] = s.confirmTransfer
	return s
}

// FeePayerGlobalDaily returns Deps.FeePayerGlobalDaily, the fee payer's
// daily bound for all users together (0: none).
func (s *Service) FeePayerGlobalDaily() int64 { return s.feePayerGlobalDaily }

// Intent kinds of this package; other packages add their own.
const (
	KindDeposit  = "deposit"
	KindTransfer = "transfer"
)

// DepositAddress is the wallet whose USDC account receives deposits.
func (s *Service) DepositAddress() solana.PublicKey { return s.keys.Vault().PublicKey() }

// Mint is the USDC mint.
func (s *Service) Mint() solana.PublicKey { return s.mint }

// Chain is the chain client.
func (s *Service) Chain() *chain.Client { return s.chain }

// ChainReadWait bounds how long a read waits for the chain: past it the
// read answers what the platform knows, the chain's part left out, rather
// than an error.
const ChainReadWait = 2 * time.Second

// Balance is a user's platform and on-chain balance.
type Balance struct {
	WalletAddress  string   `json:"walletAddress"`
	AvailableMinor int64    `json:"availableMinor"`
	LockedMinor    int64    `json:"lockedMinor"`
	DepositAddress string   `json:"depositAddress"`
	USDCMint       string   `json:"usdcMint" doc:"the USDC mint: the token deposits, payments and transfers move"`
	OnChain        *OnChain `json:"onChain" doc:"what the wallet holds on chain; null when the Solana network did not answer in time (the platform balance is exact all the same)"`
}

// OnChain is what the user's wallet holds on chain.
type OnChain struct {
	USDCMinor int64 `json:"usdcMinor"`
	Lamports  int64 `json:"lamports"`
}

// PlatformBalance returns a user's platform balance in one query, without
// asking the chain (every page's header shows it).
func (s *Service) PlatformBalance(ctx context.Context, userID string) (PlatformBalance, error) {
	b, err := platformBalances(ctx, s.db, []string{userID})
	return b[userID], err
}

// BalanceOf returns a user's balances. The on-chain part waits at most
// ChainReadWait and is nil when the chain did not answer: only the
// database's errors are returned.
func (s *Service) BalanceOf(ctx context.Context, u users.User) (Balance, error) {
	b := Balance{WalletAddress: u.WalletAddress, DepositAddress: s.DepositAddress().String(), USDCMint: s.mint.String()}
	var err error
	if b.AvailableMinor, err = BalanceOf(ctx, s.db, Available(u.ID)); err != nil {
		return b, err
	}
	if b.LockedMinor, err = BalanceOf(ctx, s.db, Locked(u.ID)); err != nil {
		return b, err
	}
	on, err := s.walletOnChain(ctx, solana.MustPublicKeyFromBase58(u.WalletAddress))
	if err != nil {
		s.log.Warn("balance: the chain did not answer; onChain is null", "user", u.ID, "err", err)
		return b, nil
	}
	b.OnChain = &on
	return b, nil
}

// walletOnChain reads what owner holds on chain within ChainReadWait.
func (s *Service) walletOnChain(ctx context.Context, owner solana.PublicKey) (OnChain, error) {
	ctx, cancel := context.WithTimeout(ctx, ChainReadWait)
	defer cancel()
	usdc, err := s.chain.TokenBalance(ctx, owner, s.mint)
	if err != nil {
		return OnChain{}, err
	}
	lamports, err := s.chain.Lamports(ctx, owner)
	if err != nil {
		return OnChain{}, err
	}
	return OnChain{USDCMinor: int64(usdc), Lamports: int64(lamports)}, nil
}

// chargeFeePayer records, in tx, lamports the fee payer spends for a user
// today, both on the user's budget and on the global one, and refuses with
// RATE_LIMITED (until the next UTC day) what would take the user past
// FeePayerDaily or, unless it is a withdrawal, all users together past
// FeePayerGlobalDaily. A withdrawal is never refused by the global budget:
// however many accounts spend it, a user can still take their money out;
// it counts towards it all the same, since the fee payer pays for it.
func (s *Service) chargeFeePayer(ctx context.Context, tx db.Tx, userID string, lamports int64, withdrawal bool) error {
	if err := s.chargeUser(ctx, tx, userID, lamports); err != nil {
		return err
	}
	return s.chargeGlobal(ctx, tx, lamports, !withdrawal)
}

// chargeUser charges the user's daily budget.
func (s *Service) chargeUser(ctx context.Context, idb bun.IDB, userID string, lamports int64) error {
	if s.feePayerDaily <= 0 {
		return nil
	}
	now := s.now().UTC()
	day := now.Truncate(24 * time.Hour)
	var total []int64
	err := idb.NewRaw(`INSERT INTO fee_payer_spend (user_id, day, lamports) SELECT ?, ?, ? WHERE ? <= ?
		ON CONFLICT (user_id, day) DO UPDATE SET lamports = fee_payer_spend.lamports + EXCLUDED.lamports
		WHERE fee_payer_spend.lamports + EXCLUDED.lamports <= ?
		RETURNING lamports`, userID, day, lamports, lamports, s.feePayerDaily, s.feePayerDaily).Scan(ctx, &total)
	if err != nil {
		return fmt.Errorf("count the fee payer's spending for %s: %w", userID, err)
	}
	if len(total) == 0 {
		return domain.Errorf(domain.CodeRateLimited,
			"the platform pays network fees for you up to %s SOL a day, and today's are spent; try again tomorrow (UTC)",
			FormatSOL(s.feePayerDaily)).With("retryAfterSeconds", untilTomorrow(now))
	}
	return nil
}

// chargeGlobal adds lamports to today's spending of the fee payer for
// everyone. With refuse, it adds nothing and answers RATE_LIMITED when
// that would pass FeePayerGlobalDaily: the day's one row is locked by the
// upsert, so of two concurrent charges of which only one fits, only one
// passes, whichever instance runs them. Without a global budget the
// spending is not counted.
func (s *Service) chargeGlobal(ctx context.Context, idb bun.IDB, lamports int64, refuse bool) error {
	if s.feePayerGlobalDaily <= 0 {
		return nil
	}
	now := s.now().UTC()
	day := now.Truncate(24 * time.Hour)
	limit := int64(math.MaxInt64)
	if refuse {
		limit = s.feePayerGlobalDaily
	}
	var total []int64
	err := idb.NewRaw(`INSERT INTO fee_payer_global_spend AS g (day, lamports) SELECT ?, ? WHERE ? <= ?
		ON CONFLICT (day) DO UPDATE SET lamports = g.lamports + EXCLUDED.lamports
		WHERE g.lamports <= ? - EXCLUDED.lamports
		RETURNING lamports`, day, lamports, lamports, limit, limit).Scan(ctx, &total)
	if err != nil {
		return fmt.Errorf("count the fee payer's spending for everyone: %w", err)
	}
	if len(total) == 0 {
		return domain.Errorf(domain.CodeRateLimited,
			"the platform pays network fees up to %s SOL a day for all users together, and today's are spent; try again tomorrow (UTC)",
			FormatSOL(s.feePayerGlobalDaily)).With("retryAfterSeconds", untilTomorrow(now))
	}
	return nil
}

// ChargeFeePayer records lamports the fee payer spends on an operation
// that no user's budget counts (an x402 payment settled inline) against
// the global budget. RATE_LIMITED (until the next UTC day) when that
// would pass FeePayerGlobalDaily; then nothing is recorded.
func (s *Service) ChargeFeePayer(ctx context.Context, lamports int64) error {
	return s.chargeGlobal(ctx, s.db, lamports, true)
}

// FeePayerBudgetLeft returns the lamports left today of the global budget
// of the fee payer (0 once spent), and false without a global budget. The
// error is the database's.
func (s *Service) FeePayerBudgetLeft(ctx context.Context) (int64, bool, error) {
	if s.feePayerGlobalDaily <= 0 {
		return 0, false, nil
	}
	day := s.now().UTC().Truncate(24 * time.Hour)
	var spent int64
	if err := s.db.NewRaw("SELECT coalesce((SELECT lamports FROM fee_payer_global_spend WHERE day = ?), 0)", day).
		Scan(ctx, &spent); err != nil {
		return 0, true, fmt.Errorf("read the fee payer's spending today: %w", err)
	}
	return max(s.feePayerGlobalDaily-spent, 0), true, nil
}

// untilTomorrow is the Retry-After, in seconds, of a daily budget spent at
// now (UTC): until the next UTC day.
func untilTomorrow(now time.Time) int {
	return int(now.Truncate(24*time.Hour).Add(24*time.Hour).Sub(now).Seconds()) + 1
}

// RegisterPlatformAddresses records the vault and the fee payer among the
// platform's own addresses (game escrows are added as games start).
func (s *Service) RegisterPlatformAddresses(ctx context.Context) error {
	for kind, key := range map[string]solana.PublicKey{"vault": s.keys.Vault().PublicKey(), "fee payer": s.keys.FeePayer().PublicKey()} {
		if err := RegisterPlatformAddress(ctx, s.db, key.String(), kind); err != nil {
			return err
		}
	}
	return nil
}

// RegisterPlatformAddress records one of the platform's own addresses.
func RegisterPlatformAddress(ctx context.Context, idb bun.IDB, address, kind string) error {
	if _, err := idb.ExecContext(ctx, "INSERT INTO platform_addresses (address, kind) VALUES (?, ?) ON CONFLICT DO NOTHING",
		address, kind); err != nil {
		return fmt.Errorf("record platform address %s: %w", address, err)
	}
	return nil
}

// ChainUnavailable is the UNAVAILABLE error of a Solana RPC call that
// failed; err is kept for the logs only.
func ChainUnavailable(err error) error {
	return domain.Unavailable("the Solana network did not answer; try again shortly", err)
}

// CheckAmount validates an amount in minor units.
func CheckAmount(field string, amount int64) error {
	if amount < MinAmount || amount > MaxAmount {
		return invalidAmount(field, MaxAmount)
	}
	return nil
}

func invalidAmount(field string, max int64) error {
	return domain.Invalid(map[string]string{field: fmt.Sprintf(
		"must be from %s to %s", USDC(MinAmount), USDC(max))})
}

// Intent is a prepared user-signed transaction.
type Intent struct {
	bun.BaseModel `bun:"table:intents"`

	ID          string     `bun:"id,pk,type:uuid"`
	Kind        string     `bun:"kind"`
	UserID      string     `bun:"user_id,type:uuid"`
	AmountMinor int64      `bun:"amount_minor"`
	Destination string     `bun:"destination"`
	Reference   string     `bun:"reference"` // what the intent is for: a game id, a resource
	Message     []byte     `bun:"message"`
	Status      string     `bun:"status"`
	Signature   *string    `bun:"signature"`
	Error       string     `bun:"error"`
	ExpiresAt   time.Time  `bun:"expires_at"`
	CreatedAt   time.Time  `bun:"created_at"`
	UpdatedAt   time.Time  `bun:"updated_at"`
	SentAt      *time.Time `bun:"sent_at"` // first sent: by the clock read under the player's protection lock
	Raw         []byte     `bun:"raw"`     // the signed transaction, stored before it is first sent
	// LastValid is the last block height its transaction can land at.
	LastValid *int64 `bun:"last_valid_block_height"`
}

// Prepared is the answer to a prepare: the unsigned transaction to sign.
type Prepared struct {
	IntentID    string    `json:"intentId"`
	Kind        string    `json:"kind" enum:"bet,deposit,donation,payment,tip,transfer"`
	Transaction string    `json:"transaction" doc:"base64 wire transaction; sign it with the wallet and send it back to submit"`
	AmountMinor int64     `json:"amountMinor"`
	Destination string    `json:"destination"`
	FeePayer    string    `json:"feePayer"`
	ExpiresAt   time.Time `json:"expiresAt"`
}

// PrepareSpec describes a user-signed USDC transfer to prepare.
type PrepareSpec struct {
	Kind      string
	User      users.User
	To        solana.PublicKey
	Amount    int64
	Reference string
	// SenderOpensAccount makes the sender's wallet pay the rent of the
	// recipient's token account when it has none (as a plain transfer
	// does): for payments between users, never for the platform's own.
	SenderOpensAccount bool
}

// Prepare builds the transfer (platform as fee payer), stores its exact
// message in a new intent and returns it unsigned. It refuses with
// VALIDATION_ERROR a deposit or plain transfer below its minimum and a
// plain transfer to one of the platform's own addresses; a deposit that
// player protection refuses with its error (see Protection); amounts the
// wallet does not hold on chain with INSUFFICIENT_FUNDS, and so a plain
// transfer (KindTransfer) whose sender cannot pay the rent of opening the
// recipient's token account.
func (s *Service) Prepare(ctx context.Context, p PrepareSpec) (Prepared, error) {
	if p.User.WalletAddress == p.To.String() {
		return Prepared{}, domain.Invalid(map[string]string{"toAddress": "is your own wallet"})
	}
	switch p.Kind {
	case KindDeposit:
		if p.Amount < MinDeposit {
			return Prepared{}, domain.Invalid(map[string]string{"amountMinor": fmt.Sprintf(
				"must be at least %s for a deposit", USDC(MinDeposit))})
		}
		if s.protect != nil { // refused before the chain is asked; weighed again as it is stored
			if err := s.protect.CheckDeposit(ctx, s.db, p.User.ID, p.Amount); err != nil {
				return Prepared{}, err
			}
		}
	case KindTransfer:
		if p.Amount < MinTransfer {
			return Prepared{}, domain.Invalid(map[string]string{"amountMinor": fmt.Sprintf(
				"must be at least %s for a transfer", USDC(MinTransfer))})
		}
		var kind string
		err := s.db.NewSelect().Table("platform_addresses").Column("kind").Where("address = ?", p.To.String()).Scan(ctx, &kind)
		if err == nil {
			return Prepared{}, domain.Invalid(map[string]string{"toAddress": "is one of the platform's own addresses (" + kind +
				"); to add to your balance, send to your deposit address " + s.DepositAddress().String()})
		} else if !errors.Is(err, sql.ErrNoRows) {
			return Prepared{}, fmt.Errorf("look up address %s: %w", p.To, err)
		}
		// The USDC goes to the associated token account of the wallet
		// named: that of a token account no key can spend.
		if isToken, err := s.chain.IsTokenAccount(ctx, p.To); err != nil {
			return Prepared{}, ChainUnavailable(err)
		} else if isToken {
			return Prepared{}, domain.Invalid(map[string]string{"toAddress": "is a token account, not a wallet: " +
				"give the address of the wallet that owns it, or the USDC would be sent where no key can spend it"})
		}
		if s.protect != nil {
			if kind, err := s.protectedKind(ctx, KindTransfer, p.To.String()); err != nil {
				return Prepared{}, err
			} else if kind != KindTransfer {
				if err := s.protect.CheckSent(ctx, s.db, p.User.ID, kind, "", p.Amount); err != nil {
					return Prepared{}, err
				}
			}
		}
	}
	// The platform opens its own token accounts (vault, escrows); a plain
	// transfer's sender opens the recipient's, or anyone could make the
	// platform pay rent for accounts they then close and cash in.
	var funder solana.PublicKey // zero: the fee payer
	if p.Kind == KindTransfer || p.SenderOpensAccount {
		from, err := solana.PublicKeyFromBase58(p.User.WalletAddress)
		if err != nil {
			return Prepared{}, fmt.Errorf("parse the wallet %q of user %s: %w", p.User.WalletAddress, p.User.ID, err)
		}
		if err := s.checkRent(ctx, from, p.To); err != nil {
			return Prepared{}, err
		}
		funder = from
	}
	return s.PrepareWith(ctx, p, func(from solana.PublicKey, intentID string, bh solana.Hash, b chain.Budget) (*solana.Transaction, error) {
		return chain.BuildTransfer(chain.Transfer{FeePayer: s.keys.FeePayer().PublicKey(), Funder: funder, From: from, To: p.To,
			Mint: s.mint, Amount: uint64(p.Amount), Memo: "wager:" + p.Kind + ":" + intentID, Blockhash: bh, Budget: b})
	})
}

// checkRent refuses, with INSUFFICIENT_FUNDS, a transfer from a wallet
// that cannot pay the rent of the recipient's token account when the
// recipient has none yet, or that paying it would leave with less than
// the rent-exempt minimum of a wallet but more than nothing: Solana refuses
// such a transaction (InsufficientFundsForRent).
func (s *Service) checkRent(ctx context.Context, from, to solana.PublicKey) error {
	exists, err := s.chain.AccountExists(ctx, chain.ATA(to, s.mint))
	if err != nil {
		return ChainUnavailable(err)
	}
	if exists {
		return nil
	}
	lamports, err := s.chain.Lamports(ctx, from)
	if err != nil {
		return ChainUnavailable(err)
	}
	if lamports < chain.TokenAccountRent {
		return domain.Errorf(domain.CodeInsufficientFunds,
			"%s has no USDC account yet; opening it costs %s SOL of rent, paid by your wallet, which holds %s SOL",
			to, FormatSOL(chain.TokenAccountRent), FormatSOL(int64(lamports)))
	}
	if left := lamports - chain.TokenAccountRent; left > 0 && left < chain.SystemAccountRent {
		return domain.Errorf(domain.CodeInsufficientFunds,
			"%s has no USDC account yet; opening it costs %s SOL of rent, paid by your wallet, which holds %s SOL: "+
				"it would be left with %s SOL, and a wallet must keep at least %s SOL (or nothing)",
			to, FormatSOL(chain.TokenAccountRent), FormatSOL(int64(lamports)), FormatSOL(int64(left)),
			FormatSOL(chain.SystemAccountRent))
	}
	return nil
}

// fromWallet says, for the kinds a player may expect their platform
// balance to pay, that their wallet pays them.
func fromWallet(kind string) string {
	switch kind {
	case KindDonation, KindBet:
		return ". Donations and bets are paid from your wallet, not from your platform balance (which pays stakes and " +
			"market buys): withdraw some of it to your wallet first, on the wallet page"
	}
	return ""
}

// BuildFunc builds the unsigned transaction of a new intent (whose id it
// is given) from the user's wallet on a fresh blockhash, with a compute
// budget.
type BuildFunc func(from solana.PublicKey, intentID string, blockhash solana.Hash, budget chain.Budget) (*solana.Transaction, error)

// PrepareWith is Prepare for a transaction in another layout than
// BuildTransfer's (an x402 "exact" payment): build makes it, and the
// intent stores its exact message so that Submit and its kind's confirmer
// work unchanged. The transaction must move p.Amount of USDC from the
// user's wallet (checked on chain: INSUFFICIENT_FUNDS) with the platform as
// fee payer.
func (s *Service) PrepareWith(ctx context.Context, p PrepareSpec, build BuildFunc) (Prepared, error) {
	from, err := solana.PublicKeyFromBase58(p.User.WalletAddress)
	if err != nil {
		return Prepared{}, fmt.Errorf("parse the wallet %q of user %s: %w", p.User.WalletAddress, p.User.ID, err)
	}
	held, err := s.chain.TokenBalance(ctx, from, s.mint)
	if err != nil {
		return Prepared{}, ChainUnavailable(err)
	}
	if held < uint64(p.Amount) {
		return Prepared{}, domain.Errorf(domain.CodeInsufficientFunds,
			"Your wallet holds %s USDC on chain, less than %s USDC%s", FormatUSDC(int64(held)), FormatUSDC(p.Amount), fromWallet(p.Kind))
	}
	bh, err := s.chain.Blockhash(ctx)
	if err != nil {
		return Prepared{}, ChainUnavailable(err)
	}
	id := uuid.NewString()
	tx, err := s.chain.Budgeted(ctx, func(b chain.Budget) (*solana.Transaction, error) { return build(from, id, bh.Hash, b) })
	if err != nil {
		return Prepared{}, fmt.Errorf("build the transaction of %s intent %s: %w", p.Kind, id, err)
	}
	msg, err := chain.MessageBytes(tx)
	if err != nil {
		return Prepared{}, fmt.Errorf("prepare %s intent %s: %w", p.Kind, id, err)
	}
	now := s.now()
	in := Intent{ID: id, Kind: p.Kind, UserID: p.User.ID, AmountMinor: p.Amount, Destination: p.To.String(),
		Reference: p.Reference, Message: msg, Status: "prepared", ExpiresAt: now.Add(IntentLifetime), CreatedAt: now, UpdatedAt: now,
		LastValid: new(int64(bh.LastValid))}
	if err := s.store(ctx, in); err != nil {
		return Prepared{}, err
	}
	wire, err := tx.MarshalBinary()
	if err != nil {
		return Prepared{}, fmt.Errorf("serialize the transaction of %s intent %s: %w", p.Kind, id, err)
	}
	return Prepared{IntentID: id, Kind: p.Kind, Transaction: base64.StdEncoding.EncodeToString(wire), AmountMinor: p.Amount,
		Destination: in.Destination, FeePayer: s.keys.FeePayer().PublicKey().String(), ExpiresAt: in.ExpiresAt}, nil
}

// store records a new intent. A deposit is weighed against the player's
// deposit limits again as it is stored, in the transaction that stores
// it, after the deposits the player prepared before it (which count until
// they land or expire): player protection reads a player's rules in a
// transaction one transaction at a time, so several deposits prepared at
// once cannot pass a limit together.
func (s *Service) store(ctx context.Context, in Intent) error {
	var err error
	if in.Kind != KindDeposit || s.protect == nil {
		_, err = s.db.NewInsert().Model(&in).Exec(ctx)
	} else {
		err = db.Transact(ctx, s.db, func(ctx context.Context, tx db.Tx) error {
			if err := s.protect.CheckDeposit(ctx, tx, in.UserID, in.AmountMinor); err != nil {
				return err
			}
			_, err := tx.NewInsert().Model(&in).Exec(ctx)
			return err
		})
	}
	var refused *domain.Error
	if err != nil && !errors.As(err, &refused) {
		return fmt.Errorf("store %s intent %s: %w", in.Kind, in.ID, err)
	}
	return err
}

// Receipt is the answer to a submit.
type Receipt struct {
	IntentID    string `json:"intentId"`
	Kind        string `json:"kind" enum:"bet,deposit,donation,payment,tip,transfer"`
	Status      string `json:"status" enum:"confirmed" doc:"confirmed: a receipt is only ever given for a confirmed transfer"`
	Signature   string `json:"signature"`
	AmountMinor int64  `json:"amountMinor"`
	Destination string `json:"destination"`
}

func receiptOf(in Intent) Receipt {
	r := Receipt{IntentID: in.ID, Kind: in.Kind, Status: in.Status, AmountMinor: in.AmountMinor, Destination: in.Destination}
	if in.Signature != nil {
		r.Signature = *in.Signature
	}
	return r
}

// Submit checks that signedB64 is the prepared transaction signed by the
// user's wallet, adds the fee payer's signature, sends it, waits for
// confirmation and records its effect once. Submitting the same intent
// again, or concurrently, moves money once and answers the same receipt.
// Errors: NOT_FOUND (no such intent of this user), VALIDATION_ERROR (not the
// prepared transaction, or not signed by the wallet), CONFLICT (expired, or
// refused by the chain), UNAVAILABLE (outcome not known yet: submit again).
func (s *Service) Submit(ctx context.Context, userID, intentID, signedB64 string) (Receipt, error) {
	return s.SubmitFor(ctx, userID, intentID, signedB64, "")
}

// SubmitFor is Submit for an intent of one of kinds (any kind when none)
// prepared for reference (a game id; "" for none): any other intent is
// NOT_FOUND, so a donation is submitted to the game it was prepared for.
func (s *Service) SubmitFor(ctx context.Context, userID, intentID, signedB64, reference string, kinds ...string) (Receipt, error) {
	in, err := s.intent(ctx, s.db.NewSelect(), userID, intentID)
	if err != nil {
		return Receipt{}, err
	}
	if in.Reference != reference || (len(kinds) > 0 && !slices.Contains(kinds, in.Kind)) {
		return Receipt{}, domain.Errorf(domain.CodeNotFound, "no such intent here")
	}
	switch in.Status {
	case "confirmed":
		return receiptOf(in), nil
	case "failed":
		return Receipt{}, domain.Errorf(domain.CodeConflict, "this transaction failed: %s; prepare a new one", in.Error)
	case "expired":
		return Receipt{}, domain.Errorf(domain.CodeConflict, "this transaction expired (%s); nothing moved. Prepare a new one", in.Error)
	}
	tx, err := s.checkSigned(ctx, in, signedB64)
	if err != nil {
		return Receipt{}, err
	}
	if in.Status == "prepared" && s.now().After(in.ExpiresAt) {
		return Receipt{}, domain.Errorf(domain.CodeConflict, "this prepared transaction expired at %s; prepare a new one",
			in.ExpiresAt.Format(time.RFC3339))
	}
	if err := chain.SignWith(tx, s.keys.FeePayer()); err != nil {
		return Receipt{}, fmt.Errorf("sign intent %s as fee payer: %w", in.ID, err)
	}
	raw, err := tx.MarshalBinary()
	if err != nil {
		return Receipt{}, fmt.Errorf("serialize intent %s: %w", in.ID, err)
	}
	sig := tx.Signatures[0].String()
	first, err := s.markSent(ctx, in, chain.FeeOf(tx), sig, raw)
	if err != nil {
		return Receipt{}, err
	}
	// Sent, it is the platform's to finish: a client that hangs up does
	// not stop it.
	ctx = context.WithoutCancel(ctx)
	lastValid, err := s.lastValid(ctx, in)
	if err != nil {
		s.log.Warn("submit: the chain did not give a height to bound the intent's", "intent", in.ID, "err", err)
		return Receipt{}, notConfirmedYet(sig)
	}
	outcome, reason, err := s.chain.Drive(ctx, tx, lastValid, confirmTimeout)
	switch outcome {
	case chain.Pending:
		s.log.Warn("submit: outcome unknown", "intent", in.ID, "signature", sig, "err", err)
		return Receipt{}, notConfirmedYet(sig)
	case chain.Failed:
		return Receipt{}, s.fail(ctx, in, reason)
	case chain.Refused:
		if first { // its first send, refused: no copy of it went anywhere
			return Receipt{}, s.fail(ctx, in, reason)
		}
		// Sent before: that copy may still land; the resolver ends it
		// once it is final.
		return Receipt{}, notConfirmedYet(sig)
	case chain.Expired:
		if err := s.markExpired(ctx, in.ID); err != nil {
			return Receipt{}, err
		}
		return Receipt{}, expiredError()
	}
	return s.confirm(ctx, in.ID)
}

// markSent records that the intent is sent, with its signed bytes, before
// it is: from then on the resolver can send it again. It reports whether
// this call marked it first (no copy of it was sent before). The first time,
// in the same transaction, it is weighed against what closed since its
// prepare (Protection.CheckSent: under the player's lock, so that an
// exclusion committed before refuses it) and its fee is charged to the
// fee payer's budgets; a concurrent submit that marked it first did both.
// An intent so refused is failed: it can never be sent, and a deposit no
// longer counts towards the limits.
func (s *Service) markSent(ctx context.Context, in Intent, fee int64, sig string, raw []byte) (first bool, err error) {
	if in.Status != "prepared" {
		// Sent before: what the chain says of it decides, even if it ended
		// meanwhile (then nothing is updated here).
		_, err := s.db.NewUpdate().Model((*Intent)(nil)).Set("updated_at = ?", s.now()).
			Where("id = ? AND status = 'submitted'", in.ID).Exec(ctx)
		if err != nil {
			return false, fmt.Errorf("mark intent %s submitted: %w", in.ID, err)
		}
		return false, nil
	}
	var refused *domain.Error
	err = db.Transact(ctx, s.db, func(ctx context.Context, tx db.Tx) error {
		var status string
		if err := tx.NewSelect().Model((*Intent)(nil)).Column("status").Where("id = ?", in.ID).For("UPDATE").Scan(ctx, &status); err != nil {
			return fmt.Errorf("lock intent %s: %w", in.ID, err)
		}
		switch status {
		case "submitted", "confirmed":
			return nil // a concurrent submit sent it
		case "expired":
			return domain.Errorf(domain.CodeConflict, "this prepared transaction expired at %s; prepare a new one",
				in.ExpiresAt.Format(time.RFC3339))
		case "failed":
			return domain.Errorf(domain.CodeConflict, "this transaction failed; prepare a new one")
		}
		if s.protect != nil {
			kind, err := s.protectedKind(ctx, in.Kind, in.Destination)
			if err != nil {
				return err
			}
			if err := s.protect.CheckSent(ctx, tx, in.UserID, kind, in.ID, in.AmountMinor); errors.As(err, &refused) {
				return refused
			} else if err != nil {
				return err
			}
		}
		if err := s.chargeFeePayer(ctx, tx, in.UserID, fee, false); err != nil {
			return err
		}
		now := s.now()
		if _, err := tx.NewUpdate().Model((*Intent)(nil)).Set("status = 'submitted'").Set("signature = ?", sig).Set("raw = ?", raw).
			Set("updated_at = ?", now).Set("sent_at = ?", now).Where("id = ?", in.ID).Exec(ctx); err != nil {
			return fmt.Errorf("mark intent %s submitted: %w", in.ID, err)
		}
		first = true
		return nil
	})
	if refused != nil {
		if _, ferr := s.db.NewUpdate().Model((*Intent)(nil)).Set("status = 'failed'").
			Set("error = ?", "refused before it was sent: "+refused.Message).Set("updated_at = ?", s.now()).
			Where("id = ? AND status = 'prepared'", in.ID).Exec(ctx); ferr != nil {
			return false, fmt.Errorf("fail refused intent %s: %w", in.ID, ferr)
		}
	}
	return first && err == nil, err
}

// kindTip is what player protection weighs a plain transfer to another
// player's wallet as: a tip without its chat line.
const kindTip = "tip"

// protectedKind is the kind player protection weighs an intent of kind to
// destination as: a plain transfer to another player's wallet is a tip.
func (s *Service) protectedKind(ctx context.Context, kind, destination string) (string, error) {
	if kind != KindTransfer {
		return kind, nil
	}
	toPlayer, err := s.db.NewSelect().Table("users").Where("wallet_address = ?", destination).Exists(ctx)
	if err != nil {
		return "", fmt.Errorf("look up the owner of %s: %w", destination, err)
	}
	if toPlayer {
		return kindTip, nil
	}
	return kind, nil
}

func notConfirmedYet(sig string) error {
	return domain.Errorf(domain.CodeUnavailable, "the transaction %s was sent but is not confirmed yet; submit again to check", sig)
}

// checkSigned parses the client's transaction and checks it is exactly the
// prepared message with a valid signature of the intent's user.
func (s *Service) checkSigned(ctx context.Context, in Intent, signedB64 string) (*solana.Transaction, error) {
	bad := func(reason string) error { return domain.Invalid(map[string]string{"signedTransaction": reason}) }
	raw, err := base64.StdEncoding.DecodeString(signedB64)
	if err != nil {
		return nil, bad("must be a base64 Solana transaction")
	}
	tx, err := solana.TransactionFromBytes(raw)
	if err != nil {
		return nil, bad("must be a base64 Solana transaction")
	}
	msg, err := chain.MessageBytes(tx)
	if err != nil || string(msg) != string(in.Message) {
		return nil, bad("differs from the prepared transaction; sign exactly what prepare returned")
	}
	var wallet string
	if err := s.db.NewSelect().Table("users").Column("wallet_address").Where("id = ?", in.UserID).
		Scan(ctx, &wallet); err != nil {
		return nil, fmt.Errorf("read the wallet of user %s: %w", in.UserID, err)
	}
	if _, ok := chain.SignatureOf(tx, solana.MustPublicKeyFromBase58(wallet)); !ok {
		return nil, bad("is not signed by your wallet " + wallet)
	}
	return tx, nil
}

// confirm records a confirmed intent's effect exactly once.
func (s *Service) confirm(ctx context.Context, intentID string) (Receipt, error) {
	var out Intent
	err := db.Transact(ctx, s.db, func(ctx context.Context, tx db.Tx) error {
		in, err := s.intent(ctx, tx.NewSelect().For("UPDATE"), "", intentID)
		if err != nil {
			return err
		}
		if in.Status != "confirmed" {
			fn := s.confirmers[in.Kind]
			if fn == nil {
				return fmt.Errorf("confirm intent %s: nothing confirms intents of kind %s", in.ID, in.Kind)
			}
			if err := fn(ctx, tx, in); err != nil {
				return fmt.Errorf("confirm %s intent %s: %w", in.Kind, in.ID, err)
			}
			in.Status, in.UpdatedAt = "confirmed", s.now()
			if _, err := tx.NewUpdate().Model(&in).Column("status", "updated_at").WherePK().Exec(ctx); err != nil {
				return fmt.Errorf("mark intent %s confirmed: %w", in.ID, err)
			}
		}
		out = in
		return nil
	})
	return receiptOf(out), err
}

func (s *Service) fail(ctx context.Context, in Intent, reason string) error {
	if err := s.markFailed(ctx, in.ID, reason); err != nil {
		return err
	}
	return domain.Errorf(domain.CodeConflict, "the network refused the transaction: %s", reason)
}

// markFailed records why an intent failed, unless it was confirmed.
func (s *Service) markFailed(ctx context.Context, intentID, reason string) error {
	if _, err := s.db.NewUpdate().Model((*Intent)(nil)).Set("status = 'failed'").Set("error = ?", reason).
		Set("updated_at = ?", s.now()).Where("id = ? AND status <> 'confirmed'", intentID).Exec(ctx); err != nil {
		return fmt.Errorf("mark intent %s failed: %w", intentID, err)
	}
	return nil
}

// resolveSubmittedAfter is how long after it was sent (or last postponed
// for an error) the resolver looks at a submitted intent on chain and
// sends it again: a round after the submit's own first sends. The submit
// may still be driving it; the same bytes sent twice land once, and
// confirm records them once.
const resolveSubmittedAfter = 2 * chain.DefaultResendEvery

// ResolveSubmittedIntents finishes intents that were sent but whose
// outcome no submit recorded (the request ended first, or the instance
// stopped): landed ones are confirmed, which runs their kind's confirmer
// once; ones the chain refused are failed, and ones not seen once their
// last valid block height passed are expired; the others are sent again
// from their stored bytes. It runs every few seconds on every instance;
// confirm's row lock and the conditions of failing and expiring keep it
// exactly-once.
func (s *Service) ResolveSubmittedIntents(ctx context.Context) error {
	expireErr := s.expirePrepared(ctx)
	var submitted []Intent
	if err := s.db.NewSelect().Model(&submitted).
		Where("status = 'submitted' AND updated_at < ?", s.now().Add(-resolveSubmittedAfter)).
		Order("updated_at").Limit(100).Scan(ctx); err != nil {
		return errors.Join(expireErr, fmt.Errorf("read the submitted intents: %w", err))
	}
	errs := []error{expireErr}
	for _, in := range submitted {
		if err := s.resolveSubmitted(ctx, in); err != nil {
			errs = append(errs, fmt.Errorf("resolve submitted intent %s: %w", in.ID, err))
			// To the back of the line, so that one intent that cannot be
			// resolved does not hold up the others.
			if _, berr := s.db.NewUpdate().Model((*Intent)(nil)).Set("updated_at = ?", s.now()).
				Where("id = ? AND status = 'submitted'", in.ID).Exec(ctx); berr != nil {
				errs = append(errs, fmt.Errorf("postpone intent %s: %w", in.ID, berr))
			}
		}
	}
	return errors.Join(errs...)
}

// resolveSubmitted confirms, fails or expires one submitted intent by what
// the chain says of its transaction, and while it can still land sends its
// stored bytes again.
func (s *Service) resolveSubmitted(ctx context.Context, in Intent) error {
	if in.Signature == nil {
		return fmt.Errorf("submitted without a signature")
	}
	sig, err := solana.SignatureFromBase58(*in.Signature)
	if err != nil {
		return fmt.Errorf("parse the stored signature %q: %w", *in.Signature, err)
	}
	lastValid, err := s.lastValid(ctx, in)
	if err != nil {
		return err
	}
	outcome, reason, err := s.chain.Observe(ctx, sig, lastValid)
	switch {
	case err != nil:
		return err // names the transaction or the height
	case outcome == chain.Failed:
		return s.markFailed(ctx, in.ID, reason)
	case outcome == chain.Landed:
		_, err := s.confirm(ctx, in.ID)
		return err
	case outcome == chain.Expired:
		return s.markExpired(ctx, in.ID)
	}
	if in.Raw == nil {
		return nil // sent before its bytes were kept: only its submit can send it again
	}
	tx, err := solana.TransactionFromBytes(in.Raw)
	if err != nil {
		return fmt.Errorf("parse the stored transaction: %w", err)
	}
	if _, err := s.chain.Send(ctx, tx); err != nil {
		s.log.Warn("resend intent", "intent", in.ID, "err", err)
	}
	return nil
}

// lastValid is the last block height an intent's transaction can land at.
// An intent prepared before the height was kept gets a bound from the
// chain's height now, stored so that it does not move.
func (s *Service) lastValid(ctx context.Context, in Intent) (uint64, error) {
	if in.LastValid != nil {
		return uint64(*in.LastValid), nil
	}
	h, err := s.chain.LastValidFrom(ctx)
	if err != nil {
		return 0, err
	}
	if _, err := s.db.NewUpdate().Model((*Intent)(nil)).Set("last_valid_block_height = ?", int64(h)).
		Where("id = ? AND last_valid_block_height IS NULL", in.ID).Exec(ctx); err != nil {
		return 0, fmt.Errorf("store the last valid height of intent %s: %w", in.ID, err)
	}
	return h, nil
}

// expirePrepared ends the intents prepared and never submitted before they
// expired: nothing of theirs was sent, and a submit now is refused. A
// submit that passed the expiry check just before and is marking its
// intent sent holds its row: this waits, and then finds it submitted.
func (s *Service) expirePrepared(ctx context.Context) error {
	if _, err := s.db.NewUpdate().Model((*Intent)(nil)).Set("status = 'expired'").
		Set("error = 'not submitted before it expired'").Set("updated_at = ?", s.now()).
		Where("status = 'prepared' AND expires_at < ?", s.now()).Exec(ctx); err != nil {
		return fmt.Errorf("expire the intents never submitted: %w", err)
	}
	return nil
}

// markExpired records that an intent's transaction can no longer land,
// unless it was confirmed.
func (s *Service) markExpired(ctx context.Context, intentID string) error {
	if _, err := s.db.NewUpdate().Model((*Intent)(nil)).Set("status = 'expired'").
		Set("error = 'not seen on chain before its blockhash expired'").
		Set("updated_at = ?", s.now()).Where("id = ? AND status = 'submitted'", intentID).Exec(ctx); err != nil {
		return fmt.Errorf("mark intent %s expired: %w", intentID, err)
	}
	return nil
}

func expiredError() error {
	return domain.Errorf(domain.CodeConflict,
		"this transaction expired: the network did not take it before its blockhash expired, and never will; nothing moved. Prepare a new one")
}

// intent loads one intent through sel (a select on the database or in a
// transaction); userID "" skips the owner check.
func (s *Service) intent(ctx context.Context, sel *bun.SelectQuery, userID, id string) (Intent, error) {
	var in Intent
	id, ok := domain.CanonicalID(id)
	if !ok {
		return in, domain.Errorf(domain.CodeNotFound, "no such intent")
	}
	sel = sel.Model(&in).Where("id = ?", id)
	if userID != "" {
		sel = sel.Where("user_id = ?", userID)
	}
	if err := sel.Scan(ctx); errors.Is(err, sql.ErrNoRows) {
		return in, domain.Errorf(domain.CodeNotFound, "no such intent")
	} else if err != nil {
		return in, fmt.Errorf("read intent %s: %w", id, err)
	}
	return in, nil
}

func (s *Service) confirmDeposit(ctx context.Context, tx db.Tx, in Intent) error {
	if _, err := Post(ctx, tx, s.tell, Posting{Kind: KindDeposit, Reference: *in.Signature, Memo: "deposit " + in.ID, At: s.now(),
		Entries: []Entry{{Available(in.UserID), in.AmountMinor}, {Vault, -in.AmountMinor}}}); err != nil {
		return err
	}
	return s.record(ctx, tx, Activity{UserID: in.UserID, Kind: KindDeposit, AmountMinor: in.AmountMinor,
		Counterparty: in.Destination, Signature: *in.Signature})
}

func (s *Service) confirmTransfer(ctx context.Context, tx db.Tx, in Intent) error {
	return s.record(ctx, tx, Activity{UserID: in.UserID, Kind: KindTransfer, AmountMinor: -in.AmountMinor,
		Counterparty: in.Destination, Signature: *in.Signature})
}

// FormatUSDC writes minor units as a USDC amount the way every page and
// message shows one: at least two decimals, all six only when the amount
// has them ("1.50", "0.01", "0.000001", "0.00"). It is the one place
// amounts are written; USDC appends the currency.
func FormatUSDC(minor int64) string {
	s := formatUnits(minor, 6)
	whole, frac, _ := strings.Cut(s, ".")
	for len(frac) < 2 {
		frac += "0"
	}
	return whole + "." + frac
}

// USDC is FormatUSDC with the currency: "1.50 USDC".
func USDC(minor int64) string { return FormatUSDC(minor) + " USDC" }

// FormatSOL writes lamports as SOL ("0.00203928").
func FormatSOL(lamports int64) string { return formatUnits(lamports, 9) }

// formatUnits writes n smallest units of a currency with the given number
// of decimals, without trailing zeros.
func formatUnits(n int64, decimals int) string {
	sign := ""
	if n < 0 {
		sign, n = "-", -n
	}
	scale := int64(1)
	for range decimals {
		scale *= 10
	}
	whole, frac := n/scale, n%scale
	if frac == 0 {
		return sign + strconv.FormatInt(whole, 10)
	}
	f := strings.TrimRight(fmt.Sprintf("%0*d", decimals, frac), "0")
	return sign + strconv.FormatInt(whole, 10) + "." + f
}
