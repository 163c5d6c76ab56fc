// Package localnet runs a small Solana JSON-RPC server over LiteSVM
// (server.js, npm litesvm) for tests. Transactions sent to it are executed by
// the real SPL Token, Associated Token Account, Memo, System and
// ComputeBudget programs, so a test can prove that those programs accept
// exactly the bytes our code builds. Node and node_modules/litesvm are
// required; `make test` installs them.
package localnet

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/rpc"
)

// startTimeout bounds how long Start waits for the listening line.
const startTimeout = 20 * time.Second

// Localnet is a running LiteSVM JSON-RPC shim.
type Localnet struct {
	// URL is the JSON-RPC endpoint, http://127.0.0.1:<port>.
	URL string

	cmd    *exec.Cmd
	stderr *tailBuffer
	http   *http.Client
}

// Start runs `node e2e/localnet/server.js --port 0` from the repository root
// (the folder holding go.mod, found by walking up from the working
// directory), waits up to 20s for its listening line, and stops the process
// in t.Cleanup. It fails the test when node, node_modules/litesvm or the shim
// cannot start.
func Start(t testing.TB) *Localnet {
	t.Helper()
	return StartWith(t, Options{})
}

// Options are how a localnet differs from the default.
type Options struct {
	// FinalizeSlots is how many slots (transactions) after it landed a
	// transaction is reported finalized; before, confirmed.
	FinalizeSlots int
}

// StartWith is Start with options.
func StartWith(t testing.TB, o Options) *Localnet {
	t.Helper()
	root, err := repoRoot()
	if err != nil {
		t.Fatalf("localnet: %v", err)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("localnet: node is not installed (%v); `make test` installs the test tooling (Node and node_modules/litesvm)", err)
	}
	if _, err := os.Stat(filepath.Join(root, "node_modules", "litesvm", "package.json")); err != nil {
		t.Fatalf("localnet: node_modules/litesvm is missing in %s (%v); run `make test` (or `make setup-test`), which runs npm install", root, err)
	}
	script := filepath.Join(root, "e2e", "localnet", "server.js")

	cmd := exec.Command(node, script, "--port", "0", "--parent-stdin", "--finalize-slots", strconv.Itoa(o.FinalizeSlots))
	cmd.Dir = root
	stdin, err := cmd.StdinPipe() // closed by Cleanup, or by the OS if this process dies
	if err != nil {
		t.Fatalf("localnet: stdin pipe: %v", err)
	}
	// An os.Pipe rather than StdoutPipe: Wait (run concurrently below) must
	// not close the reading end under the scanner.
	stdout, stdoutW, err := os.Pipe()
	if err != nil {
		t.Fatalf("localnet: stdout pipe: %v", err)
	}
	cmd.Stdout = stdoutW
	stderr := &tailBuffer{max: 64 << 10}
	cmd.Stderr = stderr
	err = cmd.Start()
	_ = stdoutW.Close() // the child holds its own copy
	if err != nil {
		_ = stdout.Close()
		t.Fatalf("localnet: start %s %s: %v; `make test` installs Node and node_modules/litesvm", node, script, err)
	}

	exited := make(chan struct{})
	var waitErr error
	go func() {
		waitErr = cmd.Wait()
		close(exited)
	}()
	stop := func() {
		_ = stdin.Close()
		_ = cmd.Process.Kill()
		<-exited
	}

	addrCh := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if line := strings.TrimSpace(sc.Text()); strings.HasPrefix(line, "listening ") {
				select {
				case addrCh <- strings.TrimPrefix(line, "listening "):
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
		_ = stdout.Close()
	}()

	var addr string
	select {
	case addr = <-addrCh:
	case <-exited:
		t.Fatalf("localnet: %s exited before listening (%v); `make test` installs Node and node_modules/litesvm. stderr:\n%s",
			script, waitErr, stderr.String())
	case <-time.After(startTimeout):
		stop()
		t.Fatalf("localnet: %s did not print its listening line within %s. stderr:\n%s", script, startTimeout, stderr.String())
	}

	l := &Localnet{
		URL:    "http://" + addr,
		cmd:    cmd,
		stderr: stderr,
		http:   &http.Client{Timeout: 30 * time.Second},
	}
	t.Cleanup(func() {
		stop()
		if t.Failed() {
			if s := stderr.String(); s != "" {
				t.Logf("localnet stderr:\n%s", s)
			}
		}
	})
	return l
}

// RPC returns a solana-go RPC client for the shim.
func (l *Localnet) RPC() *rpc.Client { return rpc.New(l.URL) }

// Stderr returns the tail of the shim's standard error (its request log of
// invalid calls), for diagnostics.
func (l *Localnet) Stderr() string { return l.stderr.String() }

// CreateMint writes an initialized classic SPL Token mint with the given
// decimals and mint authority (no freeze authority, zero supply).
func (l *Localnet) CreateMint(t testing.TB, mint solana.PublicKey, decimals uint8, authority solana.PublicKey) {
	t.Helper()
	if err := l.Call(context.Background(), "localnet_createMint", []any{mint.String(), decimals, authority.String()}, nil); err != nil {
		t.Fatalf("localnet: create mint %s: %v", mint, err)
	}
}

// MintTo credits amount tokens of mint to the associated token account of
// owner, creating that account if needed, and raises the mint's supply.
func (l *Localnet) MintTo(t testing.TB, mint, owner solana.PublicKey, amount uint64) {
	t.Helper()
	var ata string
	// The amount travels as a decimal string: JSON numbers above 2^53 lose
	// precision in JavaScript.
	err := l.Call(context.Background(), "localnet_mintTo",
		[]any{mint.String(), owner.String(), strconv.FormatUint(amount, 10)}, &ata)
	if err != nil {
		t.Fatalf("localnet: mint %d of %s to %s: %v", amount, mint, owner, err)
	}
	if want, _, err := solana.FindAssociatedTokenAddress(owner, mint); err == nil && want.String() != ata {
		t.Fatalf("localnet: mint to %s: shim credited %s, want associated token account %s", owner, ata, want)
	}
}

// Airdrop credits lamports to an account (creating it as a System account).
func (l *Localnet) Airdrop(t testing.TB, to solana.PublicKey, lamports uint64) {
	t.Helper()
	if err := l.Call(context.Background(), "requestAirdrop", []any{to.String(), lamports}, nil); err != nil {
		t.Fatalf("localnet: airdrop %d lamports to %s: %v", lamports, to, err)
	}
}

// ExpireBlockhash moves LiteSVM to a new blockhash; transactions built on any
// earlier blockhash are then refused with BlockhashNotFound.
func (l *Localnet) ExpireBlockhash(t testing.TB) {
	t.Helper()
	if err := l.Call(context.Background(), "localnet_expireBlockhash", []any{}, nil); err != nil {
		t.Fatalf("localnet: expire blockhash: %v", err)
	}
}

// RPCError is a JSON-RPC error answered by the shim.
type RPCError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *RPCError) Error() string { return fmt.Sprintf("json-rpc error %d: %s", e.Code, e.Message) }

// Call makes one JSON-RPC call with plain net/http and decodes its result
// into out (when out is not nil). A JSON-RPC error is returned as *RPCError.
func (l *Localnet) Call(ctx context.Context, method string, params []any, out any) error {
	if params == nil {
		params = []any{}
	}
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, l.URL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := l.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var envelope struct {
		Result json.RawMessage `json:"result"`
		Error  *RPCError       `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&envelope); err != nil {
		return fmt.Errorf("%s: decode response (HTTP %d): %w", method, resp.StatusCode, err)
	}
	if envelope.Error != nil {
		return envelope.Error
	}
	if out != nil {
		if err := json.Unmarshal(envelope.Result, out); err != nil {
			return fmt.Errorf("%s: decode result: %w", method, err)
		}
	}
	return nil
}

// repoRoot walks up from the working directory to the folder holding go.mod.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod found above the working directory")
		}
		dir = parent
	}
}

// tailBuffer keeps the last max bytes written to it; safe for concurrent use.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - b.max; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}
