package verify

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/tlog"

	"wager.example.com/sdk/sumtree"
)

// golden is where the vectors live: see its README.md. The platform's
// code makes them again byte for byte (the platform's own test); here
// every check a verifier makes accepts them.
const golden = "testdata/golden"

func readGolden(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(golden, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func goldenRecord(t *testing.T, i int) Record {
	t.Helper()
	var r Record
	if err := json.Unmarshal(readGolden(t, fmt.Sprintf("record-%d.json", i)), &r); err != nil {
		t.Fatal(err)
	}
	return r
}

func goldenHashes(t *testing.T, name string) []tlog.Hash {
	t.Helper()
	var out []tlog.Hash
	for _, line := range strings.Fields(string(readGolden(t, name))) {
		b, err := base64.StdEncoding.DecodeString(line)
		if err != nil || len(b) != tlog.HashSize {
			t.Fatalf("%s: %q is not a base64 hash", name, line)
		}
		out = append(out, tlog.Hash(b))
	}
	return out
}

func TestTheVerifierAcceptsTheGoldenVectors(t *testing.T) {
	key := strings.TrimSpace(string(readGolden(t, "key.txt")))
	cp, err := open(string(readGolden(t, "checkpoint-3.txt")), key)
	if err != nil {
		t.Fatal(err)
	}
	if cp.Tree.N != 3 {
		t.Fatalf("the checkpoint is of %d records, want 3", cp.Tree.N)
	}
	for i := range 3 {
		if err := Replay(goldenRecord(t, i)); err != nil {
			t.Errorf("record %d does not replay: %v", i, err)
		}
	}
	if err := tlog.CheckRecord(goldenHashes(t, "inclusion-1-in-3.txt"), 3, cp.Tree.Hash, 1, tlog.RecordHash(readGolden(t, "record-1.json"))); err != nil {
		t.Errorf("the inclusion proof: %v", err)
	}
	// The tree of 2 is that of records 0 and 1.
	tree2 := tlog.NodeHash(tlog.RecordHash(readGolden(t, "record-0.json")), tlog.RecordHash(readGolden(t, "record-1.json")))
	if err := tlog.CheckTree(goldenHashes(t, "consistency-2-to-3.txt"), 3, cp.Tree.Hash, 2, tree2); err != nil {
		t.Errorf("the consistency proof: %v", err)
	}
	var snap sumtree.Snapshot
	var proof sumtree.Proof
	if err := json.Unmarshal(readGolden(t, "reserves-snapshot.json"), &snap); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(readGolden(t, "reserves-proof.json"), &proof); err != nil {
		t.Fatal(err)
	}
	if err := snap.CheckSignature(key); err != nil {
		t.Error(err)
	}
	if err := proof.Check(snap); err != nil {
		t.Errorf("the reserves proof: %v", err)
	}
	proof.BalanceMinor++
	if err := proof.Check(snap); err == nil {
		t.Error("a proof counting one minor unit more is accepted")
	}
}
