package pebblestore

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
	"github.com/mayflydb/mayfly/internal/storage"
)

var (
	errBatchClosed = errors.New("pebblestore: batch closed")
	errBatchUsed   = errors.New("pebblestore: batch already committed")
)

var (
	_ storage.Encodable      = (*batch)(nil)
	_ storage.SoleEntryNoter = (*batch)(nil)
	_ storage.ExpiredDeleter = (*batch)(nil)
	_ storage.RunDeleter     = (*batch)(nil)
)

// batch is a storage.Batch. It is single-use: after Commit (successful or
// not) only Len and Close are meaningful. Not safe for concurrent use.
type batch struct {
	s    *Store
	pb   *pebble.Batch // nil once closed or handed off to a failed commit
	gen  uint64        // the store's reopen count when pb was made
	used bool
	err  error // set for batches made on a closed (or recovering) store
	// sole are the ranges the writer noted the batch leaves holding one
	// entry (NoteSoleEntry), for the resident cache.
	sole []soleEntry
	// expired are the batch's deletions of values already expired
	// (DeleteExpired), in batch order, for the resident cache.
	expired []expiredDelete
	// runs are the batch's range deletions of known keys (DeleteRun), in
	// batch order, for the resident cache.
	runs []deleteRun
	// noSpare says the commit installs values only at keys the resident
	// cache held (SkipSpareInstalls).
	noSpare bool
	// behind are the document versions held back (behind.go), their
	// bytes and their patches' in buf.
	behind []behindSet
	buf    []byte
	// marksTouch: the batch sets touchMark (touchlog.go).
	marksTouch bool
}

// expiredDelete is the deletion at position pos of the batch (its count
// of writes before it) of a value that expired at at.
type expiredDelete struct {
	pos uint32
	at  int64
	// pending: the cache held the key's value pending when the deletion
	// joined the batch (deleteBehind), so the invalidation ends it rather
	// than leave it served. The document's writer holds it until the
	// apply, so no touch makes it pending meanwhile; a flush may settle
	// it, and the invalidation then only does more than it had to.
	pending bool
}

// deleteRun is the range deletion at position pos of the batch, which
// deletes exactly keys (copies the batch owns), whose values had all
// expired at expiredAt (0: not known).
type deleteRun struct {
	pos       uint32
	keys      [][]byte
	expiredAt int64
}

// soleEntry is the range of the keys starting with lower, which holds
// only (key, value), all three in one copy.
type soleEntry struct {
	lower, key, value []byte
}

// NoteSoleEntry implements storage.SoleEntryNoter. The note is kept only
// when the store has a resident cache to tell.
func (b *batch) NoteSoleEntry(lower, key, value []byte) {
	if b.usable() != nil || b.s.resident == nil {
		return
	}
	buf := make([]byte, 0, len(lower)+len(key)+len(value))
	var e soleEntry
	buf, e.lower = appendPart(buf, lower)
	buf, e.key = appendPart(buf, key)
	_, e.value = appendPart(buf, value)
	b.sole = append(b.sole, e)
}

// SkipSpareInstalls implements storage.SpareInstallSkipper.
func (b *batch) SkipSpareInstalls() { b.noSpare = true }

// appendPart appends p to buf and returns both, p's copy capped.
func appendPart(buf, p []byte) ([]byte, []byte) {
	n := len(buf)
	buf = append(buf, p...)
	return buf, buf[n:len(buf):len(buf)]
}

func (b *batch) usable() error {
	switch {
	case b.err != nil:
		return b.err
	case b.used:
		return errBatchUsed
	case b.pb == nil:
		return errBatchClosed
	}
	return nil
}

// Set implements storage.Batch; key and value are copied.
func (b *batch) Set(key, value []byte) error {
	if err := b.usable(); err != nil {
		return err
	}
	if b.s.behind != nil && isDocument(key) {
		return b.setBehind(key, value, true)
	}
	if err := b.pb.Set(key, value, nil); err != nil {
		return fmt.Errorf("pebblestore: batch set: %w", err)
	}
	return nil
}

// Delete implements storage.Batch.
func (b *batch) Delete(key []byte) error {
	if err := b.usable(); err != nil {
		return err
	}
	if b.s.behind != nil && isDocument(key) {
		if _, err := b.deleteBehind(key); err != nil {
			return err
		}
	}
	if err := b.pb.Delete(key, nil); err != nil {
		return fmt.Errorf("pebblestore: batch delete: %w", err)
	}
	return nil
}

// DeleteExpired implements storage.ExpiredDeleter.
func (b *batch) DeleteExpired(key []byte, expiredAt int64) error {
	if err := b.usable(); err != nil {
		return err
	}
	var pending bool
	if b.s.behind != nil && isDocument(key) {
		var err error
		if pending, err = b.deleteBehind(key); err != nil {
			return err
		}
	}
	pos := b.pb.Count()
	if err := b.pb.Delete(key, nil); err != nil {
		return fmt.Errorf("pebblestore: batch delete: %w", err)
	}
	if b.s.resident != nil {
		b.expired = append(b.expired, expiredDelete{pos: pos, at: expiredAt, pending: pending})
	}
	return nil
}

// DeleteRange implements storage.Batch: it deletes every key in
// [start, end). A nil start is the smallest key; end must not be nil, and a
// range with start >= end deletes nothing.
func (b *batch) DeleteRange(start, end []byte) error {
	if err := b.usable(); err != nil {
		return err
	}
	if end == nil {
		return errors.New("pebblestore: batch delete range: end key required")
	}
	if bytes.Compare(start, end) >= 0 {
		return nil // pebble expects start < end
	}
	if start == nil {
		start = []byte{}
	}
	if b.s.behind != nil {
		if err := b.settleRange(start, end); err != nil {
			return fmt.Errorf("pebblestore: batch delete range: %w", err)
		}
	}
	if err := b.pb.DeleteRange(start, end, nil); err != nil {
		return fmt.Errorf("pebblestore: batch delete range: %w", err)
	}
	return nil
}

// DeleteRun implements storage.RunDeleter: one range deletion from the
// first key to the last, and for the resident cache a point deletion of
// each key, where a range it cannot look up would make it search every
// entry it holds; of an expired value's key (DeleteExpired) when
// expiredAt says so.
func (b *batch) DeleteRun(keys [][]byte, expiredAt int64) error {
	if err := b.usable(); err != nil || len(keys) == 0 {
		return err
	}
	pos := b.pb.Count()
	if err := b.DeleteRange(keys[0], storage.Successor(keys[len(keys)-1])); err != nil {
		return err
	}
	if b.s.resident == nil {
		return nil
	}
	n := 0
	for _, k := range keys {
		n += len(k)
	}
	buf := make([]byte, 0, n)
	run := deleteRun{pos: pos, keys: make([][]byte, len(keys)), expiredAt: expiredAt}
	if b.s.behind != nil {
		// A document's value may be pending (behind.go): served even
		// once expired, so its deletion must end it as any other's.
		run.expiredAt = 0
	}
	for i, k := range keys {
		buf, run.keys[i] = appendPart(buf, k)
	}
	b.runs = append(b.runs, run)
	return nil
}

// Commit implements storage.Batch. An error means the outcome is unknown:
// the writes may be visible and may even be durable, but are not known to be.
func (b *batch) Commit(sync bool) error {
	wait, err := b.commit(sync)
	if err != nil || wait == nil {
		return err
	}
	return wait()
}

// CommitNoWait implements storage.GroupCommit.
func (b *batch) CommitNoWait() (wait func() error, err error) {
	wait, err = b.commit(true)
	if err == nil && wait == nil {
		wait = func() error { return nil } // in memory: nothing to sync
	}
	return wait, err
}

func (b *batch) commit(durable bool) (wait func() error, err error) {
	if err := b.usable(); err != nil {
		return nil, err
	}
	wait, entered, err := b.s.apply(b, durable)
	if entered {
		b.used = true
		if err != nil || wait != nil {
			// pebble may still hold the batch (in its commit queue), or the
			// wait owns it: not for Close or pebble's pool.
			b.pb = nil
		}
	}
	return wait, err
}

// rebind moves the batch's writes onto db, the pebble DB a recovery opened
// after this batch was made: pebble panics on a batch from another DB. The
// writes are copied, so the caller sees no difference.
func (b *batch) rebind(db *pebble.DB, gen uint64) error {
	nb := db.NewBatch()
	if err := nb.Apply(b.pb, nil); err != nil {
		_ = nb.Close()
		return fmt.Errorf("pebblestore: commit: move batch to the reopened store: %w", err)
	}
	_ = b.pb.Close() // the old DB is closed; this only recycles the batch
	b.pb, b.gen = nb, gen
	return nil
}

// Len implements storage.Batch.
func (b *batch) Len() int {
	if b.pb == nil || b.pb.Empty() {
		return 0
	}
	return b.pb.Len()
}

// Close implements storage.Batch.
func (b *batch) Close() error {
	if b.pb == nil {
		return nil
	}
	pb := b.pb
	b.pb = nil
	if err := pb.Close(); err != nil {
		return fmt.Errorf("pebblestore: batch close: %w", err)
	}
	return nil
}

// Repr returns a copy of the batch's encoded writes, which ApplyRepr on
// another store turns back into the same writes (replication ships it).
func (b *batch) Repr() ([]byte, error) {
	if err := b.usable(); err != nil {
		return nil, err
	}
	return append([]byte(nil), b.pb.Repr()...), nil
}

// AppendRepr adds the writes of repr, as returned by a batch's Repr, to
// dst, a batch of this store.
func (s *Store) AppendRepr(dst storage.Batch, repr []byte) error {
	b, ok := dst.(*batch)
	if !ok {
		return fmt.Errorf("pebblestore: append repr: not a batch of this store")
	}
	if err := b.usable(); err != nil {
		return err
	}
	tmp, ok := s.NewBatch().(*batch)
	if !ok || tmp.err != nil {
		return fmt.Errorf("pebblestore: append repr: %w", tmp.err)
	}
	defer tmp.Close()
	if err := tmp.pb.SetRepr(append([]byte(nil), repr...)); err != nil {
		return fmt.Errorf("pebblestore: append repr: %w", err)
	}
	if err := b.pb.Apply(tmp.pb, nil); err != nil {
		return fmt.Errorf("pebblestore: append repr: %w", err)
	}
	return nil
}
