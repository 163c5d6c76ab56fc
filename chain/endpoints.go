package chain

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Defaults of Endpoints.
const (
	DefaultCallTimeout = 5 * time.Second
	DefaultMinBackoff  = time.Second
	DefaultMaxBackoff  = time.Minute
)

// Endpoints is the HTTP client of solana-go's JSON-RPC client over several
// RPC URLs (SOLANA_RPC_URL). Each request goes to the first URL not backed
// off; a URL that times out, answers 429 or 5xx, or cannot be reached is
// backed off and the same request is sent to the next, each URL at most
// once per request. When every URL is backed off, the one whose backoff
// ends first is tried rather than none. Resending is safe for every call
// the platform makes: reads, and sendTransaction of the same signed bytes
// (one signature, so it lands at most once).
//
// Set the fields before the first request; Endpoints is then safe for
// concurrent use.
type Endpoints struct {
	// Timeout bounds one attempt at one URL, the answer's body included.
	Timeout time.Duration
	// MinBackoff is a URL's first backoff; each failure after a backoff
	// ended doubles it, up to MaxBackoff; a success resets it. A 429 or
	// 503 with Retry-After is backed off as long as it says.
	MinBackoff, MaxBackoff time.Duration
	// Now is the clock of backoffs.
	Now func() time.Time
	// HTTP sends the requests.
	HTTP *http.Client

	mu   sync.Mutex
	list []*endpoint
}

type endpoint struct {
	url      *url.URL
	name     string
	failures int       // in a row, since the last success
	until    time.Time // backed off until then
	calls    CallCounts
}

// CallOutcome is how one attempt at one URL ended, as /metrics counts it.
type CallOutcome int

// Outcomes of an attempt. Only CallOK and CallClientError are answers
// passed back; the others back the URL off and try the next.
const (
	CallOK          CallOutcome = iota // answered (2xx, 3xx)
	CallTimeout                        // no answer within Timeout
	CallTooMany                        // 429
	CallServerError                    // 5xx
	CallError                          // not reached, or the answer broke off
	CallClientError                    // another 4xx: passed back, not backed off
	callOutcomes
)

// String is the outcome's label on /metrics.
func (o CallOutcome) String() string {
	return [...]string{"ok", "timeout", "429", "5xx", "error", "4xx"}[o]
}

// CallOutcomes lists every outcome, in order.
func CallOutcomes() []CallOutcome {
	out := make([]CallOutcome, callOutcomes)
	for i := range out {
		out[i] = CallOutcome(i)
	}
	return out
}

// CallCounts counts attempts by outcome (indexed by CallOutcome).
type CallCounts [callOutcomes]uint64

// EndpointState is one URL as Endpoints sees it at a moment.
type EndpointState struct {
	// Name is the URL's host (with "#n", its place in the list, when
	// another URL has the same host): URLs often carry API keys, so they
	// are never shown whole.
	Name      string
	BackedOff bool
	Until     time.Time // when the backoff ends (zero: never backed off)
	Failures  int       // in a row, since the last success
	Calls     CallCounts
}

// NewEndpoints returns a client over urls, tried in their order, with the
// default timeout and backoffs. It returns an error when there is no URL
// or one is not an absolute http(s) URL.
func NewEndpoints(urls []string) (*Endpoints, error) {
	if len(urls) == 0 {
		return nil, errors.New("no RPC URL")
	}
	e := &Endpoints{Timeout: DefaultCallTimeout, MinBackoff: DefaultMinBackoff, MaxBackoff: DefaultMaxBackoff,
		Now: time.Now, HTTP: &http.Client{Transport: newTransport()}}
	seen := map[string]bool{}
	for i, raw := range urls {
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("RPC URL %d is not an http(s) URL", i+1)
		}
		name := u.Host
		if seen[name] {
			name += "#" + strconv.Itoa(i+1)
		}
		seen[u.Host] = true
		e.list = append(e.list, &endpoint{url: u, name: name})
	}
	return e, nil
}

// newTransport is http.DefaultTransport's with more idle connections kept
// per host: every call of the platform goes to one or two hosts.
func newTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 32
	return t
}

// Client returns a chain client whose every call goes through e.
func (e *Endpoints) Client() *Client {
	// The URL solana-go is given is only a placeholder (Do sets the real
	// one): its errors then never show a URL's API key.
	return NewClient("http://solana-rpc", e)
}

// State returns every URL's state now, in the configured order.
func (e *Endpoints) State() []EndpointState {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := e.Now()
	out := make([]EndpointState, len(e.list))
	for i, ep := range e.list {
		out[i] = EndpointState{Name: ep.name, BackedOff: now.Before(ep.until), Until: ep.until,
			Failures: ep.failures, Calls: ep.calls}
	}
	return out
}

// Do sends req to the first URL not backed off, and on a failure of that
// URL to the next. The answer comes with its body read. It returns an
// error naming each URL tried and how it failed when none answered, or
// the request's own context error when that ended first.
func (e *Endpoints) Do(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		var err error
		body, err = io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("read the RPC request: %w", err)
		}
	}
	tried := make([]bool, len(e.list))
	var failures []string
	for range e.list {
		ep := e.next(tried)
		resp, outcome, retryAfter, err := e.attempt(req, body, ep)
		if ctxErr := req.Context().Err(); ctxErr != nil && outcome != CallOK && outcome != CallClientError {
			return nil, ctxErr // the caller gave up: no fault of the URL
		}
		e.record(ep, outcome, retryAfter)
		if err == nil {
			return resp, nil
		}
		failures = append(failures, ep.name+": "+err.Error())
	}
	return nil, fmt.Errorf("no Solana RPC endpoint answered: %s", strings.Join(failures, "; "))
}

// CloseIdleConnections closes the idle connections to every URL.
func (e *Endpoints) CloseIdleConnections() { e.HTTP.CloseIdleConnections() }

// next picks, among the URLs not tried yet, the first not backed off, or
// else the one whose backoff ends first, and marks it tried.
func (e *Endpoints) next(tried []bool) *endpoint {
	e.mu.Lock()
	defer e.mu.Unlock()
	now, pick := e.Now(), -1
	for i, ep := range e.list {
		if tried[i] {
			continue
		}
		if !now.Before(ep.until) {
			pick = i
			break
		}
		if pick < 0 || ep.until.Before(e.list[pick].until) {
			pick = i
		}
	}
	tried[pick] = true
	return e.list[pick]
}

// attempt sends one copy of req to ep. err is nil for an answer to pass
// back (CallOK, CallClientError); retryAfter is what a 429 or 503 asked
// for (0: nothing).
func (e *Endpoints) attempt(req *http.Request, body []byte, ep *endpoint) (resp *http.Response, outcome CallOutcome, retryAfter time.Duration, err error) {
	ctx, cancel := context.WithTimeout(req.Context(), e.Timeout)
	defer cancel()
	out := req.Clone(ctx)
	u := *ep.url
	out.URL, out.Host = &u, ""
	out.Body, out.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	resp, err = e.HTTP.Do(out)
	if err != nil {
		outcome, err = e.failure(ctx, err)
		return nil, outcome, 0, err
	}
	// Read here, within the attempt's timeout: an answer that stalls
	// halfway is that URL's failure, and the next can still be tried.
	data, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		outcome, err = e.failure(ctx, err)
		return nil, outcome, 0, err
	}
	resp.Body, resp.ContentLength = io.NopCloser(bytes.NewReader(data)), int64(len(data))
	switch {
	case resp.StatusCode == http.StatusTooManyRequests:
		return nil, CallTooMany, retryAfterOf(resp.Header, e.Now()), errors.New("HTTP 429 " + http.StatusText(resp.StatusCode))
	case resp.StatusCode >= 500:
		return nil, CallServerError, retryAfterOf(resp.Header, e.Now()), fmt.Errorf("HTTP %d %s", resp.StatusCode, http.StatusText(resp.StatusCode))
	case resp.StatusCode >= 400:
		return resp, CallClientError, 0, nil
	}
	return resp, CallOK, 0, nil
}

// failure classifies an attempt that got no whole answer. The error
// leaves out the URL, which may hold an API key.
func (e *Endpoints) failure(ctx context.Context, err error) (CallOutcome, error) {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	var ne net.Error
	if errors.Is(ctx.Err(), context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return CallTimeout, fmt.Errorf("no answer within %v", e.Timeout)
	}
	return CallError, err
}

// record counts an attempt and moves ep's backoff: a failure after the
// backoff ended doubles it (failures of requests sent before it began
// do not), Retry-After sets it, a success resets it.
func (e *Endpoints) record(ep *endpoint, outcome CallOutcome, retryAfter time.Duration) {
	e.mu.Lock()
	defer e.mu.Unlock()
	ep.calls[outcome]++
	now := e.Now()
	switch outcome {
	case CallOK:
		ep.failures, ep.until = 0, time.Time{}
		return
	case CallClientError:
		return
	}
	if !now.Before(ep.until) {
		ep.failures++
		ep.until = now.Add(e.backoff(ep.failures))
	}
	if retryAfter > 0 {
		ep.until = now.Add(retryAfter)
	}
}

// backoff is the wait after the given number of failures in a row.
func (e *Endpoints) backoff(failures int) time.Duration {
	d := e.MinBackoff
	for i := 1; i < failures && d < e.MaxBackoff; i++ {
		d *= 2
	}
	return min(d, e.MaxBackoff)
}

// retryAfterOf reads a Retry-After header, in seconds or as an HTTP date
// (0 when absent, invalid or past).
func retryAfterOf(h http.Header, now time.Time) time.Duration {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil {
		return max(time.Duration(s)*time.Second, 0)
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0)
	}
	return 0
}
