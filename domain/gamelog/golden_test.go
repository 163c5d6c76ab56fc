package verify

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"wager/domain/gamelog"
	"wager/domain/reserves/sumtree"
)

var update = flag.Bool("update", false, "write the golden vectors of testdata/golden anew")

// golden is where the vectors live: see its README.md.
const golden = "testdata/golden"

// The golden vectors of what the platform publishes, for anyone writing a
// verifier of their own (testdata/golden/README.md): three records of the
// log, the signed checkpoint of their tree and its key, an inclusion and a
// consistency proof, a signed snapshot of the reserves and one user's
// proof. The platform's code makes them again byte for byte, and every
// check a verifier makes (the records' replay, the note's signature,
// tlog's proofs, the Merkle-sum path) accepts them.
func TestGoldenVectors(t *testing.T) {
	files := map[string][]byte{}
	log, err := gamelog.New(nil, nil, gamelog.Config{Origin: "arena.example/games-log", Seed: []byte("golden vectors")})
	if err != nil {
		t.Fatal(err)
	}
	files["key.txt"] = []byte(log.VerifierKey() + "\n")

	stored := map[int64]tlog.Hash{}
	hashes := tlog.HashReaderFunc(func(ids []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(ids))
		for i, id := range ids {
			out[i] = stored[id]
		}
		return out, nil
	})
	var records [][]byte
	for i := range int64(3) {
		b, err := json.Marshal(playedAs(t, fmt.Sprintf("game-%d", i), i))
		if err != nil {
			t.Fatal(err)
		}
		hs, err := tlog.StoredHashes(i, b, hashes)
		if err != nil {
			t.Fatal(err)
		}
		for j, h := range hs {
			stored[tlog.StoredHashIndex(0, i)+int64(j)] = h
		}
		records = append(records, b)
		files[fmt.Sprintf("record-%d.json", i)] = b
	}
	tree3 := goldenTree(t, 3, hashes)
	tree2 := goldenTree(t, 2, hashes)
	if files["checkpoint-3.txt"], err = log.Checkpoint(tree3); err != nil {
		t.Fatal(err)
	}
	inclusion, err := tlog.ProveRecord(3, 1, hashes)
	if err != nil {
		t.Fatal(err)
	}
	files["inclusion-1-in-3.txt"] = hashLines(inclusion)
	consistency, err := tlog.ProveTree(3, 2, hashes)
	if err != nil {
		t.Fatal(err)
	}
	files["consistency-2-to-3.txt"] = hashLines(consistency)

	snap, proof := goldenReserves(t, log)
	files["reserves-snapshot.json"] = indented(t, snap)
	files["reserves-proof.json"] = indented(t, proof)

	for name, b := range files {
		path := filepath.Join(golden, name)
		if *update {
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil || !bytes.Equal(b, want) {
			t.Errorf("%s is not what the platform makes (%v): run go test ./sdk/verify -run TestGoldenVectors -update and review the change", path, err)
		}
	}

	// What a verifier checks, each accepting the vectors.
	verifier, err := note.NewVerifier(strings.TrimSpace(string(files["key.txt"])))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := note.Open(files["checkpoint-3.txt"], note.VerifierList(verifier)); err != nil {
		t.Errorf("the checkpoint's signature: %v", err)
	}
	for i, b := range records {
		var r Record
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatal(err)
		}
		if err := Replay(r); err != nil {
			t.Errorf("record %d does not replay: %v", i, err)
		}
	}
	if err := tlog.CheckRecord(inclusion, 3, tree3.Hash, 1, tlog.RecordHash(records[1])); err != nil {
		t.Errorf("the inclusion proof: %v", err)
	}
	if err := tlog.CheckTree(consistency, 3, tree3.Hash, 2, tree2.Hash); err != nil {
		t.Errorf("the consistency proof: %v", err)
	}
	if err := snap.CheckSignature(log.VerifierKey()); err != nil {
		t.Error(err)
	}
	if err := proof.Check(snap); err != nil {
		t.Errorf("the reserves proof: %v", err)
	}
}

func goldenTree(t *testing.T, n int64, hashes tlog.HashReader) tlog.Tree {
	t.Helper()
	h, err := tlog.TreeHash(n, hashes)
	if err != nil {
		t.Fatal(err)
	}
	return tlog.Tree{N: n, Hash: h}
}

// goldenReserves is a snapshot of three users' balances, with fixed salts,
// signed with the log's key, and the second user's proof.
func goldenReserves(t *testing.T, log *gamelog.Log) (sumtree.Snapshot, sumtree.Proof) {
	t.Helper()
	users := []string{"0b7e6a2c-1d4f-4c3b-9a55-3f1e2d4c5b6a", "5c9d8e7f-6a5b-4c3d-8e2f-1a0b9c8d7e6f", "a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d"}
	var leaves []sumtree.Leaf
	for i, u := range users {
		leaves = append(leaves, sumtree.Leaf{UserID: u, Salt: bytes.Repeat([]byte{byte(i + 1)}, 16), Balance: int64(i+1) * 1_500_000})
	}
	tree, err := sumtree.Build(leaves)
	if err != nil {
		t.Fatal(err)
	}
	root := tree.Root()
	snap := sumtree.Snapshot{SnapshotID: "1", At: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC), Slot: 42, RootHash: root.Hash[:],
		LiabilitiesMinor: root.Sum, Users: len(users), Assets: []sumtree.Asset{{Address: "9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin",
			BalanceMinor: 9_100_000}}, AssetsMinor: 9_100_000}
	if snap.Signature, err = log.SignLine(snap.Statement()); err != nil {
		t.Fatal(err)
	}
	path, _ := tree.Path(users[1])
	return snap, sumtree.ProofOf(snap.SnapshotID, leaves[1], path)
}

func hashLines(hashes []tlog.Hash) []byte {
	var b strings.Builder
	for _, h := range hashes {
		b.WriteString(base64.StdEncoding.EncodeToString(h[:]) + "\n")
	}
	return []byte(b.String())
}

func indented(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}
