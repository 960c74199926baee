package rescache

import "bytes"

// Pending values: a write the engine holds back from storage (the
// write-behind, docs/design/0002 "Writing touches behind"). A value is
// pending when the cache holds it and storage holds an older one that
// differs only in a short span of bytes, which the engine's log records.
// A pending value is never evicted, is served even once it has expired
// (the layer above judges expiry; the monitor must read the document as
// it is), survives Reset, and leaves the pending state only when a
// write of its key reaches storage (Written) or the engine's flush has
// written it (SettlePending). Clear drops it with everything else.

// Shards is the number of the cache's shards, which EachPending and
// SettlePending take one at a time.
const Shards = shardCount

// heldPlain returns key's shard, locked (the caller unlocks it), and the
// slot holding key's value as a plain value (no family member, not being
// written), or noSlot; a nil shard, not locked, for a key the policy
// holds no plain value of.
func (c *Cache) heldPlain(key []byte) (*shard, int32) {
	sk, family, ok := slotKeyOf(c.policy.Load(), key)
	if !ok || family {
		return nil, noSlot
	}
	return c.heldPlainAt(sk, c.hashOf(sk))
}

// heldPlainAt is heldPlain of the slot key sk, of hash.
func (c *Cache) heldPlainAt(sk slotKey, hash uint64) (*shard, int32) {
	sh := c.shardOf(hash)
	sh.mu.Lock()
	i := sh.find(false, hash, sk)
	if i != noSlot && sh.at(i).stale {
		i = noSlot
	}
	return sh, i
}

// PendingSpan reports whether value, written at key, may go behind: the
// cache holds key's value, of value's length, and the two, with the
// bytes in which the held value already differs from storage's when it
// is pending, differ only within [lo, hi), at most maxSpan bytes.
// patched reports whether the held value is pending with a patch of the
// engine's (SetPending's logged), whatever ok says.
func (c *Cache) PendingSpan(key, value []byte, maxSpan int) (lo, hi int, ok, patched bool) {
	sh, i := c.heldPlain(key)
	if sh == nil {
		return 0, 0, false, false
	}
	defer sh.mu.Unlock()
	if i == noSlot {
		return 0, 0, false, false
	}
	e := sh.held(i)
	held := e.payload()
	patched = e.pending && e.patched
	if len(held) != len(value) {
		return 0, 0, false, patched
	}
	lo, hi = DiffSpan(held, value)
	if e.pending {
		lo, hi = min(lo, int(e.pendLo)), max(hi, int(e.pendHi))
	}
	if lo >= hi || hi-lo > maxSpan {
		return 0, 0, false, patched // nothing changes, or too much
	}
	return lo, hi, true, patched
}

// DiffSpan is the shortest [lo, hi) outside which a and b, of one
// length, are equal; lo == hi when they are equal.
func DiffSpan(a, b []byte) (lo, hi int) {
	for lo < len(a) && a[lo] == b[lo] {
		lo++
	}
	hi = len(a)
	for hi > lo && a[hi-1] == b[hi-1] {
		hi--
	}
	return lo, hi
}

// SetPending puts value at key as pending, in place of the held value,
// when the value storage holds differs from it only within [lo, hi)
// (PendingSpan's answer, still true: the held value, equal to value
// outside the span, and its pending span within it). It reports false,
// changing nothing, when that is no longer so (the value was evicted):
// the caller then writes value to storage. logged tells whether the
// engine logged this change as a patch of its own; the value stays
// patched until it settles once any change of it was.
func (c *Cache) SetPending(key, value []byte, lo, hi int, logged bool) bool {
	sh, i := c.heldPlain(key)
	if sh == nil {
		return false
	}
	defer sh.mu.Unlock()
	if i == noSlot {
		return false
	}
	s := sh.at(i)
	data := sh.arena.bytes(s.loc, s.dataLen)
	held := data[s.keyLen:]
	switch {
	case len(held) != len(value) || lo < 0 || hi > len(value) || lo > hi,
		!bytes.Equal(held[:lo], value[:lo]) || !bytes.Equal(held[hi:], value[hi:]),
		s.pending && (int(s.pendLo) < lo || int(s.pendHi) > hi):
		return false
	}
	copy(held[lo:hi], value[lo:hi])
	sh.seq++
	s.referenced = true
	if !s.pending {
		s.pending = true
		sh.pending++
		c.pendingItems.Add(1)
		c.pendingBytes.Add(int64(s.size))
		f := c.pendingFilterOf()
		f.mark(s.hash)
		f.group(key).Add(1)
	}
	s.pendLo, s.pendHi = int32(lo), int32(hi)
	s.patched = s.patched || logged
	sh.setExpiry(i, c.expiryOf(c.policy.Load(), key, value))
	return true
}

// PendingItems is how many values are pending.
func (c *Cache) PendingItems() int64 { return c.pendingItems.Load() }

// PendingBytes is the pending values' entries' bytes.
func (c *Cache) PendingBytes() int64 { return c.pendingBytes.Load() }

// IsPending reports whether key's value is pending, and whether it is
// patched (SetPending's logged).
func (c *Cache) IsPending(key []byte) (pending, patched bool) {
	if c.pendingItems.Load() == 0 {
		return false, false
	}
	f := c.pendingFilterOf()
	if !f.groupMaybe(key) {
		return false, false
	}
	sk, family, ok := slotKeyOf(c.policy.Load(), key)
	if !ok || family {
		return false, false
	}
	hash := c.hashOf(sk)
	if !f.maybe(hash) {
		return false, false
	}
	sh, i := c.heldPlainAt(sk, hash)
	defer sh.mu.Unlock()
	if i == noSlot || !sh.at(i).pending {
		return false, false
	}
	return true, sh.at(i).patched
}

// EachPending calls fn with the key, value and patched state of each
// pending value in shard n, under the shard's lock: fn copies what it
// keeps, and must not call the cache.
func (c *Cache) EachPending(n int, fn func(key, value []byte, patched bool)) {
	sh := &c.shards[n]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	for j := int32(1); j < sh.slotCount(); j++ {
		if s := sh.at(j); s.used && s.pending {
			e := sh.held(j)
			fn(e.key(), e.payload(), s.patched)
		}
	}
}

// SettlePending ends the pending state of every value of shard n:
// storage holds them now. The caller kept any write of those keys out
// since EachPending.
func (c *Cache) SettlePending(n int) {
	sh := &c.shards[n]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	p := c.policy.Load()
	for j := int32(1); j < sh.slotCount(); j++ {
		if s := sh.at(j); s.used && s.pending {
			c.pendingDone(sh, s)
			e := sh.held(j)
			// The policy may have changed while it was pending (Reset
			// keeps pending values): its expiry is judged again.
			sh.setExpiry(j, c.expiryOf(p, e.key(), e.payload()))
		}
	}
}

// pendingDone ends the pending state of s, in sh, whose lock is held
// and whose arena still holds s's key. The shard's filter bits are
// cleared with its last pending value.
func (c *Cache) pendingDone(sh *shard, s *slot) {
	s.pending, s.patched, s.pendLo, s.pendHi = false, false, 0, 0
	c.pendingItems.Add(-1)
	c.pendingBytes.Add(-int64(s.size))
	f := c.pendingFilterOf()
	f.group(sh.arena.bytes(s.loc, s.dataLen)[:s.keyLen]).Add(-1)
	if sh.pending--; sh.pending == 0 {
		f.clearShard(s.hash % shardCount)
	}
}

// AppendHeld appends the value held at key, pending or not and even
// once expired, to dst; false when none is held. No hit or miss is
// counted: an iterator of storage asks it for each key while values
// are pending, since one pending when the iterator began may have been
// settled since, and storage's view from then has the older value.
func (c *Cache) AppendHeld(dst, key []byte) ([]byte, bool) {
	sh, i := c.heldPlain(key)
	if sh == nil {
		return dst, false
	}
	defer sh.mu.Unlock()
	if i == noSlot {
		return dst, false
	}
	e := sh.held(i)
	return append(dst, e.payload()...), true
}
