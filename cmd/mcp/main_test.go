package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gagliardetto/solana-go"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	wager "wager.example.com/sdk"
	"wager.example.com/sdk/api"
	"wager/db/dbtest"
	"wager/e2e/testserver"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

// startWager starts the whole wager app with env on top of the defaults
// (the embedded chain with its faucet, no sign-in limit per address) on a
// database of the test's own, over real HTTP, and returns its URL.
func startWager(t *testing.T, env map[string]string) string {
	t.Helper()
	return testserver.StartFresh(t, env).URL
}

// newWallet returns a new wallet's key.
func newWallet(t *testing.T) solana.PrivateKey {
	t.Helper()
	key, err := solana.NewRandomPrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	return key
}

// agent is an MCP client session with an MCP server of one wallet.
type agent struct {
	*mcp.ClientSession
	srv *server
}

// connect starts an MCP server on the wager server at url as the wallet
// key (none: read-only) with the spending caps, and connects an MCP client
// to it over the in-memory transport.
func connect(t *testing.T, url string, key solana.PrivateKey, perCall, perHour int64) agent {
	t.Helper()
	cfg := config{URL: url, AppID: "mcp-test", MaxSpendMinor: perCall, MaxSpendHourMinor: perHour}
	if key != nil {
		cfg.WalletKey = key.String()
	}
	return connectWith(t, cfg)
}

// connectWith starts an MCP server of cfg and connects an MCP client to
// it over the in-memory transport.
func connectWith(t *testing.T, cfg config) agent {
	t.Helper()
	s, err := newServer(cfg, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	ct, st := mcp.NewInMemoryTransports()
	ss, err := s.mcp.Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	client := mcp.NewClient(&mcp.Implementation{Name: "test-agent", Version: "1.0.0"}, nil)
	cs, err := client.Connect(t.Context(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return agent{ClientSession: cs, srv: s}
}

// call calls a tool; a protocol failure fails the test.
func (a agent) call(t *testing.T, tool string, args any) *mcp.CallToolResult {
	t.Helper()
	res, err := a.CallTool(t.Context(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error %v", tool, err)
	}
	return res
}

// callOK calls a tool that must succeed and decodes its structured result.
func callOK[T any](t *testing.T, a agent, tool string, args any) T {
	t.Helper()
	res := a.call(t, tool, args)
	if res.IsError {
		t.Fatalf("%s(%v): tool error %q", tool, args, text(res))
	}
	var out T
	raw, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("%s: structured result %s: %v", tool, raw, err)
	}
	return out
}

// callErr calls a tool that must fail and returns the error's text.
func (a agent) callErr(t *testing.T, tool string, args any) string {
	t.Helper()
	res := a.call(t, tool, args)
	if !res.IsError {
		t.Fatalf("%s(%v): no tool error, got %s", tool, args, text(res))
	}
	return text(res)
}

func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// sdkClient returns a client of the wager server as the wallet key.
func sdkClient(t *testing.T, url string, key solana.PrivateKey) *wager.Client {
	t.Helper()
	c, err := wager.New(url, wager.WithWallet(key), wager.WithAppID("mcp-test"))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// fund gives the wallet usdc minor units and SOL from the faucet.
func fund(t *testing.T, url string, key solana.PrivateKey, usdc int64) {
	t.Helper()
	c := sdkClient(t, url, key)
	if _, err := c.API.PostDevFaucetWithResponse(t.Context(), nil,
		api.PostDevFaucetJSONRequestBody{Address: key.PublicKey().String(), AmountMinor: usdc}); err != nil {
		t.Fatalf("faucet: %v", err)
	}
}

// TestHTTPNeedsTokenOffLoopback: over HTTP the tools act with the wallet,
// so without WAGER_MCP_TOKEN the server starts only on a loopback address.
func TestHTTPNeedsTokenOffLoopback(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0"} {
		env := map[string]string{"WAGER_MCP_HTTP": addr}
		err := run(t.Context(), nil, func(k string) string { return env[k] }, func(net.Addr) {
			t.Errorf("%s without a token: listening", addr)
		})
		if err == nil || !strings.Contains(err.Error(), "WAGER_MCP_TOKEN") {
			t.Errorf("%s without a token: %v, want a refusal naming WAGER_MCP_TOKEN", addr, err)
		}
	}
	for _, c := range []struct {
		addr, token string
		status      int // of a request without the token
	}{
		{"0.0.0.0:0", "secret", http.StatusUnauthorized},
		{"127.0.0.1:0", "", http.StatusBadRequest},
		{"localhost:0", "", http.StatusBadRequest},
	} {
		ctx, stop := context.WithCancel(t.Context())
		env := map[string]string{"WAGER_MCP_TOKEN": c.token}
		addrs := make(chan net.Addr, 1)
		done := make(chan error, 1)
		go func() {
			done <- run(ctx, []string{"-http", c.addr}, func(k string) string { return env[k] }, func(a net.Addr) { addrs <- a })
		}()
		select {
		case a := <-addrs:
			port := a.(*net.TCPAddr).Port
			resp, err := http.Post(fmt.Sprintf("http://127.0.0.1:%d/", port), "application/json", strings.NewReader("{}"))
			if err != nil {
				t.Errorf("%s: %v", c.addr, err)
			} else if resp.Body.Close(); resp.StatusCode != c.status {
				t.Errorf("%s with token %q: a request without it answered %d, want %d", c.addr, c.token, resp.StatusCode, c.status)
			}
		case err := <-done:
			t.Errorf("%s with token %q: did not start: %v", c.addr, c.token, err)
		}
		stop()
		if err := <-done; err != nil {
			t.Errorf("%s: after stopping: %v", c.addr, err)
		}
	}
	for addr, want := range map[string]bool{"127.0.0.1:8090": true, "[::1]:8090": true, "localhost:8090": true,
		"127.0.0.2:8090": true, ":8090": false, "0.0.0.0:8090": false, "[::]:8090": false, "192.168.1.2:8090": false,
		"wager.example.com:8090": false, "8090": false} {
		if got := loopback(addr); got != want {
			t.Errorf("loopback(%q) = %t, want %t", addr, got, want)
		}
	}
}
