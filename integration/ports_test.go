package integration

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A server the tests restart must get its port back. A port the kernel
// hands out for outgoing connections (the ephemeral range) cannot be
// promised that: while a server is down, any client connection opened in
// the meantime (drivers, readers polling the dead member, the other
// members) may get the same number as its local port, and once closed
// that socket keeps the port in TIME_WAIT for a minute, so the restarted
// server fails with "address already in use". Test servers therefore
// listen on ports below or above that range, each claimed for the whole
// test with a lock file, as other test processes may run at once.

// ephemeralRange is the kernel's range of ports for outgoing connections.
func ephemeralRange() (lo, hi int) {
	lo, hi = 32768, 60999 // Linux's default
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return lo, hi
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return lo, hi
	}
	l, err1 := strconv.Atoi(f[0])
	h, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil {
		return lo, hi
	}
	return l, h
}

// serverPortRange is where freePort looks: the larger of the spans below
// and above the ephemeral range, leaving out the ports under 10000 where
// services usually listen.
func serverPortRange() (lo, hi int) {
	eLo, eHi := ephemeralRange()
	below, above := eLo-10000, 65535-eHi
	if below >= above {
		return 10000, eLo - 1
	}
	return eHi + 1, 65535
}

// freePort returns a 127.0.0.1 address whose port is free now and outside
// the ephemeral range, so that a server restarted on it finds it free.
// The port stays claimed for the rest of the test: other test processes
// on this machine (which pick ports the same way) leave it alone while
// its server is down.
func freePort(t *testing.T) string {
	t.Helper()
	lo, hi := serverPortRange()
	if hi-lo < 100 {
		t.Fatalf("no room for server ports outside the ephemeral range (%d-%d)", lo, hi)
	}
	claims := portClaims()
	if err := os.MkdirAll(claims, 0o755); err != nil {
		t.Fatal(err)
	}
	for range 200 {
		port := lo + rand.IntN(hi-lo+1)
		claim, ok := claimPort(claims, port)
		if !ok {
			continue
		}
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		l, err := net.Listen("tcp", addr)
		if err != nil {
			_ = claim.Close()
			continue // taken: try another
		}
		_ = l.Close()
		t.Cleanup(func() { _ = claim.Close() })
		return addr
	}
	t.Fatalf("no free port in %d-%d", lo, hi)
	return ""
}

// portClaims is the directory of the lock files claiming test ports,
// shared by every test process on the machine.
func portClaims() string { return filepath.Join(os.TempDir(), "mayfly-test-ports") }

// claimPort takes an exclusive lock on the port's file under dir; the
// lock goes when the file is closed or the process ends.
func claimPort(dir string, port int) (*os.File, bool) {
	f, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(port)), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, false
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		return nil, false
	}
	return f, true
}

// TestFreePortOutsideClientPorts checks that no outgoing connection can
// take a port freePort hands out (ports it returns, and the local ports of
// many client connections, fall in disjoint ranges) and that no other
// freePort can while the test runs.
func TestFreePortOutsideClientPorts(t *testing.T) {
	lo, hi := serverPortRange()
	inServerRange := func(addr string) bool {
		_, p, _ := net.SplitHostPort(addr)
		n, _ := strconv.Atoi(p)
		return n >= lo && n <= hi
	}
	for range 50 {
		a := freePort(t)
		if !inServerRange(a) {
			t.Fatalf("freePort gave %s, outside %d-%d", a, lo, hi)
		}
		_, p, _ := net.SplitHostPort(a)
		port, _ := strconv.Atoi(p)
		if f, ok := claimPort(portClaims(), port); ok {
			_ = f.Close()
			t.Fatalf("port %d could be claimed again while its test runs", port)
		}
	}
	l, err := net.Listen("tcp", freePort(t))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for range 300 {
		c, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		if inServerRange(c.LocalAddr().String()) {
			t.Fatalf("a client connection got local address %s, in the server ports %d-%d", c.LocalAddr(), lo, hi)
		}
		_ = c.Close()
	}
}

// TestRestartOnClientPortFails reproduces the restart failure freePort
// avoids: a client connection got the server's port as its local port
// while the server was down and closed first (TIME_WAIT, as a driver
// closing a pool does), so the server cannot listen there. It also
// checks that startMayfly sees the server exit at once and shows the
// server's own words from its log instead of waiting out its 20 s.
func TestRestartOnClientPortFails(t *testing.T) {
	bin := buildBinary(t)
	addr := freePort(t)
	timeWait(t, addr)
	began := time.Now()
	_, err := startMayfly(t, bin, t.TempDir(), addr)
	if err == nil {
		t.Fatalf("a server started on %s, held by a closed client connection", addr)
	}
	if took := time.Since(began); took > 10*time.Second {
		t.Errorf("startMayfly took %v to see the server exit", took)
	}
	if !strings.Contains(err.Error(), "address already in use") || !strings.Contains(err.Error(), "exit status 1") {
		t.Errorf("error lacks the server's exit and its log: %v", err)
	}
}

// timeWait leaves local address addr in TIME_WAIT: a client connection
// from it to a listener, closed by the client first.
func timeWait(t *testing.T, addr string) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		if c, err := l.Accept(); err == nil {
			accepted <- c
		}
	}()
	local, err := net.ResolveTCPAddr("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c, err := (&net.Dialer{LocalAddr: local}).Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server := <-accepted
	_ = c.Close()
	_, _ = server.Read(make([]byte, 1)) // the client's FIN
	_ = server.Close()
}
