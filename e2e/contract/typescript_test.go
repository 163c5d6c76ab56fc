package contract_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTypeScriptClientTypeChecks generates TypeScript types from the
// served document with openapi-typescript (its default options: a bare
// object is Record<string, never>) and type-checks ts/client.ts, a small
// client written with openapi-fetch, with tsc --strict.
func TestTypeScriptClientTypeChecks(t *testing.T) {
	needPackages(t, "openapi-typescript", "openapi-fetch", "typescript")
	doc := fetch(t, startServer(t), "/openapi.json")
	root := repoRoot(t)
	dir := t.TempDir()
	client, err := os.ReadFile(filepath.Join(root, "e2e", "contract", "ts", "client.ts"))
	if err != nil {
		t.Fatal(err)
	}
	tsconfig := `{"compilerOptions": {"strict": true, "noEmit": true, "target": "es2022", "lib": ["es2023", "dom"],
		"module": "esnext", "moduleResolution": "bundler", "skipLibCheck": true, "types": [],
		"paths": {"openapi-fetch": ["` + filepath.Join(root, "node_modules", "openapi-fetch") + `"]}}, "files": ["client.ts"]}`
	for name, body := range map[string]string{"client.ts": string(client), "tsconfig.json": tsconfig} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := node(t, nil, "node_modules/openapi-typescript/bin/cli.js", doc, "-o", filepath.Join(dir, "api.d.ts")); err != nil {
		t.Fatalf("openapi-typescript: %v\n%s", err, out)
	}
	out, err := node(t, nil, "node_modules/typescript/bin/tsc", "-p", filepath.Join(dir, "tsconfig.json"))
	if err != nil {
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			t.Error(line)
		}
		t.Fatalf("tsc: %v", err)
	}
}
