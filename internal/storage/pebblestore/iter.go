package pebblestore

import (
	"bytes"
	"fmt"
	"sync"

	"github.com/cockroachdb/pebble/v2"
	"github.com/mayflydb/mayfly/internal/storage"
)

// registry tracks open iterators and snapshots so Close and a recovery
// reopen can release them before pebble frees the memory they read from.
type registry struct {
	mu     sync.Mutex
	closed bool
	items  map[forceCloser]struct{}
}

// forceCloser is an iterator or snapshot; after forceClose its calls fail
// with err.
type forceCloser interface{ forceClose(err error) }

// add registers c, or reports false once the store is closing.
func (r *registry) add(c forceCloser) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false
	}
	if r.items == nil {
		r.items = make(map[forceCloser]struct{})
	}
	r.items[c] = struct{}{}
	return true
}

func (r *registry) remove(c forceCloser) {
	r.mu.Lock()
	delete(r.items, c)
	r.mu.Unlock()
}

// closeAll force-closes everything registered, with err, and refuses new
// entries.
func (r *registry) closeAll(err error) {
	r.forceCloseAll(true, err)
}

// invalidateAll force-closes everything registered, with err, and keeps
// taking new entries: the store lives on with a new pebble DB.
func (r *registry) invalidateAll(err error) {
	r.forceCloseAll(false, err)
}

// forceCloseAll closes items outside r.mu: their own locks are taken first
// elsewhere.
func (r *registry) forceCloseAll(refuseNew bool, err error) {
	r.mu.Lock()
	r.closed = r.closed || refuseNew
	items := r.items
	r.items = nil
	r.mu.Unlock()
	for c := range items {
		c.forceClose(err)
	}
}

// newIter opens a registered iterator over [lower, upper) on a pebble reader
// (the DB or a snapshot).
func (s *Store) newIter(r pebble.Reader, lower, upper []byte) (storage.Iterator, error) {
	if lower != nil && upper != nil && bytes.Compare(lower, upper) > 0 {
		upper = lower // an inverted range is empty; pebble would reject it
	}
	// pebble copies the bounds, so callers may reuse their buffers.
	pi, err := r.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return nil, fmt.Errorf("pebblestore: new iterator: %w", err)
	}
	it := &iterator{s: s, pi: pi}
	if !s.live.add(it) {
		_ = pi.Close()
		return nil, storage.ErrClosed
	}
	return it, nil
}

// iterator is a storage.Iterator. Its mutex is uncontended in normal use;
// it only orders calls against a concurrent Store.Close.
type iterator struct {
	s      *Store
	mu     sync.Mutex
	pi     *pebble.Iterator // nil once closed
	closed error            // returned by Error once pi is nil
	// key is pi's key where the last move left it (nil: not positioned),
	// taken under that move's lock: a TTL pass asks an entry's key four
	// times, and each lock costs as much as a step. Only the iterator's
	// user reads and writes it. A forceClose after the move leaves it,
	// as it would leave a key Key had returned just before; the next
	// move fails and clears it.
	key []byte
}

func (it *iterator) move(f func(*pebble.Iterator) bool) bool {
	it.mu.Lock()
	defer it.mu.Unlock()
	ok := it.pi != nil && f(it.pi)
	it.key = nil
	if ok {
		it.key = it.pi.Key()
	}
	return ok
}

func (it *iterator) First() bool { return it.move((*pebble.Iterator).First) }
func (it *iterator) Last() bool  { return it.move((*pebble.Iterator).Last) }
func (it *iterator) Next() bool  { return it.move((*pebble.Iterator).Next) }
func (it *iterator) Prev() bool  { return it.move((*pebble.Iterator).Prev) }
func (it *iterator) Valid() bool { return it.move((*pebble.Iterator).Valid) }

func (it *iterator) SeekGE(key []byte) bool {
	return it.move(func(pi *pebble.Iterator) bool { return pi.SeekGE(key) })
}

func (it *iterator) SeekLT(key []byte) bool {
	return it.move(func(pi *pebble.Iterator) bool { return pi.SeekLT(key) })
}

func (it *iterator) Key() []byte { return it.key }

func (it *iterator) Value() []byte {
	it.mu.Lock()
	defer it.mu.Unlock()
	if it.pi == nil || !it.pi.Valid() {
		return nil
	}
	v, err := it.pi.ValueAndErr() // an error also invalidates pi and shows in Error
	if err != nil {
		it.key = nil
		return nil
	}
	return v
}

func (it *iterator) Error() error {
	it.mu.Lock()
	defer it.mu.Unlock()
	if it.pi == nil {
		return it.closed
	}
	if err := it.pi.Error(); err != nil {
		return fmt.Errorf("pebblestore: iterator: %w", err)
	}
	return nil
}

// Close implements storage.Iterator; closing twice is harmless.
func (it *iterator) Close() error {
	it.mu.Lock()
	defer it.mu.Unlock()
	if it.pi == nil {
		return nil
	}
	err := it.pi.Close()
	it.pi, it.closed, it.key = nil, storage.ErrClosed, nil
	it.s.live.remove(it)
	if err != nil {
		return fmt.Errorf("pebblestore: iterator close: %w", err)
	}
	return nil
}

func (it *iterator) forceClose(err error) {
	it.mu.Lock()
	defer it.mu.Unlock()
	if it.pi != nil {
		_ = it.pi.Close()
		it.pi, it.closed = nil, err
	}
}

// snapshot is a storage.Snapshot, safe for concurrent use.
type snapshot struct {
	s   *Store
	mu  sync.Mutex
	ps  *pebble.Snapshot // nil once closed
	err error            // what reads return once ps is nil; ErrClosed if unset
	// borrowed: ps is the store's durable view, closed by the store.
	borrowed bool
}

// release lets go of ps; sn.mu is held or sn is not shared yet.
func (sn *snapshot) release() error {
	var err error
	if sn.ps != nil && !sn.borrowed {
		err = sn.ps.Close()
	}
	sn.ps = nil
	return err
}

// open returns the pebble snapshot, or why there is none; sn.mu is held.
func (sn *snapshot) open() (*pebble.Snapshot, error) {
	switch {
	case sn.ps != nil:
		return sn.ps, nil
	case sn.err != nil:
		return nil, sn.err
	}
	return nil, storage.ErrClosed
}

// Get and NewIter take the store's lock before their own, as a reopen
// does, so a reopen cannot force-close the snapshot between a NewIter
// registering its iterator and the reopen closing every registered one.

func (sn *snapshot) Get(key []byte) ([]byte, error) {
	sn.s.mu.RLock()
	defer sn.s.mu.RUnlock()
	sn.mu.Lock()
	defer sn.mu.Unlock()
	ps, err := sn.open()
	if err != nil {
		return nil, err
	}
	return get(ps, key)
}

func (sn *snapshot) NewIter(lower, upper []byte) (storage.Iterator, error) {
	sn.s.mu.RLock()
	defer sn.s.mu.RUnlock()
	sn.mu.Lock()
	defer sn.mu.Unlock()
	ps, err := sn.open()
	if err != nil {
		return nil, err
	}
	return sn.s.newIter(ps, lower, upper)
}

// Close implements storage.Snapshot; iterators opened from the snapshot stay
// valid. Closing twice is harmless.
func (sn *snapshot) Close() error {
	sn.mu.Lock()
	defer sn.mu.Unlock()
	if sn.ps == nil {
		return nil
	}
	err := sn.release()
	sn.s.live.remove(sn)
	if err != nil {
		return fmt.Errorf("pebblestore: snapshot close: %w", err)
	}
	return nil
}

func (sn *snapshot) forceClose(err error) {
	sn.mu.Lock()
	defer sn.mu.Unlock()
	if sn.ps != nil {
		_ = sn.release()
		sn.err = err
	}
}
