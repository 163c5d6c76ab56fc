package wager

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/gagliardetto/solana-go"
	"github.com/google/uuid"

	"wager/sdk/api"
)

// SignTransaction adds the wallet's signature to a prepared transaction
// (the base64 `transaction` of a prepare answer) and returns it base64,
// ready to submit. The platform is the fee payer and signs last, so the
// result is partially signed. It returns an error without a wallet, when
// the transaction is not valid, or when the wallet is not one of its
// signers.
func (c *Client) SignTransaction(prepared string) (string, error) {
	return c.signPrepared(prepared, -1)
}

// signPrepared signs a prepared transaction; when maxSpend >= 0 it first
// checks that the transaction moves at most maxSpend token units from the
// wallet and gives no one else power over its token accounts.
func (c *Client) signPrepared(prepared string, maxSpend int64) (string, error) {
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
	if maxSpend >= 0 {
		spent, err := walletSpend(tx, me)
		if err != nil {
			return "", err
		}
		if spent > maxSpend {
			return "", fmt.Errorf("wager: the prepared transaction moves %d from the wallet, more than the %d asked for", spent, maxSpend)
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

// SPL Token instructions the wallet's signature authorises.
const (
	tokenTransfer        = 3
	tokenApprove         = 4
	tokenSetAuthority    = 6
	tokenCloseAccount    = 9
	tokenTransferChecked = 12
	tokenApproveChecked  = 13
)

// walletSpend sums the token units that the transaction's Transfer and
// TransferChecked instructions move on the wallet's authority. It refuses
// a transaction that would let the wallet's token accounts be approved to
// someone, change hands or close.
func walletSpend(tx *solana.Transaction, wallet solana.PublicKey) (int64, error) {
	keys := tx.Message.AccountKeys
	at := func(ix solana.CompiledInstruction, i int) solana.PublicKey {
		if i >= len(ix.Accounts) || int(ix.Accounts[i]) >= len(keys) {
			return solana.PublicKey{}
		}
		return keys[ix.Accounts[i]]
	}
	var sum int64
	for _, ix := range tx.Message.Instructions {
		if int(ix.ProgramIDIndex) >= len(keys) || len(ix.Data) == 0 {
			continue
		}
		program := keys[ix.ProgramIDIndex]
		if !program.Equals(solana.TokenProgramID) && !program.Equals(solana.Token2022ProgramID) {
			continue
		}
		switch ix.Data[0] {
		case tokenTransfer, tokenTransferChecked:
			authority := at(ix, 2)
			if ix.Data[0] == tokenTransferChecked {
				authority = at(ix, 3)
			}
			if !authority.Equals(wallet) {
				continue
			}
			if len(ix.Data) < 9 {
				return 0, errors.New("wager: the prepared transaction has a malformed token transfer")
			}
			sum += int64(binary.LittleEndian.Uint64(ix.Data[1:9]))
		case tokenApprove, tokenApproveChecked, tokenSetAuthority, tokenCloseAccount:
			return 0, errors.New("wager: the prepared transaction would hand over or close a token account")
		}
	}
	return sum, nil
}

// gameUUID parses a game id for the generated client.
func gameUUID(id string) (uuid.UUID, error) {
	u, err := uuid.Parse(id)
	if err != nil {
		return u, fmt.Errorf("wager: game id %q is not a UUID", id)
	}
	return u, nil
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
// address, sign, submit. It returns the receipt once confirmed, or the
// API's error (*APIError: at least 10000, 409 INSUFFICIENT_FUNDS...).
func (c *Client) Deposit(ctx context.Context, amountMinor int64) (*api.MoneyReceipt, error) {
	bal, err := c.API.GetWalletsMeBalanceWithResponse(ctx, nil)
	if err != nil {
		return nil, err
	}
	if bal.JSON200 == nil {
		return nil, fmt.Errorf("wager: balance answered %d", bal.StatusCode())
	}
	pr, err := c.API.PostWalletsTransferPrepareWithResponse(ctx, nil,
		api.TransferRequest{ToAddress: bal.JSON200.DepositAddress, AmountMinor: amountMinor})
	if err != nil {
		return nil, err
	}
	p, err := prepared(pr.JSON200, pr.StatusCode())
	if err != nil {
		return nil, err
	}
	signed, err := c.signPrepared(p.Transaction, amountMinor)
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
// game's pot (spectators only): prepare, sign, submit. It returns the
// confirmed donation, or the API's error.
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
	signed, err := c.signPrepared(p.Transaction, amountMinor)
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
// It returns the confirmed bet, or the API's error (409 BETTING_CLOSED...).
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
	signed, err := c.signPrepared(p.Transaction, amountMinor)
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
// sign, broadcast. It returns the confirmed tip, or the API's error.
func (c *Client) Tip(ctx context.Context, toUserID string, amountMinor int64, where *api.TipsContext) (*api.TipsResult, error) {
	pr, err := c.API.PostTipsPrepareWithResponse(ctx, nil, api.TipRequest{ToUserId: toUserID, AmountMinor: amountMinor, Context: where})
	if err != nil {
		return nil, err
	}
	p, err := prepared(pr.JSON200, pr.StatusCode())
	if err != nil {
		return nil, err
	}
	signed, err := c.signPrepared(p.Transaction, amountMinor)
	if err != nil {
		return nil, err
	}
	sub, err := c.API.PostTipsBroadcastWithResponse(ctx, nil, api.SubmitRequest{IntentId: p.IntentId, SignedTransaction: signed})
	if err != nil {
		return nil, err
	}
	return submitted(sub.JSON200, sub.StatusCode())
}
