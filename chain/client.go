package chain

import (
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
	// ResendEvery is how often SendAndConfirm sends the same signed bytes
	// again while it waits (zero: DefaultResendEvery): a node may lose a
	// transaction on its way to a leader, and the same bytes land once.
	ResendEvery time.Duration
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

// Blockhash returns a recent blockhash to build a transaction with.
func (c *Client) Blockhash(ctx context.Context) (solana.Hash, error) {
	out, err := c.RPC.GetLatestBlockhash(ctx, rpc.CommitmentConfirmed)
	if err != nil {
		return solana.Hash{}, fmt.Errorf("get latest blockhash: %w", err)
	}
	return out.Value.Blockhash, nil
}

// RejectedError is a transaction the chain refused: it did not and will
// not land (bad signature, expired blockhash, failed instruction, replay).
type RejectedError struct{ Reason string }

func (e *RejectedError) Error() string { return "transaction rejected: " + e.Reason }

// Send submits a fully signed transaction and returns its signature. A
// refusal by the chain is a *RejectedError; any other error leaves it
// unknown whether the transaction landed (check its status). A transaction
// the chain has already processed (sent before, by another request or
// instance, and perhaps not confirmed yet) is not refused: it was sent, and
// its status tells its outcome.
func (c *Client) Send(ctx context.Context, tx *solana.Transaction) (solana.Signature, error) {
	sig, err := c.RPC.SendTransactionWithOpts(ctx, tx, rpc.TransactionOpts{
		SkipPreflight: false, PreflightCommitment: rpc.CommitmentConfirmed})
	if err != nil {
		var rpcErr *jsonrpc.RPCError
		if errors.As(err, &rpcErr) {
			if strings.Contains(rpcErr.Message, "already been processed") {
				return tx.Signatures[0], nil
			}
			return solana.Signature{}, &RejectedError{Reason: rpcErr.Message}
		}
		return solana.Signature{}, fmt.Errorf("send transaction %s: %w", firstSignature(tx), err)
	}
	return sig, nil
}

// Status reports whether a transaction has landed at the client's
// commitment (true, nil), failed on chain (false, *RejectedError), or is
// not seen or not that far yet (false, nil).
func (c *Client) Status(ctx context.Context, sig solana.Signature) (bool, error) {
	out, err := c.RPC.GetSignatureStatuses(ctx, true, sig)
	if err != nil {
		return false, fmt.Errorf("get the status of transaction %s: %w", sig, err)
	}
	if len(out.Value) == 0 || out.Value[0] == nil {
		return false, nil
	}
	st := out.Value[0]
	if st.Err != nil {
		return false, &RejectedError{Reason: fmt.Sprint(st.Err)}
	}
	switch st.ConfirmationStatus {
	case rpc.ConfirmationStatusFinalized:
		return true, nil
	case rpc.ConfirmationStatusConfirmed:
		return c.Commitment != rpc.CommitmentFinalized, nil
	}
	return false, nil
}

// Outcome is what the chain says of a transaction that was sent.
type Outcome int

// Outcomes of a sent transaction.
const (
	Pending Outcome = iota // not landed, and its blockhash is valid: it may still land
	Landed                 // confirmed
	Failed                 // refused on chain
	Expired                // not landed, and its blockhash expired: it never will
)

// OutcomeOf reports the fate of the transaction with signature sig built on
// blockhash, and for Failed the chain's reason. The blockhash is checked
// first, at the commitment blockhashes are taken at: a transaction not seen
// after its blockhash expired can never land, while one seen landing in
// between is reported Landed.
func (c *Client) OutcomeOf(ctx context.Context, sig solana.Signature, blockhash solana.Hash) (Outcome, string, error) {
	valid, err := c.RPC.IsBlockhashValid(ctx, blockhash, rpc.CommitmentConfirmed)
	if err != nil {
		return Pending, "", fmt.Errorf("check whether blockhash %s is valid: %w", blockhash, err)
	}
	landed, err := c.Status(ctx, sig)
	var rejected *RejectedError
	switch {
	case errors.As(err, &rejected):
		return Failed, rejected.Reason, nil
	case err != nil:
		return Pending, "", err // Status names the transaction
	case landed:
		return Landed, "", nil
	case !valid.Value:
		return Expired, "", nil
	}
	return Pending, "", nil
}

// Confirm polls the signature's status until it is confirmed, fails, or
// timeout passes (an error that leaves the outcome unknown).
func (c *Client) Confirm(ctx context.Context, sig solana.Signature, timeout time.Duration) error {
	return c.confirm(ctx, nil, sig, timeout)
}

// confirm is Confirm that also sends tx (when not nil) again every
// ResendEvery until it is seen: a refusal then ends the wait, unless the
// transaction had landed meanwhile.
func (c *Client) confirm(ctx context.Context, tx *solana.Transaction, sig solana.Signature, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	every := c.ResendEvery
	if every <= 0 {
		every = DefaultResendEvery
	}
	wait, resendAt := 20*time.Millisecond, time.Now().Add(every)
	for {
		ok, err := c.Status(ctx, sig)
		if ok {
			return nil
		}
		var rejected *RejectedError
		if errors.As(err, &rejected) {
			return err
		}
		if tx != nil && !time.Now().Before(resendAt) {
			if _, err := c.Send(ctx, tx); errors.As(err, &rejected) {
				if ok, serr := c.Status(ctx, sig); ok && serr == nil {
					return nil
				}
				return err
			}
			resendAt = time.Now().Add(every)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("transaction %s not confirmed within %v", sig, timeout)
		case <-time.After(wait):
		}
		wait = min(wait*2, 500*time.Millisecond)
	}
}

// SendAndConfirm sends tx and waits for confirmation, sending the same
// bytes again every ResendEvery while it is not seen (a send that fails in
// a way that leaves the outcome unknown is one of those). A refusal by the
// chain ends it, unless the transaction had landed already, so that a
// retried submit of the same signed transaction converges.
func (c *Client) SendAndConfirm(ctx context.Context, tx *solana.Transaction, timeout time.Duration) (solana.Signature, error) {
	sig := tx.Signatures[0]
	if _, err := c.Send(ctx, tx); err != nil {
		var rejected *RejectedError
		if !errors.As(err, &rejected) {
			return sig, c.confirm(ctx, tx, sig, timeout)
		}
		if ok, serr := c.Status(ctx, sig); ok && serr == nil {
			return sig, nil // it had landed already
		}
		return sig, err
	}
	return sig, c.confirm(ctx, tx, sig, timeout)
}

// TokenBalance returns the token amount in owner's associated token
// account for mint (0 when the account does not exist).
func (c *Client) TokenBalance(ctx context.Context, owner, mint solana.PublicKey) (uint64, error) {
	ata := ATA(owner, mint)
	info, err := c.RPC.GetAccountInfoWithOpts(ctx, ata, &rpc.GetAccountInfoOpts{Commitment: rpc.CommitmentConfirmed})
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
