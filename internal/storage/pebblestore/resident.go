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
		return v, nil // the cache's copy
	}
	v, err := get(r, key)
	if err == nil {
		s.resident.Fill(key, v, ticket)
	}
	return v, err
}

// residentAppendGet is residentGet, the value appended to dst. The value
// kept in the cache on a miss is dst's new bytes alone, as residentGet's.
func (s *Store) residentAppendGet(r pebble.Reader, dst, key []byte) ([]byte, error) {
	out, ticket, ok := s.resident.AppendGet(dst, key)
	if ok {
		return out, nil
	}
	out, err := appendGet(r, dst, key)
	if err == nil {
		s.resident.Fill(key, out[len(dst):], ticket)
	}
	return out, err
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
	if len(read) > 0 {
		// A value written a while ago, read for the first time: its
		// index's other values are likely cold too (warm.go). An empty
		// range (a unique check before an insert) says nothing of them.
		s.warmOnMiss(lower)
	}
	return rescache.NewSliceIter(read), nil
}

// residentWrites is a commit's writes, as the cache sees them: the
// batch's encoded writes (a copy when a sync waiter owns the batch once
// it is applied), the writes whose key's value the cache held when the
// commit began, and the deletions of values the cache's clock has seen
// expire (DeleteExpired): no value of theirs is served, so only their
// ranges are dropped.
type residentWrites struct {
	repr          []byte
	held, expired positions
	claims        claims
	runs          []deleteRun // DeleteRun's, in batch order
	noSpare       bool        // install only at keys the cache held
}

// claims are the Claims of a batch's writes into groups with a value
// filter (rescache/filter.go), in batch order: the first few in place.
type claims struct {
	few     [2]claimAt
	more    []claimAt
	n, next int // added, taken
}

type claimAt struct {
	pos   int
	claim rescache.Claim
}

func (c *claims) at(i int) *claimAt {
	if i < len(c.few) {
		return &c.few[i]
	}
	return &c.more[i-len(c.few)]
}

func (c *claims) add(pos int, cl rescache.Claim) {
	if c.n < len(c.few) {
		c.few[c.n] = claimAt{pos, cl}
	} else {
		c.more = append(c.more, claimAt{pos, cl})
	}
	c.n++
}

// take returns the claim of the write at pos (-1: the first left);
// positions are asked in ascending order.
func (c *claims) take(pos int) rescache.Claim {
	if c.next == c.n || (pos >= 0 && c.at(c.next).pos != pos) {
		return rescache.Claim{}
	}
	c.next++
	return c.at(c.next - 1).claim
}

// positions is a set of a batch's write positions, added and then taken
// in ascending order: those below 64 in a mask (a request's batch), the
// others (a TTL pass's) in a slice.
type positions struct {
	mask uint64
	more []int
}

func (p *positions) add(pos int) {
	if pos < 64 {
		p.mask |= 1 << pos
		return
	}
	p.more = append(p.more, pos)
}

// take reports whether pos is in the set; positions are asked in
// ascending order.
func (p *positions) take(pos int) bool {
	if pos < 64 {
		return p.mask&(1<<pos) != 0
	}
	if len(p.more) > 0 && p.more[0] == pos {
		p.more = p.more[1:]
		return true
	}
	return false
}

// invalidateResident drops from the cache every key pb writes and every
// range such a key belongs to, before pb's apply: while it applies,
// readers of those keys read pebble. A deletion of a value already
// expired (expired, in batch order) drops only its key's range. owned
// says a sync waiter will own pb once it is applied, so its writes are
// copied for settleResident; otherwise pb is the caller's until it is
// closed, and pebble changes only its header.
func (s *Store) invalidateResident(pb *pebble.Batch, expired []expiredDelete, runs []deleteRun, owned bool) residentWrites {
	if s.resident == nil {
		return residentWrites{}
	}
	w := residentWrites{repr: pb.Repr(), runs: runs}
	if owned {
		w.repr = bytes.Clone(w.repr)
	}
	var now int64 // the cache's clock, read once (rescache.Cache.Now)
	if len(expired) > 0 || len(runs) > 0 {
		now = s.resident.Now()
	}
	pos := 0
	s.eachWrite(w.repr, func(kind pebble.InternalKeyKind, key, value []byte) {
		var expiredAt int64 // DeleteExpired's instant for this write; 0: none
		var pending bool
		if len(expired) > 0 && int(expired[0].pos) == pos {
			expiredAt, pending, expired = expired[0].at, expired[0].pending, expired[1:]
		}
		switch {
		case kind == pebble.InternalKeyKindRangeDelete && len(runs) > 0 && int(runs[0].pos) == pos:
			if s.invalidateRun(runs[0], now) {
				w.expired.add(pos)
			}
			runs = runs[1:]
		case kind == pebble.InternalKeyKindRangeDelete:
			s.resident.InvalidateRange(key, value)
		case expiredAt != 0 && expiredAt <= now && !pending:
			// A pending value is served even once expired (rescache's
			// pending.go): its deletion must end it as any other's.
			s.resident.DropRangeOf(key)
			w.expired.add(pos)
		case kind == pebble.InternalKeyKindSet:
			held, cl := s.resident.InvalidateSet(key)
			if held {
				w.held.add(pos)
			}
			if cl.Counted() {
				w.claims.add(pos, cl)
			}
		case s.resident.Invalidate(key):
			w.held.add(pos)
		}
		pos++
	})
	return w
}

// settleResident runs after the apply of the writes invalidateResident
// began, applied or not: each ends (Written), and when applied, the
// values the batch set are installed in order (at keys the cache held,
// and, unless the batch skips spare installs, at others while it has
// room), so that the last write of a key wins (a value the batch set and
// then deleted is dropped).
func (s *Store) settleResident(w residentWrites, applied bool) {
	if s.resident == nil {
		return
	}
	var installed installedKeys
	pos, runs := 0, w.runs
	s.eachWrite(w.repr, func(kind pebble.InternalKeyKind, key, value []byte) {
		held, expired, cl := w.held.take(pos), w.expired.take(pos), w.claims.take(pos)
		pos++
		switch {
		case kind == pebble.InternalKeyKindRangeDelete && len(runs) > 0 && int(runs[0].pos) == pos-1:
			s.settleRun(runs[0].keys, expired, &installed)
			runs = runs[1:]
			return
		case expired:
			s.settleExpired(key, &installed)
			return
		case kind == pebble.InternalKeyKindRangeDelete:
			s.resident.InvalidateRange(key, value)
			return
		}
		keep := rescache.KeepNone
		switch {
		case !applied || kind != pebble.InternalKeyKindSet:
			// nothing to keep
		case held:
			keep = rescache.KeepHeld
		case !w.noSpare:
			keep = rescache.KeepSpare
		}
		switch {
		case s.resident.WrittenClaimed(key, value, keep, cl):
			installed.add(key)
		case installed.has(key):
			s.resident.Evict(key) // an earlier write of the batch's
		}
	})
	for cl := w.claims.take(-1); cl.Counted(); cl = w.claims.take(-1) {
		cl.Abandon() // the batch was not read to its end
	}
}

// installedKeys are the keys a batch's settle installed values at, to
// evict again where a later write of the batch installs none: the first
// few compared in place (keys of the batch's writes, alive while it
// settles), the others in a map.
type installedKeys struct {
	few  [4][]byte
	n    int
	many map[string]bool
}

func (k *installedKeys) add(key []byte) {
	if k.n < len(k.few) {
		k.few[k.n] = key
		k.n++
		return
	}
	if k.many == nil {
		k.many = map[string]bool{}
	}
	k.many[string(key)] = true
}

func (k *installedKeys) has(key []byte) bool {
	for _, x := range k.few[:k.n] {
		if bytes.Equal(x, key) {
			return true
		}
	}
	return k.many[string(key)]
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

// invalidateRun begins the point deletions of a run's keys (DeleteRun)
// as invalidateResident begins any other deletion's, and reports whether
// they are deletions of expired values, which drop only their keys'
// ranges.
func (s *Store) invalidateRun(run deleteRun, now int64) (expired bool) {
	if run.expiredAt != 0 && run.expiredAt <= now {
		for _, k := range run.keys {
			s.resident.DropRangeOf(k)
		}
		return true
	}
	for _, k := range run.keys {
		s.resident.Invalidate(k)
	}
	return false
}

// settleRun ends the point deletions of a run's keys that invalidateRun
// began, as settleResident ends any other deletion's.
func (s *Store) settleRun(keys [][]byte, expired bool, installed *installedKeys) {
	for _, k := range keys {
		if expired {
			s.settleExpired(k, installed)
			continue
		}
		s.resident.Written(k, nil, rescache.KeepNone)
		if installed.has(k) {
			s.resident.Evict(k)
		}
	}
}

// settleExpired ends a deletion of an expired value (DeleteExpired): its
// key's range is dropped again, and a value an earlier write of the batch
// installed at the key is evicted.
func (s *Store) settleExpired(key []byte, installed *installedKeys) {
	s.resident.DropRangeOf(key)
	if installed.has(key) {
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

// resetResident empties the cache (a recovery reopen), pending values
// too: the reopen replays their patches (behind.go).
func (s *Store) resetResident() {
	if s.resident != nil {
		s.resident.Clear()
	}
}

// residentMetrics adds the cache's figures to m.
func (s *Store) residentMetrics(m *storage.Metrics) {
	if s.resident == nil {
		return
	}
	st := s.resident.Stats()
	m.MemBytes += st.Bytes + st.FilterBytes
	m.ResidentBytes, m.ResidentMaxBytes = st.Bytes+st.FilterBytes, st.MaxBytes // the filters are the cache's too
	m.ResidentHits, m.ResidentMisses = st.Hits, st.Misses
	m.ResidentEvictions, m.ResidentExpiredEvictions = st.Evictions, st.ExpiredEvictions
	m.ResidentWarmUps, m.ResidentWarmed = st.WarmUps, st.Warmed
	m.ResidentPending = st.PendingItems
}
