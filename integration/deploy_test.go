package integration

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// runToExit runs the binary and returns its output once it exits, within
// 20 seconds.
func runToExit(t *testing.T, bin string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
	return string(out), err
}

func TestSecondServerOnTheSameDataDirectoryIsRefused(t *testing.T) {
	bin := buildBinary(t)
	dir := t.TempDir()
	first := startBinary(t, bin, dir, freePort(t))
	out, err := runToExit(t, bin, "--addr", freePort(t), "--dbpath", dir)
	want := fmt.Sprintf("data directory %s is in use by another mayfly (pid %d)", dir, first.cmd.Process.Pid)
	if err == nil || !strings.Contains(out, want) {
		t.Fatalf("second server: %v\n%s\nwant %q", err, out, want)
	}
	if err := first.client(t).Ping(ctxT(t), nil); err != nil {
		t.Fatalf("the first server is untouched: %v", err)
	}
}

// TestFailedBindLeavesNoDirectory: a start that cannot bind fails with
// one clear line naming the address once, and leaves no directory.
func TestFailedBindLeavesNoDirectory(t *testing.T) {
	bin := buildBinary(t)
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	for _, args := range [][]string{
		{"--addr", taken.Addr().String()},
		{"--addr", freePort(t), "--http-addr", taken.Addr().String()},
	} {
		dir := filepath.Join(t.TempDir(), "new-data")
		out, err := runToExit(t, bin, append(args, "--dbpath", dir)...)
		if err == nil || !strings.Contains(out, "address already in use") {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		if n := strings.Count(out, taken.Addr().String()); n != 1 {
			t.Errorf("%v: the address stands %d times in the error:\n%s", args, n, out)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Fatalf("%v: a failed start left %s behind (%v)", args, dir, err)
		}
	}
}

func TestServeFromMongodConfigFile(t *testing.T) {
	bin := buildBinary(t)
	dir := t.TempDir()
	addr := freePort(t)
	_, port, _ := net.SplitHostPort(addr)
	logPath := filepath.Join(dir, "mayfly.log")
	conf := filepath.Join(dir, "mongod.conf")
	text := fmt.Sprintf(`# as for mongod
storage:
  dbPath: %s
net:
  port: %s
  bindIp: 127.0.0.1
systemLog:
  destination: file
  path: %s
  logAppend: true
setParameter:
  ttlMonitorSleepSecs: 7
`, filepath.Join(dir, "data"), port, logPath)
	if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--config", conf)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &process{cmd: cmd, addr: addr}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _, _ = cmd.Process.Wait() })
	deadline := time.Now().Add(20 * time.Second)
	for {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("server from the config file did not listen on net.port")
		}
		time.Sleep(20 * time.Millisecond)
	}
	reply := runCmd(t, p.client(t).Database("admin"), bson.D{{Key: "getParameter", Value: 1}, {Key: "ttlMonitorSleepSecs", Value: 1}})
	if toInt64(field(t, reply, "ttlMonitorSleepSecs")) != 7 {
		t.Fatalf("setParameter from the file: %v", reply)
	}
	if _, err := os.Stat(filepath.Join(dir, "data", "mayfly.lock")); err != nil {
		t.Fatalf("storage.dbPath: %v", err)
	}
	b, _ := os.ReadFile(logPath)
	if strings.Count(string(b), "listening") != 1 {
		t.Fatalf("the log at systemLog.path says listening once: %s", b)
	}
	// The readiness loop above connected and closed without a message, as
	// a load balancer's port probe does: nothing to warn about.
	for _, line := range strings.Split(string(b), "\n") {
		if strings.Contains(line, "Access control is not enabled") {
			continue // the start-up warning every open server gives
		}
		if strings.Contains(line, "level=WARN") || strings.Contains(line, "level=ERROR") {
			t.Fatalf("port probes logged as problems: %s", b)
		}
	}
}
