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
)

// The custody of a transaction the platform signs or co-signs. Its bytes
// and the last block height its blockhash is valid for are stored before
// it is first sent; it is then sent again every ResendEvery until the
// chain reports it, and its fate is read in one order: the finalized block
// height first, then the signature's status. A transaction not seen once
// that height had passed its last valid one can never land (no later block may
// include it): only then is it Expired, and only then may its payment be
// signed anew. Read the other way round, a transaction landing between the
// two reads would be called expired, and its payment made twice.

// Recent is a blockhash to build a transaction on and the last block
// height at which a transaction built on it can land.
type Recent struct {
	Hash      solana.Hash
	LastValid uint64
}

// BlockhashValidity is how many blocks past the one of its blockhash a
// transaction can land in (Solana's MAX_PROCESSING_AGE).
const BlockhashValidity = 150

// Blockhash returns a recent blockhash to build a transaction on.
func (c *Client) Blockhash(ctx context.Context) (Recent, error) {
	out, err := c.RPC.GetLatestBlockhash(ctx, rpc.CommitmentConfirmed)
	if err != nil {
		return Recent{}, fmt.Errorf("get latest blockhash: %w", err)
	}
	return Recent{Hash: out.Value.Blockhash, LastValid: out.Value.LastValidBlockHeight}, nil
}

// LastValidFrom is a bound on the last valid block height of a transaction
// built by someone else on a blockhash valid now: that blockhash is no
// newer than the cluster's newest block, but the node it came from may be
// ahead of the one answering here, so the bound allows another validity
// period. Expiring late costs only time.
func (c *Client) LastValidFrom(ctx context.Context) (uint64, error) {
	h, err := c.RPC.GetBlockHeight(ctx, rpc.CommitmentProcessed)
	if err != nil {
		return 0, fmt.Errorf("get the block height: %w", err)
	}
	return h + 2*BlockhashValidity, nil
}

// finalizedView is the chain's finalized block height and slot, as one
// node reported them in one answer.
type finalizedView struct{ height, slot uint64 }

// finalized reads the finalized height and slot (getLatestBlockhash at
// finalized gives both). Expiry is judged by them, whatever the credit
// commitment: once the finalized height has passed a transaction's last
// valid height, every block that could hold it is finalized, and a node
// that has seen the finalized slot reports it. Judged by the newest
// height, a transaction landed but not yet reported would be called
// expired, and paid again.
func (c *Client) finalized(ctx context.Context) (finalizedView, error) {
	out, err := c.RPC.GetLatestBlockhash(ctx, rpc.CommitmentFinalized)
	if err != nil {
		return finalizedView{}, fmt.Errorf("get the finalized block height: %w", err)
	}
	return finalizedView{height: max(out.Value.LastValidBlockHeight, BlockhashValidity) - BlockhashValidity,
		slot: out.Context.Slot}, nil
}

// RejectedError is a transaction the chain refused: it did not and will
// not land (bad signature, failed instruction).
type RejectedError struct{ Reason string }

func (e *RejectedError) Error() string { return "transaction rejected: " + e.Reason }

// sighting is what the chain says of a signature.
type sighting int

const (
	unseen sighting = iota // the chain knows nothing of it
	seen                   // processed or confirmed, not yet at the client's commitment
	landed                 // at the client's commitment
)

// look reads a signature's status: a transaction that failed on chain is a
// *RejectedError.
func (c *Client) look(ctx context.Context, sig solana.Signature) (sighting, error) {
	s, _, err := c.lookAt(ctx, sig)
	return s, err
}

// lookAt is look that also gives the slot the answering node had reached.
func (c *Client) lookAt(ctx context.Context, sig solana.Signature) (sighting, uint64, error) {
	out, err := c.RPC.GetSignatureStatuses(ctx, true, sig)
	if err != nil {
		return unseen, 0, fmt.Errorf("get the status of transaction %s: %w", sig, err)
	}
	s, err := c.sightingOf(out)
	return s, out.Context.Slot, err
}

// LandedSlot is the slot a transaction that landed is in.
func (c *Client) LandedSlot(ctx context.Context, sig solana.Signature) (uint64, error) {
	out, err := c.RPC.GetSignatureStatuses(ctx, true, sig)
	if err != nil {
		return 0, fmt.Errorf("get the status of transaction %s: %w", sig, err)
	}
	if len(out.Value) == 0 || out.Value[0] == nil {
		return 0, fmt.Errorf("transaction %s is not known to the chain", sig)
	}
	return out.Value[0].Slot, nil
}

// sightingOf reads the status of getSignatureStatuses's one signature.
func (c *Client) sightingOf(out *rpc.GetSignatureStatusesResult) (sighting, error) {
	if len(out.Value) == 0 || out.Value[0] == nil {
		return unseen, nil
	}
	st := out.Value[0]
	final := st.ConfirmationStatus == rpc.ConfirmationStatusFinalized ||
		(st.ConfirmationStatus == rpc.ConfirmationStatusConfirmed && c.Commitment != rpc.CommitmentFinalized)
	switch {
	case !final:
		// Not at the commitment yet, failed or not: a block that is not
		// final may be dropped, and the transaction land (or succeed)
		// in another.
		return seen, nil
	case st.Err != nil:
		return seen, &RejectedError{Reason: fmt.Sprint(st.Err)}
	}
	return landed, nil
}

// Status reports whether a transaction has landed at the client's
// commitment (true, nil), failed on chain (false, *RejectedError), or is
// not seen or not that far yet (false, nil).
func (c *Client) Status(ctx context.Context, sig solana.Signature) (bool, error) {
	s, err := c.look(ctx, sig)
	return s == landed && err == nil, err
}

// Outcome is what the chain says of a transaction that was sent.
type Outcome int

// Outcomes of a sent transaction.
const (
	Pending Outcome = iota // not at the commitment yet, and it may still get there
	Landed                 // at the client's commitment
	Failed                 // failed on chain
	Expired                // not seen, and its last valid block height has passed: it never will be
	// Refused in preflight and not seen: it did not land, and lands only
	// if sent again once the accounts allow it (or by a node that was
	// behind the one that refused it), until it expires.
	Refused
)

func (o Outcome) String() string {
	return [...]string{"pending", "landed", "failed", "expired", "refused"}[o]
}

// Observe reports the fate of the transaction with signature sig, valid
// up to block height lastValid, and for Failed the chain's reason. The
// finalized height is read before the status (see the top of this file
// and finalized). A
// transaction seen but not yet at the commitment is Pending even past its
// last valid height: it may still be finalized, or rolled back, and then
// it is unseen and Expired.
func (c *Client) Observe(ctx context.Context, sig solana.Signature, lastValid uint64) (Outcome, string, error) {
	fin, err := c.finalized(ctx)
	if err != nil {
		return Pending, "", err
	}
	s, at, err := c.lookAt(ctx, sig)
	var rejected *RejectedError
	switch {
	case errors.As(err, &rejected):
		return Failed, rejected.Reason, nil
	case err != nil:
		return Pending, "", err
	case s == landed:
		return Landed, "", nil
	case s == unseen && fin.height > lastValid && at >= fin.slot:
		// Unseen by a node that has reached the finalized slot: behind
		// a load balancer the status may come from another node than
		// the height, and one behind does not know what it has not seen.
		return Expired, "", nil
	}
	return Pending, "", nil
}

// unknownBlockhash reports whether a refusal is that the node does not
// know the blockhash: it may be behind the node the blockhash came from,
// or the blockhash may have expired. Neither is an outcome: Observe
// decides by the block height.
func unknownBlockhash(reason string) bool { return strings.Contains(reason, "Blockhash not found") }

// Drive sends tx, valid up to block height lastValid, and watches it until
// it is final or wait has passed, sending the same bytes again every
// ResendEvery while it is not at the commitment. It answers Landed,
// Failed (and the chain's reason), Expired, Refused (and the reason), or
// Pending when wait passed first (with the last error the RPC gave, if
// any): the transaction may still land, and its custodian drives it again
// later. A preflight refusal ends it as Refused, unless the transaction
// turns out to be known to the chain, the refusal is an unknown
// blockhash, or an earlier send of the call may have been taken. Failures
// of the RPC never end it.
func (c *Client) Drive(ctx context.Context, tx *solana.Transaction, lastValid uint64, wait time.Duration) (Outcome, string, error) {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	sig := tx.Signatures[0]
	every := c.ResendEvery
	if every <= 0 {
		every = DefaultResendEvery
	}
	var last error
	poll := 20 * time.Millisecond
	deadline := c.now().Add(wait)
	first := true // no send of this call went anywhere yet, as far as it knows
	for sendAt := c.now(); ; {
		if !c.now().Before(sendAt) {
			var rejected *RejectedError
			_, err := c.Send(ctx, tx)
			refused := errors.As(err, &rejected) && !unknownBlockhash(rejected.Reason)
			if refused && first {
				// Refused before any send of this call was taken: the
				// outcome, unless the chain knows it (a retried submit of
				// one that went through). After a send that may have been
				// taken, a refusal proves nothing: that copy may land.
				s, lerr := c.look(ctx, sig)
				var failed *RejectedError
				switch {
				case errors.As(lerr, &failed):
					return Failed, failed.Reason, nil
				case lerr == nil && s == landed:
					return Landed, "", nil
				case lerr == nil && s == unseen:
					return Refused, rejected.Reason, nil
				}
				err = cmp.Or(lerr, error(rejected))
			}
			if err != nil {
				last = err
			}
			first = first && refused
			sendAt = c.now().Add(every)
		}
		outcome, reason, err := c.Observe(ctx, sig, lastValid)
		if err != nil {
			last = err
		} else if outcome != Pending {
			return outcome, reason, nil
		}
		if !c.now().Before(deadline) || c.sleep(ctx, poll) != nil {
			if last == nil {
				last = fmt.Errorf("transaction %s not final within %v", sig, wait)
			}
			return Pending, "", last
		}
		poll = min(poll*2, 500*time.Millisecond)
	}
}

// SendAndConfirm drives a transaction whose last valid block height the
// caller does not track (a test's, a tool's) until it lands: any other
// outcome is an error, a *RejectedError when the chain refused it.
func (c *Client) SendAndConfirm(ctx context.Context, tx *solana.Transaction, timeout time.Duration) (solana.Signature, error) {
	sig := tx.Signatures[0]
	lastValid, err := c.LastValidFrom(ctx)
	if err != nil {
		return sig, err
	}
	outcome, reason, err := c.Drive(ctx, tx, lastValid, timeout)
	switch outcome {
	case Landed:
		return sig, nil
	case Failed, Refused:
		return sig, &RejectedError{Reason: reason}
	case Expired:
		return sig, fmt.Errorf("transaction %s expired before it landed", sig)
	}
	return sig, err
}

// Confirm polls the signature's status until it lands, fails, or timeout
// passes (an error that leaves the outcome unknown).
func (c *Client) Confirm(ctx context.Context, sig solana.Signature, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for poll := 20 * time.Millisecond; ; poll = min(poll*2, 500*time.Millisecond) {
		ok, err := c.Status(ctx, sig)
		var rejected *RejectedError
		if ok || errors.As(err, &rejected) {
			return err
		}
		if c.sleep(ctx, poll) != nil {
			return fmt.Errorf("transaction %s not confirmed within %v", sig, timeout)
		}
	}
}

// now and sleep are the clock of Drive, replaced in tests.
func (c *Client) now() time.Time {
	if c.clock != nil {
		return c.clock.Now()
	}
	return time.Now()
}

func (c *Client) sleep(ctx context.Context, d time.Duration) error {
	if c.clock != nil {
		return c.clock.Sleep(ctx, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// clock is a replaceable time source for Drive.
type clock interface {
	Now() time.Time
	Sleep(ctx context.Context, d time.Duration) error
}
