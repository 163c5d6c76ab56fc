// Package sumtree is the Merkle-sum tree of the proof of reserves: every
// user the platform owes anything is a leaf whose sum is what is owed, an
// inner node commits to its children's hashes and sums, and the root's
// sum is everything owed. A user given their salt and path checks that
// their balance is counted in the root, and that no node on the way hides
// a negative amount or an overflow.
//
// Leaf: SHA-256(0x00 || salt || user id || balance as 8 bytes big-endian),
// its sum the balance. Inner node: SHA-256(0x01 || left hash || left sum ||
// right hash || right sum), its sum left's plus right's. The leaves are in
// the order of their hashes, padded to a power of two with empty nodes
// (32 zero bytes, sum 0).
package sumtree

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
)

// Node is a node of the tree: a hash and the sum under it.
type Node struct {
	Hash [32]byte
	Sum  int64
}

// Leaf is a user's leaf: what the platform owes them, with their salt.
type Leaf struct {
	UserID  string
	Salt    []byte
	Balance int64
}

// Node is the leaf's node in the tree.
func (l Leaf) Node() Node {
	h := sha256.New()
	h.Write([]byte{0})
	h.Write(l.Salt)
	h.Write([]byte(l.UserID))
	h.Write(be(l.Balance))
	var n Node
	copy(n.Hash[:], h.Sum(nil))
	n.Sum = l.Balance
	return n
}

// Parent is the inner node of two children.
func Parent(left, right Node) (Node, error) {
	if left.Sum < 0 || right.Sum < 0 {
		return Node{}, errors.New("a node's sum is negative")
	}
	if left.Sum > math.MaxInt64-right.Sum {
		return Node{}, errors.New("the sum of two nodes overflows")
	}
	h := sha256.New()
	h.Write([]byte{1})
	h.Write(left.Hash[:])
	h.Write(be(left.Sum))
	h.Write(right.Hash[:])
	h.Write(be(right.Sum))
	var n Node
	copy(n.Hash[:], h.Sum(nil))
	n.Sum = left.Sum + right.Sum
	return n, nil
}

func be(v int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(v)) }

// Tree is a built tree: its levels from the leaves (padded) to the root.
type Tree struct {
	levels [][]Node
	index  map[string]int // a user's leaf's position
}

// Build builds the tree of the leaves. A negative balance is refused: it
// would lower the root's sum, hiding part of what is owed to others.
func Build(leaves []Leaf) (*Tree, error) {
	type placed struct {
		node Node
		user string
	}
	nodes := make([]placed, len(leaves))
	for i, l := range leaves {
		if l.Balance < 0 {
			return nil, fmt.Errorf("user %s has a negative balance, %d: a proof of reserves cannot hold it", l.UserID, l.Balance)
		}
		nodes[i] = placed{l.Node(), l.UserID}
	}
	slices.SortFunc(nodes, func(a, b placed) int { return bytes.Compare(a.node.Hash[:], b.node.Hash[:]) })
	size := 1
	for size < len(nodes) {
		size *= 2
	}
	t := &Tree{index: make(map[string]int, len(nodes))}
	level := make([]Node, size)
	for i, p := range nodes {
		if _, dup := t.index[p.user]; dup {
			return nil, fmt.Errorf("user %s has two leaves", p.user)
		}
		level[i], t.index[p.user] = p.node, i
	}
	t.levels = append(t.levels, level)
	for len(level) > 1 {
		up := make([]Node, len(level)/2)
		for i := range up {
			n, err := Parent(level[2*i], level[2*i+1])
			if err != nil {
				return nil, fmt.Errorf("build the proof of reserves: %w", err)
			}
			up[i] = n
		}
		t.levels = append(t.levels, up)
		level = up
	}
	return t, nil
}

// Root is the tree's root: its sum is everything owed.
func (t *Tree) Root() Node { return t.levels[len(t.levels)-1][0] }

// Step is a sibling on a leaf's way to the root, and the side it stands
// on: Left when the sibling is the left child.
type Step struct {
	Node Node
	Left bool
}

// Path returns the siblings from a user's leaf up to the root; false when
// the user has no leaf.
func (t *Tree) Path(userID string) ([]Step, bool) {
	i, ok := t.index[userID]
	if !ok {
		return nil, false
	}
	var path []Step
	for _, level := range t.levels[:len(t.levels)-1] {
		path = append(path, Step{Node: level[i^1], Left: i%2 == 1})
		i /= 2
	}
	return path, true
}

// Check computes the root from a leaf and its path and compares it with
// root: nil when the leaf is counted in it. Each error says what does not
// hold.
func Check(leaf Leaf, path []Step, root Node) error {
	if leaf.Balance < 0 {
		return fmt.Errorf("the leaf's balance is negative, %d", leaf.Balance)
	}
	n := leaf.Node()
	for i, s := range path {
		var err error
		if s.Left {
			n, err = Parent(s.Node, n)
		} else {
			n, err = Parent(n, s.Node)
		}
		if err != nil {
			return fmt.Errorf("step %d of the path: %w", i+1, err)
		}
	}
	if n != root {
		return fmt.Errorf("the path leads to a root of sum %d and hash %x, not the published root of sum %d and hash %x",
			n.Sum, n.Hash[:8], root.Sum, root.Hash[:8])
	}
	return nil
}
