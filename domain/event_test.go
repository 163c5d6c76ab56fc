package domain_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"wager/domain"
)

// TestEveryDeclaredNameIsListed: each name has one constant, and the
// lists the live protocol's document is built from hold every EventName
// and NoticeKind constant, once.
func TestEveryDeclaredNameIsListed(t *testing.T) {
	pkgs := typeChecked(t)
	var events, notices []string
	scope := pkgs["wager/domain"].pkg.Scope()
	for _, name := range scope.Names() {
		c, ok := scope.Lookup(name).(*types.Const)
		if !ok {
			continue
		}
		switch typeName(c.Type()) {
		case "EventName":
			events = append(events, strings.Trim(c.Val().ExactString(), `"`))
		case "NoticeKind":
			notices = append(notices, strings.Trim(c.Val().ExactString(), `"`))
		}
	}
	listed := strs(slices.Concat(domain.GameEvents, domain.TournamentEvents, []domain.EventName{domain.EventSpectators}))
	sameNames(t, "event names", events, listed)
	sameNames(t, "notice kinds", notices, strs(domain.Notices))
}

// TestNoEventNameIsALiteral: outside its constants, no code names an
// event or a notice with a string literal (which would compile with a
// typo in it): every EventName and NoticeKind value comes from a constant.
func TestNoEventNameIsALiteral(t *testing.T) {
	for path, p := range typeChecked(t) {
		for expr, tv := range p.info.Types {
			lit, ok := expr.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				continue
			}
			if n := typeName(tv.Type); n != "EventName" && n != "NoticeKind" {
				continue
			}
			pos := p.fset.Position(lit.Pos())
			if path == "wager/domain" && filepath.Base(pos.Filename) == "event.go" {
				continue
			}
			t.Errorf("%s: the %s %s is a literal: use its constant in package domain", pos, tv.Type, lit.Value)
		}
	}
}

func sameNames(t *testing.T, what string, declared, listed []string) {
	t.Helper()
	slices.Sort(declared)
	slices.Sort(listed)
	if len(declared) < 10 {
		t.Fatalf("only %d %s declared: this test would prove nothing", len(declared), what)
	}
	if len(slices.Compact(slices.Clone(declared))) != len(declared) {
		t.Errorf("%s: %v has a name declared twice", what, declared)
	}
	if !slices.Equal(declared, listed) {
		t.Errorf("%s: declared but not listed %v, listed but not declared %v (or listed twice: %v)",
			what, missing(declared, listed), missing(listed, declared), listed)
	}
}

// missing returns the names of a that b lacks.
func missing(a, b []string) []string {
	var out []string
	for _, n := range a {
		if !slices.Contains(b, n) {
			out = append(out, n)
		}
	}
	return out
}

func strs[S ~string](names []S) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = string(n)
	}
	return out
}

// typeName is the name of t when t is a named type of package domain.
func typeName(t types.Type) string {
	n, ok := t.(*types.Named)
	if !ok || n.Obj().Pkg() == nil || n.Obj().Pkg().Path() != "wager/domain" {
		return ""
	}
	return n.Obj().Name()
}

type checked struct {
	fset *token.FileSet
	pkg  *types.Package
	info *types.Info
}

var (
	checkOnce   sync.Once
	checkedPkgs map[string]checked
	checkErr    error
)

// typeChecked is the module's packages that are or use package domain,
// type-checked once for all tests.
func typeChecked(t *testing.T) map[string]checked {
	t.Helper()
	checkOnce.Do(func() { checkedPkgs, checkErr = typeCheck() })
	if checkErr != nil {
		t.Fatal(checkErr)
	}
	if len(checkedPkgs) < 20 || checkedPkgs["wager/domain"].pkg == nil {
		t.Fatalf("go list named %d packages that use package domain: this test would prove nothing", len(checkedPkgs))
	}
	return checkedPkgs
}

// typeCheck type-checks the non-test files of the module's packages that
// are or use package domain, importing their dependencies from the export
// data go list builds.
func typeCheck() (map[string]checked, error) {
	cmd := exec.Command("go", "list", "-export", "-deps", "-json=ImportPath,Dir,GoFiles,Export,Standard,Deps", "wager/...")
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	type listed struct {
		ImportPath, Dir, Export string
		GoFiles, Deps           []string
		Standard                bool
	}
	exports := map[string]string{}
	var ours []listed
	dec := json.NewDecoder(out)
	for {
		var p listed
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, err
		}
		exports[p.ImportPath] = p.Export
		if p.ImportPath == "wager/domain" || slices.Contains(p.Deps, "wager/domain") {
			ours = append(ours, p)
		}
	}
	if err := cmd.Wait(); err != nil {
		return nil, fmt.Errorf("go list: %w", err)
	}
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) { return os.Open(exports[path]) })
	pkgs := map[string]checked{}
	for _, p := range ours {
		var files []*ast.File
		for _, name := range p.GoFiles {
			f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.SkipObjectResolution)
			if err != nil {
				return nil, err
			}
			files = append(files, f)
		}
		info := &types.Info{Types: map[ast.Expr]types.TypeAndValue{}}
		pkg, err := (&types.Config{Importer: imp}).Check(p.ImportPath, fset, files, info)
		if err != nil {
			return nil, fmt.Errorf("type-check %s: %w", p.ImportPath, err)
		}
		pkgs[p.ImportPath] = checked{fset: fset, pkg: pkg, info: info}
	}
	return pkgs, nil
}
