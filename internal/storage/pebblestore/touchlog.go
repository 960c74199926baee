package pebblestore

import (
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
	"github.com/mayflydb/mayfly/internal/keyspace"
	"github.com/mayflydb/mayfly/internal/storage"
)

// The TTL entry as a touch's log (docs/design/0002). A touch that
// changes only a document's TTL date writes, in its batch, the date's
// new index entry; held back (SetTouch), it needs no patch of its own:
// the entry records the date. What storage then lacks after a crash is
// each such document's date, which the layer that wrote the entries
// restores from them (storage.TouchRepair) before anything else reads.
//
// touchMark says that storage may hold such touches: the first batch
// with one sets it, and it is deleted once there are none — by a close
// that left nothing pending, or by the repair. While it is there, each
// open, and each recovery reopen, runs the repair once it is given.

// touchMark is the key under the write-behind's tag that says storage
// may hold touches it never wrote. It sorts before every patch, whose
// keys are documents' keys behind the tag.
var touchMark = []byte{byte(keyspace.Patch), 0}

// repairChunk bounds the bytes of one batch of the repair's writes.
const repairChunk = 4 << 20

// TouchesBehind implements storage.TouchSetter: only once a repair is
// registered, without which a crash would lose the touches held back.
func (b *batch) TouchesBehind() bool { return b.s.behind != nil && b.s.repair.Load() != nil }

// SetTouch implements storage.TouchSetter: Set, held back with no patch
// when the cache allows it.
func (b *batch) SetTouch(key, value []byte) error {
	if !b.TouchesBehind() || !isDocument(key) {
		return b.Set(key, value)
	}
	if err := b.usable(); err != nil {
		return err
	}
	if !b.marksTouch && !b.s.touchLog.Load() {
		if err := b.pb.Set(touchMark, nil, nil); err != nil {
			return fmt.Errorf("pebblestore: batch set: %w", err)
		}
		b.marksTouch = true
	}
	return b.setBehind(key, value, false)
}

// readTouchMark notes whether db holds touchMark.
func (s *Store) readTouchMark(db *pebble.DB) error {
	_, closer, err := db.Get(touchMark)
	switch {
	case errors.Is(err, pebble.ErrNotFound):
		s.touchLog.Store(false)
		s.touchOwed.Store(false)
		return nil
	case err != nil:
		return err
	}
	s.touchLog.Store(true)
	s.touchOwed.Store(true)
	return closer.Close()
}

// RepairTouches implements storage.TouchRepairer.
func (s *Store) RepairTouches(repair storage.TouchRepair) error {
	s.repair.Store(&repair)
	s.mu.Lock() // no commit runs meanwhile
	defer s.mu.Unlock()
	if s.closed || s.db == nil || s.writeFailure() != nil {
		return nil // the recovery reopen repairs
	}
	return s.repairLocked(s.db)
}

// repairLocked runs the registered repair on db when touchMark is there,
// and then deletes the mark. s.mu is held exclusively.
func (s *Store) repairLocked(db *pebble.DB) error {
	repair := s.repair.Load()
	if repair == nil || !s.touchLog.Load() {
		return nil
	}
	w := &repairWriter{db: db, pb: db.NewBatch()}
	defer func() { _ = w.pb.Close() }()
	if err := (*repair)(rawReader{s: s, db: db}, w.set); err != nil {
		return fmt.Errorf("pebblestore: repair touches: %w", err)
	}
	if err := w.pb.Delete(touchMark, nil); err != nil {
		return err
	}
	if err := db.Apply(w.pb, pebble.Sync); err != nil {
		return fmt.Errorf("pebblestore: repair touches: %w", err)
	}
	s.resetResident() // what a read cached before is older than the repair
	s.logger.Info("restored the dates of touches held back", "documents", w.n)
	s.touchLog.Store(false)
	s.touchOwed.Store(false)
	return nil
}

// repairWriter applies the repair's writes in batches of repairChunk:
// each is idempotent (a date set to what its entries record), and the
// mark goes last.
type repairWriter struct {
	db *pebble.DB
	pb *pebble.Batch
	n  int
}

func (w *repairWriter) set(key, value []byte) error {
	w.n++
	if err := w.pb.Set(key, value, nil); err != nil || w.pb.Len() < repairChunk {
		return err
	}
	if err := w.db.Apply(w.pb, pebble.NoSync); err != nil {
		return err
	}
	_ = w.pb.Close()
	w.pb = w.db.NewBatch()
	return nil
}

// clearTouchMark deletes touchMark at Close when it marks only this
// process's touches and nothing is pending: the flush wrote them all.
// Nothing commits any more.
func (s *Store) clearTouchMark() {
	switch {
	case !s.touchLog.Load() || s.touchOwed.Load() || s.db == nil || s.writeFailure() != nil,
		s.resident != nil && s.resident.PendingItems() != 0:
		return
	}
	if err := s.db.Delete(touchMark, pebble.Sync); err != nil {
		s.logger.Warn("could not clear the write-behind's mark at close; the next open repairs", "err", err)
	}
}

// rawReader reads db directly: the repair runs with s.mu held, which
// the store's own reads take.
type rawReader struct {
	s  *Store
	db *pebble.DB
}

func (r rawReader) Get(key []byte) ([]byte, error) {
	v, closer, err := r.db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, storage.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	defer closer.Close()
	return append([]byte(nil), v...), nil
}

func (r rawReader) NewIter(lower, upper []byte) (storage.Iterator, error) {
	return r.s.newIter(r.db, lower, upper)
}
