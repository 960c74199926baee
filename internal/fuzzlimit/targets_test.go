package fuzzlimit

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// TestEveryFuzzTargetBoundsEachInput finds every fuzz target in the module
// and checks that the function it gives f.Fuzz runs its whole body under
// Run: a target added without it fails here.
func TestEveryFuzzTargetBoundsEachInput(t *testing.T) {
	targets := 0
	err := filepath.WalkDir("../..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") && path != "../.." {
			return filepath.SkipDir
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			if fn, ok := decl.(*ast.FuncDecl); ok && strings.HasPrefix(fn.Name.Name, "Fuzz") && fn.Recv == nil {
				targets++
				if !bodyUnderRun(fn) {
					t.Errorf("%s: %s does not run its fuzz function's body under fuzzlimit.Run", path, fn.Name.Name)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if targets == 0 {
		t.Fatal("no fuzz targets found: the walk is looking in the wrong place")
	}
	t.Logf("%d fuzz targets", targets)
}

// bodyUnderRun reports whether fn calls f.Fuzz with a function literal
// whose only statement is a call to fuzzlimit.Run.
func bodyUnderRun(fn *ast.FuncDecl) bool {
	found := false
	ast.Inspect(fn.Body, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || !isSelector(call.Fun, "", "Fuzz") || len(call.Args) != 1 {
			return true
		}
		lit, ok := call.Args[0].(*ast.FuncLit)
		if !ok || len(lit.Body.List) != 1 {
			return false
		}
		stmt, ok := lit.Body.List[0].(*ast.ExprStmt)
		if !ok {
			return false
		}
		inner, ok := stmt.X.(*ast.CallExpr)
		found = ok && isSelector(inner.Fun, "fuzzlimit", "Run")
		return false
	})
	return found
}

// isSelector reports whether e is pkg.name (any receiver if pkg is "").
func isSelector(e ast.Expr, pkg, name string) bool {
	sel, ok := e.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != name {
		return false
	}
	id, ok := sel.X.(*ast.Ident)
	return ok && (pkg == "" || id.Name == pkg)
}

func TestBodyUnderRun(t *testing.T) {
	for src, want := range map[string]bool{
		`func FuzzX(f *testing.F) { f.Fuzz(func(t *testing.T, b []byte) { fuzzlimit.Run(t, func() { use(b) }, b) }) }`: true,
		`func FuzzX(f *testing.F) { f.Fuzz(func(t *testing.T, b []byte) { use(b) }) }`:                                 false,
		`func FuzzX(f *testing.F) { f.Fuzz(func(t *testing.T, b []byte) { use(b); fuzzlimit.Run(t, func() {}, b) }) }`: false,
		`func FuzzX(f *testing.F) { f.Add(1) }`: false,
	} {
		f, err := parser.ParseFile(token.NewFileSet(), "x_test.go", "package x\n"+src, 0)
		if err != nil {
			t.Fatal(err)
		}
		if got := bodyUnderRun(f.Decls[0].(*ast.FuncDecl)); got != want {
			t.Errorf("%s: %v, want %v", src, got, want)
		}
	}
}
