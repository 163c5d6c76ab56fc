package handlers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/rpc"

	"wager.example.com/sdk/anchor"
	"wager/db/dbtest"
)

// anchorsOf lists the anchors that landed, newest first, over the API.
func (a *testApp) anchorsOf(t testing.TB) []anchor.Anchor {
	t.Helper()
	var list []anchor.Anchor
	if err := json.Unmarshal(a.do(t, request{path: "/transparency/anchors"}).Body.Bytes(), &list); err != nil {
		t.Fatal(err)
	}
	return list
}

// wantOnChain checks that an anchor's transaction is on the chain with its
// memo in its log messages, as any RPC of the cluster shows it.
func (a *testApp) wantOnChain(t testing.TB, an anchor.Anchor) {
	t.Helper()
	sig, err := solana.SignatureFromBase58(an.Signature)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := a.Money.Chain().RPC.GetTransaction(context.Background(), sig, &rpc.GetTransactionOpts{Encoding: solana.EncodingBase64,
		Commitment: rpc.CommitmentConfirmed})
	if err != nil {
		t.Fatalf("getTransaction of the anchor %s: %v", an.Memo, err)
	}
	for _, line := range tx.Meta.LogMessages {
		if line == fmt.Sprintf("Program log: Memo (len %d): %q", len(an.Memo), an.Memo) { // base64: quoted alike in Go and Rust
			if tx.Slot != an.Slot {
				t.Errorf("the anchor %s landed in slot %d, the list says %d", an.Memo, tx.Slot, an.Slot)
			}
			return
		}
	}
	t.Fatalf("the anchor's transaction does not log its memo %q: %q", an.Memo, tx.Meta.LogMessages)
}

// The log's tree is anchored on chain when it grew, at most once an
// interval, and each proof of reserves once: the list says what was
// anchored, and the chain's own getTransaction shows the memo.
func TestTheLogAndTheReservesAreAnchoredOnChainOnceEach(t *testing.T) {
	// A database of its own: the anchors listed are this test's.
	a := newTestApp(t, map[string]string{"WORKERS": "false", "JWT_SECRET": testSecret, "DATABASE_URL": dbtest.Fresh(t)})
	ctx := context.Background()
	p1, _, game := a.match(t, `{"rounds": 1}`)
	a.act(t, p1, game, `{"type": "resign"}`)
	a.sequence(t)
	before := len(a.anchorsOf(t))
	if err := a.Anchors.Once(ctx, time.Hour); err != nil {
		t.Fatal(err)
	}
	list := a.anchorsOf(t)
	tree := checkpointOf(t, func(path string) []byte { return a.do(t, request{path: path}).Body.Bytes() })
	if len(list) != before+1 || list[0].Kind != anchor.GamesLog || list[0].Size == nil || *list[0].Size != tree.N ||
		string(list[0].RootHash) != string(tree.Hash[:]) {
		t.Fatalf("anchors after the first turn: %+v, want the tree of %d records first", list, tree.N)
	}
	if want := anchor.Memo(anchor.GamesLog, strconv.FormatInt(tree.N, 10), tree.Hash[:]); list[0].Memo != want {
		t.Errorf("the anchor's memo is %q, want %q", list[0].Memo, want)
	}
	a.wantOnChain(t, list[0])

	// Nothing new: the tree did not grow. A new game: the interval has
	// not passed.
	if err := a.Anchors.Once(ctx, time.Hour); err != nil {
		t.Fatal(err)
	}
	p1, _, game = a.match(t, `{"rounds": 1}`)
	a.act(t, p1, game, `{"type": "resign"}`)
	a.sequence(t)
	if err := a.Anchors.Once(ctx, time.Hour); err != nil {
		t.Fatal(err)
	}
	if n := len(a.anchorsOf(t)); n != before+1 {
		t.Fatalf("%d anchors within the interval, want %d", n, before+1)
	}
	if err := a.Anchors.Once(ctx, time.Nanosecond); err != nil {
		t.Fatal(err)
	}
	if list = a.anchorsOf(t); len(list) != before+2 || *list[0].Size != tree.N+1 {
		t.Fatalf("anchors once the interval passed: %+v, want the tree of %d records first", list, tree.N+1)
	}

	snap, err := a.Reserves.Take(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := a.Anchors.Once(ctx, time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	list = a.anchorsOf(t)
	if len(list) != before+3 || list[0].Kind != anchor.Reserves || list[0].SnapshotID == nil || *list[0].SnapshotID != snap.SnapshotID ||
		string(list[0].RootHash) != string(snap.RootHash) {
		t.Fatalf("anchors after a snapshot: %+v, want snapshot %s anchored once, first", list, snap.SnapshotID)
	}
	a.wantOnChain(t, list[0])
	a.do(t, request{path: "/transparency/anchors?limit=0"}).wantError(t, 400, "VALIDATION_ERROR")
}
