package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"
)

// A neighbour is a separate OS process that does nothing but burn one
// CPU, standing in for the other tenants of a shared machine (another
// service's work, a build): the bench binary re-executed with -role spin.
// It is a process, not goroutines in the client child, so that the
// kernel schedules it against the server as it would a real neighbour
// and the Go runtime of neither process knows of it.

// Spin is a neighbour's main: one busy thread until ctx is done or in
// reaches its end (the bench closes it, or died).
func Spin(ctx context.Context, in io.Reader) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		_, _ = io.Copy(io.Discard, in)
		cancel()
	}()
	x := uint64(1)
	for ctx.Err() == nil {
		for range 1 << 20 {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	runtime.KeepAlive(x)
	return nil
}

// neighbours are running spin processes.
type neighbours struct {
	cmds  []*exec.Cmd
	ins   []io.Closer
	start time.Time
}

// startNeighbours starts n spin processes of self. cpus, when not empty,
// is the taskset CPU list they run on: a client child pinned to one CPU
// would otherwise hand its pinning down to them, and a neighbour is meant
// to compete for every core, the server's too.
func startNeighbours(self string, n int, cpus string) (*neighbours, error) {
	nb := &neighbours{start: time.Now()}
	for range n {
		argv := []string{self, "-role", "spin"}
		if cpus != "" {
			argv = append([]string{"taskset", "-c", cpus}, argv...)
		}
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Stdout, cmd.Stderr = io.Discard, os.Stderr
		in, err := cmd.StdinPipe()
		if err == nil {
			err = cmd.Start()
		}
		if err != nil {
			return nil, errors.Join(fmt.Errorf("start neighbour: %w", err), nb.stop())
		}
		nb.cmds, nb.ins = append(nb.cmds, cmd), append(nb.ins, in)
	}
	return nb, nil
}

// cores is how many CPUs the neighbours kept busy on average since they
// started: n when the machine had room for them, less when the server and
// the clients took their share.
func (nb *neighbours) cores() float64 {
	return nb.cpu().Seconds() / time.Since(nb.start).Seconds()
}

// cpu is the CPU time the neighbours have used since they started.
func (nb *neighbours) cpu() time.Duration {
	var sum time.Duration
	for _, cmd := range nb.cmds {
		if d, err := cpuTime(cmd.Process.Pid); err == nil {
			sum += d
		}
	}
	return sum
}

// stop closes the neighbours' standard input, which ends them, and waits
// for them.
func (nb *neighbours) stop() error {
	if nb == nil {
		return nil
	}
	var errs []error
	for i, cmd := range nb.cmds {
		_ = nb.ins[i].Close()
		if err := cmd.Wait(); err != nil {
			errs = append(errs, fmt.Errorf("neighbour %d: %w", cmd.Process.Pid, err))
		}
	}
	return errors.Join(errs...)
}

// loadAvg is the 1-, 5- and 15-minute load averages of /proc/loadavg,
// or "" where there is none.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}
