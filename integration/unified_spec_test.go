package integration

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"
)

// The drivers' unified specification tests (github.com/mongodb/specifications)
// run here against Mayfly with the Go driver's own runner: the runner lives
// in the driver module's internal/integration/unified package, which no
// other module may import, so TestUnifiedSpec copies the module out of the
// module cache, builds the runner's test binary there and runs it against
// real Mayfly processes. The JSON files come from `make specs`.

// unifiedSkipsFile lists the cases known to fail, each with its reason.
const unifiedSkipsFile = "testdata/unified-skips.txt"

// specTopology is one deployment the runner is pointed at and the spec
// directories it runs there.
type specTopology struct {
	name string
	dirs []string
	uri  func(t *testing.T) string
}

// specDirsBoth run on a standalone and on a replica set; the rest need a
// replica set (sessions, retries and change streams are replica set
// features in mongod too; every index-management case of the files
// scripts/specs.sh lays out asks for a replica set or a sharded cluster).
var specDirsBoth = []string{"crud", "collection-management"}

var specDirsReplSet = []string{"index-management", "retryable-writes", "retryable-reads", "sessions",
	"change-streams", "run-command", "versioned-api", "command-logging-and-monitoring",
	"transactions", "transactions-convenient-api"}

// specDirsThreeMembers run on a three-member set too: where a transaction
// meets secondaries, replication and majority commits.
var specDirsThreeMembers = []string{"transactions", "transactions-convenient-api", "sessions"}

// TestUnifiedSpec runs the unified spec directories against a standalone,
// a one-member and a three-member replica set and fails on any case that
// fails and is not on the skip list, and on any skip-list line that no
// longer matches a failing case.
func TestUnifiedSpec(t *testing.T) {
	start := time.Now()
	specs := specsDir(t)
	skips := readSkips(t, unifiedSkipsFile)
	runner := buildSpecRunner(t)
	topologies := []specTopology{
		{name: "standalone", dirs: specDirsBoth, uri: startSpecStandalone},
		{name: "replset", dirs: append(append([]string{}, specDirsBoth...), specDirsReplSet...), uri: startSpecReplSet},
		{name: "replset3", dirs: specDirsThreeMembers, uri: startSpecReplSet3},
		{name: "sharded", dirs: specDirsSharded, uri: startSpecSharded},
	}
	for _, topo := range topologies {
		t.Run(topo.name, func(t *testing.T) {
			results := runner.run(t, topo.uri(t), specs, topo.dirs)
			judge(t, topo, results, skips)
		})
	}
	checkStaleSkips(t, skips)
	t.Logf("unified spec tests took %v", time.Since(start).Round(time.Second))
}

// specsDir is the specifications checkout (its source/ directory holds
// the JSON tests): $MAYFLY_SPECS, or .cache/specifications, where `make
// specs` puts it.
func specsDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("MAYFLY_SPECS")
	if dir == "" {
		dir = filepath.Join("..", ".cache", "specifications")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(abs, "source", "unified-test-format")); err != nil {
		t.Fatalf("no specification tests in %s (%v): run `make specs`, or set MAYFLY_SPECS to a mongodb/specifications checkout", abs, err)
	}
	return abs
}

// startSpecStandalone's URI connects directly: the runner's setup reads
// its own topology's kind right after connecting, and a seed list of one
// host is of unknown kind until its first hello has come back (a run
// under load then ran no case: "could not detect topology kind"); a
// direct connection is single from the start.
func startSpecStandalone(t *testing.T) string {
	p, err := startMayfly(t, buildBinary(t), t.TempDir(), freePort(t), "--setParameter", "enableTestCommands=1")
	if err != nil {
		t.Fatal(err)
	}
	return "mongodb://" + p.addr + "/?directConnection=true"
}

func startSpecReplSet(t *testing.T) string {
	return startReplSet(t, 1, "--setParameter", "enableTestCommands=1").uri()
}

func startSpecReplSet3(t *testing.T) string {
	return startReplSet(t, 3, "--setParameter", "enableTestCommands=1").uri()
}

// skipEntry is one line of the skip list: a case-name pattern in which *
// matches any text, the topology it holds on ("[sharded] " before the
// pattern; every topology without), and why those cases fail.
type skipEntry struct {
	line     int
	topology string
	pattern  string
	reason   string
	re       *regexp.Regexp
	failed   int // failing cases it matched, over every topology
}

func readSkips(t *testing.T, path string) []*skipEntry {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var entries []*skipEntry
	for i, raw := range strings.Split(string(b), "\n") {
		text := strings.TrimSpace(raw)
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		pattern, reason, _ := strings.Cut(text, "#")
		pattern, reason = strings.TrimSpace(pattern), strings.TrimSpace(reason)
		if reason == "" {
			t.Fatalf("%s:%d: %q gives no reason after #", path, i+1, pattern)
		}
		var topology string
		if rest, ok := strings.CutPrefix(pattern, "["); ok {
			topology, pattern, _ = strings.Cut(rest, "]")
			pattern = strings.TrimSpace(pattern)
		}
		entries = append(entries, &skipEntry{line: i + 1, topology: topology, pattern: pattern, reason: reason, re: globRegexp(pattern)})
	}
	return entries
}

// globRegexp matches the whole of a case name against pattern, * matching
// any text, / included.
func globRegexp(pattern string) *regexp.Regexp {
	parts := strings.Split(pattern, "*")
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	return regexp.MustCompile("^" + strings.Join(parts, ".*") + "$")
}

func matchSkip(skips []*skipEntry, topology, name string) *skipEntry {
	for _, s := range skips {
		if (s.topology == "" || s.topology == topology) && s.re.MatchString(name) {
			return s
		}
	}
	return nil
}

// specRunner is the driver's unified runner built as a test binary.
type specRunner struct {
	bin string
	dir string // the runner package's directory in the module copy
}

// buildSpecRunner copies the driver module (the version go.mod requires)
// to a per-version directory in the user cache, so that the build cache
// holds across runs, and builds the runner's test binary from it.
func buildSpecRunner(t *testing.T) *specRunner {
	t.Helper()
	mod := driverModule(t)
	root, err := os.UserCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	copyDir := filepath.Join(root, "mayfly", "unified-runner", "mongo-driver-"+mod.Version)
	if err := copyOnce(mod.Dir, copyDir); err != nil {
		t.Fatalf("copy the driver module: %v", err)
	}
	r := &specRunner{bin: filepath.Join(t.TempDir(), "unified.test"), dir: filepath.Join(copyDir, "internal", "integration", "unified")}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "test", "-c", "-o", r.bin, ".")
	cmd.Dir, cmd.Env = r.dir, append(os.Environ(), "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build the driver's unified runner: %v\n%s", err, out)
	}
	return r
}

type goModule struct {
	Version string
	Dir     string
	Error   string
}

// driverModule downloads (when not yet cached) the Go driver module at
// the version this module's go.mod requires.
func driverModule(t *testing.T) goModule {
	t.Helper()
	out, err := exec.Command("go", "mod", "download", "-json", "go.mongodb.org/mongo-driver/v2").Output()
	var mod goModule
	if jerr := json.Unmarshal(out, &mod); err != nil || jerr != nil || mod.Error != "" || mod.Dir == "" {
		t.Fatalf("go mod download the driver: %v %v %s\n%s", err, jerr, mod.Error, out)
	}
	return mod
}

// copyOnce copies src to dst unless dst exists; a copy made by a run
// beside this one wins the rename and this one's is removed.
func copyOnce(src, dst string) error {
	if _, err := os.Stat(dst); err == nil {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dst), ".copy-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if err := os.CopyFS(filepath.Join(tmp, "m"), os.DirFS(src)); err != nil {
		return fmt.Errorf("copy %s: %w", src, err)
	}
	if err := os.Rename(filepath.Join(tmp, "m"), dst); err != nil {
		if _, statErr := os.Stat(dst); statErr == nil {
			return nil
		}
		return err
	}
	return nil
}

// caseResult is one test case's outcome and output.
type caseResult struct {
	name   string // below TestUnifiedSpec/, as in the skip list
	action string // pass, fail or skip
	output string
}

// run runs the spec directories against uri and returns every case's
// result. PROJECT_DIRECTORY tells the runner where testdata/specifications
// is.
func (r *specRunner) run(t *testing.T, uri, specs string, dirs []string) []caseResult {
	t.Helper()
	project := t.TempDir()
	if err := layOutSpecs(specs, filepath.Join(project, "testdata", "specifications")); err != nil {
		t.Fatalf("lay out the spec tests (run `make specs` after scripts/specs.sh changed): %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "tool", "test2json", "-t", r.bin, "-test.v=test2json",
		"-test.run", "^TestUnifiedSpec$/^("+strings.Join(dirs, "|")+")$", "-test.timeout", "9m")
	cmd.Dir = r.dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "MONGODB_URI="+uri, "PROJECT_DIRECTORY="+project)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, runErr := cmd.Output()
	results, finished := parseTest2JSON(t, out)
	if !finished || len(results) == 0 {
		t.Fatalf("the runner did not finish or ran no case (%v); stderr:\n%s\nlast output:\n%s", runErr, tail(stderr.String(), 40), tail(string(out), 40))
	}
	return results
}

// layOutSpecs makes the specifications tree the runner reads at to: each
// spec directory of specs links to its original, except those holding
// legacy-format tests, which are copied and get the tests' unified
// translations beside the unified ones.
func layOutSpecs(specs, to string) error {
	source := filepath.Join(to, "source")
	if err := os.MkdirAll(source, 0o755); err != nil {
		return err
	}
	entries, err := os.ReadDir(filepath.Join(specs, "source"))
	if err != nil {
		return err
	}
	for _, e := range entries {
		from := filepath.Join(specs, "source", e.Name())
		if !holdsLegacyTests(e.Name()) {
			if err := os.Symlink(from, filepath.Join(source, e.Name())); err != nil {
				return err
			}
			continue
		}
		if err := os.CopyFS(filepath.Join(source, e.Name()), os.DirFS(from)); err != nil {
			return fmt.Errorf("copy %s: %w", from, err)
		}
	}
	for legacy, unified := range legacySpecDirs {
		if err := translateLegacyDir(filepath.Join(source, legacy), filepath.Join(source, unified)); err != nil {
			return err
		}
	}
	return nil
}

func holdsLegacyTests(specDir string) bool {
	for legacy := range legacySpecDirs {
		if top, _, _ := strings.Cut(legacy, "/"); top == specDir {
			return true
		}
	}
	return false
}

// test2jsonEvent is one line of go tool test2json's output.
type test2jsonEvent struct {
	Action string
	Test   string
	Output string
}

// parseTest2JSON returns the outcome of every failure unit: each case
// without subtests, and each test that failed although none of its
// subtests did (a file the runner could not load). finished reports
// whether the binary reported its own end.
func parseTest2JSON(t *testing.T, out []byte) ([]caseResult, bool) {
	t.Helper()
	actions, outputs := map[string]string{}, map[string]*strings.Builder{}
	finished := false
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e test2jsonEvent
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			continue
		}
		if e.Test == "" {
			finished = finished || e.Action == "pass" || e.Action == "fail"
			continue
		}
		switch e.Action {
		case "output":
			if outputs[e.Test] == nil {
				outputs[e.Test] = &strings.Builder{}
			}
			outputs[e.Test].WriteString(e.Output)
		case "pass", "fail", "skip":
			actions[e.Test] = e.Action
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("read the runner's output: %v", err)
	}
	return failureUnits(actions, outputs), finished
}

func failureUnits(actions map[string]string, outputs map[string]*strings.Builder) []caseResult {
	hasChild, childFailed := map[string]bool{}, map[string]bool{}
	for name, action := range actions {
		for p := parentTest(name); p != ""; p = parentTest(p) {
			hasChild[p] = true
			childFailed[p] = childFailed[p] || action == "fail"
		}
	}
	var results []caseResult
	for name, action := range actions {
		if hasChild[name] && (action != "fail" || childFailed[name]) {
			continue
		}
		r := caseResult{name: strings.TrimPrefix(name, "TestUnifiedSpec/"), action: action}
		if b := outputs[name]; b != nil {
			r.output = b.String()
		}
		results = append(results, r)
	}
	sort.Slice(results, func(i, j int) bool { return results[i].name < results[j].name })
	return results
}

func parentTest(name string) string {
	i := strings.LastIndexByte(name, '/')
	if i < 0 {
		return ""
	}
	return name[:i]
}

// dirTally counts one spec directory's outcomes.
type dirTally struct{ pass, fail, known, skip int }

// judge fails the test for every failing case the skip list does not
// name, and logs each directory's counts.
func judge(t *testing.T, topo specTopology, results []caseResult, skips []*skipEntry) {
	t.Helper()
	tallies := map[string]*dirTally{}
	for _, d := range topo.dirs {
		tallies[d] = &dirTally{}
	}
	for _, r := range results {
		dir, _, _ := strings.Cut(r.name, "/")
		tl := tallies[dir]
		if tl == nil {
			t.Errorf("the runner ran %s, outside the directories asked for", r.name)
			continue
		}
		tally(t, tl, topo.name, r, skips)
	}
	for _, d := range topo.dirs {
		tl := tallies[d]
		t.Logf("%-31s %-10s %4d pass, %3d fail, %3d known failures (skip list), %3d skipped by the runner",
			d, topo.name, tl.pass, tl.fail, tl.known, tl.skip)
		if tl.pass+tl.fail+tl.known == 0 {
			t.Errorf("%s on %s: no case ran", d, topo.name)
		}
	}
}

func tally(t *testing.T, tl *dirTally, topology string, r caseResult, skips []*skipEntry) {
	t.Helper()
	switch r.action {
	case "pass":
		tl.pass++
	case "skip":
		tl.skip++
	case "fail":
		if s := matchSkip(skips, topology, r.name); s != nil {
			s.failed++
			tl.known++
			return
		}
		tl.fail++
		t.Errorf("FAIL %s\n%s", r.name, failureLines(r.output))
	}
}

// failureLines keeps the runner's own messages from a case's output.
func failureLines(output string) string {
	var keep []string
	for _, line := range strings.Split(output, "\n") {
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "=== ") || strings.HasPrefix(trimmed, "--- ") {
			continue
		}
		if len(trimmed) > 600 {
			trimmed = trimmed[:600] + "…"
		}
		keep = append(keep, "    "+trimmed)
	}
	return tail(strings.Join(keep, "\n"), 8)
}

// checkStaleSkips fails on skip-list lines that matched no failing case:
// what they excuse works now, and the line must go.
func checkStaleSkips(t *testing.T, skips []*skipEntry) {
	t.Helper()
	if t.Failed() {
		return // a run that did not finish leaves lines unmatched
	}
	for _, s := range skips {
		if s.failed == 0 {
			t.Errorf("%s:%d: %q matched no failing case: it passes now, remove the line", unifiedSkipsFile, s.line, s.pattern)
		}
	}
}

func tail(s string, lines int) string {
	all := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}
