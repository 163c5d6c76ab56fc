package chain

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/rpc"
	"github.com/gagliardetto/solana-go/rpc/jsonrpc"
)

// Client talks to a Solana JSON-RPC endpoint through solana-go's client:
// the same code path for a real cluster, the embedded chain and LiteSVM.
type Client struct {
	RPC *rpc.Client
	// Commitment is how far a transaction must have gone for Status to
	// call it landed: confirmed (the zero value), or finalized, which a
	// cluster cannot roll back.
	Commitment rpc.CommitmentType
	// ResendEvery is how often Drive sends the same signed bytes
	// again while it waits (zero: DefaultResendEvery): a node may lose a
	// transaction on its way to a leader, and the same bytes land once.
	ResendEvery time.Duration

	clock clock // nil: the real time
	// Fees is how Budgeted prices transactions.
	Fees Fees
}

// DefaultResendEvery is Client.ResendEvery's default.
const DefaultResendEvery = 2 * time.Second

// NewClient returns a client for url. httpClient may be nil (the default
// HTTP client) or an in-process transport for the embedded chain.
func NewClient(url string, httpClient jsonrpc.HTTPClient) *Client {
	if httpClient == nil {
		return &Client{RPC: rpc.New(url)}
	}
	return &Client{RPC: rpc.NewWithCustomRPCClient(jsonrpc.NewClientWithOpts(url, &jsonrpc.RPCClientOpts{HTTPClient: httpClient}))}
}

// The JSON-RPC errors of sendTransaction that refuse the transaction.
const (
	rpcPreflightFailure   = -32002
	rpcSignatureFailure   = -32003
	rpcInvalidTransaction = -32602 // it could not be read
)

// Send submits a fully signed transaction and returns its signature. A
// refusal (a failed preflight, a bad signature, a transaction that cannot
// be read) is a
// *RejectedError; any other error, RPC errors such as a node that is
// unhealthy or behind included, leaves it unknown whether the transaction
// got anywhere (check its status). A transaction the chain has already
// processed (sent before, by another request or instance, and perhaps not
// confirmed yet) is not refused: it was sent, and its status tells its
// outcome.
func (c *Client) Send(ctx context.Context, tx *solana.Transaction) (solana.Signature, error) {
	sig, err := c.RPC.SendTransactionWithOpts(ctx, tx, rpc.TransactionOpts{
		SkipPreflight: false, PreflightCommitment: rpc.CommitmentConfirmed})
	if err != nil {
		var rpcErr *jsonrpc.RPCError
		if errors.As(err, &rpcErr) {
			if strings.Contains(rpcErr.Message, "already been processed") {
				return tx.Signatures[0], nil
			}
			if rpcErr.Code == rpcPreflightFailure || rpcErr.Code == rpcSignatureFailure || rpcErr.Code == rpcInvalidTransaction {
				return solana.Signature{}, &RejectedError{Reason: rpcErr.Message}
			}
		}
		return solana.Signature{}, fmt.Errorf("send transaction %s: %w", firstSignature(tx), err)
	}
	return sig, nil
}

// TokenBalance returns the token amount in owner's associated token
// account for mint (0 when the account does not exist), as of the
// confirmed slot: what a wallet holds now, for a check before a transfer
// or a display.
func (c *Client) TokenBalance(ctx context.Context, owner, mint solana.PublicKey) (uint64, error) {
	return c.tokenBalance(ctx, owner, mint, rpc.CommitmentConfirmed)
}

// CreditedTokenBalance is TokenBalance at the client's Commitment: the
// balance that the transactions credited so far account for, for books
// kept at that commitment. Read at confirmed while they credit at
// finalized, a transfer confirmed but not yet finalized would show as a
// shortfall of the account it left.
func (c *Client) CreditedTokenBalance(ctx context.Context, owner, mint solana.PublicKey) (uint64, error) {
	return c.tokenBalance(ctx, owner, mint, cmp.Or(c.Commitment, rpc.CommitmentConfirmed))
}

func (c *Client) tokenBalance(ctx context.Context, owner, mint solana.PublicKey, commitment rpc.CommitmentType) (uint64, error) {
	ata := ATA(owner, mint)
	info, err := c.RPC.GetAccountInfoWithOpts(ctx, ata, &rpc.GetAccountInfoOpts{Commitment: commitment})
	if errors.Is(err, rpc.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("get token account %s: %w", ata, err)
	}
	data := info.Value.Data.GetBinary()
	if len(data) < 72 {
		return 0, fmt.Errorf("token account %s has %d bytes of data", ata, len(data))
	}
	return leUint64(data[64:72]), nil
}

// Slot returns the chain's slot at the client's Commitment.
func (c *Client) Slot(ctx context.Context) (uint64, error) {
	slot, err := c.RPC.GetSlot(ctx, cmp.Or(c.Commitment, rpc.CommitmentConfirmed))
	if err != nil {
		return 0, fmt.Errorf("get the slot: %w", err)
	}
	return slot, nil
}

// Lamports returns the SOL balance of an address in lamports.
func (c *Client) Lamports(ctx context.Context, addr solana.PublicKey) (uint64, error) {
	out, err := c.RPC.GetBalance(ctx, addr, rpc.CommitmentConfirmed)
	if err != nil {
		return 0, fmt.Errorf("get balance of %s: %w", addr, err)
	}
	return out.Value, nil
}

// firstSignature is the signature that identifies tx (zero when it is not
// signed yet).
func firstSignature(tx *solana.Transaction) solana.Signature {
	if len(tx.Signatures) == 0 {
		return solana.Signature{}
	}
	return tx.Signatures[0]
}

func leUint64(b []byte) uint64 {
	var v uint64
	for i := 7; i >= 0; i-- {
		v = v<<8 | uint64(b[i])
	}
	return v
}
