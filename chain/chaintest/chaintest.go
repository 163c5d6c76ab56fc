// Package chaintest has Solana RPC transports for tests of what the server
// does when the chain does not answer.
package chaintest

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"wager/chain"
)

// Down is an RPC that is down: every call answers HTTP 503, or, with Hang,
// waits until its request's context is done and fails with its error.
type Down struct{ Hang bool }

// Do answers req as a dead RPC does.
func (d Down) Do(req *http.Request) (*http.Response, error) {
	if d.Hang {
		<-req.Context().Done()
		return nil, req.Context().Err()
	}
	return &http.Response{StatusCode: http.StatusServiceUnavailable, Status: "503 Service Unavailable",
		Header: http.Header{"Content-Type": {"text/plain"}}, Body: io.NopCloser(strings.NewReader("no healthy upstream")),
		Request: req, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1}, nil
}

// CloseIdleConnections does nothing: there are no connections.
func (Down) CloseIdleConnections() {}

// TakeDown sends every call of client to d until the test ends, when the
// client has its RPC back.
func TakeDown(t testing.TB, client *chain.Client, d Down) {
	t.Helper()
	saved := client.RPC
	t.Cleanup(func() { client.RPC = saved })
	client.RPC = chain.NewClient("http://rpc-down", d).RPC
}
