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

// Two neighbours burn CPU while they run and end when stopped. How fast
// they burn it depends on what else the machine runs, so the test waits,
// within a generous bound, for each to have used a clear amount of CPU
// time — more than a process that only waited on its input would ever use.
func TestNeighboursBurnCPUAndStop(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	nb, err := startNeighbours(self, 2, "")
	if err != nil {
		t.Fatal(err)
	}
	const want = 300 * time.Millisecond
	deadline := time.Now().Add(60 * time.Second)
	for nb.cpu() < want && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	used := nb.cpu()
	pids := []int{nb.cmds[0].Process.Pid, nb.cmds[1].Process.Pid}
	if err := nb.stop(); err != nil {
		t.Fatal(err)
	}
	if used < want {
		t.Errorf("2 neighbours used %v of CPU in 60 s, want at least %v", used, want)
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
