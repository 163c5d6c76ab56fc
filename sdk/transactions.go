package wager

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/gagliardetto/solana-go"
	"github.com/google/uuid"

	"wager.example.com/sdk/api"
)

// SignTransaction adds the wallet's signature to a prepared transaction
// (the base64 `transaction` of a prepare answer) and returns it base64,
// ready to submit. The platform is the fee payer and signs last, so the
// result is partially signed. It returns an error without a wallet, when
// the transaction is not valid, or when the wallet is not one of its
// signers.
//
// SignTransaction checks nothing about what the transaction does: it is
// the way to sign a prepare answer the SDK has no flow for, after reading
// the transaction yourself. Deposit, Donate, Bet, Tip and automatic 402
// payments sign only the transaction they asked for.
func (c *Client) SignTransaction(prepared string) (string, error) {
	return c.signPrepared(prepared, nil)
}

// ErrTransactionRefused is wrapped by the error of a flow whose prepared
// transaction does something else than the flow asked for (another
// amount, payee or token, other instructions, the wallet paying the fees):
// the wallet did not sign it and nothing was sent.
var ErrTransactionRefused = errors.New("wager: the prepared transaction does something else than asked, so nothing was signed")

func refuse(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrTransactionRefused}, args...)...)
}

// expectation is the only transaction a flow signs: compute budget, memos,
// at most one idempotent creation of the recipient's associated token
// account, and exactly one TransferChecked of amount of mint from the
// wallet's associated token account to the recipient's, with the wallet
// as its authority and the platform's feePayer paying the fees.
type expectation struct {
	feePayer solana.PublicKey
	mint     solana.PublicKey
	to       solana.PublicKey // the recipient's wallet: its associated token account receives
	amount   int64
	// walletOpens lets the wallet, besides the fee payer, pay the rent of
	// the recipient's token account (a tip to another user's wallet).
	walletOpens bool
}

// usdcDecimals is the number of decimals of the USDC mint.
const usdcDecimals = 6

// Instructions of the programs a prepared transaction may use.
const (
	computeUnitLimit      = 2     // ComputeBudget SetComputeUnitLimit
	computeUnitPrice      = 3     // ComputeBudget SetComputeUnitPrice
	createIdempotent      = 1     // associated token account CreateIdempotent
	tokenTransferChecked  = 12    // SPL Token TransferChecked
	transferCheckedLength = 10    // its data: the instruction, the amount (u64), the decimals
	computeUnitLimitLen   = 1 + 4 // the instruction and a u32
	computeUnitPriceLen   = 1 + 8 // the instruction and a u64
)

// check returns nil when tx is exactly what want allows the wallet to
// sign, else an error wrapping ErrTransactionRefused that says what is not.
func (want expectation) check(tx *solana.Transaction, wallet solana.PublicKey) error {
	m := tx.Message
	if m.IsVersioned() {
		return refuse("it is a versioned transaction; the platform prepares legacy ones")
	}
	keys := m.AccountKeys
	switch {
	case want.amount <= 0:
		return refuse("the amount asked for, %d, is not positive", want.amount)
	case len(keys) == 0:
		return refuse("it has no accounts")
	case keys[0].Equals(wallet):
		return refuse("the wallet would pay its fees")
	case !keys[0].Equals(want.feePayer):
		return refuse("its fee payer is %s, not the platform's %s", keys[0], want.feePayer)
	}
	source, _, err := solana.FindAssociatedTokenAddress(wallet, want.mint)
	if err != nil {
		return refuse("the wallet has no token account address for %s: %v", want.mint, err)
	}
	destination, _, err := solana.FindAssociatedTokenAddress(want.to, want.mint)
	if err != nil {
		return refuse("%s has no token account address for %s: %v", want.to, want.mint, err)
	}
	var limits, prices, creations, transfers int
	for i, ix := range m.Instructions {
		if int(ix.ProgramIDIndex) >= len(keys) {
			return refuse("instruction %d names no program", i)
		}
		accounts := make([]solana.PublicKey, len(ix.Accounts))
		for j, k := range ix.Accounts {
			if int(k) >= len(keys) {
				return refuse("instruction %d names an account the transaction does not have", i)
			}
			accounts[j] = keys[k]
		}
		data := ix.Data
		switch program := keys[ix.ProgramIDIndex]; {
		case program.Equals(solana.ComputeBudget):
			switch {
			case len(accounts) == 0 && len(data) == computeUnitLimitLen && data[0] == computeUnitLimit:
				limits++
			case len(accounts) == 0 && len(data) == computeUnitPriceLen && data[0] == computeUnitPrice:
				prices++
			default:
				return refuse("instruction %d is a compute budget instruction other than SetComputeUnitLimit or SetComputeUnitPrice", i)
			}
		case program.Equals(solana.MemoProgramID):
			// A memo only records its text; its accounts are signers.
		case program.Equals(solana.SPLAssociatedTokenAccountProgramID):
			if len(data) != 1 || data[0] != createIdempotent || len(accounts) != 6 {
				return refuse("instruction %d is an associated token account instruction other than CreateIdempotent", i)
			}
			payer := accounts[0]
			payerOK := payer.Equals(want.feePayer) || (want.walletOpens && payer.Equals(wallet))
			if !payerOK || !accounts[1].Equals(destination) || !accounts[2].Equals(want.to) || !accounts[3].Equals(want.mint) ||
				!accounts[4].Equals(solana.SystemProgramID) || !accounts[5].Equals(solana.TokenProgramID) {
				return refuse("instruction %d creates the token account %s of %s for %s paid by %s, not the recipient's %s",
					i, accounts[1], accounts[2], accounts[3], payer, destination)
			}
			creations++
		case program.Equals(solana.TokenProgramID) && len(data) > 0 && data[0] == tokenTransferChecked:
			if len(data) != transferCheckedLength || len(accounts) != 4 {
				return refuse("instruction %d is a malformed TransferChecked", i)
			}
			amount := binary.LittleEndian.Uint64(data[1:9])
			if amount != uint64(want.amount) || data[9] != usdcDecimals || !accounts[0].Equals(source) ||
				!accounts[1].Equals(want.mint) || !accounts[2].Equals(destination) || !accounts[3].Equals(wallet) {
				return refuse("instruction %d moves %d (%d decimals) of %s from %s to %s on the authority of %s, "+
					"not %d of %s from the wallet's %s to the recipient's %s", i, amount, data[9], accounts[1], accounts[0],
					accounts[2], accounts[3], want.amount, want.mint, source, destination)
			}
			transfers++
		case program.Equals(solana.TokenProgramID) && len(data) > 0:
			return refuse("instruction %d is the SPL Token instruction %d, not TransferChecked", i, data[0])
		case program.Equals(solana.SystemProgramID):
			return refuse("instruction %d is a System Program instruction (a SOL transfer or an account change)", i)
		default:
			return refuse("instruction %d runs the program %s, which a payment has no need of", i, program)
		}
	}
	switch {
	case transfers != 1:
		return refuse("it has %d token transfers, not one", transfers)
	case limits > 1 || prices > 1 || creations > 1:
		return refuse("it repeats a compute budget or account creation instruction")
	}
	return nil
}

// signPrepared signs a prepared transaction; with want, only when it is
// the transaction want allows.
func (c *Client) signPrepared(prepared string, want *expectation) (string, error) {
	if c.wallet == nil {
		return "", errors.New("wager: signing needs a wallet (WithWallet)")
	}
	raw, err := base64.StdEncoding.DecodeString(prepared)
	if err != nil {
		return "", fmt.Errorf("wager: the prepared transaction is not base64: %w", err)
	}
	tx, err := solana.TransactionFromBytes(raw)
	if err != nil {
		return "", fmt.Errorf("wager: the prepared transaction does not decode: %w", err)
	}
	me := c.wallet.PublicKey()
	if !tx.Message.Signers().Contains(me) {
		return "", fmt.Errorf("wager: the prepared transaction does not need the wallet %s's signature", me)
	}
	if want != nil {
		if err := want.check(tx, me); err != nil {
			return "", err
		}
	}
	if _, err := tx.PartialSign(func(k solana.PublicKey) *solana.PrivateKey {
		if k.Equals(me) {
			return &c.wallet
		}
		return nil
	}); err != nil {
		return "", fmt.Errorf("wager: signing: %w", err)
	}
	out, err := tx.MarshalBinary()
	if err != nil {
		return "", fmt.Errorf("wager: encoding the signed transaction: %w", err)
	}
	return base64.StdEncoding.EncodeToString(out), nil
}

// signFor signs a prepare answer's transaction when it moves exactly
// amount of the platform's mint to the wallet to, with the answer's fee
// payer (never the wallet) paying the fees.
func (c *Client) signFor(p *api.MoneyPrepared, pf platform, to solana.PublicKey, amount int64, walletOpens bool) (string, error) {
	feePayer, err := solana.PublicKeyFromBase58(p.FeePayer)
	if err != nil {
		return "", refuse("the prepare answer's fee payer %q is not an address", p.FeePayer)
	}
	return c.signPrepared(p.Transaction, &expectation{feePayer: feePayer, mint: pf.mint, to: to, amount: amount, walletOpens: walletOpens})
}

// platform is what a client knows of the platform's side of its
// payments, from the balance answer: the deposit address (the vault,
// also the payee of 402 payments) and the USDC mint.
type platform struct {
	deposit, mint solana.PublicKey
}

// platform returns the platform's addresses, read from the balance answer
// the first time and kept for the client's life, so that a prepare
// answer or a 402 challenge cannot name other ones. It returns the API's
// error, or an error when the answer's addresses are not addresses.
func (c *Client) platform(ctx context.Context) (platform, error) {
	c.mu.Lock()
	pf := c.known
	c.mu.Unlock()
	if !pf.mint.IsZero() {
		return pf, nil
	}
	bal, err := c.API.GetWalletsMeBalanceWithResponse(ctx, nil)
	if err != nil {
		return pf, fmt.Errorf("wager: reading the platform's deposit address and mint: %w", err)
	}
	if bal.JSON200 == nil {
		return pf, fmt.Errorf("wager: balance answered %d", bal.StatusCode())
	}
	if pf.deposit, err = solana.PublicKeyFromBase58(bal.JSON200.DepositAddress); err != nil {
		return pf, fmt.Errorf("wager: the deposit address %q is not an address", bal.JSON200.DepositAddress)
	}
	if pf.mint, err = solana.PublicKeyFromBase58(bal.JSON200.UsdcMint); err != nil {
		return pf, fmt.Errorf("wager: the USDC mint %q is not an address", bal.JSON200.UsdcMint)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.known.mint.IsZero() {
		c.known = pf
	}
	return c.known, nil
}

// gameEscrow returns the platform's addresses and the escrow address of
// a game, from its public metadata, where donations and bets go; or the
// API's error.
func (c *Client) gameEscrow(ctx context.Context, id string) (platform, solana.PublicKey, error) {
	pf, err := c.platform(ctx)
	if err != nil {
		return pf, solana.PublicKey{}, err
	}
	g, err := c.API.GetGamesByIdWithResponse(ctx, id, nil)
	if err != nil {
		return pf, solana.PublicKey{}, fmt.Errorf("wager: reading the game's escrow address: %w", err)
	}
	if g.JSON200 == nil {
		return pf, solana.PublicKey{}, fmt.Errorf("wager: the game answered %d", g.StatusCode())
	}
	escrow, err := solana.PublicKeyFromBase58(g.JSON200.EscrowAddress)
	if err != nil {
		return pf, solana.PublicKey{}, fmt.Errorf("wager: the game's escrow %q is not an address", g.JSON200.EscrowAddress)
	}
	return pf, escrow, nil
}

// walletOf returns the wallet address of a user, from their public
// profile, where a tip goes; or the API's error.
func (c *Client) walletOf(ctx context.Context, userID string) (solana.PublicKey, error) {
	id, err := uuid.Parse(userID)
	if err != nil {
		return solana.PublicKey{}, fmt.Errorf("wager: user id %q is not a UUID", userID)
	}
	profile, err := c.API.GetUsersByIdWithResponse(ctx, id.String(), nil)
	if err != nil {
		return solana.PublicKey{}, fmt.Errorf("wager: reading the recipient's wallet address: %w", err)
	}
	if profile.JSON200 == nil {
		return solana.PublicKey{}, fmt.Errorf("wager: the profile answered %d", profile.StatusCode())
	}
	to, err := solana.PublicKeyFromBase58(profile.JSON200.WalletAddress)
	if err != nil {
		return solana.PublicKey{}, fmt.Errorf("wager: the wallet %q of user %s is not an address", profile.JSON200.WalletAddress, userID)
	}
	return to, nil
}

// gameUUID checks a game id and returns it in its canonical spelling,
// which the escrow address derives from.
func gameUUID(id string) (string, error) {
	u, err := uuid.Parse(id)
	if err != nil {
		return "", fmt.Errorf("wager: game id %q is not a UUID", id)
	}
	return u.String(), nil
}

// prepared checks a prepare answer.
func prepared(p *api.MoneyPrepared, status int) (*api.MoneyPrepared, error) {
	if p == nil {
		return nil, fmt.Errorf("wager: prepare answered %d without a transaction", status)
	}
	return p, nil
}

// submitted checks a submit answer.
func submitted[T any](v *T, status int) (*T, error) {
	if v == nil {
		return nil, fmt.Errorf("wager: submit answered %d without a result", status)
	}
	return v, nil
}

// Deposit moves amountMinor USDC minor units from the wallet to the
// signed-in user's platform balance: prepare a transfer to the deposit
// address, sign, submit. It signs only a transfer of exactly amountMinor
// to the deposit address of the balance answer (ErrTransactionRefused
// otherwise). It returns the receipt once confirmed, or the API's error
// (*APIError: at least 10000, 409 INSUFFICIENT_FUNDS...).
func (c *Client) Deposit(ctx context.Context, amountMinor int64) (*api.MoneyReceipt, error) {
	pf, err := c.platform(ctx)
	if err != nil {
		return nil, err
	}
	pr, err := c.API.PostWalletsTransferPrepareWithResponse(ctx, nil,
		api.TransferRequest{ToAddress: pf.deposit.String(), AmountMinor: amountMinor})
	if err != nil {
		return nil, err
	}
	p, err := prepared(pr.JSON200, pr.StatusCode())
	if err != nil {
		return nil, err
	}
	signed, err := c.signFor(p, pf, pf.deposit, amountMinor, false)
	if err != nil {
		return nil, err
	}
	sub, err := c.API.PostWalletsTransferSubmitWithResponse(ctx, nil, api.SubmitRequest{IntentId: p.IntentId, SignedTransaction: signed})
	if err != nil {
		return nil, err
	}
	return submitted(sub.JSON200, sub.StatusCode())
}

// Donate gives amountMinor USDC minor units from the wallet to an active
// game's pot (spectators only): prepare, sign, submit. It signs only a
// transfer of exactly amountMinor to the escrow of the game's public
// metadata (ErrTransactionRefused otherwise). It returns the confirmed
// donation, or the API's error.
func (c *Client) Donate(ctx context.Context, gameID string, amountMinor int64) (*api.PotDonationResult, error) {
	id, err := gameUUID(gameID)
	if err != nil {
		return nil, err
	}
	pr, err := c.API.PostGamesByIdDonationsPrepareWithResponse(ctx, id, nil, api.DonationRequest{AmountMinor: amountMinor})
	if err != nil {
		return nil, err
	}
	p, err := prepared(pr.JSON200, pr.StatusCode())
	if err != nil {
		return nil, err
	}
	pf, escrow, err := c.gameEscrow(ctx, id)
	if err != nil {
		return nil, err
	}
	signed, err := c.signFor(p, pf, escrow, amountMinor, false)
	if err != nil {
		return nil, err
	}
	sub, err := c.API.PostGamesByIdDonationsSubmitWithResponse(ctx, id, nil, api.SubmitRequest{IntentId: p.IntentId, SignedTransaction: signed})
	if err != nil {
		return nil, err
	}
	return submitted(sub.JSON200, sub.StatusCode())
}

// Bet stakes amountMinor USDC minor units from the wallet on the player
// onUserID of an active game while betting is open: prepare, sign, submit.
// It signs only a transfer of exactly amountMinor to the escrow of the
// game's public metadata (ErrTransactionRefused otherwise). It returns the
// confirmed bet, or the API's error (409 BETTING_CLOSED...).
func (c *Client) Bet(ctx context.Context, gameID, onUserID string, amountMinor int64) (*api.PotBetResult, error) {
	id, err := gameUUID(gameID)
	if err != nil {
		return nil, err
	}
	pr, err := c.API.PostGamesByIdBetsPrepareWithResponse(ctx, id, nil, api.BetRequest{OnUserId: onUserID, AmountMinor: amountMinor})
	if err != nil {
		return nil, err
	}
	p, err := prepared(pr.JSON200, pr.StatusCode())
	if err != nil {
		return nil, err
	}
	pf, escrow, err := c.gameEscrow(ctx, id)
	if err != nil {
		return nil, err
	}
	signed, err := c.signFor(p, pf, escrow, amountMinor, false)
	if err != nil {
		return nil, err
	}
	sub, err := c.API.PostGamesByIdBetsSubmitWithResponse(ctx, id, nil, api.SubmitRequest{IntentId: p.IntentId, SignedTransaction: signed})
	if err != nil {
		return nil, err
	}
	return submitted(sub.JSON200, sub.StatusCode())
}

// Tip sends amountMinor USDC minor units from the wallet to another
// user's wallet, announced in the chat of where (nil for none): prepare,
// sign, broadcast. It signs only a transfer of exactly amountMinor to the
// wallet of the recipient's public profile, the wallet paying at most the
// rent of the recipient's USDC account (ErrTransactionRefused otherwise).
// It returns the confirmed tip, or the API's error.
func (c *Client) Tip(ctx context.Context, toUserID string, amountMinor int64, where *api.TipsContext) (*api.TipsResult, error) {
	pr, err := c.API.PostTipsPrepareWithResponse(ctx, nil, api.TipRequest{ToUserId: toUserID, AmountMinor: amountMinor, Context: where})
	if err != nil {
		return nil, err
	}
	p, err := prepared(pr.JSON200, pr.StatusCode())
	if err != nil {
		return nil, err
	}
	pf, err := c.platform(ctx)
	if err != nil {
		return nil, err
	}
	to, err := c.walletOf(ctx, toUserID)
	if err != nil {
		return nil, err
	}
	signed, err := c.signFor(p, pf, to, amountMinor, true)
	if err != nil {
		return nil, err
	}
	sub, err := c.API.PostTipsBroadcastWithResponse(ctx, nil, api.SubmitRequest{IntentId: p.IntentId, SignedTransaction: signed})
	if err != nil {
		return nil, err
	}
	return submitted(sub.JSON200, sub.StatusCode())
}
