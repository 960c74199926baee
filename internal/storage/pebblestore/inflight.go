package pebblestore

import (
	"sync"
	"sync/atomic"
	"time"
)

// commitEpochs tells when every commit that began before a moment has
// ended: a value filter made at that moment (rescache/filter.go) is seen
// by every commit after it, and those before must have applied before the
// filter's scan begins. A commit enters the current epoch before its
// cache invalidation and leaves after its settle; drain moves the epoch
// on and waits until the previous one is empty.
type commitEpochs struct {
	mu    sync.Mutex // one drain at a time
	epoch atomic.Uint64
	live  [2]atomic.Int64
}

// enter counts a commit in the current epoch, which it returns for leave.
func (e *commitEpochs) enter() uint64 {
	for {
		n := e.epoch.Load()
		e.live[n&1].Add(1)
		if e.epoch.Load() == n {
			return n // counted before any drain moved past n
		}
		e.live[n&1].Add(-1)
	}
}

func (e *commitEpochs) leave(n uint64) { e.live[n&1].Add(-1) }

// drainPoll is how often drain looks at an epoch's count, and
// drainPolls how often before it gives up: a commit takes microseconds,
// one waiting for its sync milliseconds.
const (
	drainPoll  = 200 * time.Microsecond
	drainPolls = 5000
)

// drain waits until every commit that entered before the call has left,
// reporting false when some has not in time or stop closed. Commits left
// over from an earlier drain that gave up are in the epoch before the
// current one: they are waited for before the epoch moves on.
func (e *commitEpochs) drain(stop <-chan struct{}) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	cur := e.epoch.Load()
	if !e.wait(&e.live[(cur+1)&1], stop) {
		return false
	}
	e.epoch.Store(cur + 1)
	return e.wait(&e.live[cur&1], stop)
}

func (e *commitEpochs) wait(live *atomic.Int64, stop <-chan struct{}) bool {
	for i := 0; live.Load() != 0; i++ {
		if i == drainPolls {
			return false
		}
		select {
		case <-stop:
			return false
		case <-time.After(drainPoll):
		}
	}
	return true
}
