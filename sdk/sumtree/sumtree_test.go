package sumtree

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

func leaves(r *rand.Rand, n int) []Leaf {
	out := make([]Leaf, n)
	for i := range out {
		salt := make([]byte, 16)
		for j := range salt {
			salt[j] = byte(r.IntN(256))
		}
		out[i] = Leaf{UserID: fmt.Sprintf("user-%d", i), Salt: salt, Balance: r.Int64N(1_000_000_000)}
	}
	return out
}

// Over random sets of balances: the root's sum is everything owed, every
// user's path checks against the root, and a path checked with another
// balance, another salt or another user's id does not.
func TestEveryBalanceIsCountedInTheRootAndOnlyAsItIs(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 50 {
		ls := leaves(r, 1+r.IntN(40))
		tree, err := Build(ls)
		if err != nil {
			t.Fatal(err)
		}
		var owed int64
		for _, l := range ls {
			owed += l.Balance
		}
		if tree.Root().Sum != owed {
			t.Fatalf("root sum %d, want %d owed", tree.Root().Sum, owed)
		}
		for _, l := range ls {
			path, ok := tree.Path(l.UserID)
			if !ok {
				t.Fatalf("no path for %s", l.UserID)
			}
			if err := Check(l, path, tree.Root()); err != nil {
				t.Fatalf("%s: %v", l.UserID, err)
			}
			otherSalt := append([]byte{l.Salt[0] ^ 0xff}, l.Salt[1:]...)
			for _, lie := range []Leaf{{l.UserID, l.Salt, l.Balance + 1}, {l.UserID, otherSalt, l.Balance},
				{l.UserID + "x", l.Salt, l.Balance}} {
				if err := Check(lie, path, tree.Root()); err == nil {
					t.Fatalf("%s: a changed leaf %+v checks against the root", l.UserID, lie)
				}
			}
		}
	}
}

// A snapshot cannot hold a negative balance (it would hide what is owed
// to others), and a path cannot hide one in a sibling or an overflow.
func TestANegativeBalanceOrAnOverflowIsRefused(t *testing.T) {
	if _, err := Build([]Leaf{{UserID: "a", Balance: 5}, {UserID: "b", Balance: -3}}); err == nil ||
		!strings.Contains(err.Error(), "user b has a negative balance, -3") {
		t.Errorf("a negative leaf: %v", err)
	}
	a := Leaf{UserID: "a", Balance: 5}
	hidden := Node{Sum: -3}
	root, _ := Parent(a.Node(), Node{Sum: 0})
	if err := Check(a, []Step{{Node: hidden}}, root); err == nil || !strings.Contains(err.Error(), "negative") {
		t.Errorf("a negative sibling: %v", err)
	}
	if err := Check(Leaf{UserID: "a", Balance: math.MaxInt64}, []Step{{Node: Node{Sum: 1}}}, root); err == nil ||
		!strings.Contains(err.Error(), "overflows") {
		t.Errorf("an overflow: %v", err)
	}
}
