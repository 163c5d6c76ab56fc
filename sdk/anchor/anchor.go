// Package anchor is the format of the anchors on Solana of the public log
// of games and of the proofs of reserves: the memo the platform's fee
// payer writes with the SPL Memo program, and an anchor as GET
// /transparency/anchors lists it. The platform writes them
// (domain/anchors); a verifier reads them back from the chain
// (sdk/verify).
package anchor

import (
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Kinds of anchor.
const (
	GamesLog = "games-log" // a checkpoint of the public log of games: its size and root hash
	Reserves = "reserves"  // a proof of reserves: its snapshot and root hash
)

// Anchor is one anchor that landed on chain.
type Anchor struct {
	Kind       string    `json:"kind" enum:"games-log,reserves"`
	Size       *int64    `json:"size,omitempty" doc:"games-log: the number of records of the tree anchored"`
	SnapshotID *string   `json:"snapshotId,omitempty" doc:"reserves: the snapshot anchored"`
	RootHash   []byte    `json:"rootHash" doc:"the root hash anchored, standard base64"`
	Memo       string    `json:"memo" doc:"the memo's text: wager-arena:games-log:<size>:<base64 root> or wager-arena:reserves:<snapshotId>:<base64 root>"`
	Signature  string    `json:"signature" doc:"the Solana transaction that wrote it (base58); getTransaction gives the memo in its log messages"`
	Slot       uint64    `json:"slot" doc:"the slot it landed in"`
	At         time.Time `json:"at" doc:"when it landed"`
}

// Memo is the memo text of an anchor of kind: the size for the games log,
// the snapshot's id for the reserves, then the root hash.
func Memo(kind, of string, root []byte) string {
	return "wager-arena:" + kind + ":" + of + ":" + base64.StdEncoding.EncodeToString(root)
}

// Parse reads a memo written by Memo: its kind, what it anchors (a size or
// a snapshot id) and the root hash.
func Parse(memo string) (kind, of string, root []byte, err error) {
	parts := strings.Split(memo, ":")
	if len(parts) != 4 || parts[0] != "wager-arena" || (parts[1] != GamesLog && parts[1] != Reserves) {
		return "", "", nil, fmt.Errorf("the memo %q is not an anchor", memo)
	}
	if _, err := strconv.ParseUint(parts[2], 10, 63); err != nil {
		return "", "", nil, fmt.Errorf("the memo %q anchors %q, not a number", memo, parts[2])
	}
	root, err = base64.StdEncoding.DecodeString(parts[3])
	if err != nil || len(root) != 32 {
		return "", "", nil, fmt.Errorf("the memo %q's root is not a base64 SHA-256 hash", memo)
	}
	return parts[1], parts[2], root, nil
}
