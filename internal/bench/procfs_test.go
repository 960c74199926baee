package bench

import (
	"context"
	"os"
	"testing"
	"time"
)

func TestProcfsSelf(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	if _, err := cpuTime(os.Getpid()); err != nil {
		t.Fatal(err)
	}
	rss, err := rssBytes(os.Getpid())
	if err != nil || rss <= 0 {
		t.Fatalf("rss %d, %v", rss, err)
	}
}

// TestWaitQuiet: a process spinning a core is never quiet, so the wait
// runs to its limit; once it stops, the next window ends the wait.
func TestWaitQuiet(t *testing.T) {
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	go func() {
		for ctx.Err() == nil { // spin: a core's worth of CPU
		}
	}()
	limit := 3 * quietWindow
	waited, err := waitQuiet(ctx, os.Getpid(), limit)
	if err != nil || waited < limit {
		t.Fatalf("a busy process was quiet after %s (%v), want the limit %s", waited, err, limit)
	}
	stop()
	waited, err = waitQuiet(context.Background(), os.Getpid(), time.Minute)
	if err != nil || waited >= 3*quietWindow {
		t.Fatalf("an idle process was waited on for %s (%v)", waited, err)
	}
}
