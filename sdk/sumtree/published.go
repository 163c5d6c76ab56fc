package sumtree

import (
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"time"

	"golang.org/x/mod/sumdb/note"
)

// Asset is the USDC one platform token account holds on chain.
type Asset struct {
	Address      string `json:"address" doc:"the token account (base58)"`
	BalanceMinor int64  `json:"balanceMinor" minimum:"0"`
}

// Snapshot is a published snapshot of the reserves: the root of the tree
// of what is owed (its sum, the liabilities) and the assets on chain at
// one slot, signed.
type Snapshot struct {
	SnapshotID       string    `json:"snapshotId" doc:"the snapshots' sequence number, in decimal"`
	At               time.Time `json:"at"`
	Slot             uint64    `json:"slot" doc:"the chain's slot when the assets were read"`
	RootHash         []byte    `json:"rootHash" doc:"the Merkle-sum tree's root hash, standard base64"`
	LiabilitiesMinor int64     `json:"liabilitiesMinor" minimum:"0" doc:"the root's sum: everything owed to users"`
	Users            int       `json:"users" minimum:"0" doc:"how many users the platform owed anything (the tree's leaves)"`
	Assets           []Asset   `json:"assets"`
	AssetsMinor      int64     `json:"assetsMinor" minimum:"0" doc:"the assets' sum"`
	Signature        string    `json:"signature" doc:"the public log's key's signature (golang.org/x/mod/sumdb/note, standard base64 of the key hash and the signature) over the note whose text is the line wager-arena:reserves:<snapshotId>:<slot>:<liabilitiesMinor>:<assetsMinor>:<base64 rootHash>"`
}

// Statement is the text the snapshot's signature covers (one line).
func (s Snapshot) Statement() string {
	return fmt.Sprintf("wager-arena:reserves:%s:%d:%d:%d:%s", s.SnapshotID, s.Slot, s.LiabilitiesMinor, s.AssetsMinor,
		base64.StdEncoding.EncodeToString(s.RootHash))
}

// CheckSignature checks the snapshot's signature by the log's verifier
// key (note.NewVerifier's format, as GET /transparency/key gives it).
func (s Snapshot) CheckSignature(key string) error {
	v, err := note.NewVerifier(key)
	if err != nil {
		return fmt.Errorf("the log's key %q: %w", key, err)
	}
	msg := s.Statement() + "\n\n\u2014 " + v.Name() + " " + s.Signature + "\n"
	if _, err := note.Open([]byte(msg), note.VerifierList(v)); err != nil {
		return fmt.Errorf("the snapshot's signature is not the log key's over %q: %w", s.Statement(), err)
	}
	return nil
}

// Root is the snapshot's root node.
func (s Snapshot) Root() (Node, error) {
	var n Node
	if len(s.RootHash) != len(n.Hash) {
		return n, fmt.Errorf("the root hash has %d bytes, not %d", len(s.RootHash), len(n.Hash))
	}
	copy(n.Hash[:], s.RootHash)
	n.Sum = s.LiabilitiesMinor
	return n, nil
}

// Proof is a user's share of a snapshot: their leaf and its path.
type Proof struct {
	SnapshotID   string      `json:"snapshotId"`
	UserID       string      `json:"userId"`
	Salt         []byte      `json:"salt" doc:"16 random bytes of this user in this snapshot, standard base64"`
	BalanceMinor int64       `json:"balanceMinor" minimum:"0" doc:"everything the platform owed the user at the snapshot"`
	Path         []ProofStep `json:"path" doc:"from the leaf up: each the sibling node and the side it stands on"`
}

// ProofStep is a sibling on a leaf's way to the root.
type ProofStep struct {
	Hash     []byte `json:"hash" doc:"standard base64"`
	SumMinor int64  `json:"sumMinor"`
	Side     string `json:"side" enum:"left,right" doc:"left: the sibling is the left child"`
}

// ProofOf is the published proof of a leaf and its path.
func ProofOf(snapshotID string, l Leaf, path []Step) Proof {
	p := Proof{SnapshotID: snapshotID, UserID: l.UserID, Salt: l.Salt, BalanceMinor: l.Balance, Path: make([]ProofStep, len(path))}
	for i, s := range path {
		p.Path[i] = ProofStep{Hash: s.Node.Hash[:], SumMinor: s.Node.Sum, Side: map[bool]string{true: "left", false: "right"}[s.Left]}
	}
	return p
}

// Check verifies the proof against a snapshot: the same snapshot, a path
// that leads from the user's leaf to its root, no negative sum and no
// overflow on the way, and the path as long as the tree of its users is
// high. Each error says what does not hold.
func (p Proof) Check(s Snapshot) error {
	if p.SnapshotID != s.SnapshotID {
		return fmt.Errorf("the proof is of snapshot %s, not of snapshot %s", p.SnapshotID, s.SnapshotID)
	}
	root, err := s.Root()
	if err != nil {
		return err
	}
	if want := height(s.Users); len(p.Path) != want {
		return fmt.Errorf("the path has %d steps; a tree of %d users has %d", len(p.Path), s.Users, want)
	}
	path := make([]Step, len(p.Path))
	for i, st := range p.Path {
		if len(st.Hash) != len(path[i].Node.Hash) || (st.Side != "left" && st.Side != "right") {
			return fmt.Errorf("step %d of the path is malformed", i+1)
		}
		copy(path[i].Node.Hash[:], st.Hash)
		path[i].Node.Sum, path[i].Left = st.SumMinor, st.Side == "left"
	}
	return Check(Leaf{UserID: p.UserID, Salt: p.Salt, Balance: p.BalanceMinor}, path, root)
}

// height is how many levels stand above the leaves of a tree of n users.
func height(n int) int {
	h := 0
	for size := 1; size < n; size *= 2 {
		h++
	}
	return h
}

// Total is what assets hold together; an error when a balance is
// negative or the sum overflows.
func Total(assets []Asset) (int64, error) {
	var total int64
	for _, a := range assets {
		if a.BalanceMinor < 0 || total > math.MaxInt64-a.BalanceMinor {
			return 0, errors.New("the assets' balances are negative or overflow")
		}
		total += a.BalanceMinor
	}
	return total, nil
}

// Shortfall is how far the assets fall below the liabilities: 0 when they
// cover them.
func (s Snapshot) Shortfall() int64 { return max(0, s.LiabilitiesMinor-s.AssetsMinor) }

// CheckAssets says whether the snapshot's assets add up to its assetsMinor
// and cover its liabilities.
func (s Snapshot) CheckAssets() error {
	total, err := Total(s.Assets)
	switch {
	case err != nil:
		return err
	case total != s.AssetsMinor:
		return fmt.Errorf("the assets listed add up to %d, not the %d the snapshot states", total, s.AssetsMinor)
	case s.Shortfall() > 0:
		return fmt.Errorf("the assets (%d) are below the liabilities (%d): %d missing", s.AssetsMinor, s.LiabilitiesMinor, s.Shortfall())
	}
	return nil
}
