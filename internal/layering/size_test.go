package layering

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// defaultSizeBound is issue #36's bound on a package's non-test lines: a
// package past it holds more than one concern, and a newcomer can no
// longer find their way in it.
const defaultSizeBound = 8000

// sizeBounds are the bounds of the large packages: each about its size
// when the bound was set plus a tenth, so that a package growing fast is
// noticed while it is still easy to split. Every other package is held
// to defaultSizeBound.
func sizeBounds() map[string]int {
	return map[string]int{
		"internal/commands":     defaultSizeBound,
		"internal/docstore":     11900, // over the default: its split is still to come
		"internal/router":       6700,
		"internal/bench":        defaultSizeBound, // its cluster phases (sharded, migration) are the next to split out
		"internal/expr":         6500,
		"internal/repl":         4800,
		"internal/changestream": 3950,
		"internal/query":        3900,
		"internal/auth":         3700,
		"internal/aggregate":    3700,
		"internal/update":       3350,
		"internal/shardstate":   3000,
	}
}

// nonTestLines counts the lines of a package's Go files, its tests left
// out, as `cat $(ls dir/*.go | grep -v _test.go) | wc -l` does.
func nonTestLines(t *testing.T, dir string) int {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	lines := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		lines += bytes.Count(data, []byte("\n"))
	}
	return lines
}

// TestPackageSizeBounds: no package's non-test code outgrows its bound,
// and every bound names a package that exists. Past the bound, split a
// concern out into a package of its own rather than raise the bound.
func TestPackageSizeBounds(t *testing.T) {
	root := repoRoot(t)
	disk, bounds := diskPackages(t, root), sizeBounds()
	for pkg := range bounds {
		if _, ok := disk[pkg]; !ok {
			t.Errorf("sizeBounds names %s, which is no package", pkg)
		}
	}
	for _, pkg := range sortedKeys(disk) {
		bound, ok := bounds[pkg]
		if !ok {
			bound = defaultSizeBound
		}
		if n := nonTestLines(t, filepath.Join(root, filepath.FromSlash(pkg))); n >= bound {
			t.Errorf("%s has %d non-test lines, at or over its bound of %d: split a concern of it out into a package with one job (and a row in docs/design/0000), rather than raise the bound", pkg, n, bound)
		}
	}
}

// commandFileBound is issue #36's bound on a file of the command layer:
// one command, or one family of them, per file.
const commandFileBound = 600

// TestCommandFilesStaySmall: no non-test file of internal/commands
// reaches commandFileBound lines.
func TestCommandFilesStaySmall(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(repoRoot(t), "internal", "commands", "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no files in internal/commands (%v)", err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if n := bytes.Count(data, []byte("\n")); n >= commandFileBound {
			t.Errorf("%s has %d lines, at or over %d: split it by command", filepath.Base(f), n, commandFileBound)
		}
	}
}
