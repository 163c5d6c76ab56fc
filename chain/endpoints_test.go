package chain_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gagliardetto/solana-go"

	"wager/chain"
)

// clock is the time of the backoffs, moved by the test.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// rpcServers are RPC endpoints over real HTTP whose answers the test
// decides; they note who got each request, and what.
type rpcServers struct {
	mu      sync.Mutex
	byName  map[string]*rpcServer
	answers map[string]answer
	order   []string // who got each request
}

type rpcServer struct {
	*httptest.Server
	name   string
	bodies []string // under rpcServers.mu
}

// answer writes the response to one request.
type answer func(name string, w http.ResponseWriter, r *http.Request)

// ok answers with the server's name as the result.
func ok(name string, w http.ResponseWriter, r *http.Request) {
	io.WriteString(w, `{"jsonrpc":"2.0","result":"`+name+`","id":1}`)
}

func status(code int, retryAfter string) answer {
	return func(name string, w http.ResponseWriter, r *http.Request) {
		if retryAfter != "" {
			w.Header().Set("Retry-After", retryAfter)
		}
		w.WriteHeader(code)
	}
}

// hang answers only once the client gave up.
func hang(name string, w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }

// newRPCServers starts one server per name with its first answer.
func newRPCServers(t *testing.T, answers map[string]answer, names ...string) *rpcServers {
	g := &rpcServers{byName: map[string]*rpcServer{}, answers: answers}
	for _, name := range names {
		s := &rpcServer{name: name}
		s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			g.mu.Lock()
			s.bodies = append(s.bodies, string(b))
			g.order = append(g.order, name)
			a := g.answers[name]
			g.mu.Unlock()
			a(name, w, r)
		}))
		t.Cleanup(s.Close)
		g.byName[name] = s
	}
	return g
}

func (g *rpcServers) server(name string) *rpcServer { return g.byName[name] }

// set changes what name answers from now on.
func (g *rpcServers) set(name string, a answer) {
	g.mu.Lock()
	g.answers[name] = a
	g.mu.Unlock()
}

func (g *rpcServers) hits(name string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.byName[name].bodies)
}

func (g *rpcServers) body(name string, i int) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.byName[name].bodies[i]
}

// takeOrder returns who got the requests since the last call.
func (g *rpcServers) takeOrder() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := strings.Join(g.order, ",")
	g.order = nil
	return out
}

func newEndpoints(t *testing.T, c *clock, servers ...*rpcServer) *chain.Endpoints {
	t.Helper()
	var urls []string
	for _, s := range servers {
		urls = append(urls, s.URL+"/rpc?api-key=secret")
	}
	e, err := chain.NewEndpoints(urls)
	if err != nil {
		t.Fatal(err)
	}
	e.Now, e.Timeout = c.Now, 200*time.Millisecond
	return e
}

// call sends one JSON-RPC request through e and returns who answered.
func call(e *chain.Endpoints, body string) (string, error) {
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, "http://solana-rpc", strings.NewReader(body))
	if err != nil {
		return "", err
	}
	resp, err := e.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var out struct{ Result string }
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return "", fmt.Errorf("decode the answer: %w", err)
	}
	return out.Result, nil
}

func mustCall(t *testing.T, e *chain.Endpoints, want string) {
	t.Helper()
	got, err := call(e, `{"method":"getHealth"}`)
	if err != nil || got != want {
		t.Fatalf("answered by %q (%v), want %s", got, err, want)
	}
}

func state(e *chain.Endpoints, i int) chain.EndpointState { return e.State()[i] }

// A 429 moves the calls to the next URL for as long as its Retry-After
// says (seconds or an HTTP date); then the first URL is used again.
func TestEndpointsFollowRetryAfterOf429(t *testing.T) {
	for _, tc := range []struct{ name, retryAfter string }{
		{"seconds", "30"},
		{"date", time.Date(2030, 1, 1, 0, 0, 30, 0, time.UTC).Format(http.TimeFormat)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &clock{t: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
			g := newRPCServers(t, map[string]answer{"a": status(http.StatusTooManyRequests, tc.retryAfter), "b": ok}, "a", "b")
			e := newEndpoints(t, c, g.server("a"), g.server("b"))

			const body = `{"jsonrpc":"2.0","method":"sendTransaction","params":["AQID"],"id":"x"}`
			if got, err := call(e, body); err != nil || got != "b" {
				t.Fatalf("first call answered by %q (%v), want b", got, err)
			}
			if got := g.body("b", 0); got != body {
				t.Errorf("b got %q, want the same request %q", got, body)
			}
			st := state(e, 0)
			if !st.BackedOff || !st.Until.Equal(c.Now().Add(30*time.Second)) || st.Calls[chain.CallTooMany] != 1 {
				t.Fatalf("a after a 429 with Retry-After %s: %+v, want backed off 30s", tc.retryAfter, st)
			}
			c.advance(29 * time.Second)
			mustCall(t, e, "b")
			if n := g.hits("a"); n != 1 {
				t.Errorf("a got %d requests within its Retry-After, want 1", n)
			}
			c.advance(time.Second)
			g.set("a", ok)
			mustCall(t, e, "a")
			if st := state(e, 0); st.BackedOff || st.Failures != 0 || st.Calls[chain.CallOK] != 1 {
				t.Errorf("a after answering: %+v, want reset", st)
			}
		})
	}
}

// A 5xx backs a URL off for 1s, then 2s if it fails again once the
// backoff ended; an answer resets it.
func TestEndpointsBackOffA5xxExponentiallyAndResetOnSuccess(t *testing.T) {
	c := &clock{t: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
	g := newRPCServers(t, map[string]answer{"a": status(http.StatusServiceUnavailable, ""), "b": ok}, "a", "b")
	e := newEndpoints(t, c, g.server("a"), g.server("b"))

	mustCall(t, e, "b")
	if st := state(e, 0); !st.Until.Equal(c.Now().Add(time.Second)) || st.Failures != 1 || st.Calls[chain.CallServerError] != 1 {
		t.Fatalf("a after a 503: %+v, want backed off 1s", st)
	}
	c.advance(999 * time.Millisecond)
	mustCall(t, e, "b")
	c.advance(time.Millisecond)
	mustCall(t, e, "b") // a is tried again, and fails again
	if st := state(e, 0); !st.Until.Equal(c.Now().Add(2*time.Second)) || st.Failures != 2 {
		t.Fatalf("a after a second 503: %+v, want backed off 2s", st)
	}
	if got, want := g.takeOrder(), "a,b,b,a,b"; got != want {
		t.Errorf("requests went to %s, want %s", got, want)
	}
	c.advance(2 * time.Second)
	g.set("a", ok)
	mustCall(t, e, "a")
	if st := state(e, 0); st.BackedOff || st.Failures != 0 {
		t.Errorf("a after answering: %+v, want reset", st)
	}
	g.set("a", status(http.StatusBadGateway, ""))
	mustCall(t, e, "b")
	if st := state(e, 0); !st.Until.Equal(c.Now().Add(time.Second)) {
		t.Errorf("a failing after a success: %+v, want backed off 1s again", st)
	}
}

// The backoff stops doubling at MaxBackoff.
func TestEndpointsCapTheBackoff(t *testing.T) {
	c := &clock{t: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
	g := newRPCServers(t, map[string]answer{"a": status(http.StatusInternalServerError, "")}, "a")
	e := newEndpoints(t, c, g.server("a"))
	for i, want := range []time.Duration{1, 2, 4, 8, 16, 32, 60, 60} {
		if _, err := call(e, "{}"); err == nil {
			t.Fatal("a failing URL answered")
		}
		if st := state(e, 0); !st.Until.Equal(c.Now().Add(want * time.Second)) {
			t.Fatalf("after failure %d: backed off for %v, want %v", i+1, st.Until.Sub(c.Now()), want*time.Second)
		}
		c.advance(want * time.Second)
	}
}

// A URL that does not answer within the timeout is backed off like a
// 5xx, and the request goes to the next.
func TestEndpointsBackOffAHangingURL(t *testing.T) {
	c := &clock{t: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
	g := newRPCServers(t, map[string]answer{"a": hang, "b": ok}, "a", "b")
	e := newEndpoints(t, c, g.server("a"), g.server("b"))

	mustCall(t, e, "b")
	if st := state(e, 0); !st.BackedOff || st.Calls[chain.CallTimeout] != 1 {
		t.Fatalf("a after timing out: %+v, want backed off, one timeout", st)
	}
	mustCall(t, e, "b")
	if n := g.hits("a"); n != 1 {
		t.Errorf("a got %d requests, want 1: it is backed off", n)
	}
}

// When every URL fails the error names each and why; when all are backed
// off, the one whose backoff ends first is tried first.
func TestEndpointsAllDown(t *testing.T) {
	c := &clock{t: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
	g := newRPCServers(t, map[string]answer{"a": status(http.StatusTooManyRequests, "60"),
		"b": status(http.StatusServiceUnavailable, ""), "h": hang, "gone": ok}, "a", "b", "h", "gone")
	g.server("gone").Close() // refuses connections
	e := newEndpoints(t, c, g.server("a"), g.server("b"), g.server("h"), g.server("gone"))

	_, err := call(e, "{}")
	if err == nil {
		t.Fatal("no error with every URL down")
	}
	host := func(n string) string { return strings.TrimPrefix(g.server(n).URL, "http://") }
	for _, want := range []string{host("a") + ": HTTP 429", host("b") + ": HTTP 503", host("h") + ": no answer within", host("gone") + ": "} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "secret") {
		t.Errorf("error %q shows a URL's API key", err)
	}
	if got := state(e, 3).Calls[chain.CallError]; got != 1 {
		t.Errorf("the refused URL counts %d errors, want 1", got)
	}

	// Backed off: a for 60s, the others for 1s from when they failed.
	g.takeOrder()
	g.set("b", ok)
	c.advance(500 * time.Millisecond)
	mustCall(t, e, "b")
	if got := g.takeOrder(); got != "b" {
		t.Errorf("with every URL backed off, requests went to %s, want b (its backoff ends first)", got)
	}
}

// A request whose caller gave up is not held against the URL.
func TestEndpointsDoNotBackOffForTheCaller(t *testing.T) {
	c := &clock{t: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
	g := newRPCServers(t, map[string]answer{"a": hang}, "a")
	e := newEndpoints(t, c, g.server("a"))
	e.Timeout = time.Minute
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://solana-rpc", strings.NewReader("{}"))
	if _, err := e.Do(req); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want the caller's deadline", err)
	}
	if st := state(e, 0); st.BackedOff || st.Calls != (chain.CallCounts{}) {
		t.Errorf("a after its caller gave up: %+v, want untouched", st)
	}
}

// Concurrent calls through a failing URL back it off once, not once per
// call.
func TestEndpointsConcurrentFailuresBackOffOnce(t *testing.T) {
	c := &clock{t: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
	release := make(chan struct{})
	g := newRPCServers(t, map[string]answer{"b": ok, "a": func(name string, w http.ResponseWriter, r *http.Request) {
		<-release
		w.WriteHeader(http.StatusServiceUnavailable)
	}}, "a", "b")
	e := newEndpoints(t, c, g.server("a"), g.server("b"))
	e.Timeout = 10 * time.Second
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if got, err := call(e, "{}"); err != nil || got != "b" {
				t.Errorf("answered by %q (%v), want b", got, err)
			}
		})
	}
	for g.hits("a") < 8 {
		time.Sleep(time.Millisecond)
	}
	close(release)
	wg.Wait()
	if st := state(e, 0); st.Failures != 1 || !st.Until.Equal(c.Now().Add(time.Second)) || st.Calls[chain.CallServerError] != 8 {
		t.Errorf("a after 8 concurrent 503s: %+v, want one failure, backed off 1s, 8 counted", st)
	}
}

// solana-go's own client goes through the URLs: a 503 from the first,
// the blockhash from the second.
func TestEndpointsServeSolanaGo(t *testing.T) {
	want := solana.MustHashFromBase58("4sGjMW1sUnHzSxGspuhpqLDx6wiyjNtZAMdL4VZHirAn")
	var mu sync.Mutex
	var methods []string
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer down.Close()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Method string          `json:"method"`
			ID     json.RawMessage `json:"id"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		mu.Lock()
		methods = append(methods, req.Method)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(req.ID)+`,"result":{"context":{"slot":7},"value":{"blockhash":"`+
			want.String()+`","lastValidBlockHeight":150}}}`)
	}))
	defer up.Close()
	e, err := chain.NewEndpoints([]string{down.URL, up.URL})
	if err != nil {
		t.Fatal(err)
	}
	got, err := e.Client().Blockhash(context.Background())
	if err != nil || got.Hash != want {
		t.Fatalf("Blockhash: %v, %v; want %v", got, err, want)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(methods) != 1 || methods[0] != "getLatestBlockhash" {
		t.Errorf("the second URL got %v, want one getLatestBlockhash", methods)
	}
	if st := e.State()[0]; !st.BackedOff || st.Calls[chain.CallServerError] != 1 {
		t.Errorf("the first URL: %+v, want backed off after its 503", st)
	}
}

func TestNewEndpointsRefusesBadURLs(t *testing.T) {
	for _, urls := range [][]string{nil, {"ftp://x"}, {"https://ok.example", "no-scheme"}} {
		if _, err := chain.NewEndpoints(urls); err == nil {
			t.Errorf("NewEndpoints(%q): no error", urls)
		}
	}
	e, err := chain.NewEndpoints([]string{"https://rpc.example/a?api-key=1", "https://rpc.example/b", "http://other.example:8899"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, st := range e.State() {
		names = append(names, st.Name)
	}
	if got, want := strings.Join(names, ","), "rpc.example,rpc.example#2,other.example:8899"; got != want {
		t.Errorf("names %s, want %s", got, want)
	}
}
