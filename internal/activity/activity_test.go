package activity

import (
	"testing"
	"time"

	"github.com/mayflydb/mayfly/internal/clock"
)

func TestBusyWithin(t *testing.T) {
	clk := clock.NewManual(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC))
	r := NewRegistry(clk)
	if r.BusyWithin(100 * time.Millisecond) {
		t.Fatal("a new registry has seen no client")
	}
	internal := r.Begin(Op{Desc: "TTLMonitor"})
	if r.BusyWithin(100 * time.Millisecond) {
		t.Fatal("internal work is not client activity")
	}
	r.End(internal)
	id := r.Begin(Op{Client: "127.0.0.1:5000"})
	clk.Advance(time.Second)
	if !r.BusyWithin(100 * time.Millisecond) {
		t.Fatal("a client operation in flight makes the server busy")
	}
	r.End(id)
	clk.Advance(100 * time.Millisecond)
	if !r.BusyWithin(100 * time.Millisecond) {
		t.Fatal("an operation that ended 100ms ago still counts")
	}
	clk.Advance(time.Millisecond)
	if r.BusyWithin(100 * time.Millisecond) {
		t.Fatal("nothing for longer than d: not busy")
	}
}
