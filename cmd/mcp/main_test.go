package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/gagliardetto/solana-go"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"wager/db/dbtest"
	"wager/e2e/testserver"
	wager "wager/sdk"
	"wager/sdk/api"
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
