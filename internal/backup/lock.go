// Package backup holds the two ways to copy the data directory: fsync's
// lock (db.fsyncLock()), under which commands that write wait, and so does
// the TTL monitor, while the files are copied as they are; and a
// checkpoint, a consistent copy written while writes go on (mayfly
// backup). The lock counts the writers waiting, which
// serverStatus.globalLock reports as its queue.
package backup

import (
	"context"
	"sync"
	"sync/atomic"
)

// Lock is db.fsyncLock()'s lock. It nests, as mongod's does: each lock
// needs its unlock.
type Lock struct {
	mu       sync.Mutex
	count    int64
	unlocked chan struct{} // closed while count is 0
	waiting  atomic.Int64
}

// NewLock returns an unlocked Lock.
func NewLock() *Lock {
	l := &Lock{unlocked: make(chan struct{})}
	close(l.unlocked)
	return l
}

// Lock takes the lock once more and returns how many times it is held.
func (l *Lock) Lock() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.count == 0 {
		l.unlocked = make(chan struct{})
	}
	l.count++
	return l.count
}

// Unlock releases one hold; ok is false when the lock was not held.
func (l *Lock) Unlock() (left int64, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.count == 0 {
		return 0, false
	}
	l.count--
	if l.count == 0 {
		close(l.unlocked)
	}
	return l.count, true
}

// Release drops every hold, at shutdown.
func (l *Lock) Release() {
	for {
		if _, ok := l.Unlock(); !ok {
			return
		}
	}
}

// Count is how many times the lock is held.
func (l *Lock) Count() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.count
}

// Wait returns once the lock is not held, or ctx's error.
func (l *Lock) Wait(ctx context.Context) error {
	l.mu.Lock()
	ch := l.unlocked
	l.mu.Unlock()
	select {
	case <-ch:
		return nil
	default:
	}
	l.waiting.Add(1)
	defer l.waiting.Add(-1)
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Waiting is how many writers wait for the lock now.
func (l *Lock) Waiting() int64 { return l.waiting.Load() }
