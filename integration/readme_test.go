package integration

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The README's code blocks are run here, so that the manual cannot drift
// from the server. Each fenced block is run by its language:
//
//	sh, bash  by bash -e -o pipefail, in a fresh directory (from the
//	          repository's root when it builds ./cmd/...), with the
//	          test's mayfly binary and mongosh on PATH; a line starting a
//	          server in the background (`mayfly … &`) is followed by a
//	          wait for its port
//	js        by one mongosh for all of them, each block against its own
//	          server started from the binary with --setParameter
//	          enableTestCommands=1 (the examples move the test clock)
//	go        must be examples/<name>/main.go, which is run against a server
//
// The README's ports 27017-27019 and 9216 become free ports, and
// MAYFLY_ADDR the one standing for the default 27017. A line
// ending in "# => text" (sh) or "// => text" (js) wants text in the
// block's output, in order. A block the test cannot run is listed in
// readmeNotRunnable with the reason; any other block fails the test.

// readmeNotRunnable holds the blocks that cannot run here, by their first
// line, and why.
var readmeNotRunnable = map[string]string{
	"go run ./cmd/mayfly          # serve on 127.0.0.1:27017, data in ./mayfly-data": "serves until stopped, and `make test` is the whole suite this test is part of",
	// Each block runs alone; these two go on with the cluster the sharding
	// recipe's block starts and stops. TestMigrations runs the same steps
	// (BalancerSpreadsOntoNewShard: addShard, the balancer, removeShard).
	"mayfly --shardsvr --replSet shB --port 27020 --dbpath shB &":                 "goes on with the sharding recipe's cluster; its steps run in TestMigrations",
	`mongosh --quiet --port 27017 --eval 'db.adminCommand({removeShard: "shB"})'`: "goes on with the sharding recipe's cluster; its steps run in TestMigrations",
}

// readmeGoExamples maps a go block's package comment to the example file
// it must equal, and the output its run must print.
var readmeGoExamples = map[string]struct{ dir, want string }{
	"// Command sessionstore is the README's session-store pattern: web sessions": {dir: "sessionstore", want: "session of ann"},
}

// readmePorts are the ports the README names, replaced by free ones.
var readmePorts = []string{"27017", "27018", "27019", "9216"}

type readmeBlock struct {
	lang, text string
	line       int // of the opening fence, for messages
}

func (b readmeBlock) firstLine() string {
	first, _, _ := strings.Cut(b.text, "\n")
	return strings.TrimSpace(first)
}

func (b readmeBlock) where() string { return fmt.Sprintf("README.md:%d (%s block)", b.line, b.lang) }

func (b readmeBlock) name() string { return fmt.Sprintf("line%d_%s", b.line, b.lang) }

func TestReadmeBlocksRun(t *testing.T) {
	blocks := readmeBlocks(t)
	if len(blocks) < 10 {
		t.Fatalf("found %d code blocks in README.md", len(blocks))
	}
	env := newReadmeEnv(t)
	listed := map[string]bool{}
	var scripts []readmeBlock
	for _, b := range blocks {
		if reason, ok := readmeNotRunnable[b.firstLine()]; ok {
			listed[b.firstLine()] = true
			t.Logf("README.md:%d not run: %s", b.line, reason)
			continue
		}
		if b.lang == "js" {
			scripts = append(scripts, b) // one mongosh start for them all: it takes seconds
			continue
		}
		t.Run(b.name(), func(t *testing.T) { env.runBlock(t, b) })
	}
	t.Run("mongosh", func(t *testing.T) { env.runMongosh(t, scripts) })
	for first := range readmeNotRunnable {
		if !listed[first] {
			t.Errorf("readmeNotRunnable lists %q, which no README block starts with", first)
		}
	}
}

// readmeBlocks returns README.md's fenced code blocks, those indented
// under a list item included.
func readmeBlocks(t *testing.T) []readmeBlock {
	t.Helper()
	data, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var blocks []readmeBlock
	var cur *readmeBlock
	var indent string
	for i, line := range strings.Split(string(data), "\n") {
		trimmed := strings.TrimLeft(line, " ")
		switch {
		case cur == nil && strings.HasPrefix(trimmed, "```"):
			indent = line[:len(line)-len(trimmed)]
			cur = &readmeBlock{lang: strings.TrimPrefix(trimmed, "```"), line: i + 1}
		case cur != nil && trimmed == "```":
			blocks = append(blocks, *cur)
			cur = nil
		case cur != nil:
			cur.text += strings.TrimPrefix(line, indent) + "\n"
		}
	}
	if cur != nil {
		t.Fatalf("README.md:%d: a code block is never closed", cur.line)
	}
	return blocks
}

// readmeEnv is what every block runs with.
type readmeEnv struct {
	bin     string // the mayfly binary
	mongosh string
	goEnv   []string // the go tool's caches, kept when HOME moves
}

func newReadmeEnv(t *testing.T) *readmeEnv {
	bin := buildBinary(t)
	mongosh := filepath.Join(ensureNodeClients(t), "node_modules", ".bin", "mongosh")
	out, err := exec.Command("go", "env", "GOCACHE", "GOPATH", "GOMODCACHE").Output()
	if err != nil {
		t.Fatalf("go env: %v", err)
	}
	vals := strings.Fields(string(out))
	if len(vals) != 3 {
		t.Fatalf("go env: %q", out)
	}
	return &readmeEnv{bin: bin, mongosh: mongosh, goEnv: []string{
		"GOCACHE=" + vals[0], "GOPATH=" + vals[1], "GOMODCACHE=" + vals[2],
	}}
}

func (e *readmeEnv) runBlock(t *testing.T, b readmeBlock) {
	switch b.lang {
	case "sh", "bash":
		e.runShell(t, b)
	case "go":
		e.runGoExample(t, b)
	default:
		t.Fatalf("README.md:%d: a %q block is neither run by this test nor listed in readmeNotRunnable", b.line, b.lang)
	}
}

// substitutePorts replaces the README's ports with free ones and returns
// the new text and the server port that stands for 27017. The ports are
// replaced in one pass over the original text: replaced one after
// another, a free port holding a later README port (29216 holds 9216)
// was rewritten again, into a number no port can be.
func substitutePorts(t *testing.T, text string) (string, string) {
	ports := make([]string, len(readmePorts))
	for i := range ports {
		_, port, err := net.SplitHostPort(freePort(t))
		if err != nil {
			t.Fatal(err)
		}
		ports[i] = port
	}
	return replacePorts(text, ports), ports[0]
}

// replacePorts replaces each of readmePorts in text with the port at the
// same place in ports.
func replacePorts(text string, ports []string) string {
	pairs := make([]string, 0, 2*len(readmePorts))
	for i, p := range readmePorts {
		pairs = append(pairs, p, ports[i])
	}
	return strings.NewReplacer(pairs...).Replace(text)
}

// A free port that holds another README port is not rewritten again.
func TestReplacePortsOnce(t *testing.T) {
	text := "--port 27017 --port 27018 --port 27019 :9216"
	got := replacePorts(text, []string{"29216", "27019", "40000", "9217"})
	if want := "--port 29216 --port 27019 --port 40000 :9217"; got != want {
		t.Fatalf("replacePorts: %q, want %q", got, want)
	}
}

// backgroundServer is a line that starts a server in the background.
var backgroundServer = regexp.MustCompile(`^mayfly .*&\s*(?:#.*)?$`)

func startsServer(line string) bool {
	return backgroundServer.MatchString(line) && !strings.HasPrefix(line, "mayfly backup ")
}

var portFlag = regexp.MustCompile(`--port (\d+)`)

// readmeShellPrelude stops what a block left running, and waits for a
// server's port: 300 tries 0.1 s apart, a generous bound on a loaded machine.
const readmeShellPrelude = `set -e -o pipefail
trap 'status=$?; kill $(jobs -p) 2>/dev/null || true; wait; exit $status' EXIT
readme_wait_for() {
  for _ in $(seq 300); do (exec 3<>/dev/tcp/127.0.0.1/"$1") 2>/dev/null && return 0; sleep 0.1; done
  echo "no server on port $1" >&2; return 1
}
`

func (e *readmeEnv) runShell(t *testing.T, b readmeBlock) {
	text, mainPort := substitutePorts(t, b.text)
	var script strings.Builder
	script.WriteString(readmeShellPrelude)
	for _, line := range strings.Split(text, "\n") {
		script.WriteString(line + "\n")
		if !startsServer(line) {
			continue
		}
		port := mainPort
		if m := portFlag.FindStringSubmatch(line); m != nil {
			port = m[1]
		}
		script.WriteString("readme_wait_for " + port + "\n")
	}
	home := t.TempDir()
	dir := home
	if strings.Contains(text, "./cmd/") {
		dir = ".."
	}
	path := strings.Join([]string{filepath.Dir(e.bin), filepath.Dir(e.mongosh), os.Getenv("PATH")}, string(os.PathListSeparator))
	env := append([]string{"HOME=" + home, "PATH=" + path, "MAYFLY_ADDR=127.0.0.1:" + mainPort,
		"DO_NOT_TRACK=1", "MONGOSH_NO_TELEMETRY=1"}, e.goEnv...)
	out := runReadmeProcess(t, b.where(), dir, env, "bash", "-c", script.String())
	wantOutputs(t, b, out, "#")
}

// runMongosh runs the js blocks in one mongosh script, each in a block
// scope of its own, connected to its own server, after a line that marks
// where its output starts.
func (e *readmeEnv) runMongosh(t *testing.T, blocks []readmeBlock) {
	if len(blocks) == 0 {
		t.Fatal("README.md has no js block")
	}
	var script strings.Builder
	for _, b := range blocks {
		addr := startReadmeServer(t, e.bin, "--setParameter", "enableTestCommands=1")
		fmt.Fprintf(&script, "db = connect(%q)\nprint(%q)\n{\n%s}\n", "mongodb://"+addr+"/test", readmeMarker(b), b.text)
	}
	file := filepath.Join(t.TempDir(), "blocks.js")
	if err := os.WriteFile(file, []byte(script.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH"), "DO_NOT_TRACK=1", "MONGOSH_NO_TELEMETRY=1"}
	out := runReadmeProcess(t, "the README's js blocks (the last marker printed is the failing one's)", "", env, e.mongosh, "--nodb", "--quiet", "--norc", "--file", file)
	for i, b := range blocks {
		_, rest, ok := strings.Cut(out, readmeMarker(b))
		if !ok {
			t.Fatalf("README.md:%d: its js block never ran:\n%s", b.line, out)
		}
		if i+1 < len(blocks) {
			rest, _, _ = strings.Cut(rest, readmeMarker(blocks[i+1]))
		}
		wantOutputs(t, b, rest, "//")
	}
}

func readmeMarker(b readmeBlock) string { return fmt.Sprintf("### README.md:%d ###", b.line) }

func (e *readmeEnv) runGoExample(t *testing.T, b readmeBlock) {
	ex, ok := readmeGoExamples[b.firstLine()]
	if !ok {
		t.Fatalf("README.md:%d: a go block that is not one of readmeGoExamples", b.line)
	}
	src, err := os.ReadFile(filepath.Join("..", "examples", ex.dir, "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	if string(src) != b.text {
		t.Fatalf("README.md:%d differs from examples/%s/main.go: copy the file into the block", b.line, ex.dir)
	}
	addr := startReadmeServer(t, e.bin)
	env := append(os.Environ(), "MAYFLY_URI=mongodb://"+addr)
	out := runReadmeProcess(t, b.where(), "..", env, "go", "run", "./examples/"+ex.dir)
	if !strings.Contains(out, ex.want) {
		t.Fatalf("examples/%s printed %q, want %q", ex.dir, out, ex.want)
	}
}

// startReadmeServer starts the binary in memory on a free port, stopped
// when the test ends, and returns its address.
func startReadmeServer(t *testing.T, bin string, args ...string) string {
	t.Helper()
	addr := freePort(t)
	cmd := exec.Command(bin, append([]string{"--addr", addr, "--storage", "memory", "--log-level", "warn"}, args...)...)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _, _ = cmd.Process.Wait() })
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if c, err := net.Dial("tcp", addr); err == nil {
			_ = c.Close()
			return addr
		}
	}
	t.Fatalf("the server at %s did not start", addr)
	return ""
}

// runReadmeProcess runs one block's process in its own process group, so
// that the servers a shell block starts go with it, and returns its
// output; it fails the test on an error or after two minutes.
func runReadmeProcess(t *testing.T, what, dir string, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir, cmd.Env = dir, env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("%s: %v\n%s", what, err, out.String())
		}
	case <-time.After(2 * time.Minute):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		t.Fatalf("%s: timed out\n%s", what, out.String())
	}
	return out.String()
}

// wantOutputs checks that every "<comment> => text" of the block is in
// its output, in the order the block gives them.
func wantOutputs(t *testing.T, b readmeBlock, out, comment string) {
	t.Helper()
	rest := out
	for _, line := range strings.Split(b.text, "\n") {
		_, want, ok := strings.Cut(line, comment+" => ")
		if !ok {
			continue
		}
		i := strings.Index(rest, strings.TrimSpace(want))
		if i < 0 {
			t.Fatalf("%s: want %q in the output after what came before:\n%s", b.where(), want, out)
		}
		rest = rest[i+len(strings.TrimSpace(want)):]
	}
}
