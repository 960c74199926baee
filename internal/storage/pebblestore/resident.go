package pebblestore

import (
	"bytes"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/batchrepr"
	"github.com/mayflydb/mayfly/internal/storage"
	"github.com/mayflydb/mayfly/internal/storage/rescache"
)

// The resident cache (Options.Resident). Reads go to it first; a miss
// reads pebble and fills it with a ticket taken before the read, so a
// write that lands in between keeps the stale result out. A commit drops
// every key it writes before its apply (readers then go to pebble, which
// shows the old or the new value, never a cached old one after the new
// is visible) and again after it, installing the values it set: a read
// that read the old state during the apply cannot fill the cache after.
// A store whose writes failed reads its durable view and bypasses the
// cache, and a recovery reopen empties it: unsynced writes it may hold
// can be gone.

// residentGet is Get through the cache; r is the DB.
func (s *Store) residentGet(r pebble.Reader, key []byte) ([]byte, error) {
	v, ticket, ok := s.resident.Get(key)
	if ok {
		return bytes.Clone(v), nil
	}
	v, err := get(r, key)
	if err == nil {
		s.resident.Fill(key, v, ticket)
	}
	return v, err
}

// residentIter is NewIter over an equality range the cache may hold: from
// the cache, or read whole from pebble and kept when it is small.
func (s *Store) residentIter(r pebble.Reader, lower, upper []byte) (storage.Iterator, error) {
	held, ticket, ok := s.resident.GetRange(lower)
	if ok {
		return held, nil
	}
	it, err := s.newIter(r, lower, upper)
	if err != nil {
		return nil, err
	}
	limit := s.resident.MaxRangeEntries()
	var read []rescache.KV
	for ok := it.First(); ok && len(read) <= limit; ok = it.Next() {
		read = append(read, rescache.KV{Key: bytes.Clone(it.Key()), Value: bytes.Clone(it.Value())})
	}
	if err := it.Error(); err != nil || len(read) > limit {
		return it, nil // the caller positions it and sees the error
	}
	if err := it.Close(); err != nil {
		return nil, err
	}
	s.resident.FillRange(lower, upper, read, ticket)
	return rescache.NewSliceIter(read), nil
}

// residentWrites is a commit's writes, as the cache sees them: a copy of
// the batch's encoded writes, since pebble (or a sync waiter) owns the
// batch once it is applied, and the keys whose values the cache held
// when the commit began.
type residentWrites struct {
	repr []byte
	held []int // the batch positions of writes whose key's value was held, ascending
	// expired are the positions of deletions of values the cache's clock
	// has seen expire (DeleteExpired), ascending: no value of theirs is
	// served, so only their ranges are dropped.
	expired []int
}

// invalidateResident drops from the cache every key pb writes and every
// range such a key belongs to, before pb's apply: while it applies,
// readers of those keys read pebble. A deletion of a value already
// expired (expired, in batch order) drops only its key's range.
func (s *Store) invalidateResident(pb *pebble.Batch, expired []expiredDelete) residentWrites {
	if s.resident == nil {
		return residentWrites{}
	}
	w := residentWrites{repr: bytes.Clone(pb.Repr())}
	pos := 0
	s.eachWrite(w.repr, func(kind pebble.InternalKeyKind, key, value []byte) {
		var expiredAt int64 // DeleteExpired's instant for this write; 0: none
		if len(expired) > 0 && int(expired[0].pos) == pos {
			expiredAt, expired = expired[0].at, expired[1:]
		}
		switch {
		case kind == pebble.InternalKeyKindRangeDelete:
			s.resident.InvalidateRange(key, value)
		case expiredAt != 0 && s.resident.Passed(expiredAt):
			s.resident.DropRangeOf(key)
			w.expired = append(w.expired, pos)
		case s.resident.Invalidate(key):
			w.held = append(w.held, pos)
		}
		pos++
	})
	return w
}

// settleResident runs after the apply of the writes invalidateResident
// began, applied or not: each ends (Written), and when applied, the
// values the batch set are installed in order (at keys the cache held,
// and at others while it has room), so that the last write of a key
// wins (a value the batch set and then deleted is dropped).
func (s *Store) settleResident(w residentWrites, applied bool) {
	if s.resident == nil {
		return
	}
	var installed map[string]bool // made by the batch's first install
	pos := 0
	s.eachWrite(w.repr, func(kind pebble.InternalKeyKind, key, value []byte) {
		held := len(w.held) > 0 && w.held[0] == pos
		if held {
			w.held = w.held[1:]
		}
		if len(w.expired) > 0 && w.expired[0] == pos {
			w.expired = w.expired[1:]
			pos++
			s.settleExpired(key, installed)
			return
		}
		pos++
		if kind == pebble.InternalKeyKindRangeDelete {
			s.resident.InvalidateRange(key, value)
			return
		}
		keep := rescache.KeepNone
		if applied && kind == pebble.InternalKeyKindSet {
			keep = rescache.KeepSpare
			if held {
				keep = rescache.KeepHeld
			}
		}
		switch {
		case s.resident.Written(key, value, keep):
			if installed == nil {
				installed = map[string]bool{}
			}
			installed[string(key)] = true
		case installed[string(key)]:
			s.resident.Evict(key) // an earlier write of the batch's
		}
	})
}

// installSole keeps the ranges a committed batch's writer noted hold one
// entry each, while the cache has room. It runs after settleResident,
// whose drops of those ranges it must follow.
func (s *Store) installSole(sole []soleEntry) {
	if s.resident == nil {
		return
	}
	for _, e := range sole {
		s.resident.InstallRange(e.lower, []rescache.KV{{Key: e.key, Value: e.value}})
	}
}

// settleExpired ends a deletion of an expired value (DeleteExpired): its
// key's range is dropped again, and a value an earlier write of the batch
// installed at the key is evicted.
func (s *Store) settleExpired(key []byte, installed map[string]bool) {
	s.resident.DropRangeOf(key)
	if installed[string(key)] {
		s.resident.Evict(key)
	}
}

// eachWrite calls fn for each operation of the encoded batch w. An
// operation of a kind the cache does not know, or an unreadable batch,
// empties the cache: it may change anything.
func (s *Store) eachWrite(w []byte, fn func(kind pebble.InternalKeyKind, key, value []byte)) {
	if len(w) < batchrepr.HeaderLen {
		return
	}
	r := batchrepr.Read(w)
	for {
		kind, key, value, ok, err := r.Next()
		switch {
		case err != nil:
			s.resident.Reset()
			return
		case !ok:
			return
		case kind == pebble.InternalKeyKindLogData:
		case knownKind(kind):
			fn(kind, key, value)
		default:
			s.resident.Reset()
		}
	}
}

func knownKind(kind pebble.InternalKeyKind) bool {
	switch kind {
	case pebble.InternalKeyKindSet, pebble.InternalKeyKindDelete, pebble.InternalKeyKindSingleDelete,
		pebble.InternalKeyKindDeleteSized, pebble.InternalKeyKindRangeDelete:
		return true
	}
	return false
}

// resetResident empties the cache (a recovery reopen).
func (s *Store) resetResident() {
	if s.resident != nil {
		s.resident.Reset()
	}
}

// residentMetrics adds the cache's figures to m.
func (s *Store) residentMetrics(m *storage.Metrics) {
	if s.resident == nil {
		return
	}
	st := s.resident.Stats()
	m.MemBytes += st.Bytes
	m.ResidentBytes, m.ResidentMaxBytes = st.Bytes, st.MaxBytes
	m.ResidentHits, m.ResidentMisses = st.Hits, st.Misses
	m.ResidentEvictions, m.ResidentExpiredEvictions = st.Evictions, st.ExpiredEvictions
}
