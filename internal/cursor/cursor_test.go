package cursor

import (
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/clock"
)

type fakeSource struct{ closed bool }

func (s *fakeSource) Next() (bson.D, bool, error) { return nil, false, nil }
func (s *fakeSource) Close() error                { s.closed = true; return nil }

// Idle cursors are reaped after the timeout (10 minutes by default, as
// MongoDB's cursorTimeoutMillis); use restarts the clock, and a cursor in
// use by a getMore is never reaped.
func TestReapIdleAfterTimeout(t *testing.T) {
	clk := clock.NewManual(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	r := NewRegistry(clk, 0)
	idle, used, busy := &fakeSource{}, &fakeSource{}, &fakeSource{}
	r.Add("d.c", idle, nil)
	u := r.Add("d.c", used, nil)
	b := r.Add("d.c", busy, nil)
	if _, ok := r.Checkout(b.ID); !ok {
		t.Fatal("checkout")
	}
	clk.Advance(6 * time.Minute)
	c, ok := r.Checkout(u.ID)
	if !ok {
		t.Fatal("checkout")
	}
	r.Checkin(c)
	if n := r.ReapIdle(); n != 0 {
		t.Fatalf("reaped %d cursors before the timeout", n)
	}
	clk.Advance(DefaultIdleTimeout - 6*time.Minute + time.Second)
	if n := r.ReapIdle(); n != 1 || !idle.closed || used.closed || busy.closed {
		t.Fatalf("reaped %d; closed idle %v used %v busy %v", n, idle.closed, used.closed, busy.closed)
	}
	clk.Advance(6 * time.Minute)
	if n := r.ReapIdle(); n != 1 || !used.closed || busy.closed {
		t.Fatalf("second reap: %d; used closed %v, busy closed %v", n, used.closed, busy.closed)
	}
	if r.TimedOut() != 2 || r.Open() != 1 {
		t.Fatalf("timedOut %d open %d", r.TimedOut(), r.Open())
	}
}
