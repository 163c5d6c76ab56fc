// Package faults runs the platform against a Solana RPC that fails the way
// a real cluster's does: two instances of the real server binary, each on
// its own PostgreSQL database. The chain instance runs the embedded chain
// and serves its JSON-RPC at /dev/solana-rpc; a chain/rpcfaults proxy in
// this process forwards to it with faults; the API instance is configured
// as against an external cluster (SOLANA_RPC_URL at the proxy, the chain
// instance's mint, CREDIT_COMMITMENT=finalized) and is the one clients use.
// Its tests drive every way money moves through the API instance and check
// the outcome on chain through the chain instance, around the proxy;
// cmd/loadtest -rpc-faults puts load on the same arrangement.
package faults

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/rpc"
	"github.com/uptrace/bun"

	"wager/chain"
	"wager/chain/rpcfaults"
	"wager/db"
)

// Seeds of the two instances' keys: different, so that no platform
// address of the API instance is one of the chain instance's.
const (
	ChainSeed = "c4a1c4a1c4a1c4a1c4a1c4a1c4a1c4a1c4a1c4a1c4a1c4a1c4a1c4a1c4a1c4a1"
	APISeed   = "a9b1a9b1a9b1a9b1a9b1a9b1a9b1a9b1a9b1a9b1a9b1a9b1a9b1a9b1a9b1a9b1"
)

// ClusterFaults are the faults of a bad day on a public RPC: a third of
// the sent transactions lost before a leader, 8 % of calls 429, 6 % 503,
// 1 % hanging until the caller gives up, 2 % carried out with the answer
// lost, every call delayed up to 150 ms, and half of the signatures'
// statuses reported null for their first 5 s.
var ClusterFaults = rpcfaults.Faults{
	DropSend: 0.33, Rate429: 0.08, Rate503: 0.06, TimeoutRate: 0.01, LoseAnswer: 0.02,
	RetryAfter: time.Second, MaxDelay: 150 * time.Millisecond, HideStatus: 0.5, HideFor: 5 * time.Second,
}

// Options configure StartPair.
type Options struct {
	Binary   string // the server binary (BuildServer)
	ChainDB  string // the chain instance's database URL
	APIDB    string // the API instance's database URL
	DataDir  string // a folder for both instances' data
	Faults   rpcfaults.Faults
	Seed     uint64 // of the proxy's schedule of faults
	Finalize int    // CHAIN_FINALIZE_SLOTS of the embedded chain (400 ms each)
	// APIEnv is added to the API instance's environment (ADMIN_WALLETS,
	// abuse settings...).
	APIEnv map[string]string
	// Log, when set, gets every line both instances write, each prefixed
	// with the instance's name.
	Log io.Writer
}

// Pair is the running arrangement.
type Pair struct {
	Chain    *Process         // the embedded chain's instance
	API      *Process         // the instance behind the proxy
	Proxy    *rpcfaults.Proxy // its counts: Proxy.Stats()
	ProxyURL string
	ChainRPC string           // the embedded chain's JSON-RPC, not through the proxy
	RPC      *rpc.Client      // a client of ChainRPC
	Mint     solana.PublicKey // the USDC mint of the embedded chain
	APIKeys  *chain.Keys      // the API instance's platform keys
	// ChainDB and APIDB are the instances' databases: the embedded chain's
	// transactions (localchain.transactions, with each one's fee), and the
	// API instance's intents, transfers and ledger.
	ChainDB, APIDB *bun.DB

	proxy      *http.Server
	stopProxy  context.CancelFunc
	proxyEnded chan struct{}
}

// BuildServer builds cmd/server into dir and returns the binary's path.
func BuildServer(dir string) (string, error) {
	bin := filepath.Join(dir, "server")
	if out, err := exec.Command("go", "build", "-o", bin, "wager/cmd/server").CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build the server: %w\n%s", err, out)
	}
	return bin, nil
}

// CreateDatabase creates an empty database on the PostgreSQL server of
// adminURL (a role with CREATEDB) and returns its URL and how to drop it.
// The server migrates it at start-up.
func CreateDatabase(ctx context.Context, adminURL, prefix string) (string, func(), error) {
	admin, err := db.Open(ctx, adminURL)
	if err != nil {
		return "", nil, fmt.Errorf("connect to %s: %w", redact(adminURL), err)
	}
	defer admin.Close()
	name := fmt.Sprintf("%s_%d_%d", prefix, time.Now().Unix(), rand.Uint32())
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		return "", nil, fmt.Errorf("create database %s: %w", name, err)
	}
	drop := func() {
		if admin, err := db.Open(context.Background(), adminURL); err == nil {
			admin.ExecContext(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
			admin.Close()
		}
	}
	u, err := url.Parse(adminURL)
	if err != nil {
		drop()
		return "", nil, err
	}
	u.Path = "/" + name
	return u.String(), drop, nil
}

func redact(u string) string {
	if p, err := url.Parse(u); err == nil {
		return p.Redacted()
	}
	return "(database URL)"
}

// StartPair starts the chain instance, the proxy in front of its RPC and
// the API instance (its fee payer funded on the chain first), and returns
// once both answer /health. On an error everything it started is
// stopped.
func StartPair(ctx context.Context, o Options) (_ *Pair, err error) {
	p := &Pair{APIKeys: chain.NewKeys(mustHex(APISeed))}
	defer func() {
		if err != nil {
			p.Close()
		}
	}()
	base := map[string]string{"ADDR": "127.0.0.1:0", "METRICS_ADDR": "off", "AUTH_RATE_LIMIT": "0", "LOG_LEVEL": "info"}
	chainEnv := with(base, map[string]string{"DATABASE_URL": o.ChainDB, "DATA_DIR": filepath.Join(o.DataDir, "chain"),
		"MASTER_SEED": ChainSeed, "JWT_SECRET": "faults-chain-instance-secret-0123456789",
		"CHAIN_FINALIZE_SLOTS": strconv.Itoa(o.Finalize), "DEV_FAUCET": "true"})
	if p.Chain, err = StartProcess(ctx, "chain", o.Binary, chainEnv, o.Log); err != nil {
		return nil, err
	}
	if p.ChainDB, err = db.Open(ctx, o.ChainDB); err != nil {
		return nil, err
	}
	if p.APIDB, err = db.Open(ctx, o.APIDB); err != nil {
		return nil, err
	}
	p.ChainRPC = p.Chain.URL + "/dev/solana-rpc"
	p.RPC = rpc.New(p.ChainRPC)
	p.Mint = chain.NewKeys(mustHex(ChainSeed)).LocalMint().PublicKey()

	// The API instance's fee payer pays for everything it sends.
	if _, err := p.RPC.RequestAirdrop(ctx, p.APIKeys.FeePayer().PublicKey(), 500_000_000_000, rpc.CommitmentConfirmed); err != nil {
		return nil, fmt.Errorf("fund the API instance's fee payer: %w", err)
	}

	if p.Proxy, err = rpcfaults.New(p.ChainRPC, o.Faults, rand.New(rand.NewPCG(o.Seed, o.Seed))); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p.ProxyURL = "http://" + ln.Addr().String()
	// Calls hanging on purpose end when the proxy stops.
	proxyCtx, stop := context.WithCancel(context.Background())
	p.stopProxy, p.proxyEnded = stop, make(chan struct{})
	p.proxy = &http.Server{Handler: p.Proxy, ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return proxyCtx }}
	go func() { defer close(p.proxyEnded); p.proxy.Serve(ln) }()

	apiEnv := with(base, map[string]string{"DATABASE_URL": o.APIDB, "DATA_DIR": filepath.Join(o.DataDir, "api"),
		"MASTER_SEED": APISeed, "JWT_SECRET": "faults-api-instance-secret-0123456789ab",
		"SOLANA_RPC_URL": p.ProxyURL, "USDC_MINT": p.Mint.String(), "CREDIT_COMMITMENT": "finalized"})
	if p.API, err = StartProcess(ctx, "api", o.Binary, with(apiEnv, o.APIEnv), o.Log); err != nil {
		return nil, err
	}
	return p, nil
}

// Close stops both instances and the proxy.
func (p *Pair) Close() {
	for _, proc := range []*Process{p.API, p.Chain} {
		if proc != nil {
			proc.Stop()
		}
	}
	if p.proxy != nil {
		p.stopProxy()
		p.proxy.Close()
		<-p.proxyEnded
	}
	for _, d := range []*bun.DB{p.ChainDB, p.APIDB} {
		if d != nil {
			d.Close()
		}
	}
}

// Faucet gives owner usdcMinor of the chain's USDC and some SOL through
// the chain instance's dev faucet.
func (p *Pair) Faucet(ctx context.Context, owner solana.PublicKey, usdcMinor int64) error {
	body := fmt.Sprintf(`{"address":%q,"amountMinor":%d}`, owner.String(), usdcMinor)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.Chain.URL+"/dev/faucet", bytes.NewReader([]byte(body)))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-SDK-Version", "1.0.0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		out, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("faucet for %s: %d %s", owner, resp.StatusCode, out)
	}
	return nil
}

// TokenBalance reads owner's USDC on the chain directly (0 without a token
// account).
func (p *Pair) TokenBalance(ctx context.Context, owner solana.PublicKey) (int64, error) {
	n, err := chain.NewClient(p.ChainRPC, nil).TokenBalance(ctx, owner, p.Mint)
	return int64(n), err
}

// Statuses reads the statuses of signatures on the chain directly.
func (p *Pair) Statuses(ctx context.Context, sigs ...string) ([]*rpc.SignatureStatusesResult, error) {
	parsed := make([]solana.Signature, len(sigs))
	for i, s := range sigs {
		var err error
		if parsed[i], err = solana.SignatureFromBase58(s); err != nil {
			return nil, fmt.Errorf("signature %q: %w", s, err)
		}
	}
	out, err := p.RPC.GetSignatureStatuses(ctx, true, parsed...)
	if err != nil {
		return nil, err
	}
	return out.Value, nil
}

func with(a, b map[string]string) map[string]string {
	out := make(map[string]string, len(a)+len(b))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

func mustHex(s string) []byte {
	b, err := hex.DecodeString(s)
	if err != nil {
		panic(err)
	}
	return b
}

// Process is one server binary running.
type Process struct {
	Name string
	URL  string // its API's base URL

	cmd  *exec.Cmd
	mu   sync.Mutex
	logs bytes.Buffer
	done chan struct{} // closed when it has exited
}

var listening = regexp.MustCompile(`msg=listening addr=(\S+)`)

// StartProcess runs bin with env (its whole environment, besides PATH and
// HOME) and returns once /health answers 200. Its output is kept (Logs)
// and copied to log when that is not nil.
func StartProcess(ctx context.Context, name, bin string, env map[string]string, log io.Writer) (*Process, error) {
	p := &Process{Name: name, cmd: exec.Command(bin), done: make(chan struct{})}
	p.cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	for k, v := range env {
		p.cmd.Env = append(p.cmd.Env, k+"="+v)
	}
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	p.cmd.Stderr = p.cmd.Stdout
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the %s server: %w", name, err)
	}
	addr := make(chan string, 1)
	go func() {
		lines := bufio.NewScanner(out)
		lines.Buffer(make([]byte, 64<<10), 1<<20)
		for lines.Scan() {
			p.mu.Lock()
			p.logs.WriteString(lines.Text() + "\n")
			p.mu.Unlock()
			if log != nil {
				fmt.Fprintf(log, "[%s] %s\n", name, lines.Text())
			}
			if m := listening.FindStringSubmatch(lines.Text()); m != nil {
				select {
				case addr <- m[1]:
				default:
				}
			}
		}
		p.cmd.Wait()
		close(p.done)
	}()
	select {
	case a := <-addr:
		p.URL = "http://" + a
	case <-p.done:
		return nil, fmt.Errorf("the %s server exited before it listened:\n%s", name, p.Logs())
	case <-time.After(90 * time.Second):
		p.Stop()
		return nil, fmt.Errorf("the %s server did not listen within 90 s:\n%s", name, p.Logs())
	case <-ctx.Done():
		p.Stop()
		return nil, ctx.Err()
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		resp, err := http.Get(p.URL + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p, nil
			}
		}
		if time.Now().After(deadline) {
			p.Stop()
			return nil, fmt.Errorf("the %s server's /health did not answer 200 within 30 s: %v", name, err)
		}
	}
}

// Logs returns what the process wrote so far.
func (p *Process) Logs() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.logs.String()
}

// Stop asks the process to stop (SIGTERM), kills it after 15 s, and waits
// until it is gone.
func (p *Process) Stop() {
	select {
	case <-p.done:
		return
	default:
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		p.cmd.Process.Signal(syscall.SIGKILL)
		<-p.done
	}
}

// Movement is one movement of money the API instance recorded: an intent
// (user-signed), a withdrawal or a settlement transfer (platform-signed).
type Movement struct {
	What      string // intent, withdrawal or transfer
	ID        string
	Kind      string
	Status    string
	Signature string
	Error     string
	// ByMemo says the transaction's memo names ID, so that every
	// transaction sent for it can be found on chain by ID.
	ByMemo bool
	// Records counts the records of its effect: ledger postings under its
	// signature (a withdrawal: its debit), a tip's row.
	Records int
}

func (m Movement) String() string { return m.What + " " + m.ID + " (" + m.Kind + ", " + m.Status + ")" }

// Movements lists every movement recorded in the API instance's database.
func Movements(ctx context.Context, api *bun.DB) ([]Movement, error) {
	var out []Movement
	err := api.NewRaw(`
		SELECT 'intent' AS what, i.id::text AS id, i.kind, i.status, coalesce(i.signature, '') AS signature, i.error,
			i.kind <> 'payment' AS by_memo,
			CASE WHEN i.kind = 'tip' THEN (SELECT count(*) FROM tips WHERE tips.signature = i.signature)
				ELSE (SELECT count(*) FROM ledger_transactions AS l WHERE l.reference = i.signature) END AS records
		FROM intents AS i
		UNION ALL
		SELECT 'withdrawal', w.id::text, 'withdrawal', w.status, w.signature, w.error, true,
			(SELECT count(*) FROM ledger_transactions AS l WHERE l.reference = 'withdrawal:' || w.id::text)
		FROM withdrawals AS w
		UNION ALL
		SELECT 'transfer', t.id::text, t.kind, t.status, coalesce(t.signature, ''), t.error, true,
			(SELECT count(*) FROM ledger_transactions AS l WHERE l.reference = t.signature)
		FROM settlement_transfers AS t
		ORDER BY 1, 2`).Scan(ctx, &out)
	if err != nil {
		return nil, fmt.Errorf("list the movements: %w", err)
	}
	return out, nil
}

// Unfinished describes every intent, withdrawal, settlement transfer and
// x402 payment of the API instance that is not final yet.
func Unfinished(ctx context.Context, api *bun.DB) ([]string, error) {
	var out []string
	err := api.NewRaw(`
		SELECT format('intent %s (%s) %s since %s, expired %s, signature %s, error %L', id, kind, status, updated_at, expires_at,
			coalesce(signature, '-'), error)
		FROM intents WHERE status NOT IN ('confirmed', 'failed', 'expired')
		UNION ALL
		SELECT format('withdrawal %s %s since %s, signature %s, error %L', id, status, updated_at, signature, error)
		FROM withdrawals WHERE status NOT IN ('confirmed', 'failed')
		UNION ALL
		SELECT format('settlement transfer %s (%s of game %s) %s, next try %s, signature %s, error %L', id, kind, game_id, status,
			updated_at, coalesce(signature, '-'), error)
		FROM settlement_transfers WHERE status <> 'confirmed'
		UNION ALL
		SELECT format('x402 payment %s %s since %s', signature, status, updated_at)
		FROM x402_payments WHERE status <> 'settled'`).Scan(ctx, &out)
	if err != nil {
		return nil, fmt.Errorf("list what is not final: %w", err)
	}
	return out, nil
}

// Problems returns the last n warning and error lines of a server's log.
func Problems(logs string, n int) string {
	var lines []string
	for _, l := range strings.Split(logs, "\n") {
		if strings.Contains(l, "level=WARN") || strings.Contains(l, "level=ERROR") {
			lines = append(lines, l)
		}
	}
	if len(lines) > n {
		lines = append([]string{fmt.Sprintf("(%d lines before)", len(lines)-n)}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}
