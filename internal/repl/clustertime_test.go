package repl

import (
	"context"
	"testing"

	"github.com/mayflydb/mayfly/internal/changestream"
)

// TestClusterTimeGossip: a cluster time gossiped to the primary ahead of
// its clock makes its next stamp come after it (a write, or the no-op
// CatchUpClusterTime writes, once); a caught-up primary writes nothing.
func TestClusterTimeGossip(t *testing.T) {
	c := newCluster(t)
	l := c.leader()
	if err := c.put("a", "1"); err != nil {
		t.Fatal(err)
	}
	ahead := changestream.Timestamp{T: l.appliedTimestamp().T + 1000, I: 7}
	l.advanceClusterTime(ahead)
	l.catchUpClusterTime(context.Background())
	if got := l.appliedTimestamp(); !got.After(ahead) {
		t.Fatalf("applied %v after the no-op, want after the gossiped %v", got, ahead)
	}
	applied := l.applied.Load()
	l.catchUpClusterTime(context.Background())
	if l.applied.Load() != applied {
		t.Fatal("a caught-up primary wrote another no-op")
	}
	later := changestream.Timestamp{T: ahead.T + 10, I: 1}
	l.advanceClusterTime(later)
	if err := c.put("b", "2"); err != nil {
		t.Fatal(err)
	}
	if got := l.appliedTimestamp(); !got.After(later) {
		t.Fatalf("a write after the gossip was stamped %v, want after %v", got, later)
	}
}
