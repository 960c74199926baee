package integration

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mayflydb/mayfly/internal/app"
)

// The client tools are installed by the tests when missing, never skipped:
// the Node.js clients from the lockfile in ../clients, pymongo from Debian.
var installOnce sync.Map

func clientsDir(t *testing.T) string {
	dir, err := filepath.Abs("../clients")
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func ensureNodeClients(t *testing.T) string {
	t.Helper()
	dir := clientsDir(t)
	once, _ := installOnce.LoadOrStore("node", &sync.Once{})
	once.(*sync.Once).Do(func() {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", ".bin", "mongosh")); err == nil {
			return
		}
		run(t, dir, 10*time.Minute, "npm", "ci", "--no-audit", "--no-fund", "--ignore-scripts")
	})
	return dir
}

func ensurePymongo(t *testing.T) string {
	t.Helper()
	const py = "/usr/bin/python3"
	once, _ := installOnce.LoadOrStore("py", &sync.Once{})
	once.(*sync.Once).Do(func() {
		if exec.Command(py, "-c", "import pymongo").Run() == nil {
			return
		}
		run(t, "", 10*time.Minute, "apt-get", "install", "-y", "-qq", "python3-pymongo")
	})
	return py
}

// run executes a command and returns stdout; it fails the test on a
// non-zero exit, showing both streams.
func run(t *testing.T, dir string, timeout time.Duration, name string, args ...string) (string, string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "DO_NOT_TRACK=1", "MONGOSH_NO_TELEMETRY=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second // a child's child that keeps the pipes open does not hold Wait
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("%s %v: %v\nstdout:\n%s\nstderr:\n%s", name, args, err, stdout.String(), stderr.String())
		}
	case <-time.After(timeout):
		_ = cmd.Process.Kill()
		<-done // the output is whole, and no longer written, once Wait returns
		t.Fatalf("%s %v: timed out\nstdout:\n%s\nstderr:\n%s\nthe server's goroutines:\n%s", name, args, stdout.String(), stderr.String(), serverStacks())
	}
	return stdout.String(), stderr.String()
}

// serverStacks is the stacks of this process's goroutines that run
// Mayfly's code (the servers the tests start run in it) and do not wait
// for the network, at most 32 KiB: what a client that hung waited for.
func serverStacks() string {
	buf := make([]byte, 8<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out strings.Builder
	for _, g := range strings.Split(string(buf), "\n\n") {
		idle := strings.Contains(g, "[IO wait")
		if !idle && strings.Contains(g, "mayfly/internal/") && out.Len() < 32<<10 {
			out.WriteString(g)
			out.WriteString("\n\n")
		}
	}
	return out.String()
}

func mongosh(t *testing.T, uri string, args ...string) (string, string) {
	dir := ensureNodeClients(t)
	bin := filepath.Join(dir, "node_modules", ".bin", "mongosh")
	return run(t, "", 2*time.Minute, bin, append([]string{uri, "--quiet", "--norc"}, args...)...)
}

func scriptPath(t *testing.T, name string) string {
	p, err := filepath.Abs(filepath.Join("..", "clients", "tests", name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func dbURI(s *testServer, db string) string {
	return strings.Replace(s.uri, "/?", "/"+db+"?", 1)
}

func TestMongoshCRUD(t *testing.T) {
	s := startServer(t, app.Config{})
	out, _ := mongosh(t, dbURI(s, "test"), "--file", scriptPath(t, "mongosh_crud.js"))
	if !strings.Contains(out, "mongosh ok") {
		t.Fatalf("mongosh output:\n%s", out)
	}
}

func TestMongoshStartsWithoutWarnings(t *testing.T) {
	s := startServer(t, app.Config{})
	dir := ensureNodeClients(t)
	bin := filepath.Join(dir, "node_modules", ".bin", "mongosh")
	// Interactive start, as a user would: the banner must not warn.
	cmd := exec.Command(bin, dbURI(s, "test"), "--norc")
	cmd.Env = append(os.Environ(), "DO_NOT_TRACK=1")
	cmd.Stdin = strings.NewReader("show dbs\nshow collections\nexit\n")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("mongosh: %v\n%s", err, out.String())
	}
	text := withoutAccessControlWarning(withoutRuntimeNotice(out.String()))
	lower := strings.ToLower(text)
	for _, bad := range []string{"warn", "error", "fail", "non-genuine"} {
		if strings.Contains(lower, bad) {
			t.Fatalf("mongosh start printed %q:\n%s", bad, text)
		}
	}
	if !strings.Contains(text, "Using MongoDB:") {
		t.Fatalf("mongosh did not connect:\n%s", text)
	}
}

func TestNodeDriverCRUD(t *testing.T) {
	s := startServer(t, app.Config{})
	dir := ensureNodeClients(t)
	out, _ := run(t, dir, 2*time.Minute, "node", scriptPath(t, "node_crud.mjs"), s.uri)
	if !strings.Contains(out, "node ok") {
		t.Fatalf("node output:\n%s", out)
	}
}

func TestPymongoCRUD(t *testing.T) {
	s := startServer(t, app.Config{})
	py := ensurePymongo(t)
	out, _ := run(t, "", 2*time.Minute, py, scriptPath(t, "pymongo_crud.py"), s.uri)
	if !strings.Contains(out, "pymongo ok") {
		t.Fatalf("pymongo output:\n%s", out)
	}
}

// withoutRuntimeNotice removes mongosh's notice about the Node.js it runs
// on (this machine's Node 20; mongosh recommends 24). It is printed for any
// server, mongod included, so it says nothing about Mayfly; every other
// warning still fails the test.
func withoutRuntimeNotice(text string) string {
	const start = "Deprecation warnings:"
	const node = "  - Using mongosh with Node.js versions lower than 24.0.0 is deprecated, and support may be removed in a future release."
	const end = "See https://www.mongodb.com/docs/mongodb-shell/install/#supported-operating-systems for documentation on supported platforms."
	block := start + "\n" + node + "\n" + end
	return strings.Replace(text, block, "", 1)
}

// withoutAccessControlWarning removes mongosh's block of start-up warnings
// when its only warning is the one mongod also gives without access
// control (docs/design/0008-security.md); any other warning stays.
func withoutAccessControlWarning(text string) string {
	lines := strings.Split(text, "\n")
	out := lines[:0]
	for i := 0; i < len(lines); i++ {
		if strings.Contains(lines[i], "The server generated these startup warnings") && i+2 < len(lines) &&
			strings.Contains(lines[i+1], "Access control is not enabled") && strings.HasPrefix(strings.TrimSpace(lines[i+2]), "------") {
			if n := len(out); n > 0 && strings.HasPrefix(strings.TrimSpace(out[n-1]), "------") {
				out = out[:n-1]
			}
			i += 2
			continue
		}
		out = append(out, lines[i])
	}
	return strings.Join(out, "\n")
}
