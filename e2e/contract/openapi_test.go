package contract_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestRedoclyRecommendedFindsNoErrors lints the served OpenAPI document
// with Redocly's recommended rules: no errors (warnings are logged).
func TestRedoclyRecommendedFindsNoErrors(t *testing.T) {
	needPackages(t, "@redocly/cli")
	doc := fetch(t, startServer(t), "/openapi.json")
	out, err := node(t, []string{"NO_COLOR=1", "REDOCLY_TELEMETRY=off", "REDOCLY_SUPPRESS_UPDATE_NOTICE=true"},
		"node_modules/@redocly/cli/bin/cli.js", "lint", "--extends", "recommended", "--format", "json", doc)
	var report struct {
		Totals struct {
			Errors, Warnings, Ignored int
		} `json:"totals"`
		Problems []struct {
			RuleID, Severity, Message string
			Location                  []struct {
				Pointer string `json:"pointer"`
			} `json:"location"`
		} `json:"problems"`
	}
	if jerr := json.Unmarshal([]byte(out[strings.Index(out, "{"):]), &report); jerr != nil {
		t.Fatalf("redocly lint: %v (%v)\n%s", jerr, err, out)
	}
	for _, p := range report.Problems {
		where := ""
		if len(p.Location) > 0 {
			where = p.Location[0].Pointer
		}
		if p.Severity == "error" {
			t.Errorf("%s %s: %s", p.RuleID, where, p.Message)
		} else {
			t.Logf("warning %s %s: %s", p.RuleID, where, p.Message)
		}
	}
	t.Logf("redocly lint --extends recommended: %d errors, %d warnings", report.Totals.Errors, report.Totals.Warnings)
	if report.Totals.Errors > 0 {
		t.Errorf("%d errors", report.Totals.Errors)
	}
}

// TestStrictServerGeneratedFromTheDocumentCompiles generates oapi-codegen's
// strict Echo server from the served document into a module of its own
// and builds it.
func TestStrictServerGeneratedFromTheDocumentCompiles(t *testing.T) {
	doc := fetch(t, startServer(t), "/openapi.json")
	root := repoRoot(t)
	dir := t.TempDir()
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	mod = regexp.MustCompile(`(?m)^module wager$`).ReplaceAll(mod, []byte("module strictcheck"))
	mod = regexp.MustCompile(`(?m)^ignore .*$`).ReplaceAll(mod, nil)
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	config := "package: api\noutput: api/api.gen.go\ngenerate:\n  models: true\n  echo-server: true\n  strict-server: true\n" +
		"output-options:\n  resolve-type-name-collisions: true\n"
	for name, body := range map[string][]byte{"go.mod": mod, "go.sum": sum, "oapi-codegen.yaml": []byte(config)} {
		if err := os.WriteFile(filepath.Join(dir, name), body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "api"), 0o755); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local")
		if out, err := cmd.CombinedOutput(); err != nil {
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			t.Fatalf("go %s: %v (%d lines)\n%s", strings.Join(args, " "), err, len(lines), out)
		}
	}
	run("tool", "oapi-codegen", "-config", "oapi-codegen.yaml", doc)
	run("build", "-gcflags=-e", "./api/")
}
