package contract_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"testing"
	"time"
)

// mcpReport is what mcp.mjs prints.
type mcpReport struct {
	Tools []string `json:"tools"`
	Calls []struct {
		Name       string         `json:"name"`
		IsError    bool           `json:"isError"`
		Structured map[string]any `json:"structured"`
		Text       string         `json:"text"`
		Thrown     string         `json:"thrown"`
	} `json:"calls"`
	Error string `json:"error"`
}

// TestOfficialMCPClientListsAndCallsTheTools runs the official MCP
// TypeScript client against the MCP server over stdio and over streamable
// HTTP: it lists the tools (validating every schema with MCP's own) and
// calls whoami, get_game (a won game: the winner named), get_game_state,
// get_balance, list_live_games and service_check_maintenance, whose
// structured results it validates against their output schemas.
func TestOfficialMCPClientListsAndCallsTheTools(t *testing.T) {
	needPackages(t, "@modelcontextprotocol/sdk")
	sc := play(t)
	root := repoRoot(t)
	bin := filepath.Join(t.TempDir(), "wager-mcp")
	build := exec.Command("go", "build", "-o", bin, "./cmd/mcp")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the MCP server: %v\n%s", err, out)
	}
	_, key := newClient(t, sc.s) // the agent's wallet
	env := []string{"WAGER_URL=" + sc.s.URL, "WAGER_WALLET_KEY=" + key.String(), "WAGER_MCP_TOKEN=contract-test-token"}
	calls, _ := json.Marshal([][]any{
		{"service_check_maintenance", map[string]any{}},
		{"whoami", map[string]any{}},
		{"list_live_games", map[string]any{}},
		{"get_game", map[string]any{"gameId": sc.staked}},
		{"get_game_state", map[string]any{"gameId": sc.free}},
		{"get_balance", map[string]any{}},
	})
	check := func(transport string, out string, err error) {
		t.Helper()
		var r mcpReport
		if jerr := json.Unmarshal([]byte(out), &r); jerr != nil || r.Error != "" {
			t.Fatalf("%s: %v %v %s\n%s", transport, jerr, err, r.Error, out)
		}
		if len(r.Tools) < 13 || !slices.Contains(r.Tools, "whoami") {
			t.Errorf("%s: tools %v, want every tool with whoami", transport, r.Tools)
		}
		for _, c := range r.Calls {
			if c.IsError {
				t.Errorf("%s: %s: %s%s", transport, c.Name, c.Text, c.Thrown)
			}
		}
		byName := map[string]map[string]any{}
		for _, c := range r.Calls {
			byName[c.Name] = c.Structured
		}
		if me := byName["whoami"]; me["userId"] == "" || me["username"] == "" || me["walletAddress"] != key.PublicKey().String() {
			t.Errorf("%s: whoami %v", transport, me)
		}
		if w, _ := byName["get_game"]["winner"].(map[string]any); w["userId"] != sc.first.UserID() || w["username"] == "" {
			t.Errorf("%s: get_game's winner %v, want %s with a username", transport, byName["get_game"]["winner"], sc.first.UserID())
		}
		if users, _ := byName["get_game_state"]["users"].([]any); len(users) != 2 {
			t.Errorf("%s: get_game_state names %v, want both players", transport, byName["get_game_state"]["users"])
		}
		t.Logf("%s: %d tools listed, %d calls validated", transport, len(r.Tools), len(r.Calls))
	}

	out, err := node(t, env, "e2e/contract/mcp.mjs", "stdio", bin, string(calls))
	check("stdio", out, err)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv := exec.CommandContext(ctx, bin, "-http", "127.0.0.1:0")
	srv.Env = append(os.Environ(), env...)
	stderr, err := srv.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer srv.Wait()
	defer cancel()
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := regexp.MustCompile(`serving MCP over streamable HTTP" addr=(\S+)`).FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			}
		}
	}()
	select {
	case a := <-addr:
		out, err = node(t, env, "e2e/contract/mcp.mjs", "http", "http://"+a+"/", string(calls))
		check("streamable HTTP", out, err)
	case <-time.After(30 * time.Second):
		t.Fatal("the MCP server did not listen within 30 s")
	}
}
