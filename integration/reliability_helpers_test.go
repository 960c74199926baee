package integration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// startMayfly runs the binary with extra flags (startBinary's fixed set
// plus args) and waits, at most 20 s or until it exits, until it accepts
// connections. Unlike startBinary it does not fail the test on a failed
// start; the caller decides. The process's output goes to a log file
// beside its data directory (dir + ".log", appended across restarts); a
// failed start returns the log's tail, and a failed test prints the tail
// of each server still running.
func startMayfly(t *testing.T, bin, dir, addr string, args ...string) (*process, error) {
	t.Helper()
	argv := append([]string{"--addr", addr, "--dbpath", dir, "--log-level", "info"}, args...)
	return startLogged(t, bin, filepath.Clean(dir)+".log", addr, argv...)
}

// startLogged runs bin with argv, its output appended to logPath, and
// waits as startMayfly does until it accepts connections on addr.
func startLogged(t *testing.T, bin, logPath, addr string, argv ...string) (*process, error) {
	t.Helper()
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("member log: %w", err)
	}
	defer logf.Close() // the child holds its own descriptor
	fmt.Fprintf(logf, "=== %s start %s\n", time.Now().UTC().Format(time.RFC3339Nano), strings.Join(argv, " "))
	cmd := exec.Command(bin, argv...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	p := &process{cmd: cmd, addr: addr, log: logPath}
	t.Cleanup(func() {
		show, probe := t.Failed() && !p.killed, ""
		if show && !exited(cmd.Process.Pid) {
			probe = probeAfterFailure(p)
		}
		_ = cmd.Process.Kill()
		_, _ = cmd.Process.Wait()
		if show {
			t.Logf("log of %s (%s), last %d lines:\n%s%s", addr, logPath, logTailLines, logTail(logPath), probe)
		}
	})
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return p, nil
		}
		if exited(cmd.Process.Pid) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	p.killed = true // its tail is in the error: do not print it twice
	_ = cmd.Process.Kill()
	state, _ := cmd.Process.Wait()
	return nil, fmt.Errorf("server at %s did not start (%s): %v; its log's last %d lines:\n%s",
		addr, logPath, state, logTailLines, logTail(logPath))
}

// exited reports whether the child pid has exited (a zombie not yet
// reaped), without reaping it: the caller may still Wait for it.
func exited(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the command name, which is in parentheses.
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && i+2 < len(b) && b[i+2] == 'Z'
}

// logTailLines is how much of a member's log a failure shows.
const logTailLines = 80

// logTail returns the last logTailLines lines of the file at path.
func logTail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(cannot read the log: %v)", err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > logTailLines {
		lines = lines[len(lines)-logTailLines:]
	}
	return strings.Join(lines, "\n")
}

// kill9 sends SIGKILL and reaps the process.
func (p *process) kill9() {
	p.killed = true
	_ = p.cmd.Process.Kill()
	_, _ = p.cmd.Process.Wait()
}

// quickClient connects to addr with a short operation timeout, so that
// clients of a killed server give up fast.
func quickClient(t *testing.T, addr string, timeout time.Duration) *mongo.Client {
	t.Helper()
	uri := fmt.Sprintf("mongodb://%s/?directConnection=true&retryWrites=false&retryReads=false", addr)
	// A connection attempt gets a third of the budget (at least 3 s), so
	// that one that stalls (a dial or handshake that never completes) is
	// retried by the driver's monitor within it: with the whole budget, a
	// direct client's first check that stalled left the member Unknown
	// until server selection gave up (twice under make test's parallel
	// groups).
	connect := min(timeout, max(timeout/3, 3*time.Second))
	c, err := mongo.Connect(options.Client().ApplyURI(uri).SetTimeout(timeout).
		SetServerSelectionTimeout(timeout).SetConnectTimeout(connect))
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = c.Disconnect(context.Background()) })
	return c
}

// ping runs ping on a fresh connection: the check, after every bad input,
// that the server still serves others.
func pingFresh(t *testing.T, addr string) {
	t.Helper()
	c := quickClient(t, addr, 5*time.Second)
	defer func() { _ = c.Disconnect(context.Background()) }()
	if err := c.Database("admin").RunCommand(ctxT(t), bson.D{{Key: "ping", Value: 1}}).Err(); err != nil {
		t.Fatalf("server stopped serving other connections: %v", err)
	}
}

// serverCode extracts the server error code from err, or 0.
func serverCode(err error) int32 {
	var ce mongo.CommandError
	if errors.As(err, &ce) {
		return ce.Code
	}
	var we mongo.WriteException
	if errors.As(err, &we) {
		if len(we.WriteErrors) > 0 {
			return int32(we.WriteErrors[0].Code)
		}
		if we.WriteConcernError != nil {
			return int32(we.WriteConcernError.Code)
		}
	}
	var se mongo.ServerError
	if errors.As(err, &se) {
		for _, code := range []int32{2, 9, 14, 40415, 59, 67, 10334, 50, 292} {
			if se.HasErrorCode(int(code)) {
				return code
			}
		}
		return -1
	}
	return 0
}

// probeAfterFailure tells, for a failed test, whether a server it leaves
// running still serves a fresh connection: the TCP dial and a ping, each
// timed. A server that does not answer is sent SIGQUIT, and the
// goroutines of its request path (server, commands, docstore) follow, so
// that a failure such as a direct client's server selection timing out
// shows whether the server was stuck or the connection never reached it.
func probeAfterFailure(p *process) string {
	began := time.Now()
	nc, err := net.DialTimeout("tcp", p.addr, 5*time.Second)
	if err != nil {
		return fmt.Sprintf("\nprobe: dial failed after %v: %v", time.Since(began), err)
	}
	dialed := time.Since(began)
	nc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := mongo.Connect(options.Client().ApplyURI("mongodb://" + p.addr + "/?directConnection=true").
		SetServerSelectionTimeout(5 * time.Second).SetConnectTimeout(5 * time.Second))
	if err == nil {
		defer func() { _ = c.Disconnect(context.Background()) }()
		began = time.Now()
		if err = c.Database("admin").RunCommand(ctx, bson.D{{Key: "ping", Value: 1}}).Err(); err == nil {
			return fmt.Sprintf("\nprobe: dial %v, ping on a fresh client %v", dialed, time.Since(began))
		}
	}
	_ = p.cmd.Process.Signal(syscall.SIGQUIT)
	_ = p.cmd.Process.Signal(syscall.SIGCONT) // a stopped server takes the SIGQUIT once continued
	_, _ = p.cmd.Process.Wait()
	b, _ := os.ReadFile(p.log)
	return fmt.Sprintf("\nprobe: dial %v, ping failed: %v; goroutines of the request path:\n%s",
		dialed, err, goroutinesIn(string(b), "internal/server", "internal/commands", "internal/docstore"))
}

// goroutinesIn is the goroutines of a log's SIGQUIT stack dump that run
// in any of the packages (import path suffixes such as "internal/repl"),
// without the traceback's frame addresses.
func goroutinesIn(log string, packages ...string) string {
	_, dump, _ := strings.Cut(log, "SIGQUIT: quit")
	var stacks []string
	for _, g := range strings.Split(dump, "\n\n") {
		if !slices.ContainsFunc(packages, func(pkg string) bool { return strings.Contains(g, "/"+pkg+".") }) {
			continue
		}
		var frames []string
		for _, l := range strings.Split(g, "\n") {
			l, _, _ = strings.Cut(l, " fp=")
			frames = append(frames, l)
		}
		stacks = append(stacks, strings.Join(frames, "\n"))
	}
	return strings.Join(stacks, "\n\n")
}
