package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// How long a server may take to start listening, and to stop once asked.
const (
	startTimeout = 60 * time.Second
	stopTimeout  = 30 * time.Second
)

// server is a child process that listens on addr.
type server struct {
	name string
	addr string
	// dial is the address clients use when it differs from addr (with
	// credentials in it).
	dial string
	log  string // its stdout and stderr
	cmd  *exec.Cmd
	done chan struct{}
	err  error // from Wait, once done is closed
}

// freeAddr returns a loopback address with a port that was free a moment
// ago.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("find a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// startServer runs argv (already prefixed with taskset if pinned), with its
// output in logPath, and waits until addr accepts connections. taskset
// execs the program, so the child's pid is the server's.
// profilesEnv, when set, has every mayfly process the bench starts write
// a CPU profile of its run beside its log (with -keep, to read them).
const profilesEnv = "MAYFLY_BENCH_CPUPROFILES"

// startServer starts argv as name, its output appended to logPath: a
// member the failovers restart keeps what it logged before the kill.
func startServer(ctx context.Context, name string, argv []string, addr, logPath string) (*server, error) {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	defer logf.Close()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if os.Getenv(profilesEnv) != "" {
		// Each mayfly process profiles itself beside its log.
		cmd.Env = append(os.Environ(), "MAYFLY_CPUPROFILE="+filepath.Join(filepath.Dir(logPath), "cpu.pprof"))
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	s := &server{name: name, addr: addr, log: logPath, cmd: cmd, done: make(chan struct{})}
	go func() { s.err = cmd.Wait(); close(s.done) }()
	if err := s.waitListening(ctx); err != nil {
		_ = s.stop()
		return nil, err
	}
	return s, nil
}

func (s *server) waitListening(ctx context.Context) error {
	deadline := time.Now().Add(startTimeout)
	for time.Now().Before(deadline) {
		select {
		case <-s.done:
			return fmt.Errorf("%s exited before listening (%v): %s", s.name, s.err, s.logTail())
		case <-ctx.Done():
			return ctx.Err()
		default:
		}
		if c, err := net.DialTimeout("tcp", s.addr, time.Second); err == nil {
			c.Close()
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("%s did not listen on %s within %v: %s", s.name, s.addr, startTimeout, s.logTail())
}

func (s *server) pid() int { return s.cmd.Process.Pid }

// stop sends SIGTERM, waits, and kills the process if it does not exit.
func (s *server) stop() error {
	select {
	case <-s.done:
		return s.exitErr()
	default:
	}
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("stop %s: %w", s.name, err)
	}
	select {
	case <-s.done:
		return s.exitErr()
	case <-time.After(stopTimeout):
		_ = s.cmd.Process.Kill()
		<-s.done
		return fmt.Errorf("stop %s: killed after %v: %s", s.name, stopTimeout, s.logTail())
	}
}

func (s *server) exitErr() error {
	if s.err != nil {
		return fmt.Errorf("%s exited: %w: %s", s.name, s.err, s.logTail())
	}
	return nil
}

// logTail is the end of the server's log, for error messages.
func (s *server) logTail() string {
	b, err := os.ReadFile(s.log)
	if err != nil {
		return "(no log)"
	}
	b = bytes.TrimSpace(b)
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	if len(b) == 0 {
		return "(empty log " + s.log + ")"
	}
	return string(b)
}

// mayflyArgv is how the bench runs Mayfly: on disk in dir, quiet.
func mayflyArgv(bin, addr, dir string) []string {
	return []string{bin, "--addr", addr, "--dbpath", dir, "--log-level", "warn"}
}

// redisArgv runs redis-server on addr's port with no persistence at all.
func redisArgv(bin, addr, dir string) ([]string, error) {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("redis address %q: %w", addr, err)
	}
	if _, err := strconv.Atoi(port); err != nil {
		return nil, fmt.Errorf("redis port %q: %w", port, err)
	}
	return []string{bin, "--port", port, "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--daemonize", "no",
		"--dir", dir, "--logfile", ""}, nil
}

// nullArgv re-executes this binary as the null server.
func nullArgv(self, addr string) []string {
	return []string{self, "-role", "null", "-addr", addr}
}

// pinned prefixes argv with taskset for cpu, or returns it as is when cpu
// is negative.
func pinned(cpu int, argv []string) []string {
	if cpu < 0 {
		return argv
	}
	return append([]string{"taskset", "-c", strconv.Itoa(cpu)}, argv...)
}

// mkdir makes a fresh directory under parent.
func mkdir(parent, name string) (string, error) {
	dir, err := os.MkdirTemp(parent, name+"-")
	if err != nil {
		return "", fmt.Errorf("make %s directory: %w", name, err)
	}
	return filepath.Abs(dir)
}
