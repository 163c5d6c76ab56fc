// Package x402 runs the official x402 V2 TypeScript client (pay.mjs: npm
// @x402/fetch with @x402/svm's Solana exact scheme, unchanged) against the
// server for interoperability tests. Its own tests pay the server's 402
// challenges on the embedded chain; e2e/onchain does it on LiteSVM.
package x402

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gagliardetto/solana-go"

	"wager/domain/x402"
)

// Options says what the client calls and how it pays.
type Options struct {
	URL     string            // the resource to call
	Count   int               // how many times
	RPCURL  string            // Solana JSON-RPC the client builds against
	Payer   solana.PrivateKey // the paying wallet
	Headers map[string]string // sent with every call
	// AllowAsset is a token the payer agrees to pay in besides the
	// client's default assets (Circle's USDC on the public clusters), at
	// most MaxAmount atomic units per request.
	AllowAsset string
	MaxAmount  int64
}

// Call is what the client got for one call.
type Call struct {
	Call            int                      `json:"call"`
	Status          int                      `json:"status"`
	PaymentResponse *x402.SettlementResponse `json:"paymentResponse"`
	Body            json.RawMessage          `json:"body"`
	Error           string                   `json:"error"`
}

// Pay runs `node e2e/x402/pay.mjs` from the repository root and returns its
// calls. It fails the test (never skips) when Node or the npm packages are
// missing (`make test` installs them) or when the client fails.
func Pay(t testing.TB, o Options) []Call {
	t.Helper()
	root := repoRoot(t)
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("x402: node is not installed (%v); `make test` installs the test tooling", err)
	}
	for _, pkg := range []string{"@x402/fetch", "@x402/svm", "@x402/core", "@solana/kit"} {
		if _, err := os.Stat(filepath.Join(root, "node_modules", pkg, "package.json")); err != nil {
			t.Fatalf("x402: node_modules/%s is missing (%v); run `make test` (or npm install), which installs the pinned x402 client", pkg, err)
		}
	}
	secret := make([]string, len(o.Payer))
	for i, b := range o.Payer {
		secret[i] = fmt.Sprint(b)
	}
	headers, _ := json.Marshal(o.Headers)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join(root, "e2e", "x402", "pay.mjs"), o.URL, fmt.Sprint(o.Count))
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "X402_PAYER_SECRET=["+strings.Join(secret, ",")+"]", "X402_RPC_URL="+o.RPCURL,
		"X402_HEADERS="+string(headers))
	if o.AllowAsset != "" {
		cmd.Env = append(cmd.Env, "X402_ALLOW_ASSET="+o.AllowAsset, fmt.Sprintf("X402_MAX_AMOUNT=%d", o.MaxAmount))
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	var calls []Call
	done := false
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "done" {
			done = true
			continue
		}
		var c Call
		if err := json.Unmarshal([]byte(line), &c); err != nil {
			t.Logf("pay.mjs: %s", line)
			continue
		}
		if c.Error != "" {
			t.Fatalf("x402: the official client failed on call %d: %s\nstderr:\n%s", c.Call, c.Error, stderr.String())
		}
		calls = append(calls, c)
	}
	if runErr != nil || !done {
		t.Fatalf("x402: pay.mjs: %v (finished: %v)\nstdout:\n%s\nstderr:\n%s", runErr, done, stdout.String(), stderr.String())
	}
	for _, c := range calls {
		t.Logf("x402 client call %d: status %d, PAYMENT-RESPONSE %+v", c.Call, c.Status, c.PaymentResponse)
	}
	return calls
}

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
			t.Fatal("x402: no go.mod found above the working directory")
		}
		dir = parent
	}
}
