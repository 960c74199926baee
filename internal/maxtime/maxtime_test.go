package maxtime

import (
	"context"
	"errors"
	"testing"
	"time"
)

// withDeadline returns parent with a deadline d from now, and the func
// that ends it, as the command layer makes and releases it.
func withDeadline(parent context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	c := New(parent, d, nil)
	return c, c.Release
}

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// A command that ends before its deadline, and that nothing waited on,
// never makes the timer; Err and Done agree at every step.
func TestMaxTimeCtxWithoutWaiting(t *testing.T) {
	ctx, release := withDeadline(context.Background(), time.Hour)
	c := ctx.(*Context)
	if err := ctx.Err(); err != nil {
		t.Fatalf("Err before the deadline = %v", err)
	}
	if d, ok := ctx.Deadline(); !ok || time.Until(d) < 59*time.Minute {
		t.Errorf("Deadline() = %v, %v; want about an hour from now", d, ok)
	}
	release()
	if c.timed != nil {
		t.Error("the timer's context was made though nothing waited")
	}
	if err := ctx.Err(); !errors.Is(err, context.Canceled) {
		t.Errorf("Err after release = %v, want Canceled", err)
	}
	if !closed(ctx.Done()) {
		t.Error("Done still open after release")
	}
}

// Past the deadline Err is DeadlineExceeded and Done is closed, whether
// something waited first or not, and release keeps the deadline's error.
func TestMaxTimeCtxDeadline(t *testing.T) {
	for _, waitFirst := range []bool{false, true} {
		ctx, release := withDeadline(context.Background(), 20*time.Millisecond)
		if waitFirst {
			select {
			case <-ctx.Done():
			case <-time.After(5 * time.Second):
				t.Fatal("Done did not close at the deadline")
			}
		} else {
			time.Sleep(25 * time.Millisecond)
		}
		if err := ctx.Err(); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("waitFirst=%v: Err = %v, want DeadlineExceeded", waitFirst, err)
		}
		if !closed(ctx.Done()) {
			t.Errorf("waitFirst=%v: Err reports the deadline but Done is open", waitFirst)
		}
		release()
		if err := ctx.Err(); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("waitFirst=%v: Err after release = %v, want DeadlineExceeded still", waitFirst, err)
		}
	}
}

// The parent's end (killOp, a disconnect) ends it with the parent's error
// and cause, and wakes a waiter.
func TestMaxTimeCtxParentEnds(t *testing.T) {
	cause := errors.New("killed")
	parent, cancel := context.WithCancelCause(context.Background())
	ctx, release := withDeadline(parent, time.Hour)
	defer release()
	woke := make(chan struct{})
	go func() { <-ctx.Done(); close(woke) }()
	cancel(cause)
	select {
	case <-woke:
	case <-time.After(5 * time.Second):
		t.Fatal("a waiter on Done did not wake when the parent ended")
	}
	if err := ctx.Err(); !errors.Is(err, context.Canceled) {
		t.Errorf("Err = %v, want Canceled", err)
	}
	if got := context.Cause(ctx); !errors.Is(got, cause) {
		t.Errorf("Cause = %v, want the parent's", got)
	}
}

// Children and context.AfterFunc see the deadline as they would
// WithTimeout's, and a child released with the command does not outlive it.
func TestMaxTimeCtxChildrenAndAfterFunc(t *testing.T) {
	ctx, release := withDeadline(context.Background(), 20*time.Millisecond)
	defer release()
	child, cancelChild := context.WithCancelCause(ctx)
	defer cancelChild(nil)
	ran := make(chan struct{})
	context.AfterFunc(ctx, func() { close(ran) })
	for name, ch := range map[string]<-chan struct{}{"child": child.Done(), "AfterFunc": ran} {
		select {
		case <-ch:
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: not ended at the deadline", name)
		}
	}
	if err := child.Err(); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("child Err = %v, want DeadlineExceeded", err)
	}

	ctx2, release2 := withDeadline(context.Background(), time.Hour)
	child2, cancel2 := context.WithCancel(ctx2)
	defer cancel2()
	release2()
	select {
	case <-child2.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("a child outlived the command's release")
	}
}

// BenchmarkErr is a scan's check of its command's maxTimeMS between
// documents, and the command's Release: a clock reading each.
func BenchmarkErr(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var c Context
	New(ctx, time.Minute, &c)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if c.Err() != nil {
			b.Fatal("ended early")
		}
	}
}

func TestNewAtCountsFromTheStartGiven(t *testing.T) {
	start := time.Now().Add(-time.Hour)
	c := NewAt(context.Background(), start, time.Minute, nil)
	defer c.Release()
	if d, ok := c.Deadline(); !ok || !d.Equal(start.Add(time.Minute)) {
		t.Fatalf("deadline %v, want a minute after the start given", d)
	}
	if !errors.Is(c.Err(), context.DeadlineExceeded) {
		t.Fatalf("a minute after an hour ago has passed: Err %v", c.Err())
	}
	z := NewAt(context.Background(), time.Time{}, time.Minute, nil)
	defer z.Release()
	if d, _ := z.Deadline(); time.Until(d) <= 0 || time.Until(d) > time.Minute || z.Err() != nil {
		t.Fatalf("zero start reads the clock: deadline %v", d)
	}
}
