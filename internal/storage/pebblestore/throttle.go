package pebblestore

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"
)

// logEvery is how often one kind of storage error is logged while it keeps
// repeating: a flush that fails for want of file descriptors or space is
// retried at once, tens of thousands of times a second.
const logEvery = 10 * time.Second

// throttledLog logs the first of a kind of message, then at most one per
// logEvery with the count of those left out in between.
type throttledLog struct {
	log *slog.Logger
	now func() time.Time

	mu    sync.Mutex
	kinds map[string]*repeat
}

type repeat struct {
	logged  time.Time
	dropped int
}

func newThrottledLog(log *slog.Logger, now func() time.Time) *throttledLog {
	return &throttledLog{log: log, now: now, kinds: map[string]*repeat{}}
}

// Log logs msg at level under kind unless kind was logged within logEvery.
func (t *throttledLog) Log(level slog.Level, kind, msg string, args ...any) {
	now := t.now()
	t.mu.Lock()
	r := t.kinds[kind]
	if r == nil {
		r = &repeat{}
		t.kinds[kind] = r
	}
	if !r.logged.IsZero() && now.Sub(r.logged) < logEvery {
		r.dropped++
		t.mu.Unlock()
		return
	}
	dropped := r.dropped
	r.logged, r.dropped = now, 0
	t.mu.Unlock()
	if dropped > 0 {
		args = append(args, "repeated", dropped, "within", logEvery)
	}
	t.log.Log(context.Background(), level, msg, args...)
}

// withoutStacks turns pebble's %+v (which prints stack traces) into %v.
func withoutStacks(format string) string {
	return strings.ReplaceAll(format, "%+v", "%v")
}
