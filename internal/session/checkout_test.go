package session

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// TestCheckoutsSerializeASession: operations of one session run one at
// a time, another session's alongside; a waiter whose context ends
// gives up; nothing stays held.
func TestCheckoutsSerializeASession(t *testing.T) {
	var c Checkouts
	ctx := context.Background()
	release, err := c.CheckOut(ctx, []byte("a"))
	if err != nil {
		t.Fatal(err)
	}
	other, err := c.CheckOut(ctx, []byte("b")) // another session: no wait
	if err != nil {
		t.Fatal(err)
	}
	other()

	var running, overlaps atomic.Int32
	done := make(chan struct{})
	for range 4 {
		go func() {
			defer func() { done <- struct{}{} }()
			r, err := c.CheckOut(ctx, []byte("a"))
			if err != nil {
				t.Error(err)
				return
			}
			if running.Add(1) > 1 {
				overlaps.Add(1)
			}
			time.Sleep(time.Millisecond)
			running.Add(-1)
			r()
		}()
	}
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if _, err := c.CheckOut(short, []byte("a")); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a waiter past its deadline: %v", err)
	}
	if running.Load() != 0 {
		t.Fatal("an operation ran while the session was held")
	}
	release()
	for range 4 {
		<-done
	}
	if overlaps.Load() != 0 {
		t.Fatalf("%d operations of one session overlapped", overlaps.Load())
	}
	if n := c.Held(); n != 0 {
		t.Fatalf("%d sessions still held", n)
	}
}
