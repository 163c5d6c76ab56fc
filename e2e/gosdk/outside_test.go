package wager_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/module"
	"golang.org/x/mod/zip"

	wager "wager.example.com/sdk"
)

// sdkPath is the SDK module's path, as an integrator requires it.
const sdkPath = "wager.example.com/sdk"

// TestAnOutsideModuleBuildsABotAgainstTheSDK is an integrator's module
// of its own: it requires the SDK by its path and version from a module
// proxy (a directory holding the SDK as `go` would download it, beside
// the machine's module cache), with no replace of anything, builds the
// SDK's example bot (examples/rpsbot) as its main package, and plays a
// game with it against this server. The build uses none of the server's
// dependencies.
func TestAnOutsideModuleBuildsABotAgainstTheSDK(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	proxy := sdkProxy(t, filepath.Join(root, "sdk"), "v"+wager.Version)

	mod := t.TempDir()
	bot, err := os.ReadFile(filepath.Join(root, "sdk", "examples", "rpsbot", "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	gomod := "module example.org/mybot\n\ngo 1.24.0\n\nrequire " + sdkPath + " v" + wager.Version + "\n"
	for name, body := range map[string][]byte{"go.mod": []byte(gomod), "main.go": bot} {
		if err := os.WriteFile(filepath.Join(mod, name), body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A module cache of the test's own, so that the SDK is the one in this
	// tree, not one cached by an earlier run at the same version; the
	// SDK's dependencies come from the machine's cache, as from a proxy.
	modcache := strings.TrimSpace(run(t, mod, nil, goBin, "env", "GOMODCACHE"))
	env := append(os.Environ(), "GOWORK=off", "GOTOOLCHAIN=local", "GOFLAGS=-mod=mod -modcacherw", "GOSUMDB=off",
		"GOMODCACHE="+t.TempDir(), "GOPROXY=file://"+proxy+",file://"+filepath.Join(modcache, "cache", "download"))
	run(t, mod, env, goBin, "build", "-o", "rpsbot", ".")
	tidy, err := os.ReadFile(filepath.Join(mod, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(tidy), "replace") {
		t.Errorf("the outside module's go.mod has a replace:\n%s", tidy)
	}
	deps := run(t, mod, env, goBin, "list", "-deps", "-f", "{{with .Module}}{{.Path}}{{end}}", ".")
	for _, server := range []string{"github.com/labstack/echo", "github.com/uptrace/bun", "github.com/a-h/templ", "github.com/playwright-community"} {
		if strings.Contains(deps, server) {
			t.Errorf("the bot's build uses the server's dependency %s", server)
		}
	}

	// The bot waits for a game; a player of this test's takes it.
	s := startServer(t, nil)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	player := s.newClient(t)
	played := make(chan error, 1)
	go func() {
		id, err := player.FindOrCreateGame(ctx, "rps", 0, map[string]any{"rounds": 3})
		if err == nil {
			err = playRPS(player)(ctx, id)
		}
		played <- err
	}()
	waitForQueuedLobby(t, ctx, player)
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, filepath.Join(mod, "rpsbot"), "-url", s.URL)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("the bot: %v\n%s", err, out.String())
	}
	if err := <-played; err != nil {
		t.Fatalf("the bot's opponent: %v", err)
	}
	if !strings.Contains(out.String(), "game over: score") {
		t.Errorf("the bot did not tell the game's end:\n%s", out.String())
	}
}

// sdkProxy is a module proxy directory (GOPROXY=file://...) serving the
// module in dir at version, zipped as `go` zips a module.
func sdkProxy(t *testing.T, dir, version string) string {
	t.Helper()
	proxy := t.TempDir()
	at := filepath.Join(proxy, sdkPath, "@v")
	if err := os.MkdirAll(at, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(at, version+".zip"))
	if err != nil {
		t.Fatal(err)
	}
	if err := zip.CreateFromDir(f, module.Version{Path: sdkPath, Version: version}, dir); err != nil {
		t.Fatalf("zipping the SDK module: %v", err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	gomod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	info, _ := json.Marshal(map[string]any{"Version": version, "Time": time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)})
	for name, body := range map[string][]byte{version + ".mod": gomod, version + ".info": info, "list": []byte(version + "\n")} {
		if err := os.WriteFile(filepath.Join(at, name), body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return proxy
}

// waitForQueuedLobby waits until a free rps lobby has a player queued in
// it (on this server, only the test's player queues).
func waitForQueuedLobby(t *testing.T, ctx context.Context, c *wager.Client) {
	t.Helper()
	for {
		r, err := c.API.GetLobbiesWithResponse(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range *r.JSON200 {
			if l.GameType == "rps" && l.StakeMinor == 0 && l.Queued > 0 {
				return
			}
		}
		select {
		case <-ctx.Done():
			t.Fatal("no player queued in a lobby")
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// run runs a command in dir and returns its output; the test fails when
// the command does.
func run(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir, cmd.Env = dir, env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}
