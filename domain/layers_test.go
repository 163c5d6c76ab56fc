package domain_test

import (
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"strings"
	"testing"
)

// The layers point one way: the business rules (domain/) know nothing of
// HTTP, of the pages or of the SDK's client (only of the formats the SDK
// shares with them: what the server publishes and a verifier reads, in
// sharedFormats), the database helpers (db/) nothing of
// the business, and the chain (chain/) nothing of either. Demo players
// and other clients of the API live outside domain/. The live rooms
// (web/live) read events through the store the server gives them, never
// the database, and the web layer (web/) serves what the handlers
// register without knowing them.
func TestLayersPointOneWay(t *testing.T) {
	cmd := exec.Command("go", "list", "-json=ImportPath,Imports", "wager/...")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	forbidden := map[string][]string{
		"wager/domain": {"net/http", "wager.example.com/sdk", "wager/handlers", "wager/web", "wager/views", "wager/cmd",
			"github.com/labstack/echo", "github.com/a-h/templ"},
		"wager/web/live": {"wager/db", "github.com/uptrace/bun", "database/sql", "wager/handlers", "wager/views"},
		"wager/web":      {"wager/handlers", "wager/cmd"},
		"wager/db":       {"wager/domain", "wager/handlers", "wager/web", "wager/views", "wager/cmd", "wager.example.com/sdk"},
		"wager/chain":    {"wager/domain", "wager/handlers", "wager/web", "wager/views", "wager/cmd"},
	}
	dec := json.NewDecoder(out)
	seen := 0
	for {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		seen++
		for layer, banned := range forbidden {
			if !under(p.ImportPath, layer) {
				continue
			}
			for _, imp := range p.Imports {
				for _, b := range banned {
					if under(imp, b) && !sharedFormats[imp] {
						t.Errorf("%s imports %s: %s may not import %s", p.ImportPath, imp, layer, b)
					}
				}
			}
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if seen < 20 {
		t.Fatalf("go list named %d packages: this test would prove nothing", seen)
	}
}

// sharedFormats are the SDK's packages of the formats the server writes
// and a verifier reads: the public log's records, the proof of reserves'
// Merkle-sum tree and the anchors' memos.
var sharedFormats = map[string]bool{
	"wager.example.com/sdk/gamerecord": true, "wager.example.com/sdk/sumtree": true, "wager.example.com/sdk/anchor": true,
}

// under reports whether the import path pkg is path or inside it.
func under(pkg, path string) bool { return pkg == path || strings.HasPrefix(pkg, path+"/") }
