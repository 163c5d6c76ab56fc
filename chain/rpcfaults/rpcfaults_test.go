package rpcfaults_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/programs/system"
	"github.com/gagliardetto/solana-go/rpc"
	"github.com/gagliardetto/solana-go/rpc/jsonrpc"

	"wager/chain"
	"wager/chain/rpcfaults"
)

// node is a canned Solana JSON-RPC node: every transaction it is sent
// lands, finalized. Its answers are spelt oddly on purpose (spaces, key
// order) so that a proxy that re-encodes them is caught.
type node struct {
	mu     sync.Mutex
	landed map[string]bool
	bodies []string // every request body, in order
}

func (n *node) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	n.mu.Lock()
	defer n.mu.Unlock()
	n.bodies = append(n.bodies, string(body))
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("X-Node", "canned")
	if bytes.HasPrefix(bytes.TrimSpace(body), []byte("[")) {
		var reqs []json.RawMessage
		if json.Unmarshal(body, &reqs) != nil {
			fmt.Fprint(w, `{"jsonrpc":"2.0","error":{"code":-32700,"message":"Parse error"},"id":null}`)
			return
		}
		answers := make([]string, len(reqs))
		for i, req := range reqs {
			answers[i] = n.answer(req)
		}
		fmt.Fprint(w, "["+strings.Join(answers, ", ")+"]")
		return
	}
	fmt.Fprint(w, n.answer(body))
}

// answer answers one call; n.mu is held.
func (n *node) answer(body []byte) string {
	var req struct {
		ID     json.RawMessage   `json:"id"`
		Method string            `json:"method"`
		Params []json.RawMessage `json:"params"`
	}
	if json.Unmarshal(body, &req) != nil {
		return `{"jsonrpc":"2.0","error":{"code":-32700,"message":"Parse error"},"id":null}`
	}
	ok := func(result string) string {
		return `{"jsonrpc":"2.0", "result":` + result + `, "id":` + string(req.ID) + `}`
	}
	switch req.Method {
	case "getHealth":
		return ok(`"ok"`)
	case "getBalance":
		return ok(`{"context":{"apiVersion":"2.2.0","slot":7},"value":42}`)
	case "isBlockhashValid":
		return ok(`{"context":{"slot":7},"value":true}`)
	case "getMinimumBalanceForRentExemption":
		return ok(`890880`)
	case "getLatestBlockhash":
		return ok(`{"context":{"slot":7},"value":{"blockhash":"` + solana.Hash{7}.String() + `","lastValidBlockHeight":157}}`)
	case "getAccountInfo":
		return ok(`{"context":{"slot":7},"value":{"data":["AQID","base64"],"executable":false,"lamports":1,` +
			`"owner":"11111111111111111111111111111111","rentEpoch":18446744073709551615,"space":3}}`)
	case "sendTransaction":
		var encoded string
		json.Unmarshal(req.Params[0], &encoded)
		raw, _ := base64.StdEncoding.DecodeString(encoded)
		tx, err := solana.TransactionFromBytes(raw)
		if err != nil {
			return `{"jsonrpc":"2.0","error":{"code":-32602,"message":"invalid transaction"},"id":` + string(req.ID) + `}`
		}
		n.landed[tx.Signatures[0].String()] = true
		return ok(`"` + tx.Signatures[0].String() + `"`)
	case "getSignatureStatuses":
		var sigs []string
		json.Unmarshal(req.Params[0], &sigs)
		statuses := make([]string, len(sigs))
		for i, s := range sigs {
			statuses[i] = "null"
			if n.landed[s] {
				statuses[i] = `{"confirmationStatus":"finalized","confirmations":null,"err":null,"slot":7,"status":{"Ok":null}}`
			}
		}
		return ok(`{"context":{"slot":7},"value":[` + strings.Join(statuses, ",") + `]}`)
	}
	return `{"jsonrpc":"2.0","error":{"code":-32601,"message":"Method not found"},"id":` + string(req.ID) + `}`
}

// sent returns how many sendTransaction calls reached the node.
func (n *node) sent() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	c := 0
	for _, b := range n.bodies {
		if strings.Contains(b, `"sendTransaction"`) {
			c++
		}
	}
	return c
}

func (n *node) calls() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.bodies)
}

// clock is a test clock for HideFor.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// setup is a canned node, a proxy in front of it with f and seed, and
// solana-go clients of both.
type setup struct {
	node           *node
	nodeURL, url   string
	proxy          *rpcfaults.Proxy
	clock          *clock
	direct, faulty *rpc.Client
	delays         []time.Duration // what the proxy slept, in order
	mu             sync.Mutex
}

func newSetup(t *testing.T, f rpcfaults.Faults, seed uint64) *setup {
	t.Helper()
	s := &setup{node: &node{landed: map[string]bool{}}, clock: &clock{t: time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)}}
	up := httptest.NewServer(s.node)
	t.Cleanup(up.Close)
	p, err := rpcfaults.New(up.URL, f, rand.New(rand.NewPCG(seed, seed)))
	if err != nil {
		t.Fatal(err)
	}
	p.Now = s.clock.now
	p.Sleep = func(ctx context.Context, d time.Duration) error {
		s.mu.Lock()
		s.delays = append(s.delays, d)
		s.mu.Unlock()
		return ctx.Err()
	}
	front := httptest.NewServer(p)
	t.Cleanup(front.Close)
	s.nodeURL, s.url, s.proxy = up.URL, front.URL, p
	s.direct, s.faulty = rpc.New(up.URL), rpc.New(front.URL)
	return s
}

var payer = solana.PrivateKey(chain.NewKeys([]byte("rpcfaults")).Derive("payer"))

// signedTx returns a signed transfer of lamports: each amount is another
// signature.
func signedTx(t *testing.T, lamports uint64) *solana.Transaction {
	t.Helper()
	to := chain.NewKeys([]byte("rpcfaults")).Derive("to").PublicKey()
	tx, err := solana.NewTransaction([]solana.Instruction{
		system.NewTransferInstruction(lamports, payer.PublicKey(), to).Build()}, solana.Hash{7}, solana.TransactionPayer(payer.PublicKey()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Sign(func(solana.PublicKey) *solana.PrivateKey { return &payer }); err != nil {
		t.Fatal(err)
	}
	return tx
}

// post sends body to url and returns the answer.
func post(t *testing.T, url, body string) (int, http.Header, string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, string(b)
}

func TestTransparentAtRateZero(t *testing.T) {
	s := newSetup(t, rpcfaults.Faults{}, 1)
	tx := signedTx(t, 1)
	b64, _ := tx.ToBase64()
	sig := tx.Signatures[0].String()
	bodies := []string{
		`{"jsonrpc":"2.0","id":1,"method":"getHealth"}`,
		`{"jsonrpc":"2.0","id":"a-b","method":"getBalance","params":["` + payer.PublicKey().String() + `"]}`,
		`{"jsonrpc":"2.0","id":3,"method":"sendTransaction","params":["` + b64 + `",{"encoding":"base64"}]}`,
		`{"jsonrpc":"2.0","id":4,"method":"getSignatureStatuses","params":[["` + sig + `","` + solana.Signature{9}.String() + `"]]}`,
		`{"jsonrpc":"2.0","id":5,"method":"getAccountInfo","params":["` + payer.PublicKey().String() + `"]}`,
		`{"jsonrpc":"2.0","id":6,"method":"noSuchMethod"}`,
		`[{"jsonrpc":"2.0","id":1,"method":"getHealth"},{"jsonrpc":"2.0","id":2,"method":"getSignatureStatuses","params":[["` + sig + `"]]}]`,
		`not json`,
	}
	for _, body := range bodies {
		before := s.node.calls()
		wantCode, wantHeader, want := post(t, s.nodeURL, body)
		code, header, got := post(t, s.url, body)
		if code != wantCode || got != want || header.Get("Content-Type") != wantHeader.Get("Content-Type") ||
			header.Get("X-Node") != "canned" {
			t.Errorf("%s\nthrough the proxy: %d %q %q\ndirectly:          %d %q %q", body, code, header.Get("Content-Type"), got,
				wantCode, wantHeader.Get("Content-Type"), want)
		}
		s.node.mu.Lock()
		if len(s.node.bodies) != before+2 || s.node.bodies[before+1] != body {
			t.Errorf("the node did not get %s unchanged: %q", body, s.node.bodies[before:])
		}
		s.node.mu.Unlock()
	}
	if total := s.proxy.Stats().Total(); total.Calls != len(bodies) || total.Forwarded != len(bodies) {
		t.Errorf("stats: %+v, want %d calls all forwarded", total, len(bodies))
	}
}

func TestEachFaultAtRateOne(t *testing.T) {
	for _, c := range []struct {
		name string
		run  func(*testing.T)
	}{
		{"429 with Retry-After, a JSON-RPC error", tooManyAtRateOne},
		{"503, plain text", unavailableAtRateOne},
		{"time-out: hangs until the client gives up", timeoutAtRateOne},
		{"lost answer: forwarded, then hangs", lostAnswerAtRateOne},
		{"delay up to MaxDelay, then forwarded", delayAtRateOne},
		{"dropped send: a valid signature, never landed", droppedSendAtRateOne},
		{"never finalized", neverFinalizedAtRateOne},
	} {
		t.Run(c.name, c.run)
	}
}

func tooManyAtRateOne(t *testing.T) {
	ctx := context.Background()
	s := newSetup(t, rpcfaults.Faults{Rate429: 1, RetryAfter: 1500 * time.Millisecond}, 1)
	code, header, body := post(t, s.url, `{"jsonrpc":"2.0","id":17,"method":"getHealth"}`)
	if code != http.StatusTooManyRequests || header.Get("Retry-After") != "2" ||
		body != `{"jsonrpc":"2.0","error":{"code":429,"message":"Too many requests for a specific RPC call"},"id":17}`+"\n" {
		t.Errorf("got %d Retry-After %q %s", code, header.Get("Retry-After"), body)
	}
	_, err := s.faulty.GetBalance(ctx, payer.PublicKey(), rpc.CommitmentConfirmed)
	var rpcErr *jsonrpc.RPCError
	if !errors.As(err, &rpcErr) || rpcErr.Code != 429 {
		t.Errorf("solana-go got %v, want its RPCError with code 429", err)
	}
	if s.node.calls() != 0 || s.proxy.Stats().Methods["getBalance"].TooMany != 1 {
		t.Errorf("node calls %d, stats %+v", s.node.calls(), s.proxy.Stats())
	}
}

func unavailableAtRateOne(t *testing.T) {
	ctx := context.Background()
	s := newSetup(t, rpcfaults.Faults{Rate503: 1}, 1)
	_, err := s.faulty.GetHealth(ctx)
	var httpErr *jsonrpc.HTTPError
	if !errors.As(err, &httpErr) || httpErr.Code != http.StatusServiceUnavailable {
		t.Errorf("solana-go got %v, want its HTTPError with code 503", err)
	}
	if s.node.calls() != 0 || s.proxy.Stats().Methods["getHealth"].Unavailable != 1 {
		t.Errorf("node calls %d, stats %+v", s.node.calls(), s.proxy.Stats())
	}
}

func timeoutAtRateOne(t *testing.T) {
	ctx := context.Background()
	s := newSetup(t, rpcfaults.Faults{TimeoutRate: 1}, 1)
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := s.faulty.GetHealth(short)
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) < 100*time.Millisecond {
		t.Errorf("solana-go got %v after %v, want the deadline after 100ms", err, time.Since(start))
	}
	if s.node.calls() != 0 || s.proxy.Stats().Methods["getHealth"].TimedOut != 1 {
		t.Errorf("node calls %d, stats %+v", s.node.calls(), s.proxy.Stats())
	}
}

func lostAnswerAtRateOne(t *testing.T) {
	ctx := context.Background()
	s := newSetup(t, rpcfaults.Faults{LoseAnswer: 1}, 1)
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	tx := signedTx(t, 8)
	_, err := s.faulty.SendTransaction(short, tx)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("solana-go got %v, want the deadline", err)
	}
	for deadline := time.Now().Add(5 * time.Second); s.proxy.Stats().Methods["sendTransaction"].Forwarded == 0 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond) // the proxy may still be forwarding it
	}
	if s.node.sent() != 1 {
		t.Errorf("%d sends reached the node, want 1", s.node.sent())
	}
	if c := s.proxy.Stats().Methods["sendTransaction"]; c.LostAnswers != 1 || c.Forwarded != 1 {
		t.Errorf("stats %+v", c)
	}
}

func delayAtRateOne(t *testing.T) {
	ctx := context.Background()
	s := newSetup(t, rpcfaults.Faults{MaxDelay: 150 * time.Millisecond}, 1)
	for range 20 {
		if _, err := s.faulty.GetHealth(ctx); err != nil {
			t.Fatal(err)
		}
	}
	var longest time.Duration
	for _, d := range s.delays {
		if d < 0 || d > 150*time.Millisecond {
			t.Errorf("delay %v, want 0 to 150ms", d)
		}
		longest = max(longest, d)
	}
	if len(s.delays) < 19 || longest < 50*time.Millisecond {
		t.Errorf("delays %v: want about one per call, spread up to 150ms", s.delays)
	}
	if c := s.proxy.Stats().Methods["getHealth"]; c.Forwarded != 20 || c.Delayed != len(s.delays) {
		t.Errorf("stats %+v, %d delays", c, len(s.delays))
	}
}

func droppedSendAtRateOne(t *testing.T) {
	ctx := context.Background()
	s := newSetup(t, rpcfaults.Faults{DropSend: 1}, 1)
	tx := signedTx(t, 2)
	sig, err := s.faulty.SendTransactionWithOpts(ctx, tx, rpc.TransactionOpts{PreflightCommitment: rpc.CommitmentConfirmed})
	if err != nil || sig != tx.Signatures[0] {
		t.Fatalf("send through the proxy: %s %v, want %s", sig, err, tx.Signatures[0])
	}
	if s.node.sent() != 0 {
		t.Error("the dropped transaction reached the node")
	}
	client := chain.NewClient(s.url, nil)
	if landed, err := client.Status(ctx, sig); landed || err != nil {
		t.Errorf("status of the dropped transaction: %v %v, want not landed", landed, err)
	}
	if c := s.proxy.Stats().Methods["sendTransaction"]; c.Dropped != 1 || c.Forwarded != 0 {
		t.Errorf("stats %+v", c)
	}
}

func neverFinalizedAtRateOne(t *testing.T) {
	ctx := context.Background()
	s := newSetup(t, rpcfaults.Faults{NeverFinalize: 1}, 1)
	tx := signedTx(t, 3)
	if _, err := s.faulty.SendTransaction(ctx, tx); err != nil {
		t.Fatal(err)
	}
	out, err := s.faulty.GetSignatureStatuses(ctx, true, tx.Signatures[0], solana.Signature{9})
	if err != nil || len(out.Value) != 2 || out.Value[0] == nil || out.Value[1] != nil {
		t.Fatalf("statuses: %+v %v", out, err)
	}
	if st := out.Value[0]; st.ConfirmationStatus != rpc.ConfirmationStatusConfirmed || st.Confirmations == nil || st.Slot != 7 {
		t.Errorf("status %+v, want confirmed at slot 7 with a count of confirmations", *st)
	}
	if landed, err := chain.NewClient(s.url, nil).Status(ctx, tx.Signatures[0]); !landed || err != nil {
		t.Errorf("a confirmed transaction is landed for the platform's client: %v %v", landed, err)
	}
	if c := s.proxy.Stats().Methods["getSignatureStatuses"]; c.Unfinalized != 2 {
		t.Errorf("stats %+v, want 2 statuses unfinalized", c)
	}
}

func TestHiddenStatusAppearsAfterHideFor(t *testing.T) {
	ctx := context.Background()
	s := newSetup(t, rpcfaults.Faults{HideStatus: 1, HideFor: 10 * time.Second}, 1)
	client := chain.NewClient(s.url, nil)
	tx := signedTx(t, 4)
	sig, err := client.Send(ctx, tx)
	if err != nil {
		t.Fatal(err)
	}
	seen := func() bool {
		t.Helper()
		landed, err := client.Status(ctx, sig)
		if err != nil {
			t.Fatal(err)
		}
		return landed
	}
	if seen() {
		t.Error("a fresh status was shown")
	}
	if landed, _ := chain.NewClient(s.nodeURL, nil).Status(ctx, sig); !landed {
		t.Fatal("the node does not have the transaction")
	}
	s.clock.advance(9 * time.Second)
	if seen() {
		t.Error("shown 9s after it was sent")
	}
	s.clock.advance(time.Second)
	if !seen() {
		t.Error("still hidden 10s after it was sent")
	}

	// A signature first asked about is hidden from then on.
	other := signedTx(t, 5)
	if _, err := s.direct.SendTransaction(ctx, other); err != nil {
		t.Fatal(err)
	}
	if landed, _ := client.Status(ctx, other.Signatures[0]); landed {
		t.Error("a signature first seen in a status call was shown at once")
	}
	s.clock.advance(10 * time.Second)
	if landed, _ := client.Status(ctx, other.Signatures[0]); !landed {
		t.Error("a signature first seen in a status call is still hidden after HideFor")
	}
	if c := s.proxy.Stats().Methods["getSignatureStatuses"]; c.Hidden != 3 {
		t.Errorf("stats %+v, want 3 statuses hidden", c)
	}
}

func TestBatchesPassThrough(t *testing.T) {
	s := newSetup(t, rpcfaults.Faults{DropSend: 1, HideStatus: 1, HideFor: time.Hour, NeverFinalize: 1}, 1)
	tx := signedTx(t, 6)
	b64, _ := tx.ToBase64()
	sig := tx.Signatures[0].String()
	body := `[{"jsonrpc":"2.0","id":1,"method":"sendTransaction","params":["` + b64 + `",{"encoding":"base64"}]},` +
		`{"jsonrpc":"2.0","id":2,"method":"getSignatureStatuses","params":[["` + sig + `"]]}]`
	_, _, got := post(t, s.url, body)
	if s.node.sent() != 1 || !strings.Contains(got, `"finalized"`) {
		t.Errorf("a batch was faulted: %d sends reached the node, answer %s", s.node.sent(), got)
	}
	if c := s.proxy.Stats().Methods[rpcfaults.MethodBatch]; c.Calls != 1 || c.Forwarded != 1 {
		t.Errorf("stats %+v", s.proxy.Stats())
	}
}

// operator are the faults an operator tried: a third of the sends
// dropped, 8% 429, 6% 503, 2% time-outs and 2% lost answers, up to 150 ms
// of delay, half the statuses late and a tenth never finalized.
var operator = rpcfaults.Faults{DropSend: 0.33, Rate429: 0.08, Rate503: 0.06, TimeoutRate: 0.02, LoseAnswer: 0.02,
	MaxDelay: 150 * time.Millisecond, HideStatus: 0.5, HideFor: 5 * time.Second, NeverFinalize: 0.1}

// schedule makes calls of every method the platform uses through solana-go
// and returns what became of each: the answer it decoded or its error's
// kind. Any other error fails the test: solana-go decodes every answer.
func schedule(t *testing.T, s *setup, calls int) []string {
	t.Helper()
	var out []string
	var sent []solana.Signature
	for i := range calls {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		var got any
		var err error
		switch i % 7 {
		case 0:
			tx := signedTx(t, uint64(1000+i))
			var sig solana.Signature
			sig, err = s.faulty.SendTransactionWithOpts(ctx, tx, rpc.TransactionOpts{PreflightCommitment: rpc.CommitmentConfirmed})
			if err == nil {
				if sig != tx.Signatures[0] {
					t.Fatalf("send answered %s for %s", sig, tx.Signatures[0])
				}
				sent = append(sent, sig)
			}
			got = sig
		case 1:
			var st *rpc.GetSignatureStatusesResult
			st, err = s.faulty.GetSignatureStatuses(ctx, true, sent...)
			if err == nil {
				var statuses []string
				for _, v := range st.Value {
					if v == nil {
						statuses = append(statuses, "null")
					} else {
						statuses = append(statuses, string(v.ConfirmationStatus))
					}
				}
				got = statuses
			}
		case 2:
			var bh *rpc.GetLatestBlockhashResult
			if bh, err = s.faulty.GetLatestBlockhash(ctx, rpc.CommitmentConfirmed); err == nil {
				got = bh.Value.Blockhash
			}
		case 3:
			var b *rpc.GetBalanceResult
			if b, err = s.faulty.GetBalance(ctx, payer.PublicKey(), rpc.CommitmentConfirmed); err == nil {
				got = b.Value
			}
		case 4:
			var a *rpc.GetAccountInfoResult
			if a, err = s.faulty.GetAccountInfo(ctx, payer.PublicKey()); err == nil {
				got = a.Value.Data.GetBinary()
			}
		case 5:
			var v *rpc.IsValidBlockhashResult
			if v, err = s.faulty.IsBlockhashValid(ctx, solana.Hash{7}, rpc.CommitmentConfirmed); err == nil {
				got = v.Value
			}
		case 6:
			got, err = s.faulty.GetMinimumBalanceForRentExemption(ctx, 165, "")
		}
		cancel()
		var rpcErr *jsonrpc.RPCError
		var httpErr *jsonrpc.HTTPError
		switch {
		case err == nil:
			out = append(out, fmt.Sprint(got))
		case errors.As(err, &rpcErr) && rpcErr.Code == 429:
			out = append(out, "429")
		case errors.As(err, &httpErr) && httpErr.Code == 503:
			out = append(out, "503")
		case errors.Is(err, context.DeadlineExceeded):
			out = append(out, "timeout")
		default:
			t.Fatalf("call %d: solana-go could not read the answer: %v", i, err)
		}
		s.clock.advance(time.Second)
	}
	return out
}

func TestSolanaGoDecodesEveryAnswer(t *testing.T) {
	s := newSetup(t, operator, 1)
	schedule(t, s, 350)
	total := s.proxy.Stats().Total()
	if total.TooMany == 0 || total.Unavailable == 0 || total.TimedOut == 0 || total.LostAnswers == 0 || total.Dropped == 0 ||
		total.Hidden == 0 || total.Unfinalized == 0 {
		t.Errorf("not every fault happened in 350 calls: %+v", total)
	}
}

func TestSameSeedSameSchedule(t *testing.T) {
	a, b, c := newSetup(t, operator, 42), newSetup(t, operator, 42), newSetup(t, operator, 43)
	first, second, other := schedule(t, a, 140), schedule(t, b, 140), schedule(t, c, 140)
	if strings.Join(first, "|") != strings.Join(second, "|") || fmt.Sprint(a.delays) != fmt.Sprint(b.delays) {
		t.Errorf("one seed, two schedules:\n%v\n%v", first, second)
	}
	if strings.Join(first, "|") == strings.Join(other, "|") {
		t.Error("seeds 42 and 43 made the same schedule")
	}
}

func TestRates(t *testing.T) {
	s := newSetup(t, rpcfaults.Faults{DropSend: 0.33, Rate429: 0.08, Rate503: 0.06}, 7)
	const n = 1000
	for i := range n {
		tx := signedTx(t, uint64(10_000+i))
		s.faulty.SendTransaction(context.Background(), tx)
	}
	c := s.proxy.Stats().Methods["sendTransaction"]
	// Binomial bounds about 4 standard deviations wide.
	within := func(name string, got int, p float64, of int) {
		mean := p * float64(of)
		if d := float64(got) - mean; d*d > 16*mean*(1-p) {
			t.Errorf("%s: %d of %d, want about %.0f", name, got, of, mean)
		}
	}
	within("429", c.TooMany, 0.08, n)
	within("503", c.Unavailable, 0.06, n)
	within("dropped", c.Dropped, 0.33, n-c.TooMany-c.Unavailable)
	if c.Calls != n || c.Forwarded+c.Dropped+c.TooMany+c.Unavailable != n || s.node.sent() != c.Forwarded {
		t.Errorf("stats %+v, %d sends at the node", c, s.node.sent())
	}
}

func TestInvalidFaults(t *testing.T) {
	for _, f := range []rpcfaults.Faults{{DropSend: 1.5}, {Rate429: -0.1}, {Rate429: 0.6, Rate503: 0.5}, {TimeoutRate: 0.5, LoseAnswer: 0.6}, {MaxDelay: -1}} {
		if _, err := rpcfaults.New("http://localhost:8899", f, nil); err == nil {
			t.Errorf("%+v accepted", f)
		}
	}
	if _, err := rpcfaults.New("localhost:8899", rpcfaults.Faults{}, nil); err == nil {
		t.Error("a target without a scheme accepted")
	}
}
