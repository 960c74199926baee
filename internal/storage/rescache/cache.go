// Package rescache is the resident cache in front of the storage engine:
// values read by key (documents) and the whole contents of small equality
// ranges (an index's entries for one value), bounded in bytes, evicted
// by a clock approximating least recently used, and at the moment their
// value expires.
//
// The engine keeps it exact: every batch it commits passes through
// Invalidate before its apply and Written after it, and a read that missed
// fills the cache only if no write touched the key's shard since the read
// began (Ticket). So the cache never holds a value older than storage for
// longer than a commit's apply, and during that apply readers miss. What a
// key is worth keeping, when a value expires and which equality range a
// written key belongs to are the caller's rules (Policy): the cache knows
// bytes only. Design notes: docs/design/0002-storage-and-durability.md.
package rescache

import (
	"bytes"
	"encoding/binary"
	"hash/maphash"
	"slices"
	"sync/atomic"

	"github.com/mayflydb/mayfly/internal/clock"
)

// Policy is what the layer above tells the cache about its keys. A nil
// function means no: nothing admitted, nothing expires, no ranges.
type Policy struct {
	// Admit reports whether the value read or written at key is kept.
	Admit func(key []byte) bool
	// Family, for a key whose value is kept only while it is the newest
	// of its family (a document's entry in an index whose entries a touch
	// appends: only the newest is read back), returns the part of key
	// that names the member, key[cut:resume]: the family's key is key
	// without it, under which the cache holds the newest member read or
	// written; a read of another member misses. ok is false for other
	// keys.
	Family func(key []byte) (cut, resume int, ok bool)
	// ExpiresAt is when the value stored at key expires, in Unix
	// nanoseconds; ok is false for a value that never does.
	ExpiresAt func(key, value []byte) (at int64, ok bool)
	// EqualityLen is the length of the equality prefix key belongs to: an
	// index entry's key without its trailing _id, or a range's lower bound
	// itself. ok is false for a key in no cacheable range.
	EqualityLen func(key []byte) (n int, ok bool)
	// Resets reports whether writing key may change what the functions
	// above answer (a catalog change): the cache then empties.
	Resets func(key []byte) bool
	// RangeGroupLen is the length of the prefix naming a range's group
	// (an index): a write in a group none of whose ranges is held skips
	// the range lookup. 0: every range is in one group.
	RangeGroupLen int
	// RangeKey reports, without EqualityLen's decoding, whether key may
	// belong to a range (an index entry); nil: any key may.
	RangeKey func(key []byte) bool
	// PendingGroupLen is the length of the prefix naming a pending
	// value's group (a collection's documents): IsPending answers at once
	// for a key whose group holds no pending value. 0: one group. The
	// length in force when the first value is set pending stays.
	PendingGroupLen int
}

// KV is one entry of a cached range.
type KV struct {
	Key, Value []byte
}

// Stats are the cache's counters, for serverStatus and /metrics.
type Stats struct {
	Hits, Misses     int64
	Bytes, MaxBytes  int64
	Items            int64
	Evictions        int64 // to stay within MaxBytes
	ExpiredEvictions int64 // because the value expired
	Invalidations    int64 // entries a write removed
	WarmUps          int64 // warm-ups of a group ended (warm.go)
	Warmed           int64 // ranges warm-ups kept
	FilterBytes      int64 // the value filters' memory (filter.go), beside Bytes
	Claimed          int64 // ranges installed by the write of their first entry (filter.go)
	PendingItems     int64 // values storage does not hold yet (pending.go)
	PendingBytes     int64 // their entries' bytes, within Bytes
}

// shardCount spreads the lock: a read holds one shard's mutex for an
// index probe and the copy of its value. At most 32 (rangeGroup's
// fullShards).
const shardCount = 16

// allShards is fullShards with every shard's bit; its conversion fails
// to compile when shardCount outgrows the word.
const allShards = 1<<shardCount - 1

const _ = uint32(allShards)

// itemOverhead approximates an entry's memory beyond its key and value:
// its slot, its index cell and tag counts, and the rounding of its data
// to an allocation size (131 bytes measured per entry of a 27-byte key
// and a 150-byte value, 100,000 of them in one cache, its index tables
// just doubled).
const itemOverhead = 131

// rangeGroupBuckets spreads the ranges' groups: two groups in one bucket
// only make a write look for a range it could have skipped.
const rangeGroupBuckets = 64

// rangeGroup counts the ranges held in a bucket of groups, so that a
// write in a group with none skips the lookup of its key's range; epoch
// counts those skips, and a range read that began before one does not
// fill the cache.
type rangeGroup struct {
	held  atomic.Int64
	epoch atomic.Uint64
	// filter is the bucket's value filter, when one is made (filter.go);
	// setting counts the writes under way that set an entry in its group.
	filter  atomic.Pointer[valueFilter]
	setting atomic.Int64
	// writes counts the writes into the bucket's ranges, each at its
	// begin and at its end, and every InvalidateRange: a warm-up's range
	// read after a count is kept only while the count stands (warm.go).
	writes atomic.Uint64
	// nextWarm is when a warm-up of the bucket may begin (Unix ns;
	// MaxInt64 while one runs), warmGap the wait after the last one
	// (warm.go).
	nextWarm, warmGap atomic.Int64
	// fullShards has a bit for each shard the running warm-up found
	// without spare room (warm.go).
	fullShards atomic.Uint32
}

// maxRangeEntries is the most entries a cached range holds: equality on a
// unique or selective index. A larger range is read from storage.
const maxRangeEntries = 8

// Cache is a bounded resident cache. Safe for concurrent use.
type Cache struct {
	clock    clock.Clock
	maxBytes int64
	policy   atomic.Pointer[Policy]
	seed     maphash.Seed
	testHash func([]byte) uint64 // tests: keys made to collide
	shards   [shardCount]shard
	groups   [rangeGroupBuckets]rangeGroup

	bytes, items                          atomic.Int64
	hits, misses, evictions, expired, inv atomic.Int64
	warmUps, warmed                       atomic.Int64
	filterBytes, claimed                  atomic.Int64
	pendingItems, pendingBytes            atomic.Int64
	pendFilter                            atomic.Pointer[pendingFilter]
}

// DefaultBytes is the resident cache's size when the
// configuration names none: a session store's working set of 100,000
// documents, their newest TTL entries and their token lookups (about 620
// bytes a session, all three entries), and small beside a small machine's
// memory (pebble's block cache is 64 MiB). It grew from 48 MiB when
// memtables shrank from 24 to 16 MiB, which kept resident memory with
// 1,000,000 sessions within the bench's bound (docs/design/0005).
const DefaultBytes = 64 << 20

// New returns a cache of at most maxBytes (0 or less: a cache that keeps
// nothing, every read a miss) using clk for expiry.
func New(maxBytes int64, clk clock.Clock) *Cache {
	if clk == nil {
		clk = clock.Real{}
	}
	c := &Cache{clock: clk, maxBytes: max(maxBytes, 0), seed: maphash.MakeSeed()}
	for i := range c.shards {
		c.shards[i].init(c.maxBytes / shardCount)
	}
	c.policy.Store(&Policy{})
	return c
}

// SetPolicy installs the caller's rules and empties the cache, whose
// entries were judged by the old ones.
func (c *Cache) SetPolicy(p Policy) {
	c.policy.Store(&p)
	c.Reset()
}

// MaxBytes is the configured bound.
func (c *Cache) MaxBytes() int64 { return c.maxBytes }

// Stats returns the counters.
func (c *Cache) Stats() Stats {
	return Stats{
		Hits: c.hits.Load(), Misses: c.misses.Load(),
		Bytes: c.bytes.Load(), MaxBytes: c.maxBytes, Items: c.items.Load(),
		Evictions: c.evictions.Load(), ExpiredEvictions: c.expired.Load(),
		Invalidations: c.inv.Load(), WarmUps: c.warmUps.Load(), Warmed: c.warmed.Load(),
		FilterBytes: c.filterBytes.Load(), Claimed: c.claimed.Load(),
		PendingItems: c.pendingItems.Load(), PendingBytes: c.pendingBytes.Load(),
	}
}

// hashOf is key's hash: its shard, and its place in the shard's index.
func (c *Cache) hashOf(key slotKey) uint64 {
	switch {
	case c.testHash != nil:
		return c.testHash(key.appendTo(nil))
	case len(key.tail) == 0:
		return maphash.Bytes(c.seed, key.head)
	}
	var h maphash.Hash // the same hash as maphash.Bytes of head and tail joined
	h.SetSeed(c.seed)
	_, _ = h.Write(key.head)
	_, _ = h.Write(key.tail)
	return h.Sum64()
}

func (c *Cache) shardOf(hash uint64) *shard { return &c.shards[hash%shardCount] }

// Ticket is taken before a read of storage that may fill the cache.
type Ticket struct {
	sh    *shard
	seq   uint64
	epoch uint64 // rangeEpoch, for a range's read
}

// Admits reports whether the cache keeps values read at key.
func (c *Cache) Admits(key []byte) bool {
	if c.maxBytes == 0 {
		return false
	}
	_, _, ok := slotKeyOf(c.policy.Load(), key)
	return ok
}

// slotKeyOf is the key the value at key is held under: key itself, or its
// family's (family true); ok is false for a key the policy does not admit.
func slotKeyOf(p *Policy, key []byte) (sk slotKey, family, ok bool) {
	if p.Admit != nil && p.Admit(key) {
		return plainKey(key), false, true
	}
	if p.Family == nil {
		return slotKey{}, false, false
	}
	cut, resume, ok := p.Family(key)
	if !ok || cut < 0 || cut > resume || resume > len(key) {
		return slotKey{}, false, false
	}
	return slotKey{head: key[:cut], tail: key[resume:]}, true, true
}

// Get returns a copy of the value cached at key, or false and the ticket
// for a read of storage that Fill may keep. The copy is made under the
// shard's lock: once it is released, a write may reuse the value's place.
func (c *Cache) Get(key []byte) ([]byte, Ticket, bool) {
	return c.get(key, func(v []byte) []byte { return bytes.Clone(v) })
}

// AppendGet is Get with the value appended to dst, as by append, instead
// of copied to a fresh slice.
func (c *Cache) AppendGet(dst, key []byte) ([]byte, Ticket, bool) {
	return c.get(key, func(v []byte) []byte { return append(dst, v...) })
}

// get is Get with the value held copied out by take, under the shard's
// lock (once it is released, a write may reuse the place).
func (c *Cache) get(key []byte, take func(v []byte) []byte) ([]byte, Ticket, bool) {
	slotKey, _, ok := slotKeyOf(c.policy.Load(), key)
	if !ok {
		slotKey = plainKey(key) // counted as a miss; Fill will not keep it
	}
	var value []byte
	t, hit := c.find(slotKey, false, func(e entry) bool {
		v, match := e.valueOf(key)
		if match {
			value = take(v)
		}
		return match
	})
	return value, t, hit
}

// find looks key up among the values or the ranges, passes the entry
// found to read under the shard's lock (which reports whether it is what
// the caller asked for) and counts a hit or a miss; on a miss the ticket
// is for the read of storage that follows.
func (c *Cache) find(key slotKey, isRange bool, read func(entry) bool) (Ticket, bool) {
	hash := c.hashOf(key)
	sh := c.shardOf(hash)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	e, ok := c.lookup(sh, isRange, hash, key)
	if !ok && isRange && c.knownEmpty(key.head) {
		c.hits.Add(1) // a value its group's filter never saw: empty
		return Ticket{}, true
	}
	if !ok || !read(e) {
		c.misses.Add(1)
		t := Ticket{sh: sh, seq: sh.seq}
		if isRange {
			t.epoch = c.groups[c.groupOf(key.head)].epoch.Load()
		}
		return t, false
	}
	c.hits.Add(1)
	return Ticket{}, true
}

// Fill keeps value as read at key under t, unless a write reached the
// key's shard since t was taken or the policy does not admit key.
func (c *Cache) Fill(key, value []byte, t Ticket) {
	if t.sh == nil || c.maxBytes == 0 {
		return
	}
	if e, ok := c.pointEntry(key, value); ok {
		c.put(t, e, false)
	}
}

func (c *Cache) expiryOf(p *Policy, key, value []byte) int64 {
	if p.ExpiresAt == nil {
		return 0
	}
	at, ok := p.ExpiresAt(key, value)
	if !ok {
		return 0
	}
	return max(at, 1) // 0 means never
}

// pointEntry is the entry of value at key: one copy of both, held under
// key, or under its family's key with the member's own part framed
// before the value (memberParts); ok is
// false for a key the policy does not admit.
func (c *Cache) pointEntry(key, value []byte) (entry, bool) {
	p := c.policy.Load()
	slotKey, family, ok := slotKeyOf(p, key)
	if !ok {
		return entry{}, false
	}
	return c.entryAt(nil, p, slotKey, family, key, value), true
}

// entryLen bounds the data of entryAt's entry.
func entryLen(sk slotKey, family bool, key, value []byte) int {
	n := sk.size() + len(value)
	if family {
		n += 2*binary.MaxVarintLen32 + len(key) - sk.size()
	}
	return n
}

// entryAt is pointEntry for a key whose slot key is known.
// Its data is appended to dst.
func (c *Cache) entryAt(dst []byte, p *Policy, sk slotKey, family bool, key, value []byte) entry {
	data := sk.appendTo(slices.Grow(dst[:0], entryLen(sk, family, key, value)))
	if family {
		// Only the member's own part: the slot's key holds the rest.
		mid := key[len(sk.head) : len(key)-len(sk.tail)]
		data = binary.AppendUvarint(data, uint64(len(sk.head)))
		data = binary.AppendUvarint(data, uint64(len(mid)))
		data = append(data, mid...)
	}
	data = append(data, value...)
	return entry{data: data, slot: slot{keyLen: int32(sk.size()), family: family,
		expiry: c.expiryOf(p, key, value), size: int32(len(data)) + itemOverhead}}
}

// put inserts e, read from storage under t, if t is still current; with
// spare, only where the shard has room without evicting.
func (c *Cache) put(t Ticket, e entry, spare bool) bool { return c.putAs(t, e, spare, false) }

// putAs is put; a write's install (ends) moves the shard's sequence under
// the same hold of its lock, as the drop it replaces would, so that a
// read of storage from before the write's apply cannot fill after it.
func (c *Cache) putAs(t Ticket, e entry, spare, ends bool) bool {
	key := e.key()
	e.hash = c.hashOf(plainKey(key))
	sh := c.shardOf(e.hash)
	if e.isRange {
		e.group = c.groupOf(key)
	}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if t.sh == nil || t.seq != sh.seq || (!e.isRange && sh.writing > 0) || (e.isRange && t.epoch != c.groups[e.group].epoch.Load()) {
		return false
	}
	if ends {
		sh.seq++
	}
	i := sh.find(e.isRange, e.hash, plainKey(key))
	if !c.fits(sh, e, spare, 0) || (i != noSlot && sh.at(i).pending) {
		return false // a pending value is newer than any read of storage
	}
	c.insertAt(sh, i, e)
	return true
}

// Invalidate drops what a write of key makes stale: its value and the
// equality range it belongs to. Called before the write's apply, so no
// reader finds the old value while the write becomes visible; Written
// must follow it once the apply has ended, whether it succeeded or not.
// held reports whether a value was cached at key: the caller then keeps
// the written value (KeepHeld), so a touched document stays resident,
// and any other only while there is room (KeepSpare), so documents
// written and never read (a bulk load, a log that expires unread) never
// push out those that are read.
func (c *Cache) Invalidate(key []byte) (held bool) {
	p := c.policy.Load()
	return c.invalidate(p, key, c.rangeGroupOf(p, key))
}

// invalidate is Invalidate with the bucket of key's range group found
// (g; nil for a key in no range).
func (c *Cache) invalidate(p *Policy, key []byte, g *rangeGroup) (held bool) {
	if p.Resets != nil && p.Resets(key) {
		c.Reset()
		return false
	}
	// Only admitted keys are ever held as values: a write of any other
	// key (an index entry, a log record) has no value to drop, and no
	// fill of it to refuse. A family member's write drops the member
	// held, whichever it is.
	if slotKey, _, ok := slotKeyOf(p, key); ok {
		held = c.dropWriting(slotKey)
	}
	c.dropRangeIn(p, g, key)
	return held
}

// DropRangeOf drops the equality range key belongs to, as Invalidate
// and Written do, for a write whose value needs no lookup (a deletion of
// a value that has expired by the cache's Now).
func (c *Cache) DropRangeOf(key []byte) {
	p := c.policy.Load()
	if p.Resets != nil && p.Resets(key) {
		c.Reset()
		return
	}
	c.dropRangeOf(p, key)
}

// Now is the cache's clock (Unix nanoseconds): a value that expired at
// or before it is never served again, whether or not the cache still
// holds it (lookup evicts it instead). A commit reads it once for all its
// deletions of expired values: on a virtual machine's clock a read costs
// as much as the rest of such a deletion's upkeep.
func (c *Cache) Now() int64 { return c.clock.Now().UnixNano() }

// dropWriting drops the value at key and counts a write of it under way,
// under one hold of the shard's lock; it reports whether one was held.
// The value's slot stays, marked stale, for Written to fill or remove: no
// read finds it meanwhile.
func (c *Cache) dropWriting(key slotKey) bool {
	hash := c.hashOf(key)
	sh := c.shardOf(hash)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	sh.writing++
	sh.seq++
	i := sh.find(false, hash, key)
	switch {
	case i == noSlot || sh.at(i).stale:
		return false
	case sh.at(i).pending:
		// Storage holds an older value than this one: readers keep
		// reading it until Written replaces it (pending.go).
		return true
	}
	sh.at(i).stale = true
	c.inv.Add(1)
	return true
}

// maxScratch is the largest scratch a shard keeps for framing entries:
// a larger document's is garbage once copied.
const maxScratch = 16 << 10

// Keep is what Written does with the value just committed at its key.
type Keep uint8

const (
	// KeepNone keeps nothing: a deletion, or a write that failed.
	KeepNone Keep = iota
	// KeepHeld keeps the value, evicting what it must: the cache held
	// the key's value when the write began.
	KeepHeld
	// KeepSpare keeps it only where the shard has room without evicting.
	KeepSpare
)

// Written ends the write of key that Invalidate began, and keeps value as
// keep says (under the same hold of the shard's lock, the key's slot and
// hash found once), reporting whether it was kept. A read that began
// before the apply ended may have read the old value: the shard's
// sequence moves, so that its fill is refused, without looking the key
// up again (no fill was kept while the write was under way); the
// equality range is dropped again for the same reason.
func (c *Cache) Written(key, value []byte, keep Keep) bool {
	return c.written(key, value, keep, func(p *Policy) { c.dropRangeOf(p, key) })
}

// written is Written with the end of the range's write (endRange) the
// caller's. It runs before the value is kept: a claim's install (filter.go)
// is refused by any write reaching its shard after its ticket, this one's
// own value included.
func (c *Cache) written(key, value []byte, keep Keep, endRange func(*Policy)) bool {
	p := c.policy.Load()
	if p.Resets != nil && p.Resets(key) {
		c.Reset()
		return false
	}
	endRange(p)
	slotKey, family, ok := slotKeyOf(p, key)
	if !ok {
		return false
	}
	w := pointWrite{p: p, slotKey: slotKey, family: family, key: key, value: value, hash: c.hashOf(slotKey)}
	sh := c.shardOf(w.hash)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	sh.writing--
	sh.seq++
	// The slot under the key: stale, the old value this write replaces;
	// or a value another write installed since, replaced if this one is
	// kept.
	i := sh.find(false, w.hash, slotKey)
	stale := i != noSlot && (sh.at(i).stale || sh.at(i).pending)
	if !c.keepWritten(sh, w, keep, i, stale) {
		if stale {
			c.removeLocked(sh, i)
		}
		return false
	}
	return true
}

// pointWrite is a value Written ends the write of.
type pointWrite struct {
	p          *Policy
	slotKey    slotKey
	family     bool
	key, value []byte
	hash       uint64
}

// keepWritten installs w as keep says, in slot i (noSlot: a new one),
// and reports whether it did. sh.mu is held.
func (c *Cache) keepWritten(sh *shard, w pointWrite, keep Keep, i int32, stale bool) bool {
	var freed int64 // the stale value's bytes, which the new one replaces
	if stale {
		freed = int64(sh.at(i).size)
	}
	size := int64(entryLen(w.slotKey, w.family, w.key, w.value) + itemOverhead)
	switch {
	case keep == KeepNone, size > sh.max:
		return false
	case keep == KeepSpare && !sh.hasRoom(int(size-freed)):
		return false // a write into a full cache (a bulk load) copies nothing
	}
	// The entry is framed in the shard's scratch, then copied into the
	// arena: a write's upkeep leaves no garbage.
	e := c.entryAt(sh.scratch, w.p, w.slotKey, w.family, w.key, w.value)
	if cap(e.data) <= maxScratch {
		sh.scratch = e.data[:0]
	}
	e.hash = w.hash
	if !c.fits(sh, e, keep == KeepSpare, freed) {
		return false
	}
	sh.seq++
	c.insertAt(sh, i, e)
	return true
}

// fits reports whether e may go into sh: not bigger than the shard, not
// expired, and with spare only where the shard has room without
// evicting. sh.mu is held.
func (c *Cache) fits(sh *shard, e entry, spare bool, freed int64) bool {
	switch {
	case int64(e.size) > sh.max:
		return false
	case e.expiry != 0 && e.expiry <= c.Now():
		return false // already expired: never worth keeping
	case spare:
		return sh.hasRoom(int(int64(e.size) - freed))
	}
	return true
}

// Evict drops the value held at key, if any (for a family member, the
// member held, whichever it is).
func (c *Cache) Evict(key []byte) {
	if slotKey, _, ok := slotKeyOf(c.policy.Load(), key); ok {
		c.drop(false, slotKey)
	}
}

// dropRangeOf drops the equality range key belongs to, if one of its
// group is held. The group is asked first (key has its range's group
// prefix): a TTL index's entries, in a group whose ranges nobody reads,
// are then written without decoding their equality prefix.
func (c *Cache) dropRangeOf(p *Policy, key []byte) { c.dropRangeIn(p, c.rangeGroupOf(p, key), key) }

// rangeGroupOf is the bucket of the group of the range key belongs to;
// nil for a key in no range.
func (c *Cache) rangeGroupOf(p *Policy, key []byte) *rangeGroup {
	if p.EqualityLen == nil || (p.RangeKey != nil && !p.RangeKey(key)) {
		return nil
	}
	return &c.groups[c.groupOf(key)]
}

// dropRangeIn is dropRangeOf with key's bucket found (g; nil: none).
func (c *Cache) dropRangeIn(p *Policy, g *rangeGroup, key []byte) {
	if g == nil {
		return
	}
	g.writes.Add(1)
	if c.noRangesIn(g) {
		return
	}
	if n, ok := p.EqualityLen(key); ok && n <= len(key) {
		c.drop(true, plainKey(key[:n]))
	}
}

// groupOf is the bucket of the group the range at lo belongs to.
func (c *Cache) groupOf(lo []byte) uint8 {
	return uint8(prefixBucket(c.seed, lo, c.policy.Load().RangeGroupLen, rangeGroupBuckets))
}

// prefixBucket is the bucket, of buckets, of key's group: its first n
// bytes (0 with n at most 0: one group).
func prefixBucket(seed maphash.Seed, key []byte, n int, buckets uint64) uint64 {
	if n <= 0 {
		return 0
	}
	return maphash.Bytes(seed, key[:min(n, len(key))]) % buckets
}

// noRangesIn reports that no range of the bucket g is held, so a write
// need not look for its key's range; it then moves the bucket's epoch, and
// looks again, so that a range filled meanwhile is either seen here or
// refused by the epoch. A TTL index's entries, whose ranges nobody
// reads, are written without a lookup while the sessions' token ranges
// are held.
func (c *Cache) noRangesIn(g *rangeGroup) bool {
	if g.held.Load() != 0 {
		return false
	}
	g.epoch.Add(1)
	return g.held.Load() == 0
}

func (c *Cache) drop(isRange bool, key slotKey) {
	hash := c.hashOf(key)
	sh := c.shardOf(hash)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	sh.seq++
	if i := sh.find(isRange, hash, key); i != noSlot {
		c.removeLocked(sh, i)
		c.inv.Add(1)
	}
}

// InvalidateRange drops every value and range that meets [start, end)
// (a dropped collection or index, the raft log's compaction; end nil: no
// upper bound). Every shard's sequence moves, so that no read of storage
// from before the deletion fills after it; only a shard that may hold a
// key in the range is walked.
func (c *Cache) InvalidateRange(start, end []byte) { c.invalidateRange(start, end, false) }

// invalidateRange is InvalidateRange, keeping pending values when
// keepPending.
func (c *Cache) invalidateRange(start, end []byte, keepPending bool) {
	// A filter whose group the range meets is made again rather than
	// judged against what the deletion leaves (a reset, a dropped index
	// whose key prefix a new one may take). One it does not meet still
	// has every value stored: a range deletion adds no key.
	c.dropFiltersMeeting(start, end)
	for i := range c.groups {
		c.groups[i].writes.Add(1)
	}
	for i := range c.shards {
		sh := &c.shards[i]
		sh.mu.Lock()
		sh.seq++
		if sh.heads.mayMeet(start, end) {
			c.removeMeeting(sh, start, end, keepPending)
		}
		sh.mu.Unlock()
	}
}

// removeMeeting removes the shard's entries that meet [start, end),
// but for pending values when keepPending. sh.mu is held.
func (c *Cache) removeMeeting(sh *shard, start, end []byte, keepPending bool) {
	for j := int32(1); j < sh.slotCount(); j++ {
		if !sh.at(j).used || (keepPending && sh.at(j).pending) {
			continue
		}
		if e := sh.held(j); e.meets(start, end) {
			c.removeLocked(sh, j)
			c.inv.Add(1)
		}
	}
}

// Reset empties the cache (a catalog change) but for its pending
// values, which storage does not hold yet: they stay until settled.
func (c *Cache) Reset() { c.invalidateRange(nil, nil, true) }

// Clear empties the cache, pending values too (a storage reopen, after
// which the store rebuilds them from its log: pending.go).
func (c *Cache) Clear() { c.invalidateRange(nil, nil, false) }

// Sweep evicts every entry whose value has expired. Reads and writes
// sweep the shard they use; this covers the shards nobody uses.
func (c *Cache) Sweep() {
	now := c.Now()
	for i := range c.shards {
		sh := &c.shards[i]
		sh.mu.Lock()
		c.sweepLocked(sh, now, -1)
		sh.mu.Unlock()
	}
}
