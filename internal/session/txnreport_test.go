package session

import (
	"testing"
	"time"

	"github.com/mayflydb/mayfly/internal/clock"
)

// TestReportSplitsActiveAndInactiveTime: time with a statement inside
// counts as active, time between statements as inactive; Idle lists the
// transaction only between statements, and no finished one.
func TestReportSplitsActiveAndInactiveTime(t *testing.T) {
	clk := clock.NewManual(txnT0)
	ts := newTable(clk)
	tx, _ := ts.Enter(stmt(1, true), func() Resource { return &fakeResource{} })
	clk.Advance(2 * time.Second)
	ts.Leave(tx)
	clk.Advance(3 * time.Second)
	if idle := ts.Idle(clk.Now()); len(idle) != 1 || idle[0].Active != 2*time.Second || idle[0].Open != 5*time.Second {
		t.Fatalf("between statements: %+v, want one idle, active 2s of 5s open", idle)
	}
	if _, err := ts.Enter(stmt(1, false), nil); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Second)
	rep, ok := ts.Report(tx, clk.Now())
	if !ok || rep.Idle || rep.Active != 3*time.Second || rep.Open != 6*time.Second || !rep.Expires.Equal(txnT0.Add(DefaultTxnLifetime)) {
		t.Fatalf("during a statement: %+v, want active 3s of 6s open, expiring a lifetime after the start", rep)
	}
	if idle := ts.Idle(clk.Now()); len(idle) != 0 {
		t.Fatalf("during a statement Idle lists %+v", idle)
	}
	ts.Leave(tx)
	ts.Fail(tx)
	if _, ok := ts.Report(tx, clk.Now()); ok || len(ts.Idle(clk.Now())) != 0 {
		t.Fatal("an aborted transaction is still reported")
	}
}
