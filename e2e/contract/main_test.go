package contract_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gagliardetto/solana-go"

	wager "wager.example.com/sdk"
	"wager.example.com/sdk/api"
	"wager/db/dbtest"
	"wager/e2e/testserver"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

// repoRoot walks up from the working directory to the folder holding go.mod.
func repoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the working directory")
		}
		dir = parent
	}
}

// node runs a script of this folder (or a package's command under
// node_modules) with args from the repository root and returns its
// stdout. It fails the test, never skips, when Node or a package is
// missing: `make test` installs them.
func node(t testing.TB, env []string, args ...string) (string, error) {
	t.Helper()
	root := repoRoot(t)
	bin, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is not installed (%v); `make test` installs the test tooling", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	if stderr.Len() > 0 {
		t.Logf("node %s stderr:\n%s", strings.Join(args, " "), stderr.String())
	}
	return stdout.String(), err
}

// needPackages fails the test when an npm package is not installed.
func needPackages(t testing.TB, pkgs ...string) {
	t.Helper()
	for _, p := range pkgs {
		if _, err := os.Stat(filepath.Join(repoRoot(t), "node_modules", p, "package.json")); err != nil {
			t.Fatalf("node_modules/%s is missing (%v); run `make test` (or npm install), which installs the pinned tools", p, err)
		}
	}
}

// startServer starts the whole app on a fresh database; with
// CONTRACT_SERVER_URL set, the tests run against that server instead (one
// on the embedded chain with its faucet, AUTH_RATE_LIMIT=0), to check a
// build or a deployment against the same contracts.
func startServer(t testing.TB) *testserver.Server {
	t.Helper()
	if url := os.Getenv("CONTRACT_SERVER_URL"); url != "" {
		return &testserver.Server{URL: strings.TrimRight(url, "/")}
	}
	return testserver.StartFresh(t, nil)
}

// fetch reads a document the server serves into a file of the test's and
// returns its path.
func fetch(t testing.TB, s *testserver.Server, path string) string {
	t.Helper()
	resp, err := http.Get(s.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v", path, resp.StatusCode, err)
	}
	file := filepath.Join(t.TempDir(), filepath.Base(path))
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// newClient returns an SDK client of s with a new wallet, signed in.
func newClient(t testing.TB, s *testserver.Server) (*wager.Client, solana.PrivateKey) {
	t.Helper()
	key, err := solana.NewRandomPrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	c, err := wager.New(s.URL, wager.WithWallet(key), wager.WithAppID("contract-test"))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.SignIn(context.Background()); err != nil {
		t.Fatal(err)
	}
	return c, key
}

// fund gives a client's wallet usdc minor units and SOL, and deposits
// deposit of them to its platform balance.
func fund(t testing.TB, c *wager.Client, usdc, deposit int64) {
	t.Helper()
	ctx := context.Background()
	if _, err := c.API.PostDevFaucetWithResponse(ctx, nil, api.PostDevFaucetJSONRequestBody{Address: c.Wallet().String(), AmountMinor: usdc}); err != nil {
		t.Fatalf("faucet: %v", err)
	}
	if deposit > 0 {
		if _, err := c.Deposit(ctx, deposit); err != nil {
			t.Fatalf("deposit: %v", err)
		}
	}
}
