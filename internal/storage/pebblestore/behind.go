package pebblestore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/mayflydb/mayfly/internal/keyspace"
	"github.com/mayflydb/mayfly/internal/storage"
	"github.com/mayflydb/mayfly/internal/storage/rescache"
)

// Writing touches behind (Options.WriteBehind; docs/design/0002, "Writing
// touches behind"). A document write that changes a few bytes of a
// document the resident cache holds (a touch: the TTL date, in place)
// does not rewrite the document. Its batch carries, in the document's
// place, a patch record under keyspace.Patch: the document's key, the
// offset and the new bytes. The cache holds the new version as pending
// (rescache/pending.go), never evicted, and every read sees it there. A
// flush every WriteBehind writes each pending version once, however
// often it was touched meanwhile, deleting its patch in the same batch.
//
// The patch is the log: it reaches the WAL with the rest of the batch
// (synced when the write asked for it), and opening the store applies
// every patch left to its document (replayPatches). A later write of a
// pending key deletes the key's patch in its own batch, so no patch is
// ever applied over a newer version. A batch holds commits shared and a
// flush holds each shard's exclusively (behind.mu), so no commit of a
// pending key falls between the flush's read of the version and its
// write. An iterator over documents while any is pending reads each
// one's value from the cache (pendingIter); a snapshot, and a
// checkpoint, flush first.

// maxPatch bounds the bytes a patch carries: a date and its neighbours.
const maxPatch = 16

// pendingShare: a flush starts early once pending versions take more
// than 1/pendingShare of the cache.
const pendingShare = 2

// behind is the write-behind's state.
type behind struct {
	// mu is held shared by every commit and exclusively while a flush
	// writes a shard's pending versions.
	mu       sync.RWMutex
	interval time.Duration
	wake     chan struct{}
}

// behindSet is a batch's document write held back: value at key,
// differing from storage's within [lo, hi).
type behindSet struct {
	key, value []byte
	lo, hi     int
	logged     bool // by a patch; else by the layer above (SetTouch)
}

func newBehind(opt Options) *behind {
	if opt.WriteBehind <= 0 || opt.Resident == nil || opt.Replicated {
		return nil
	}
	return &behind{interval: opt.WriteBehind, wake: make(chan struct{}, 1)}
}

// docsMeet reports whether [lower, upper) (nil: unbounded) meets the
// documents' keys.
func docsMeet(lower, upper []byte) bool {
	return (upper == nil || bytes.Compare(upper, []byte{byte(keyspace.Document)}) > 0) &&
		(lower == nil || bytes.Compare(lower, []byte{byte(keyspace.Document) + 1}) < 0)
}

// isDocument reports whether key is a document's: the only keys written
// behind.
func isDocument(key []byte) bool { return len(key) > 0 && key[0] == byte(keyspace.Document) }

// patchKey is the key of key's patch, appended to dst.
func patchKey(dst, key []byte) []byte {
	return append(append(dst, byte(keyspace.Patch)), key...)
}

// appendPatchValue appends a patch's encoding to dst: bytes at offset
// lo.
func appendPatchValue(dst []byte, lo int, bytes []byte) []byte {
	return append(binary.AppendUvarint(dst, uint64(lo)), bytes...)
}

// decodePatch is patchValue's inverse; ok is false for a malformed one.
func decodePatch(v []byte) (lo int, bytes []byte, ok bool) {
	off, n := binary.Uvarint(v)
	if n <= 0 || off > 1<<31 {
		return 0, nil, false
	}
	return int(off), v[n:], true
}

// setBehind writes value at key, a document's: behind when the cache
// allows it, logged by a patch unless the layer above logs it (SetTouch),
// or else as any write, with the pending version's patch deleted.
func (b *batch) setBehind(key, value []byte, logged bool) error {
	if err := b.writeOwnFirst(key); err != nil {
		return err
	}
	lo, hi, ok, patched := b.s.resident.PendingSpan(key, value, maxPatch)
	if !ok {
		if err := b.pb.Set(key, value, nil); err != nil {
			return fmt.Errorf("pebblestore: batch set: %w", err)
		}
		return b.dropPatch(key, patched)
	}
	// One buffer holds the batch's patches and its copies of keys and
	// values: a part taken stays valid when the buffer grows.
	e := behindSet{lo: lo, hi: hi, logged: logged}
	if logged {
		pk := b.take(patchKey(b.buf, key))
		pv := b.take(appendPatchValue(b.buf, lo, value[lo:hi]))
		if err := b.pb.Set(pk, pv, nil); err != nil {
			return fmt.Errorf("pebblestore: batch set: %w", err)
		}
	}
	e.key = b.take(append(b.buf, key...))
	e.value = b.take(append(b.buf, value...))
	b.behind = append(b.behind, e)
	return nil
}

// take makes grown, b.buf with bytes appended, the buffer, and returns
// the bytes appended, capped.
func (b *batch) take(grown []byte) []byte {
	part := grown[len(b.buf):len(grown):len(grown)]
	b.buf = grown
	return part
}

// deleteBehind is what a deletion of key, a document's, owes the
// write-behind, before it is added to the batch. It reports whether the
// cache holds key's value pending.
func (b *batch) deleteBehind(key []byte) (pending bool, err error) {
	if err := b.writeOwnFirst(key); err != nil {
		return false, err
	}
	pending, patched := b.s.resident.IsPending(key)
	return pending, b.dropPatch(key, patched)
}

// writeOwnFirst writes a version of key the batch held back, before a
// later write of key in the batch, which then follows it. It deletes
// the key's patch whether or not this version was logged by one: the
// later write may be held back unlogged over an earlier patch, which
// must not be replayed over the version written here.
func (b *batch) writeOwnFirst(key []byte) error {
	for i, e := range b.behind {
		if bytes.Equal(e.key, key) {
			b.behind = append(b.behind[:i], b.behind[i+1:]...)
			if err := b.pb.Set(key, e.value, nil); err != nil {
				return fmt.Errorf("pebblestore: batch set: %w", err)
			}
			return b.pb.Delete(patchKey(nil, key), nil)
		}
	}
	return nil
}

// dropPatch deletes key's patch when its value is pending with one
// (patched): the batch writes the key at once.
func (b *batch) dropPatch(key []byte, patched bool) error {
	if !patched {
		return nil
	}
	return b.pb.Delete(patchKey(nil, key), nil)
}

// settleRange is deleteBehind for a deletion of [start, end): the
// batch's versions held back there go, and so do the range's patches.
func (b *batch) settleRange(start, end []byte) error {
	docs, docsEnd := []byte{byte(keyspace.Document)}, []byte{byte(keyspace.Document) + 1}
	lo, hi := start, end
	if bytes.Compare(lo, docs) < 0 {
		lo = docs
	}
	if bytes.Compare(hi, docsEnd) > 0 {
		hi = docsEnd
	}
	if bytes.Compare(lo, hi) >= 0 {
		return nil
	}
	b.behind = dropIn(b.behind, lo, hi)
	return b.pb.DeleteRange(patchKey(nil, lo), patchKey(nil, hi), nil)
}

func dropIn(sets []behindSet, lo, hi []byte) []behindSet {
	out := sets[:0]
	for _, e := range sets {
		if bytes.Compare(e.key, lo) < 0 || bytes.Compare(e.key, hi) >= 0 {
			out = append(out, e)
		}
	}
	return out
}

// settleBehind makes the versions a committed batch held back pending.
// One the cache no longer holds as PendingSpan found it (evicted since,
// so not pending before this batch) is written now, with the patch this
// batch wrote deleted. s.mu and w.mu are held shared.
func (s *Store) settleBehind(db *pebble.DB, sets []behindSet) error {
	for _, e := range sets {
		if s.resident.SetPending(e.key, e.value, e.lo, e.hi, e.logged) {
			continue
		}
		fb := &batch{s: s, pb: db.NewBatch(), gen: s.gen}
		err := fb.pb.Set(e.key, e.value, nil)
		if e.logged {
			err = errors.Join(err, fb.pb.Delete(patchKey(nil, e.key), nil))
		}
		if err == nil {
			_, _, err = s.applyLocked(fb, false)
		}
		if err != nil {
			return fmt.Errorf("pebblestore: write a document held back: %w", err)
		}
		_ = fb.Close()
	}
	if s.resident.PendingBytes() > s.resident.MaxBytes()/pendingShare {
		select {
		case s.behind.wake <- struct{}{}:
		default:
		}
	}
	return nil
}

// behindLoop flushes every interval, and early when woken.
func (s *Store) behindLoop() {
	defer s.bg.Done()
	t := time.NewTicker(s.behind.interval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		case <-s.behind.wake:
		}
		if err := s.flushBehind(); err != nil && !errors.Is(err, storage.ErrClosed) {
			s.repeats.Log(slog.LevelError, "write-behind", "write-behind flush failed", "err", err.Error())
		}
	}
}

// flushBehind writes every pending version to pebble, a cache shard at
// a time.
func (s *Store) flushBehind() error {
	if s.behind == nil || s.resident.PendingItems() == 0 {
		return nil
	}
	for n := range rescache.Shards {
		if err := s.flushShard(n); err != nil {
			return err
		}
	}
	return nil
}

// flushShard writes shard n's pending versions and deletes their
// patches, in one batch, with every commit held off meanwhile.
func (s *Store) flushShard(n int) error {
	s.behind.mu.Lock()
	defer s.behind.mu.Unlock()
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return storage.ErrClosed
	}
	if err := s.writeFailure(); err != nil {
		return err
	}
	db, err := s.dbLocked()
	if err != nil {
		return err
	}
	pb := db.NewBatch()
	var pk []byte
	s.resident.EachPending(n, func(key, value []byte, patched bool) {
		_ = pb.Set(key, value, nil) // a batch in memory fails only when closed
		if patched {
			pk = patchKey(pk[:0], key)
			_ = pb.Delete(pk, nil)
		}
	})
	if pb.Empty() {
		return pb.Close()
	}
	if err := s.pebbleWrite(func() error { return db.Apply(pb, pebble.NoSync) }); err != nil {
		return fmt.Errorf("pebblestore: write-behind flush: %w", err)
	}
	s.dirty.Store(true)
	s.resident.SettlePending(n)
	return pb.Close()
}

// flushBefore flushes when [lower, upper) may hold a pending key: a
// reader of pebble is about to start there. A failed flush leaves the
// store failed, whose readers read its durable view.
func (s *Store) flushBefore(lower, upper []byte) {
	if s.behind == nil || !docsMeet(lower, upper) {
		return
	}
	if err := s.flushBehind(); err != nil && !errors.Is(err, storage.ErrClosed) {
		s.repeats.Log(slog.LevelError, "write-behind", "write-behind flush before a read failed", "err", err.Error())
	}
}

// replayPatches applies the patches a crash or a close left to their
// documents, at open: the versions that were pending and logged by a
// patch (the unlogged ones are TouchRepair's).
func replayPatches(db *pebble.DB) error {
	lower, upper := patchKey(nil, keyspace.Document.Start()), patchKey(nil, keyspace.Document.End())
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return err
	}
	pb := db.NewBatch()
	defer pb.Close()
	found := false
	for ok := it.First(); ok; ok = it.Next() {
		found = true
		if err := replayPatch(db, pb, it.Key()[1:], it.Value()); err != nil {
			_ = it.Close()
			return err
		}
	}
	if err := it.Close(); err != nil || !found {
		return err
	}
	if err := pb.DeleteRange(lower, upper, nil); err != nil {
		return err
	}
	return db.Apply(pb, pebble.Sync)
}

// replayPatch adds to pb the document at key with patch applied; a
// document gone or too short for it (never written so) is left.
func replayPatch(db *pebble.DB, pb *pebble.Batch, key, patch []byte) error {
	lo, bytes, ok := decodePatch(patch)
	if !ok {
		return nil
	}
	doc, closer, err := db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	defer closer.Close()
	if lo+len(bytes) > len(doc) {
		return nil
	}
	patched := append([]byte(nil), doc...)
	copy(patched[lo:], bytes)
	return pb.Set(key, patched, nil)
}

// pendingIter reads pebble's keys with the values the cache holds for
// them: every pending key is in pebble, with an older value, and a key
// pending when the iterator began may have been flushed since, after
// the view pebble's iterator reads. The cache's values are the newest
// committed (rescache's exactness).
type pendingIter struct {
	storage.Iterator
	cache *rescache.Cache
	held  bool   // the cache holds the current key's value
	value []byte // then its copy
}

// at notes the value held at the position a move reached (ok).
func (p *pendingIter) at(ok bool) bool {
	p.held = false
	if ok {
		p.value, p.held = p.cache.AppendHeld(p.value[:0], p.Iterator.Key())
	}
	return ok
}

func (p *pendingIter) First() bool            { return p.at(p.Iterator.First()) }
func (p *pendingIter) Last() bool             { return p.at(p.Iterator.Last()) }
func (p *pendingIter) SeekGE(key []byte) bool { return p.at(p.Iterator.SeekGE(key)) }
func (p *pendingIter) SeekLT(key []byte) bool { return p.at(p.Iterator.SeekLT(key)) }
func (p *pendingIter) Next() bool             { return p.at(p.Iterator.Next()) }
func (p *pendingIter) Prev() bool             { return p.at(p.Iterator.Prev()) }

// Value is the cache's value at the position, or pebble's.
func (p *pendingIter) Value() []byte {
	if p.held {
		return p.value
	}
	return p.Iterator.Value()
}

// withPending wraps it, an iterator of pebble over [lower, upper), when
// the range may hold pending keys.
func (s *Store) withPending(it storage.Iterator, lower, upper []byte) storage.Iterator {
	if s.behind == nil || s.resident.PendingItems() == 0 || !docsMeet(lower, upper) {
		return it
	}
	return &pendingIter{Iterator: it, cache: s.resident}
}
