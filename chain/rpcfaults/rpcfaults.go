// Package rpcfaults is a Solana JSON-RPC proxy that injects the faults of
// a real cluster's RPC in front of a healthy one (the embedded chain, a
// test validator), so that money paths meet them in tests and by hand.
//
// Every call is first delayed by a random time up to MaxDelay. Then one
// draw decides whether it hangs until the client gives up (TimeoutRate),
// is forwarded but its answer lost, hanging the same way (LoseAnswer), is
// answered 429 with Retry-After (Rate429, a JSON-RPC error as Solana's
// public RPC sends it) or 503 (Rate503, plain text as a load balancer
// sends it), or is forwarded. Of the forwarded calls, sendTransaction is
// dropped at DropSend: answered with the transaction's signature, as a
// node answers, but never forwarded, as a transaction lost on its way to
// the leader. getSignatureStatuses reports null for a signature chosen at
// HideStatus until HideFor after the proxy first saw it, and "confirmed"
// instead of "finalized" for one chosen at NeverFinalize.
//
// Randomness comes from one seeded source, drawn in the order calls
// arrive: the same seed and the same sequence of calls give the same
// faults. A call the proxy does not fault is forwarded untouched and its
// answer returned byte for byte. Batches (JSON arrays; solana-go sends
// single calls) get the delay and the HTTP faults as one call and are
// otherwise passed through: nothing inside a batch is dropped, hidden or
// rewritten.
package rpcfaults

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/gagliardetto/solana-go"
	"github.com/mr-tron/base58"
)

// Faults are the rates (each from 0 to 1) and times of the faults a Proxy
// injects.
type Faults struct {
	// TimeoutRate, LoseAnswer, Rate429 and Rate503 share one draw per call,
	// so they add up to at most 1. A time-out never reaches the target; a
	// lost answer does (a sent transaction lands), and then hangs.
	TimeoutRate float64
	LoseAnswer  float64
	Rate429     float64
	Rate503     float64
	// RetryAfter is the Retry-After of a 429 (rounded up to whole seconds;
	// zero: 1 s).
	RetryAfter time.Duration
	// MaxDelay bounds the random delay of every call.
	MaxDelay time.Duration
	// DropSend is the share of the sendTransaction calls that get past the
	// HTTP faults and are answered without being forwarded.
	DropSend float64
	// HideStatus is the share of signatures whose status is reported null
	// until HideFor after the proxy first saw them.
	HideStatus float64
	HideFor    time.Duration
	// NeverFinalize is the share of signatures reported "confirmed" where
	// the target says "finalized".
	NeverFinalize float64
}

// Validate returns an error naming the first rate outside 0 to 1, a
// negative time, or HTTP fault rates that add up to more than 1.
func (f Faults) Validate() error {
	for _, r := range []struct {
		name string
		v    float64
	}{{"TimeoutRate", f.TimeoutRate}, {"LoseAnswer", f.LoseAnswer}, {"Rate429", f.Rate429}, {"Rate503", f.Rate503}, {"DropSend", f.DropSend},
		{"HideStatus", f.HideStatus}, {"NeverFinalize", f.NeverFinalize}} {
		if !(r.v >= 0 && r.v <= 1) {
			return fmt.Errorf("%s=%v: a rate must be from 0 to 1", r.name, r.v)
		}
	}
	if sum := f.TimeoutRate + f.LoseAnswer + f.Rate429 + f.Rate503; sum > 1 {
		return fmt.Errorf("TimeoutRate+LoseAnswer+Rate429+Rate503=%v: they share one draw, so at most 1", sum)
	}
	if f.RetryAfter < 0 || f.MaxDelay < 0 || f.HideFor < 0 {
		return errors.New("RetryAfter, MaxDelay and HideFor must not be negative")
	}
	return nil
}

// maxBody bounds a request: a Solana transaction is at most 1232 bytes,
// and no call the platform makes comes near.
const maxBody = 1 << 20

// Proxy is an http.Handler that forwards JSON-RPC calls to a target URL,
// injecting faults. Set its exported fields before serving.
type Proxy struct {
	// Now is the clock of HideFor (nil: time.Now).
	Now func() time.Time
	// Sleep waits out a delay, or returns ctx's error first (nil: a timer).
	Sleep func(ctx context.Context, d time.Duration) error
	// Client forwards calls (nil: http.DefaultClient).
	Client *http.Client
	// Log, when set, gets a line per injected fault.
	Log *slog.Logger

	target string
	faults Faults

	mu    sync.Mutex
	rnd   *rand.Rand
	sigs  map[string]*fate
	stats map[string]*Calls
}

// fate is what the proxy decided for one signature when it first saw it.
type fate struct {
	firstSeen   time.Time
	hide        bool
	unfinalized bool
}

// New returns a proxy to the JSON-RPC endpoint at target. rnd makes the
// schedule of faults; nil draws a random seed. It returns an error when
// target is not an http(s) URL or f is invalid (Faults.Validate).
func New(target string, f Faults, rnd *rand.Rand) (*Proxy, error) {
	if u, err := url.Parse(target); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("target %q: must be an http(s) URL", target)
	}
	if err := f.Validate(); err != nil {
		return nil, err
	}
	if f.RetryAfter == 0 {
		f.RetryAfter = time.Second
	}
	if rnd == nil {
		rnd = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	return &Proxy{target: target, faults: f, rnd: rnd, sigs: map[string]*fate{}, stats: map[string]*Calls{}}, nil
}

// request is one JSON-RPC call.
type request struct {
	JSONRPC string            `json:"jsonrpc"`
	ID      json.RawMessage   `json:"id"`
	Method  string            `json:"method"`
	Params  []json.RawMessage `json:"params"`
}

// response is one JSON-RPC answer in the envelope solana-go accepts: no
// other fields.
type response struct {
	JSONRPC string          `json:"jsonrpc"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
	ID      json.RawMessage `json:"id"`
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// Method names under which Stats counts calls that are not one call.
const (
	MethodBatch   = "(batch)"
	MethodInvalid = "(invalid)"
)

// outcome is what the shared draw decided for a call.
type outcome int

const (
	forward outcome = iota
	hang
	loseAnswer
	tooMany
	unavailable
)

func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		http.Error(w, "read the request: "+err.Error(), http.StatusBadRequest)
		return
	}
	if len(body) > maxBody {
		http.Error(w, "request too large", http.StatusRequestEntityTooLarge)
		return
	}
	req, method := parse(body)
	delay, out := p.plan(method)
	if delay > 0 {
		if err := p.sleep(r.Context(), delay); err != nil {
			return // the client gave up
		}
	}
	switch out {
	case loseAnswer:
		// A node that got the call carries it out, whoever waits for it.
		p.answer(discard{}, r.WithContext(context.WithoutCancel(r.Context())), req, method, body)
		fallthrough
	case hang:
		<-r.Context().Done()
		// Read only when the server, not the client, ended the call.
		http.Error(w, "timed out", http.StatusGatewayTimeout)
		return
	case tooMany:
		w.Header().Set("Retry-After", strconv.Itoa(int((p.faults.RetryAfter+time.Second-1)/time.Second)))
		writeJSON(w, http.StatusTooManyRequests, response{JSONRPC: "2.0", ID: idOf(req),
			Error: &rpcError{Code: 429, Message: "Too many requests for a specific RPC call"}})
		return
	case unavailable:
		http.Error(w, "503 Service Temporarily Unavailable", http.StatusServiceUnavailable)
		return
	}
	p.answer(w, r, req, method, body)
}

// answer forwards a call with the faults of its method.
func (p *Proxy) answer(w http.ResponseWriter, r *http.Request, req request, method string, body []byte) {
	switch method {
	case "sendTransaction":
		p.send(w, r, req, body)
	case "getSignatureStatuses":
		p.statuses(w, r, req, body)
	default:
		p.forward(w, r, method, body, nil)
	}
}

// discard takes an answer that is lost.
type discard struct{}

func (discard) Header() http.Header         { return http.Header{} }
func (discard) Write(b []byte) (int, error) { return len(b), nil }
func (discard) WriteHeader(int)             {}

// parse reads a single call; a batch or anything else is only named.
func parse(body []byte) (request, string) {
	var req request
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) > 0 && trimmed[0] == '[' {
		return req, MethodBatch
	}
	if err := json.Unmarshal(trimmed, &req); err != nil || req.Method == "" {
		return req, MethodInvalid
	}
	return req, req.Method
}

func idOf(req request) json.RawMessage {
	if len(req.ID) == 0 {
		return json.RawMessage("null")
	}
	return req.ID
}

// plan counts a call and draws its delay and outcome.
func (p *Proxy) plan(method string) (time.Duration, outcome) {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.calls(method)
	c.Calls++
	var delay time.Duration
	if p.faults.MaxDelay > 0 {
		delay = time.Duration(p.rnd.Int64N(int64(p.faults.MaxDelay) + 1))
	}
	u := p.rnd.Float64()
	if delay > 0 {
		c.Delayed++
		c.Delay += delay
	}
	f := p.faults
	switch {
	case u < f.TimeoutRate:
		c.TimedOut++
		p.logFault(method, "timeout")
		return delay, hang
	case u < f.TimeoutRate+f.LoseAnswer:
		c.LostAnswers++
		p.logFault(method, "lost answer")
		return delay, loseAnswer
	case u < f.TimeoutRate+f.LoseAnswer+f.Rate429:
		c.TooMany++
		p.logFault(method, "429")
		return delay, tooMany
	case u < f.TimeoutRate+f.LoseAnswer+f.Rate429+f.Rate503:
		c.Unavailable++
		p.logFault(method, "503")
		return delay, unavailable
	}
	return delay, forward
}

// calls returns the counts of method; p.mu is held.
func (p *Proxy) calls(method string) *Calls {
	c := p.stats[method]
	if c == nil {
		c = &Calls{}
		p.stats[method] = c
	}
	return c
}

func (p *Proxy) logFault(method, fault string, args ...any) {
	if p.Log != nil {
		p.Log.Info("rpc fault", append([]any{"method", method, "fault", fault}, args...)...)
	}
}

// see returns the fate of sig, drawing it the first time; p.mu is held.
func (p *Proxy) see(sig string) *fate {
	f := p.sigs[sig]
	if f == nil {
		// Both draws always, so that the schedule does not depend on rates.
		hide, unfinalized := p.rnd.Float64(), p.rnd.Float64()
		f = &fate{firstSeen: p.now(), hide: hide < p.faults.HideStatus, unfinalized: unfinalized < p.faults.NeverFinalize}
		p.sigs[sig] = f
	}
	return f
}

// send drops the transaction or forwards it.
func (p *Proxy) send(w http.ResponseWriter, r *http.Request, req request, body []byte) {
	sig, ok := signatureOf(req.Params)
	if !ok {
		p.forward(w, r, req.Method, body, nil) // the node says what is wrong with it
		return
	}
	p.mu.Lock()
	p.see(sig)
	drop := p.rnd.Float64() < p.faults.DropSend
	if drop {
		p.calls(req.Method).Dropped++
		p.logFault(req.Method, "dropped", "signature", sig)
	}
	p.mu.Unlock()
	if !drop {
		p.forward(w, r, req.Method, body, nil)
		return
	}
	result, _ := json.Marshal(sig)
	writeJSON(w, http.StatusOK, response{JSONRPC: "2.0", Result: result, ID: idOf(req)})
}

// signatureOf returns the first signature of the transaction that
// sendTransaction's params carry (base58 unless they say base64).
func signatureOf(params []json.RawMessage) (string, bool) {
	if len(params) == 0 {
		return "", false
	}
	var encoded string
	if err := json.Unmarshal(params[0], &encoded); err != nil {
		return "", false
	}
	var opts struct {
		Encoding string `json:"encoding"`
	}
	if len(params) > 1 {
		json.Unmarshal(params[1], &opts)
	}
	var raw []byte
	var err error
	if opts.Encoding == "base64" {
		raw, err = base64.StdEncoding.DecodeString(encoded)
	} else {
		raw, err = base58.Decode(encoded)
	}
	if err != nil {
		return "", false
	}
	tx, err := solana.TransactionFromBytes(raw)
	if err != nil || len(tx.Signatures) == 0 {
		return "", false
	}
	return tx.Signatures[0].String(), true
}

// statuses forwards getSignatureStatuses and hides or holds back the
// statuses of the signatures chosen for it.
func (p *Proxy) statuses(w http.ResponseWriter, r *http.Request, req request, body []byte) {
	var sigs []string
	if len(req.Params) == 0 || json.Unmarshal(req.Params[0], &sigs) != nil {
		p.forward(w, r, req.Method, body, nil)
		return
	}
	fates := make([]fate, len(sigs))
	p.mu.Lock()
	for i, s := range sigs {
		fates[i] = *p.see(s)
	}
	p.mu.Unlock()
	p.forward(w, r, req.Method, body, func(answer []byte) ([]byte, bool) {
		return p.rewriteStatuses(req.Method, answer, sigs, fates)
	})
}

// statusesResult is getSignatureStatuses' result, its statuses left raw so
// that the ones not changed keep their bytes.
type statusesResult struct {
	Context json.RawMessage   `json:"context"`
	Value   []json.RawMessage `json:"value"`
}

// status is one signature's status as Solana reports it.
type status struct {
	Slot               json.RawMessage `json:"slot"`
	Confirmations      json.RawMessage `json:"confirmations"`
	Err                json.RawMessage `json:"err"`
	ConfirmationStatus *string         `json:"confirmationStatus"`
	Status             json.RawMessage `json:"status,omitempty"`
}

// rewriteStatuses returns answer with the statuses to hide as null and the
// ones never finalized as confirmed, and false when nothing changed.
func (p *Proxy) rewriteStatuses(method string, answer []byte, sigs []string, fates []fate) ([]byte, bool) {
	var resp response
	var result statusesResult
	if json.Unmarshal(answer, &resp) != nil || resp.Error != nil || json.Unmarshal(resp.Result, &result) != nil ||
		len(result.Value) != len(sigs) {
		return nil, false
	}
	now := p.now()
	var hidden, unfinalized int
	for i, raw := range result.Value {
		if bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
			continue
		}
		f := fates[i]
		if f.hide && now.Sub(f.firstSeen) < p.faults.HideFor {
			result.Value[i] = json.RawMessage("null")
			hidden++
			p.logFault(method, "hidden", "signature", sigs[i])
			continue
		}
		var st status
		if !f.unfinalized || json.Unmarshal(raw, &st) != nil || st.ConfirmationStatus == nil || *st.ConfirmationStatus != "finalized" {
			continue
		}
		confirmed := "confirmed"
		st.ConfirmationStatus = &confirmed
		if len(st.Confirmations) == 0 || string(st.Confirmations) == "null" {
			st.Confirmations = json.RawMessage("1") // a confirmed status counts them; a finalized one says null
		}
		b, err := json.Marshal(st)
		if err != nil {
			continue
		}
		result.Value[i] = b
		unfinalized++
		p.logFault(method, "unfinalized", "signature", sigs[i])
	}
	if hidden == 0 && unfinalized == 0 {
		return nil, false
	}
	b, err := json.Marshal(result)
	if err != nil {
		return nil, false
	}
	resp.Result = b
	out, err := json.Marshal(resp)
	if err != nil {
		return nil, false
	}
	p.mu.Lock()
	c := p.calls(method)
	c.Hidden += hidden
	c.Unfinalized += unfinalized
	p.mu.Unlock()
	return append(out, '\n'), true
}

// hopHeaders are not passed on by a proxy (RFC 9110, 7.6.1).
var hopHeaders = []string{"Connection", "Keep-Alive", "Proxy-Connection", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

// forward sends body to the target and writes its answer, through rewrite
// when one is given (false: the answer as it came).
func (p *Proxy) forward(w http.ResponseWriter, r *http.Request, method string, body []byte, rewrite func([]byte) ([]byte, bool)) {
	out, err := http.NewRequestWithContext(r.Context(), r.Method, p.target, bytes.NewReader(body))
	if err != nil {
		http.Error(w, "build the request: "+err.Error(), http.StatusInternalServerError)
		return
	}
	out.Header = r.Header.Clone()
	for _, h := range hopHeaders {
		out.Header.Del(h)
	}
	if rewrite != nil {
		out.Header.Del("Accept-Encoding") // a rewritten answer is read as plain JSON
	}
	client := p.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(out)
	p.mu.Lock()
	if err != nil && r.Context().Err() == nil {
		p.calls(method).UpstreamErrors++
	} else if err == nil {
		p.calls(method).Forwarded++
	}
	p.mu.Unlock()
	if err != nil {
		http.Error(w, "the target did not answer: "+err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	for _, h := range hopHeaders {
		w.Header().Del(h)
	}
	if rewrite == nil {
		w.WriteHeader(resp.StatusCode)
		io.Copy(w, resp.Body)
		return
	}
	answer, err := io.ReadAll(resp.Body)
	if err != nil {
		http.Error(w, "read the target's answer: "+err.Error(), http.StatusBadGateway)
		return
	}
	if resp.StatusCode == http.StatusOK {
		if changed, ok := rewrite(answer); ok {
			answer = changed
			w.Header().Set("Content-Length", strconv.Itoa(len(answer)))
		}
	}
	w.WriteHeader(resp.StatusCode)
	w.Write(answer)
}

func writeJSON(w http.ResponseWriter, code int, v response) {
	b, _ := json.Marshal(v) // only raw JSON and strings
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(code)
	w.Write(append(b, '\n'))
}

func (p *Proxy) now() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}

func (p *Proxy) sleep(ctx context.Context, d time.Duration) error {
	if p.Sleep != nil {
		return p.Sleep(ctx, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
