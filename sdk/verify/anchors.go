package verify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/rpc"
	"golang.org/x/mod/sumdb/tlog"

	"wager.example.com/sdk/anchor"
	"wager.example.com/sdk/sumtree"
)

// Anchored checks a verified checkpoint against the log's newest anchor on
// Solana that it covers (RPC must be set): the anchor's transaction is on
// the chain and writes the memo of the anchored size and root, and the
// checkpoint's tree extends the anchored one, so the log did not rewrite
// anything since the anchor's slot. It returns the anchor, or nil when the
// server lists none within the checkpoint yet.
func (v *Verifier) Anchored(ctx context.Context, cp Checkpoint) (*anchor.Anchor, error) {
	a, err := v.anchor(ctx, func(a anchor.Anchor) bool {
		return a.Kind == anchor.GamesLog && a.Size != nil && *a.Size <= cp.Tree.N
	})
	if a == nil || err != nil {
		return nil, err
	}
	if err := v.onChain(ctx, a.Signature, anchor.Memo(anchor.GamesLog, strconv.FormatInt(*a.Size, 10), a.RootHash)); err != nil {
		return nil, err
	}
	anchored := tlog.Tree{N: *a.Size, Hash: tlog.Hash(a.RootHash)}
	if err := v.consistent(ctx, Checkpoint{Origin: cp.Origin, Tree: anchored}, cp); err != nil {
		return nil, fmt.Errorf("against the anchor on Solana at slot %d (transaction %s): %w", a.Slot, a.Signature, err)
	}
	return a, nil
}

// ReservesAnchored checks a verified snapshot's anchor on Solana (RPC
// must be set): the transaction the server lists for the snapshot is on
// the chain and writes the memo of the snapshot's id and root, so the
// snapshot was published then and not made up afterwards. It returns the
// anchor, or nil when the server lists none for the snapshot yet.
func (v *Verifier) ReservesAnchored(ctx context.Context, s sumtree.Snapshot) (*anchor.Anchor, error) {
	a, err := v.anchor(ctx, func(a anchor.Anchor) bool {
		return a.Kind == anchor.Reserves && a.SnapshotID != nil && *a.SnapshotID == s.SnapshotID
	})
	if a == nil || err != nil {
		return nil, err
	}
	if !bytes.Equal(a.RootHash, s.RootHash) {
		return nil, fmt.Errorf("reserves snapshot %s's anchor on Solana (transaction %s) has another root than the snapshot", s.SnapshotID, a.Signature)
	}
	if err := v.onChain(ctx, a.Signature, anchor.Memo(anchor.Reserves, s.SnapshotID, s.RootHash)); err != nil {
		return nil, err
	}
	return a, nil
}

// anchor is the newest anchor the server lists that matches; nil when
// none does.
func (v *Verifier) anchor(ctx context.Context, match func(anchor.Anchor) bool) (*anchor.Anchor, error) {
	if v.RPC == "" {
		return nil, errors.New("checking the anchors on Solana needs an RPC URL of the cluster")
	}
	body, err := v.get(ctx, "/transparency/anchors?limit=100")
	if err != nil {
		return nil, err
	}
	var list []anchor.Anchor
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, fmt.Errorf("the server's answer is not a list of anchors: %w", err)
	}
	i := slices.IndexFunc(list, match)
	if i < 0 {
		return nil, nil
	}
	if len(list[i].RootHash) != tlog.HashSize {
		return nil, fmt.Errorf("the anchor in transaction %s has a root of %d bytes", list[i].Signature, len(list[i].RootHash))
	}
	return &list[i], nil
}

// onChain checks that the transaction sig is on the chain, succeeded, and
// carries memo as the data of an SPL Memo instruction (what its signers
// signed, whatever the program's version logs).
func (v *Verifier) onChain(ctx context.Context, sig, memo string) error {
	s, err := solana.SignatureFromBase58(sig)
	if err != nil {
		return fmt.Errorf("the anchor's transaction %q is not a signature", sig)
	}
	tx, err := rpc.New(v.RPC).GetTransaction(ctx, s, &rpc.GetTransactionOpts{Encoding: solana.EncodingBase64,
		Commitment: rpc.CommitmentConfirmed})
	switch {
	case errors.Is(err, rpc.ErrNotFound):
		return fmt.Errorf("the anchor %q is not on the chain: no transaction %s", memo, sig)
	case err != nil:
		return fmt.Errorf("read the anchor's transaction %s from %s: %w", sig, v.RPC, err)
	case tx.Meta == nil || tx.Meta.Err != nil:
		return fmt.Errorf("the anchor's transaction %s failed on the chain", sig)
	}
	decoded, err := tx.Transaction.GetTransaction()
	if err != nil {
		return fmt.Errorf("read the anchor's transaction %s: %w", sig, err)
	}
	keys := decoded.Message.AccountKeys
	for _, ix := range decoded.Message.Instructions {
		if int(ix.ProgramIDIndex) < len(keys) && keys[ix.ProgramIDIndex].Equals(solana.MemoProgramID) && string(ix.Data) == memo {
			return nil
		}
	}
	return fmt.Errorf("transaction %s does not write the memo %q: the anchor is not what the server says", sig, memo)
}
