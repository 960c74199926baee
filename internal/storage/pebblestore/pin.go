package pebblestore

import (
	"time"

	"github.com/mayflydb/mayfly/internal/storage"
)

// Whoever drops the last reference to an LSM version that a compaction
// replaced does pebble's cleanup of its tables: it evicts their blocks
// from the block cache, yielding the processor every five blocks. Under
// load each yield waits behind every runnable goroutine, so a request or
// the TTL monitor that happened to close the last iterator on such a
// version stalled for hundreds of milliseconds doing work that is not its
// own (docs/design/0002, "Version pins"). The store therefore holds every
// version itself, from just after it is installed until Options.PinHold
// after a compaction replaced it; by then the readers that opened on it
// have closed, so the last reference, and the cleanup, are nearly always
// the pin loop's, in the background. A version a flush replaced is let go
// at once: its tables are all in the next one, so releasing it cleans up
// nothing, and holding it would hold the memtables it reads. The pin loop
// hands the pins it lets go to a release loop, which does the cleanup:
// under load one release took 400 ms, and a version installed meanwhile
// would have waited that long for its pin.

// defaultPinHold is how long a version a compaction replaced stays
// pinned: longer than a request's reads take under load, short enough
// that the memtables it holds are freed soon after.
const defaultPinHold = 100 * time.Millisecond

// heldPin is an iterator pinning one version. replaced is
// Store.tablesReplaced when it was pinned; until is zero while that
// version is the newest pinned.
type heldPin struct {
	it       storage.Iterator
	replaced int64
	until    time.Time
}

// versionInstalled tells the pin loop that pebble installed a new version,
// one that removed tables from the last (removed: a compaction, an
// ingestion, a rewrite) or not (a flush). It is called from pebble's event
// listener, with pebble's DB mutex held, so it never blocks.
func (s *Store) versionInstalled(removed bool) {
	if removed {
		s.tablesReplaced.Add(1)
	}
	select {
	case s.installed <- struct{}{}:
	default: // a signal is pending already; one pin serves both
	}
}

// releaseBacklog bounds the pins waiting for the release loop. One is let
// go per version installed, so the bound is reached only while a release
// takes longer than dozens of flushes; the pin loop then closes the pin
// itself.
const releaseBacklog = 64

// pinLoop pins each new version and lets the replaced ones go once their
// hold is over.
func (s *Store) pinLoop() {
	defer s.bg.Done()
	// At Close the store's registry closes the pins still held or queued,
	// as it closes every iterator.
	held := s.pinNewest(nil, time.Now())
	timer := time.NewTimer(s.pinHold)
	defer timer.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-s.installed:
			held = s.pinNewest(held, time.Now())
		case <-timer.C:
		}
		held = s.releaseDue(held, time.Now())
		if wait, ok := nextRelease(held, time.Now()); ok {
			timer.Reset(wait)
		} else {
			timer.Stop() // idle: nothing to release until a version is replaced
		}
	}
}

// pinNewest pins the version now current, and ends the newest pin held
// before it: at once if only flushes followed it, else after the hold.
func (s *Store) pinNewest(held []heldPin, now time.Time) []heldPin {
	it := s.pinCurrent()
	if it == nil {
		return held
	}
	pin := heldPin{it: it, replaced: s.tablesReplaced.Load()}
	s.pinsTaken.Add(1)
	if n := len(held); n > 0 && held[n-1].until.IsZero() {
		held[n-1].until = now
		if held[n-1].replaced != pin.replaced {
			held[n-1].until = now.Add(s.pinHold)
		}
	}
	return append(held, pin)
}

// pinCurrent opens an iterator on the current version, or nil when there
// is no DB to pin (closed, or reopening).
func (s *Store) pinCurrent() storage.Iterator {
	s.mu.RLock()
	defer s.mu.RUnlock()
	db, err := s.dbLocked()
	if err != nil {
		return nil
	}
	// A compaction reports its end before it installs its version, both
	// under pebble's DB mutex; a snapshot's open takes that mutex, so the
	// iterator below reads the version the compaction installed.
	_ = db.NewSnapshot().Close()
	it, err := s.newIter(db, nil, nil)
	if err != nil {
		return nil
	}
	return it
}

// releaseDue hands the pins whose hold is over to the release loop.
func (s *Store) releaseDue(held []heldPin, now time.Time) []heldPin {
	kept := held[:0]
	for _, h := range held {
		if h.until.IsZero() || now.Before(h.until) {
			kept = append(kept, h)
			continue
		}
		select {
		case s.releases <- h.it:
		default:
			s.closePin(h.it)
		}
	}
	clear(held[len(kept):])
	return kept
}

// releaseLoop closes the pins the pin loop let go. Closing one may drop
// the last reference to its version and do the cleanup of its tables,
// which is why it happens here.
func (s *Store) releaseLoop() {
	defer s.bg.Done()
	for {
		select {
		case it := <-s.releases:
			s.closePin(it)
		case <-s.stop:
			return
		}
	}
}

// closePin closes a pin and counts it.
func (s *Store) closePin(it storage.Iterator) {
	_ = it.Close() // invalidated by a reopen already: a no-op
	s.pinsClosed.Add(1)
}

// nextRelease is the time until the earliest hold in held ends, if one
// is running.
func nextRelease(held []heldPin, now time.Time) (wait time.Duration, ok bool) {
	for _, h := range held {
		if !h.until.IsZero() && (!ok || h.until.Sub(now) < wait) {
			wait, ok = max(h.until.Sub(now), 0), true
		}
	}
	return wait, ok
}
