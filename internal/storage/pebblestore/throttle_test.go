package pebblestore

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// TestRepeatingErrorLoggedOnceWithCount: 50 000 failures of one kind within
// a few seconds (a flush retried without file descriptors) make one log
// line, and the next line after logEvery carries the count.
func TestRepeatingErrorLoggedOnceWithCount(t *testing.T) {
	var out bytes.Buffer
	now := time.Unix(1000, 0)
	repeats := newThrottledLog(slog.New(slog.NewTextHandler(&out, nil)), func() time.Time { return now })
	l := pebbleLogger{log: slog.New(slog.NewTextHandler(&out, nil)), repeats: repeats}
	for i := range 50_000 {
		l.Errorf("[JOB %d] flush error: %+v", i, errors.New("open 000123.sst: too many open files"))
		now = now.Add(100 * time.Microsecond)
	}
	if n := strings.Count(out.String(), "\n"); n != 1 {
		t.Fatalf("%d lines for 50 000 repeats in 5s:\n%.500s", n, out.String())
	}
	now = now.Add(logEvery)
	l.Errorf("[JOB %d] flush error: %+v", 50_000, errors.New("open 000124.sst: too many open files"))
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[1], "repeated=49999") {
		t.Fatalf("after %v: %q", logEvery, lines)
	}
}
