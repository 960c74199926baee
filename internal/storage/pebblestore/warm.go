package pebblestore

import (
	"bytes"

	"github.com/cockroachdb/pebble/v2"

	"github.com/mayflydb/mayfly/internal/keyspace"
	"github.com/mayflydb/mayfly/internal/storage/rescache"
)

// Warming the resident cache's groups (rescache/warm.go): after an
// equality range misses, the group it belongs to (an index) is read in
// key order in the background, warmChunk ranges at a time, and each range
// kept while the cache has spare room. A chunk read across a write into
// the group is read again, at most warmRetries times in a row.

// warmChunk is the most ranges a warm-up reads under one ticket: small
// enough that a write into the group (a login, about every millisecond
// under the session bench) seldom lands in one. A chunk read again reads
// half as many, down to minWarmChunk, so that a group written without
// pause is still read through; a chunk kept lets the next grow back.
const (
	warmChunk    = 128
	minWarmChunk = 4
)

// warmRetries bounds the chunks read again in a row before a warm-up of
// a group written without pause gives up.
const warmRetries = 8

// warmOnMiss starts a warm-up of the group of the range at lower, when
// the cache allows one now. s.mu is held, shared: Close, which sets
// closed under it before waiting for bg, cannot be waiting yet.
func (s *Store) warmOnMiss(lower []byte) {
	if s.closed {
		return
	}
	prefix, ok := s.resident.BeginWarm(lower)
	if !ok {
		return
	}
	s.bg.Add(1)
	go s.warmGroup(prefix)
}

// warmGroup reads the group prefix names, chunk by chunk, into the cache.
func (s *Store) warmGroup(prefix []byte) {
	defer s.bg.Done()
	var n warmCount
	defer func() { s.resident.EndWarm(prefix, n.read, n.kept) }()
	upper := keyspace.PrefixEnd(prefix)
	from, size := prefix, warmChunk
	for retries := 0; from != nil; {
		select {
		case <-s.stop:
			return
		default:
		}
		s.yield() // a warm-up is background work, as a compaction is
		next, res := s.warmChunk(prefix, from, upper, size, &n)
		switch res {
		case rescache.WarmKept:
			retries, size, from = 0, min(2*size, warmChunk), next
			if from == nil {
				s.filterGroup(prefix, upper, n.read) // the whole group read
			}
			continue
		case rescache.WarmStale:
			size = max(size/2, minWarmChunk)
			if retries++; retries <= warmRetries {
				from = next
				continue
			}
		case rescache.WarmUnfit:
			return // not selective, or storage unusable
		}
		// The cache is full, or writes kept the warm-up from reading on:
		// the filter needs neither room nor quiet.
		s.filterGroup(prefix, upper, -1)
		return
	}
}

// filterGroup makes the value filter of the group prefix names, which
// holds values values (counted first when negative; rescache/filter.go):
// made, then every commit that did not see it waited for, then the group
// scanned into it.
func (s *Store) filterGroup(prefix, upper []byte, values int) {
	if s.resident.HasFilter(prefix) {
		return
	}
	if values < 0 {
		values = 0
		if !s.eachValue(prefix, upper, func([]byte) { values++ }) {
			return
		}
	}
	if !s.resident.BeginFilter(prefix, values) {
		return // one exists, complete or being made
	}
	ok := s.commits.drain(s.stop) && s.eachValue(prefix, upper, s.resident.FilterAdd)
	s.resident.EndFilter(prefix, ok)
}

// eachValue calls fn with each equality prefix of the group's entries
// from from to upper, a chunk at a time, reporting whether it read them
// all. Chunks need not see one state of storage: an entry set after a
// filter was made added its value itself.
func (s *Store) eachValue(from, upper []byte, fn func(lo []byte)) bool {
	ok := true
	for ok && from != nil {
		select {
		case <-s.stop:
			return false
		default:
		}
		s.yield()
		from, ok = s.valueChunk(from, upper, fn)
	}
	return ok
}

// valueChunk is one chunk of eachValue: up to filterChunkRanges values
// from from, returning where the next chunk starts (nil: the group is
// read).
func (s *Store) valueChunk(from, upper []byte, fn func(lo []byte)) (next []byte, ok bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	r, ok := s.cachedReaderLocked()
	if !ok {
		return nil, false
	}
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: from, UpperBound: upper})
	if err != nil {
		return nil, false
	}
	defer it.Close()
	var last []byte
	n := 0
	for valid := it.First(); valid; valid = it.Next() {
		eq, inRange := s.resident.EqualityLen(it.Key())
		if !inRange {
			return nil, false
		}
		lo := it.Key()[:eq]
		if bytes.Equal(lo, last) {
			continue
		}
		if n++; n > filterChunkRanges {
			return bytes.Clone(lo), true
		}
		fn(lo)
		last = append(last[:0], lo...)
	}
	return nil, it.Error() == nil
}

// filterChunkRanges is the values one chunk of a filter's scan adds.
const filterChunkRanges = 4096

// warmCount is what a warm-up did: the ranges it read, and those it kept
// that the cache did not hold already.
type warmCount struct{ read, kept int }

func (n *warmCount) add(res rescache.WarmResult) {
	n.read++
	if res == rescache.WarmKept {
		n.kept++
	}
}

// warmChunk reads up to size ranges from from and keeps them, under
// one ticket taken before the read, counting them in n. It returns where
// the next chunk starts (nil: the group is read), and why it stopped:
// WarmKept when every range read is resident, else what Warm said of the
// first that is not, where the next chunk starts.
func (s *Store) warmChunk(prefix, from, upper []byte, size int, n *warmCount) (next []byte, res rescache.WarmResult) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	r, ok := s.cachedReaderLocked()
	if !ok {
		return nil, rescache.WarmUnfit
	}
	t := s.resident.TakeWarmTicket(prefix)
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: from, UpperBound: upper})
	if err != nil {
		return nil, rescache.WarmUnfit
	}
	defer it.Close()
	var rg warmRange
	ranges := 0
	for ok := it.First(); ok; ok = it.Next() {
		eq, inRange := s.resident.EqualityLen(it.Key())
		if !inRange {
			return nil, rescache.WarmUnfit
		}
		if rg.lo != nil && !bytes.Equal(it.Key()[:eq], rg.lo) {
			if res := s.keepWarm(t, &rg, n); res != rescache.WarmKept {
				return rg.lo, res
			}
			if ranges++; ranges == size {
				return bytes.Clone(it.Key()[:eq]), rescache.WarmKept
			}
			rg.reset()
		}
		rg.add(it.Key(), eq, it.Value())
	}
	if it.Error() != nil {
		return nil, rescache.WarmUnfit
	}
	if rg.lo != nil {
		if res := s.keepWarm(t, &rg, n); res != rescache.WarmKept {
			return rg.lo, res
		}
	}
	return nil, rescache.WarmKept
}

// cachedReaderLocked is what reads through the cache read, for the
// background scans that fill it; false when the store is closed or reads
// bypass the cache (its durable view after a failed write). s.mu is held.
func (s *Store) cachedReaderLocked() (pebble.Reader, bool) {
	db, err := s.dbLocked()
	if err != nil {
		return nil, false
	}
	r, durable := s.reader(db)
	return r, durable == nil
}

// keepWarm offers the range read to the cache and counts it, reporting a
// range already resident, or skipped for its full shard, as kept: the
// warm-up reads on.
func (s *Store) keepWarm(t rescache.WarmTicket, rg *warmRange, n *warmCount) rescache.WarmResult {
	res := s.resident.Warm(t, rg.lo, rg.entries)
	switch res {
	case rescache.WarmKept, rescache.WarmHeld, rescache.WarmSkipped:
		n.add(res)
		return rescache.WarmKept
	}
	return res
}

// warmRange is a range being read: its lower bound and entries, copied
// out of the iterator into one buffer per range.
type warmRange struct {
	lo      []byte
	entries []rescache.KV
}

func (w *warmRange) add(key []byte, n int, value []byte) {
	if w.lo == nil {
		w.lo = bytes.Clone(key[:n])
	}
	buf := make([]byte, 0, len(key)+len(value))
	buf = append(buf, key...)
	buf = append(buf, value...)
	w.entries = append(w.entries, rescache.KV{Key: buf[:len(key):len(key)], Value: buf[len(key):]})
}

func (w *warmRange) reset() { *w = warmRange{} }
