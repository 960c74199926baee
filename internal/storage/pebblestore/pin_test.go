package pebblestore

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/mayflydb/mayfly/internal/storage"
)

// versionReaders are the readers the store hands out that hold an LSM
// version from their open to their close: its iterators, on the store
// and on a snapshot. (A Get holds one only within the call.)
var versionReaders = map[string]func(t *testing.T, s *Store) (close func() error){
	"store iterator": func(t *testing.T, s *Store) func() error {
		it, err := s.NewIter(nil, nil)
		mustDo(t, err)
		return positioned(t, it).Close
	},
	"snapshot iterator": func(t *testing.T, s *Store) func() error {
		snap := s.NewSnapshot()
		it, err := snap.NewIter(nil, nil)
		mustDo(t, err)
		positioned(t, it)
		return func() error { return errors.Join(it.Close(), snap.Close()) }
	},
}

func positioned(t *testing.T, it storage.Iterator) storage.Iterator {
	t.Helper()
	if !it.First() {
		t.Fatalf("iterator over a written store is empty: %v", it.Error())
	}
	return it
}

// writeTable writes keys k0000–k0299 with values of round and flushes them
// into a table, then waits until the pin loop has pinned the version that
// holds it.
func writeTable(t *testing.T, s *Store, round int) {
	t.Helper()
	pinned := s.pinsTaken.Load()
	for i := range 300 {
		mustDo(t, set(t, s, false, fmt.Sprintf("k%04d", i), fmt.Sprintf("value %d", round)))
	}
	mustDo(t, s.Flush())
	waitPinned(t, s, pinned)
}

// waitPinned waits until the pin loop pinned a version after the first
// `after` pins.
func waitPinned(t *testing.T, s *Store, after int64) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); s.pinsTaken.Load() <= after; {
		if time.Now().After(deadline) {
			t.Fatalf("the pin loop pinned no version after the %d-th in 10 s", after)
		}
		time.Sleep(time.Millisecond)
	}
}

func zombieTables(t *testing.T, s *Store) int64 {
	return s.dbT(t).Metrics().Table.ZombieCount
}

// A reader open across the compaction that replaced its tables does not
// drop the last reference to them when it closes, for every kind of
// reader: the store's pin does, once its hold is over, so pebble's cleanup
// of the tables (evicting their blocks from the cache, yielding every five)
// runs in the pin loop, not in a request or the TTL monitor.
func TestReplacedVersionsAreReleasedByThePins(t *testing.T) {
	for name, open := range versionReaders {
		t.Run(name, func(t *testing.T) {
			s := openT(t, Options{Dir: t.TempDir(), SyncInterval: -1, PinHold: time.Hour})
			writeTable(t, s, 0)
			closeReader := open(t, s)
			writeTable(t, s, 1)
			pinned := s.pinsTaken.Load()
			mustDo(t, s.dbT(t).Compact(context.Background(), []byte("k"), []byte("l"), true))
			waitPinned(t, s, pinned)
			if n := zombieTables(t, s); n == 0 {
				t.Fatal("no zombie table with a reader open across the compaction: it replaced nothing the reader held")
			}
			mustDo(t, closeReader())
			if n := zombieTables(t, s); n == 0 {
				t.Fatal("the reader's close dropped the last reference to the replaced tables: their cleanup ran in the reader")
			}
			mustDo(t, s.Close())
		})
	}
}

// Once their hold is over, the pins let the replaced tables go.
func TestPinsReleaseAfterTheirHold(t *testing.T) {
	s := openT(t, Options{Dir: t.TempDir(), SyncInterval: -1, PinHold: 10 * time.Millisecond})
	defer s.Close()
	writeTable(t, s, 0)
	writeTable(t, s, 1)
	mustDo(t, s.dbT(t).Compact(context.Background(), []byte("k"), []byte("l"), true))
	for deadline := time.Now().Add(10 * time.Second); zombieTables(t, s) > 0; {
		if time.Now().After(deadline) {
			t.Fatalf("%d zombie tables 10 s after the compaction, with a hold of 10 ms", zombieTables(t, s))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitPinsReleased waits until the pin loop holds only the current
// version, pinned after this call began, and every replaced one's hold is
// over.
func waitPinsReleased(t *testing.T, s *Store) {
	t.Helper()
	pinned := s.pinsTaken.Load()
	s.versionInstalled(false)
	waitPinned(t, s, pinned)
	open := func() int64 { return s.pinsTaken.Load() - s.pinsClosed.Load() }
	for deadline := time.Now().Add(10 * time.Second); open() > 1; {
		if time.Now().After(deadline) {
			t.Fatalf("%d pins still open 10 s on", open())
		}
		time.Sleep(time.Millisecond)
	}
}

// closeBlocker is a pin whose close blocks until it is let go, as a
// release that does a large cleanup under load does.
type closeBlocker struct {
	storage.Iterator
	closing chan struct{}
	letGo   chan struct{}
}

func (b closeBlocker) Close() error {
	close(b.closing)
	<-b.letGo
	return nil
}

// The pin loop hands a pin whose hold is over to the release loop and
// goes on: a close that does pebble's cleanup does not delay the pin of a
// version installed meanwhile.
func TestReleasesDoNotHoldThePinLoop(t *testing.T) {
	s := openT(t, Options{Dir: t.TempDir(), SyncInterval: -1})
	defer s.Close()
	blocker := closeBlocker{closing: make(chan struct{}), letGo: make(chan struct{})}
	defer close(blocker.letGo)
	now := time.Now()
	handed := make(chan []heldPin)
	go func() { handed <- s.releaseDue([]heldPin{{it: blocker, until: now}}, now) }()
	select {
	case kept := <-handed:
		if len(kept) != 0 {
			t.Fatalf("a pin whose hold is over was kept: %d held", len(kept))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("releaseDue waited 10 s for the pin's close")
	}
	select {
	case <-blocker.closing:
	case <-time.After(10 * time.Second):
		t.Fatal("the release loop did not close the pin in 10 s")
	}
	pinned := s.pinsTaken.Load()
	s.versionInstalled(false)
	waitPinned(t, s, pinned)
}
