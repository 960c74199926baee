package layering

import (
	"bufio"
	"errors"
	"fmt"
	"go/build"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// row is one package of docs/design/0000's map: its layer, numbered from
// the bottom, and whether its branch is still being merged.
type row struct {
	layer   int
	planned bool
}

// The layers of docs/design/0000, from the bottom.
const (
	base = iota
	rules
	state
	services
	frontEnd
	assembly
	programs
)

// packageLayers is the map of docs/design/0000 as a table: a package may
// import only packages of its own layer or of a lower one. Adding a
// package without a row here (and a line in 0000) fails the tests.
func packageLayers() map[string]row {
	return map[string]row{
		"cmd/mayfly":       {layer: programs},
		"cmd/mayfly-bench": {layer: programs},

		"internal/app": {layer: assembly},

		"internal/server":    {layer: frontEnd},
		"internal/commands":  {layer: frontEnd},
		"internal/shardcmds": {layer: frontEnd},
		"internal/replcmds":  {layer: frontEnd},
		"internal/txnrules":  {layer: frontEnd},
		"internal/router":    {layer: frontEnd},
		"internal/metrics":   {layer: frontEnd},
		"internal/bench":     {layer: frontEnd},

		"internal/auth":                   {layer: services},
		"internal/executor":               {layer: services},
		"internal/ddl":                    {layer: services},
		"internal/buildwatch":             {layer: services},
		"internal/repl":                   {layer: services},
		"internal/oplog":                  {layer: services},
		"internal/aggwrite":               {layer: services},
		"internal/writeops":               {layer: services},
		"internal/ttl":                    {layer: services},
		"internal/expirywatch":            {layer: services},
		"internal/failpoint":              {layer: services},
		"internal/diag":                   {layer: services},
		"internal/profiler":               {layer: services},
		"internal/wireclient":             {layer: services},
		"internal/shardstate":             {layer: services},
		"internal/shardremote":            {layer: services},
		"internal/shardremote/remotetest": {layer: services},
		"internal/docmove":                {layer: services},
		"internal/configsvr":              {layer: services},
		"internal/cursor/paging":          {layer: services},

		"internal/docstore":              {layer: state},
		"internal/docstore/docstoretest": {layer: state},
		"internal/snaphistory":           {layer: state},
		"internal/changestream":          {layer: state},
		"internal/session":               {layer: state},
		"internal/cursor":                {layer: state},
		"internal/activity":              {layer: state},

		"internal/query":         {layer: rules},
		"internal/ixbounds":      {layer: rules},
		"internal/update":        {layer: rules},
		"internal/expr":          {layer: rules},
		"internal/expr/exprtest": {layer: rules},
		"internal/aggregate":     {layer: rules},
		"internal/catalog":       {layer: rules},
		"internal/timeseries":    {layer: rules},
		"internal/collation":     {layer: rules},
		"internal/jsonschema":    {layer: rules},
		"internal/validator":     {layer: rules},
		"internal/shardkey":      {layer: rules},
		"internal/shardmeta":     {layer: rules},
		"internal/shardmerge":    {layer: rules},
		"internal/migrate":       {layer: rules},
		"internal/keyenc":        {layer: rules},
		"internal/cmdargs":       {layer: rules},
		"internal/wire":          {layer: rules},

		"internal/bsonutil":                    {layer: base},
		"internal/mongoerr":                    {layer: base},
		"internal/mongoerr/gen":                {layer: base},
		"internal/clock":                       {layer: base},
		"internal/bgyield":                     {layer: base},
		"internal/maxtime":                     {layer: base},
		"internal/nsjoin":                      {layer: base},
		"internal/nsname":                      {layer: base},
		"internal/keyspace":                    {layer: base},
		"internal/ttlentry":                    {layer: base},
		"internal/ttlmark":                     {layer: base},
		"internal/expiryflight":                {layer: base},
		"internal/touchrepair":                 {layer: base},
		"internal/storage":                     {layer: base},
		"internal/storage/pebblestore":         {layer: base},
		"internal/storage/pebblestore/faultfs": {layer: base},
		"internal/storage/rescache":            {layer: base},
		"internal/storage/storagetest":         {layer: base},
		"internal/dirlock":                     {layer: base},
		"internal/logring":                     {layer: base},
		"internal/opstats":                     {layer: base},
		"internal/params":                      {layer: base},
		"internal/backup":                      {layer: base},
		"internal/tlsconf":                     {layer: base},
		"internal/mongodconf":                  {layer: base},
		"internal/fuzzlimit":                   {layer: base},
		"internal/cpucap":                      {layer: base},
		"internal/txncheck":                    {layer: base},
		"internal/txnload":                     {layer: base},
		"internal/layering":                    {layer: base},
	}
}

// repoRoot is the module's directory, two levels above this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("no go.mod at %s: %v", root, err)
	}
	return root
}

// modulePath is the module line of the repository's go.mod.
func modulePath(t *testing.T, root string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "module "); ok {
			return strings.TrimSpace(rest)
		}
	}
	t.Fatal("go.mod has no module line")
	return ""
}

// diskPackages returns every directory under internal/ and cmd/ that
// holds a Go package, relative to root, with its non-test imports.
func diskPackages(t *testing.T, root string) map[string][]string {
	t.Helper()
	pkgs := map[string][]string{}
	for _, top := range []string{"internal", "cmd"} {
		err := filepath.WalkDir(filepath.Join(root, top), func(path string, d fs.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return err
			}
			if name := d.Name(); name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
				return filepath.SkipDir
			}
			p, err := build.ImportDir(path, 0)
			var noGo *build.NoGoError
			if errors.As(err, &noGo) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			rel, err := filepath.Rel(root, path)
			if err != nil {
				return err
			}
			pkgs[filepath.ToSlash(rel)] = p.Imports
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return pkgs
}

// mapEntry is one package as docs/design/0000 draws it.
type mapEntry struct {
	layer   int
	planned bool
	job     string
	rule    string
}

// readMap parses the package map of docs/design/0000: the code block
// under "## Packages, by layer".
func readMap(t *testing.T, root string) map[string]mapEntry {
	t.Helper()
	f, err := os.Open(filepath.Join(root, "docs", "design", "0000-overview.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	layerLine := regexp.MustCompile(`^(\d) \S`)
	packageLine := regexp.MustCompile(`^  ((?:internal|cmd)/\S+)\s*(.*)$`)
	ruleLine := regexp.MustCompile(`^\s+⟶ (.+)$`)
	entries := map[string]mapEntry{}
	section, inBlock, layer, last := false, false, -1, ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "## "):
			section = line == "## Packages, by layer"
		case section && strings.HasPrefix(line, "```"):
			if inBlock {
				return entries
			}
			inBlock = true
		case !inBlock:
		case layerLine.MatchString(line):
			layer, last = int(line[0]-'0'), ""
		case packageLine.MatchString(line):
			m := packageLine.FindStringSubmatch(line)
			job, planned := strings.CutPrefix(m[2], "(planned)")
			if _, dup := entries[m[1]]; dup {
				t.Errorf("0000 draws %s twice", m[1])
			}
			entries[m[1]] = mapEntry{layer: layer, planned: planned, job: strings.TrimSpace(job)}
			last = m[1]
		case ruleLine.MatchString(line) && last != "":
			e := entries[last]
			e.rule = ruleLine.FindStringSubmatch(line)[1]
			entries[last] = e
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	t.Fatal(`0000 has no code block under "## Packages, by layer"`)
	return nil
}

// TestMapListsEveryPackage: every package on disk is drawn in 0000 with
// its job and rule, in the layer the table gives it, and every row names
// a package that exists, unless its branch is still planned.
func TestMapListsEveryPackage(t *testing.T) {
	root := repoRoot(t)
	disk, drawn, table := diskPackages(t, root), readMap(t, root), packageLayers()
	for pkg := range disk {
		if _, ok := drawn[pkg]; !ok {
			t.Errorf("%s is not drawn in docs/design/0000's package map", pkg)
		}
		if _, ok := table[pkg]; !ok {
			t.Errorf("%s has no row in packageLayers", pkg)
		}
	}
	for _, pkg := range sortedKeys(drawn) {
		e, r := drawn[pkg], table[pkg]
		if _, ok := table[pkg]; !ok {
			t.Errorf("0000 draws %s, which has no row in packageLayers", pkg)
			continue
		}
		if e.layer != r.layer || e.planned != r.planned {
			t.Errorf("%s: 0000 draws layer %d (planned %v), the table says %d (planned %v)", pkg, e.layer, e.planned, r.layer, r.planned)
		}
		if e.job == "" || e.rule == "" {
			t.Errorf("%s: 0000 must give its job and, on the next line after ⟶, its rule", pkg)
		}
		if _, ok := disk[pkg]; !ok && !r.planned {
			t.Errorf("%s is drawn but does not exist: remove it, or mark it (planned)", pkg)
		}
	}
	for pkg := range table {
		if _, ok := drawn[pkg]; !ok {
			t.Errorf("packageLayers has %s, which 0000 does not draw", pkg)
		}
	}
}

// TestImportsPointDown: no package's non-test code imports a package of
// a higher layer. Tests may reach up for fixtures.
func TestImportsPointDown(t *testing.T) {
	root := repoRoot(t)
	mod, table := modulePath(t, root), packageLayers()
	disk := diskPackages(t, root)
	checked := 0
	for _, pkg := range sortedKeys(disk) {
		from, ok := table[pkg]
		if !ok {
			continue // TestMapListsEveryPackage reports it
		}
		for _, imp := range disk[pkg] {
			rel, ok := strings.CutPrefix(imp, mod+"/")
			if !ok {
				continue
			}
			to, ok := table[rel]
			switch {
			case !ok:
				t.Errorf("%s imports %s, which has no row in packageLayers", pkg, rel)
			case to.layer > from.layer:
				t.Errorf("%s (layer %d) imports %s (layer %d): a package imports only its own layer or a lower one", pkg, from.layer, rel, to.layer)
			}
			checked++
		}
	}
	if checked == 0 {
		t.Fatal("no import of the module's own packages was checked")
	}
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
