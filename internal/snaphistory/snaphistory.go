// Package snaphistory holds the storage snapshots that snapshot reads
// outside transactions took (readConcern snapshot, with or without
// atClusterTime; docs/design/0015), by cluster time.
//
// A member's state at a cluster time is a storage snapshot taken while
// that time was the last one applied. A History keeps the snapshots such
// reads took, by that time, for the history window: a later read at the
// same atClusterTime (a snapshot session's next read, a cursor's getMore)
// reads the same data. It keeps the snapshots asked for, not every
// version, so an atClusterTime no snapshot read returned, older than the
// time applied now, is too old.
package snaphistory

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mayflydb/mayfly/internal/clock"
	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/storage"
)

// DefaultSnapshotWindow is mongod's minSnapshotHistoryWindowInSeconds
// default.
const DefaultSnapshotWindow = 300 * time.Second

// maxHeldSnapshots bounds the snapshots held at once; past it the oldest
// goes first, whatever the window (each one pins the versions it reads).
const maxHeldSnapshots = 256

// takeAttempts bounds the tries to take a snapshot while no write applies.
const takeAttempts = 8

// ErrSnapshotReleased is a read of a snapshot the history let go.
var ErrSnapshotReleased = errors.New("snaphistory: snapshot released from the history window")

// ErrSnapshotBusy is returned when writes kept applying while a snapshot
// was taken, so its cluster time is not known.
var ErrSnapshotBusy = errors.New("snaphistory: writes kept applying while taking a snapshot")

// History holds snapshots by cluster time (a timestamp's t<<32|i).
type History struct {
	store  *docstore.Store
	clock  clock.Clock
	window atomic.Int64 // a time.Duration
	mu     sync.Mutex
	held   map[uint64]*heldSnapshot
}

// New keeps snapshots of s for DefaultSnapshotWindow.
func New(s *docstore.Store, c clock.Clock) *History {
	h := &History{store: s, clock: c, held: map[uint64]*heldSnapshot{}}
	h.window.Store(int64(DefaultSnapshotWindow))
	return h
}

// Window is minSnapshotHistoryWindowInSeconds as a duration.
func (h *History) Window() time.Duration { return time.Duration(h.window.Load()) }

// SetWindow changes the window; held snapshots older than it go at the
// next read.
func (h *History) SetWindow(d time.Duration) { h.window.Store(int64(d)) }

// Latest returns a read of the state applied now and its cluster time:
// the snapshot held for that time, or a new one. appliedTime is read
// before and after taking it; a snapshot taken while a write applied is
// dropped and taken again.
func (h *History) Latest(appliedTime func() uint64) (*docstore.Txn, uint64, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.sweepLocked()
	for range takeAttempts {
		ts := appliedTime()
		if held, ok := h.held[ts]; ok {
			return h.store.ReadTxn(held), ts, nil
		}
		snap := h.store.Engine().NewSnapshot()
		if appliedTime() != ts {
			_ = snap.Close()
			continue
		}
		held := &heldSnapshot{snap: snap, taken: h.clock.Now()}
		h.held[ts] = held
		h.evictLocked()
		return h.store.ReadTxn(held), ts, nil
	}
	return nil, 0, ErrSnapshotBusy
}

// At returns a read of the snapshot held for cluster time ts, if any.
func (h *History) At(ts uint64) (*docstore.Txn, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.sweepLocked()
	held, ok := h.held[ts]
	if !ok {
		return nil, false
	}
	return h.store.ReadTxn(held), true
}

// Held is how many snapshots the history holds.
func (h *History) Held() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.held)
}

// Close releases every snapshot.
func (h *History) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for ts, held := range h.held {
		held.release()
		delete(h.held, ts)
	}
}

func (h *History) sweepLocked() {
	cutoff := h.clock.Now().Add(-h.Window())
	for ts, held := range h.held {
		if held.taken.Before(cutoff) {
			held.release()
			delete(h.held, ts)
		}
	}
}

func (h *History) evictLocked() {
	for len(h.held) > maxHeldSnapshots {
		oldest, first := uint64(0), true
		for ts := range h.held {
			if first || ts < oldest {
				oldest, first = ts, false
			}
		}
		h.held[oldest].release()
		delete(h.held, oldest)
	}
}

// heldSnapshot is a storage snapshot the history owns: readers' Close
// does nothing, and a read after the history released it fails.
type heldSnapshot struct {
	mu    sync.RWMutex
	snap  storage.Snapshot
	taken time.Time
}

var _ storage.Snapshot = (*heldSnapshot)(nil)

func (hs *heldSnapshot) Get(key []byte) ([]byte, error) {
	hs.mu.RLock()
	defer hs.mu.RUnlock()
	if hs.snap == nil {
		return nil, ErrSnapshotReleased
	}
	return hs.snap.Get(key)
}

func (hs *heldSnapshot) NewIter(lower, upper []byte) (storage.Iterator, error) {
	hs.mu.RLock()
	defer hs.mu.RUnlock()
	if hs.snap == nil {
		return nil, ErrSnapshotReleased
	}
	return hs.snap.NewIter(lower, upper)
}

// Close is a reader's: the history closes the snapshot itself.
func (hs *heldSnapshot) Close() error { return nil }

func (hs *heldSnapshot) release() {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	if hs.snap != nil {
		_ = hs.snap.Close()
		hs.snap = nil
	}
}
