package bench

import (
	"context"
	"os"
	"testing"
	"time"
)

// TestMain lets the test binary stand in for the bench binary as a
// neighbour: startNeighbours re-executes it with -role spin.
func TestMain(m *testing.M) {
	if len(os.Args) == 3 && os.Args[1] == "-role" && os.Args[2] == "spin" {
		if err := Spin(context.Background(), os.Stdin); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// Two neighbours keep CPUs busy while they run (the machine may be
// loaded, so only a clear fraction of a core each is asked for) and end
// when stopped.
func TestNeighboursBurnCPUAndStop(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	nb, err := startNeighbours(self, 2, "")
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	cores := nb.cores()
	pids := []int{nb.cmds[0].Process.Pid, nb.cmds[1].Process.Pid}
	if err := nb.stop(); err != nil {
		t.Fatal(err)
	}
	if cores < 0.3 {
		t.Errorf("2 neighbours kept %.2f cores busy, want a clear share of the CPUs", cores)
	}
	for _, pid := range pids {
		if _, err := cpuTime(pid); err == nil {
			t.Errorf("neighbour %d still exists after stop", pid)
		}
	}
}

// A neighbour ends when its context is done even with its input open.
func TestSpinEndsWithContext(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	defer r.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- Spin(ctx, r) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Spin did not end with its context")
	}
}
