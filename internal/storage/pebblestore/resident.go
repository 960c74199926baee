package pebblestore

import (
	"bytes"
	"slices"

	"github.com/cockroachdb/pebble/v2"
	"github.com/mayflydb/mayfly/internal/storage"
	"github.com/mayflydb/mayfly/internal/storage/rescache"
)

// The resident cache (Options.Resident). Reads go to it first; a miss
// reads pebble and fills it with a ticket taken before the read, so a
// write that lands in between keeps the stale result out. A commit drops
// every key it writes before its apply (readers then go to pebble, which
// shows the old or the new value, never a cached old one after the new
// is visible) and installs the values it set after a successful apply.
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
	kvs, ticket, ok := s.resident.GetRange(lower)
	if ok {
		return rescache.NewSliceIter(kvs), nil
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

// invalidateResident drops from the cache every key pb writes, before
// its apply, and returns the values pb sets that the cache keeps, for
// installResident after the apply. pb itself may belong to a sync waiter
// by then, so they are copies.
func (s *Store) invalidateResident(pb *pebble.Batch) []rescache.KV {
	if s.resident == nil {
		return nil
	}
	var installs []rescache.KV
	r := pb.Reader()
	for {
		kind, key, value, ok, err := r.Next()
		if err != nil || !ok {
			if err != nil {
				s.resident.Reset()
			}
			return installs
		}
		set := s.invalidateOp(kind, key, value)
		// A later operation on a key overrides an earlier set of it.
		installs = withoutInstalls(installs, kind, key, value)
		if set && s.resident.Admits(key) {
			installs = append(installs, rescache.KV{Key: bytes.Clone(key), Value: bytes.Clone(value)})
		}
	}
}

// withoutInstalls removes the pending installs an operation overrides.
func withoutInstalls(installs []rescache.KV, kind pebble.InternalKeyKind, key, end []byte) []rescache.KV {
	if len(installs) == 0 {
		return installs
	}
	return slices.DeleteFunc(installs, func(kv rescache.KV) bool {
		if kind == pebble.InternalKeyKindRangeDelete {
			return bytes.Compare(kv.Key, key) >= 0 && bytes.Compare(kv.Key, end) < 0
		}
		return bytes.Equal(kv.Key, key) || !knownKind(kind)
	})
}

func knownKind(kind pebble.InternalKeyKind) bool {
	switch kind {
	case pebble.InternalKeyKindSet, pebble.InternalKeyKindDelete, pebble.InternalKeyKindSingleDelete,
		pebble.InternalKeyKindDeleteSized, pebble.InternalKeyKindRangeDelete, pebble.InternalKeyKindLogData:
		return true
	}
	return false
}

// invalidateOp drops what one operation of a batch changes and reports
// whether it sets key's value. An operation of an unknown kind empties
// the cache: it may change anything.
func (s *Store) invalidateOp(kind pebble.InternalKeyKind, key, value []byte) (set bool) {
	switch kind {
	case pebble.InternalKeyKindSet:
		s.resident.Invalidate(key)
		return true
	case pebble.InternalKeyKindDelete, pebble.InternalKeyKindSingleDelete, pebble.InternalKeyKindDeleteSized:
		s.resident.Invalidate(key)
	case pebble.InternalKeyKindRangeDelete:
		s.resident.InvalidateRange(key, value)
	case pebble.InternalKeyKindLogData:
	default:
		s.resident.Reset()
	}
	return false
}

// installResident keeps the values a successful commit set.
func (s *Store) installResident(installs []rescache.KV) {
	for _, kv := range installs {
		s.resident.Install(kv.Key, kv.Value)
	}
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
