package chain

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/gagliardetto/solana-go"
)

// The custody of a payment over random fault schedules: the property holds
// whatever the RPC and the cluster do. The cluster here is a model, not
// the embedded chain or LiteSVM, because neither can do what a cluster
// does to custody: report a transaction confirmed and then roll it back, or
// answer from a node that is behind. It keeps the rules custody relies on:
// a signature lands at most once, a transaction lands only while the
// chain's height is at most its blockhash's last valid one, and a landed
// transaction is finalized some blocks later unless it is rolled back. The
// platform's code under test is the real Client (Drive, Observe) over
// JSON-RPC, and the custodian below does what the platform's custodians
// do (domain/settlement, domain/money): drive, drive again while pending,
// sign anew only when the transaction failed or expired.

// fakeClock is the time of one schedule: Sleep moves it on.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	c.advance(d)
	return ctx.Err()
}

// schedule is the faults of one run, as rates of calls.
type schedule struct {
	drop        float64       // sendTransaction answered but never forwarded
	lostAnswer  float64       // forwarded, then the answer lost (503)
	tooMany     float64       // 429
	unavailable float64       // 503
	hide        float64       // a fresh status reported as unknown
	behind      float64       // a send refused by a node behind: "Blockhash not found"
	neverFinal  float64       // a landing confirmed and later rolled back
	failOnChain float64       // a landing that fails on chain (fee paid, nothing moved)
	refused     float64       // a payment every node refuses in preflight (funds missing)
	flaky       float64       // a send refused in preflight by a node whose state says no, this once
	late        float64       // a send taken, and landed some blocks later (before its last valid height)
	lag         float64       // a status answered by a node up to four finalization depths behind
	delay       time.Duration // each call takes up to this long
}

func randomSchedule(r *rand.Rand) schedule {
	return schedule{drop: r.Float64() * 0.6, lostAnswer: r.Float64() * 0.2, tooMany: r.Float64() * 0.2,
		unavailable: r.Float64() * 0.2, hide: r.Float64() * 0.8, behind: r.Float64() * 0.2,
		neverFinal: r.Float64() * 0.3, failOnChain: r.Float64() * 0.1, refused: r.Float64() * 0.1,
		flaky: r.Float64() * 0.3, late: r.Float64() * 0.5, lag: r.Float64() * 0.5, delay: time.Duration(r.IntN(300)) * time.Millisecond}
}

const (
	modelBlock         = 400 * time.Millisecond
	modelFinalizeAfter = 32 // blocks
)

type landing struct {
	at, finalizeAt, rollbackAt uint64 // heights; finalizeAt 0: never
	failed                     bool
	held                       bool // queued by a leader that ignores it sent again
	tx                         solana.Transaction
}

// cluster is the model cluster behind a JSON-RPC endpoint.
type cluster struct {
	mu         sync.Mutex
	clock      *fakeClock
	genesis    time.Time
	rng        *rand.Rand
	f          schedule
	lastValid  map[solana.Hash]uint64
	landed     map[solana.Signature]*landing
	queued     map[solana.Signature]*landing // taken, to land at their height
	refuse     map[string]bool               // memos every node refuses
	finalized  map[solana.Signature]bool
	successful map[solana.Signature]bool // finalized and not failed: money moved
}

func (m *cluster) height() uint64 { return uint64(m.clock.Now().Sub(m.genesis) / modelBlock) }

// settle lands what was queued, and finalizes and rolls back landings,
// by the height now.
func (m *cluster) settle() {
	h := m.height()
	for sig, l := range m.queued {
		if h >= l.at {
			delete(m.queued, sig)
			if m.landed[sig] == nil {
				m.landed[sig] = l
			}
		}
	}
	for sig, l := range m.landed {
		switch {
		case l.rollbackAt != 0 && h >= l.rollbackAt:
			delete(m.landed, sig)
		case l.finalizeAt != 0 && h >= l.finalizeAt && !m.finalized[sig]:
			m.finalized[sig] = true
			if !l.failed {
				m.successful[sig] = true
			}
		}
	}
}

type rpcRequest struct {
	ID     json.RawMessage   `json:"id"`
	Method string            `json:"method"`
	Params []json.RawMessage `json:"params"`
}

func (m *cluster) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req rpcRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.clock.advance(time.Duration(m.rng.Int64N(int64(m.f.delay) + 1)))
	switch roll := m.rng.Float64(); {
	case roll < m.f.tooMany:
		http.Error(w, "slow down", http.StatusTooManyRequests)
		return
	case roll < m.f.tooMany+m.f.unavailable:
		http.Error(w, "unavailable", http.StatusServiceUnavailable)
		return
	}
	m.settle()
	result, rpcErr := m.call(req)
	if req.Method == "sendTransaction" && rpcErr == nil && m.rng.Float64() < m.f.lostAnswer {
		http.Error(w, "answer lost", http.StatusServiceUnavailable)
		return
	}
	out := map[string]any{"jsonrpc": "2.0", "id": req.ID}
	if rpcErr != nil {
		out["error"] = map[string]any{"code": -32002, "message": rpcErr.Error()}
	} else {
		out["result"] = result
	}
	_ = json.NewEncoder(w).Encode(out)
}

func (m *cluster) withContext(v any) any {
	return map[string]any{"context": map[string]any{"slot": m.height()}, "value": v}
}

func (m *cluster) call(req rpcRequest) (any, error) {
	switch req.Method {
	case "getBlockHeight":
		if commitmentOf(req) == "finalized" {
			return max(m.height(), modelFinalizeAfter) - modelFinalizeAfter, nil
		}
		return m.height(), nil
	case "getLatestBlockhash":
		var h solana.Hash
		for i := range h {
			h[i] = byte(m.rng.IntN(256))
		}
		if commitmentOf(req) == "finalized" { // the model's slots are its heights
			fin := max(m.height(), modelFinalizeAfter) - modelFinalizeAfter
			return map[string]any{"context": map[string]any{"slot": fin},
				"value": map[string]any{"blockhash": h.String(), "lastValidBlockHeight": fin + BlockhashValidity}}, nil
		}
		m.lastValid[h] = m.height() + BlockhashValidity
		return m.withContext(map[string]any{"blockhash": h.String(), "lastValidBlockHeight": m.lastValid[h]}), nil
	case "getSignatureStatuses":
		var sigs []string
		if err := json.Unmarshal(req.Params[0], &sigs); err != nil {
			return nil, err
		}
		// A node behind answers as of its own height.
		seenAt := m.height()
		if m.rng.Float64() < m.f.lag {
			seenAt -= min(seenAt, uint64(m.rng.IntN(4*modelFinalizeAfter)+1))
		}
		out := make([]any, len(sigs))
		for i, s := range sigs {
			sig := solana.MustSignatureFromBase58(s)
			l := m.landed[sig]
			if l == nil || l.at > seenAt || (!m.finalized[sig] && m.rng.Float64() < m.f.hide) {
				continue
			}
			st := map[string]any{"slot": l.at, "confirmations": nil, "err": nil, "confirmationStatus": "confirmed"}
			if m.finalized[sig] && l.finalizeAt <= seenAt {
				st["confirmationStatus"] = "finalized"
			}
			if l.failed {
				st["err"] = map[string]any{"InstructionError": []any{0, "Custom"}}
			}
			out[i] = st
		}
		return map[string]any{"context": map[string]any{"slot": seenAt}, "value": out}, nil
	case "sendTransaction":
		return m.send(req)
	}
	return nil, fmt.Errorf("method %s not in the model", req.Method)
}

func (m *cluster) send(req rpcRequest) (any, error) {
	var b64 string
	if err := json.Unmarshal(req.Params[0], &b64); err != nil {
		return nil, err
	}
	raw, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return nil, err
	}
	tx, err := solana.TransactionFromBytes(raw)
	if err != nil {
		return nil, err
	}
	sig := tx.Signatures[0]
	if m.rng.Float64() < m.f.drop {
		return sig.String(), nil
	}
	if m.landed[sig] != nil {
		return nil, fmt.Errorf("Transaction simulation failed: This transaction has already been processed")
	}
	if l := m.queued[sig]; l != nil && l.held {
		return sig.String(), nil // a leader holds it: the same bytes again change nothing
	}
	lastValid, known := m.lastValid[tx.Message.RecentBlockhash]
	h := m.height()
	if !known || h > lastValid || m.rng.Float64() < m.f.behind {
		return nil, fmt.Errorf("Transaction simulation failed: Blockhash not found")
	}
	if m.refuse[memoOf(tx)] || m.rng.Float64() < m.f.flaky {
		return nil, fmt.Errorf("Transaction simulation failed: Error processing Instruction 0: insufficient funds")
	}
	at, held := h, false
	switch roll := m.rng.Float64(); {
	case roll < m.f.late/2: // some blocks later
		at += uint64(m.rng.IntN(int(lastValid-h) + 1))
	case roll < m.f.late: // held by a leader until the last blocks it can land in
		at = lastValid - uint64(m.rng.IntN(int(min(lastValid-h, 3))+1))
		held = true
	}
	l := &landing{at: at, finalizeAt: at + modelFinalizeAfter, failed: m.rng.Float64() < m.f.failOnChain, held: held, tx: *tx}
	if m.rng.Float64() < m.f.neverFinal {
		l.finalizeAt, l.rollbackAt = 0, at+1+uint64(m.rng.IntN(2*modelFinalizeAfter))
	}
	if at > h {
		if q := m.queued[sig]; q == nil || q.at > at {
			m.queued[sig] = l
		}
		return sig.String(), nil
	}
	m.landed[sig] = l
	return sig.String(), nil
}

// commitmentOf is the commitment of a call's configuration (its first
// parameter), "" when it has none.
func commitmentOf(req rpcRequest) string {
	var cfg struct {
		Commitment string `json:"commitment"`
	}
	if len(req.Params) == 0 || json.Unmarshal(req.Params[0], &cfg) != nil {
		return ""
	}
	return cfg.Commitment
}

func memoOf(tx *solana.Transaction) string { return string(tx.Message.Instructions[0].Data) }

// custodian pays one payment the way the platform's custodians do, and
// reports the signatures it signed and how it ended. With finalRefusal, a
// Refused outcome ends the payment, as a submit's first send does for an
// intent (and x402 for a payment); without, the transaction is driven on
// until it lands or expires, as settlement transfers and withdrawals are.
func custodian(ctx context.Context, c *Client, payer solana.PrivateKey, memo string, finalRefusal bool) ([]solana.Signature, Outcome, error) {
	var sigs []solana.Signature
	for attempt := range maxAttempts {
		recent, err := c.Blockhash(ctx)
		for err != nil { // the RPC failed: ask again, as the next round would
			if err := c.sleep(ctx, time.Second); err != nil {
				return sigs, Pending, err
			}
			recent, err = c.Blockhash(ctx)
		}
		tx, err := solana.NewTransaction([]solana.Instruction{
			solana.NewInstruction(MemoProgramID, nil, []byte(memo)),
			solana.NewInstruction(MemoProgramID, nil, fmt.Appendf(nil, "attempt %d", attempt)),
		}, recent.Hash, solana.TransactionPayer(payer.PublicKey()))
		if err != nil {
			return sigs, Pending, err
		}
		if err := SignWith(tx, payer); err != nil {
			return sigs, Pending, err
		}
		sigs = append(sigs, tx.Signatures[0])
		outcome, _, _ := c.Drive(ctx, tx, recent.LastValid, 30*time.Second)
		if outcome == Refused && finalRefusal {
			return sigs, Refused, nil
		}
		for outcome == Pending || outcome == Refused { // the next rounds, until it lands or expires
			if outcome == Refused {
				if err := c.sleep(ctx, DefaultResendEvery); err != nil {
					return sigs, Pending, err
				}
			}
			outcome, _, _ = c.Drive(ctx, tx, recent.LastValid, 30*time.Second)
		}
		if outcome == Landed {
			return sigs, Landed, nil
		}
	}
	return sigs, Failed, nil
}

// maxAttempts is how many times a custodian in this test signs a payment
// before it gives up: a payment every node refuses ends Failed, each of
// its transactions expired.
const maxAttempts = 6

func TestCustodyNeverPaysTwiceNeverLosesAndAlwaysEnds(t *testing.T) {
	runs := 300
	if testing.Short() {
		runs = 40
	}
	payer := solana.NewWallet().PrivateKey
	for run := range runs {
		seed := uint64(run)
		r := rand.New(rand.NewPCG(seed, 51))
		f := randomSchedule(r)
		clk := &fakeClock{t: time.Unix(1_800_000_000, 0)}
		m := &cluster{clock: clk, genesis: clk.t.Add(-time.Hour), rng: rand.New(rand.NewPCG(seed, 52)), f: f,
			lastValid: map[solana.Hash]uint64{}, landed: map[solana.Signature]*landing{}, queued: map[solana.Signature]*landing{},
			refuse:    map[string]bool{},
			finalized: map[solana.Signature]bool{}, successful: map[solana.Signature]bool{}}
		srv := httptest.NewServer(m)
		c := NewClient(srv.URL, nil)
		c.Commitment, c.clock = "finalized", clk

		for p := range 5 {
			memo := fmt.Sprintf("payment %d", p)
			m.mu.Lock()
			m.refuse[memo] = r.Float64() < f.refused
			m.mu.Unlock()
			finalRefusal := r.IntN(2) == 0
			sigs, outcome, err := custodian(t.Context(), c, payer, memo, finalRefusal)
			if err != nil {
				t.Fatalf("seed %d, %s: %v", seed, memo, err)
			}
			m.mu.Lock()
			paidAtEnd := m.paid(sigs)
			m.mu.Unlock()
			// Long after: nothing signed for it lands any more.
			clk.advance(2 * BlockhashValidity * modelBlock)
			m.mu.Lock()
			m.settle()
			paid, refused := m.paid(sigs), m.refuse[memo]
			m.mu.Unlock()
			switch {
			case paid > 1:
				t.Fatalf("seed %d (%+v), %s: paid %d times", seed, f, memo, paid)
			case outcome == Landed && paidAtEnd != 1:
				t.Fatalf("seed %d (%+v), %s: called landed with %d finalized payments", seed, f, memo, paidAtEnd)
			case outcome != Landed && paid != 0:
				t.Fatalf("seed %d (%+v), %s: ended %v but was paid (lost to the books)", seed, f, memo, outcome)
			case outcome != Landed && !refused && outcome != Refused:
				t.Fatalf("seed %d (%+v), %s: a payment no node refuses ended %v after %d signatures", seed, f, memo, outcome, len(sigs))
			}
		}
		srv.Close()
	}
}

// paid counts the signatures among sigs that moved the money, finalized.
func (m *cluster) paid(sigs []solana.Signature) int {
	n := 0
	for _, s := range sigs {
		if m.successful[s] {
			n++
		}
	}
	return n
}
