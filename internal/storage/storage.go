// Package storage defines the small ordered key-value contract that Mayfly's
// document, index and catalog layers are written against. Engines live in
// sub-packages (pebblestore); storagetest holds the one conformance suite
// every engine must pass.
//
// Keys and values are opaque bytes; all query, index and TTL logic lives
// above this package.
package storage

import "errors"

// ErrNotFound is returned by Get when a key is absent.
var ErrNotFound = errors.New("storage: not found")

// ErrClosed is returned by operations on a closed engine.
var ErrClosed = errors.New("storage: closed")

// ErrWriteFailed is wrapped, together with its cause (errors.Is(err,
// syscall.ENOSPC) works for a full disk), by every write an engine refuses
// after a storage failure. Reads keep working; writes are refused until the
// engine recovers. Its text has no package prefix because engines always
// wrap it with theirs.
var ErrWriteFailed = errors.New("writes refused after a storage failure")

// ErrInvalidated is returned by iterators and snapshots that were open when
// the engine reopened itself to recover from a storage failure: what they
// read from is gone. Opening them again works.
var ErrInvalidated = errors.New("storage: iterator or snapshot invalidated by a reopen after a storage failure")

// Reader reads a consistent view of the key space.
type Reader interface {
	// Get returns a copy of the value stored at key, or ErrNotFound. It
	// keeps no reference to key, which the caller may reuse at once.
	Get(key []byte) ([]byte, error)
	// NewIter returns an iterator over keys in [lower, upper). A nil bound is
	// open. The iterator must be closed.
	NewIter(lower, upper []byte) (Iterator, error)
}

// Engine is an open store.
type Engine interface {
	Reader
	// NewBatch starts an atomic group of writes.
	NewBatch() Batch
	// NewSnapshot returns a point-in-time Reader; it must be closed.
	NewSnapshot() Snapshot
	// Sync makes every write committed so far durable.
	Sync() error
	// Metrics reports engine-level figures for serverStatus and stats.
	Metrics() Metrics
	// OnReopen registers f to run each time the engine has reopened itself
	// to recover from a storage failure. Writes acknowledged without sync
	// may be gone after a reopen, so callers rebuild in f whatever they
	// cache from storage. f runs on the engine's own goroutine with no
	// engine lock held, once writes are accepted again, and may use the
	// engine; Close waits for it. An engine that never reopens never calls f.
	OnReopen(f func())
	Close() error
}

// Snapshot is a Reader frozen at the moment it was taken.
type Snapshot interface {
	Reader
	Close() error
}

// Batch is an atomic set of writes: after Commit either all are visible or
// none is, also across a crash.
type Batch interface {
	Set(key, value []byte) error
	Delete(key []byte) error
	// DeleteRange deletes every key in [start, end); dropping a collection
	// or an index is one such range.
	DeleteRange(start, end []byte) error
	// Commit applies the batch. With sync, it returns only once the batch is
	// durable on stable storage.
	Commit(sync bool) error
	// Len is the encoded size of the batch in bytes; 0 means empty.
	Len() int
	// Close releases the batch; it is safe after Commit.
	Close() error
}

// Encodable is implemented by batches whose writes encode as one record
// that ApplyRepr on another store turns back into the same writes: a
// replica set ships it.
type Encodable interface {
	Repr() ([]byte, error)
}

// AppendGetter is implemented by readers that can append the value at
// key to a buffer of the caller's (dst, returned grown as by append)
// instead of returning a fresh copy: a caller with room for a small value
// then reads it without an allocation. It reads what Get reads.
type AppendGetter interface {
	AppendGet(dst, key []byte) ([]byte, error)
}

// SoleEntryNoter is implemented by batches that can tell the engine's
// cache what an equality range holds once they commit. The writer knows
// the range of every key starting with lower will hold exactly the one
// entry (key, value) it sets: a unique index's value it claimed under the
// lock that keeps every other writer out of the range, having found no
// entry there. A
// read of the range after the commit then need not go to storage. A
// batch that is never committed, or fails, keeps nothing.
type SoleEntryNoter interface {
	NoteSoleEntry(lower, key, value []byte)
}

// TouchSetter is implemented by batches that can hold a touch back
// from storage with no log record of its own (docs/design/0002, "The
// TTL entry as the touch's log"). SetTouch is Set for a value that
// differs from the key's current one only in a top-level date whose
// new index entry, set in the same batch, records it: after a crash
// the engine's TouchRepair, given at Open by the layer that wrote the
// entries, restores the date from them. TouchesBehind reports whether
// the engine holds touches back at all; when it does not, SetTouch is
// Set.
type TouchSetter interface {
	TouchesBehind() bool
	SetTouch(key, value []byte) error
}

// TouchRepair reads storage as opened, before any write, and sets
// (set) every document whose touch the engine held back with no log
// of its own to the version its index entries record. It must find
// what to write from r alone: it runs at Open and at a recovery
// reopen, with the engine's locks held.
type TouchRepair func(r Reader, set func(key, value []byte) error) error

// TouchRepairer is implemented by engines that hold touches back
// (TouchSetter). RepairTouches registers repair, and runs it now when
// storage may hold touches it never wrote; the engine runs it again
// after each recovery reopen that may.
type TouchRepairer interface {
	RepairTouches(repair TouchRepair) error
}

// ExpiredDeleter is implemented by batches that can delete a key whose
// value expired at expiredAt (Unix nanoseconds) by the rules the engine's
// cache was given (rescache.Policy.ExpiresAt): a cache serves no such
// value once its clock has passed that instant, so the deletion need not
// look for one. A TTL pass deletes thousands of documents this way.
type ExpiredDeleter interface {
	DeleteExpired(key []byte, expiredAt int64) error
}

// SpareInstallSkipper is implemented by batches that can commit without
// filling the engine's cache: a value the cache holds is replaced, and a
// key it does not hold stays out of it. A replica set member applying
// writes its primary proposed uses it: the primary's readers read the
// primary, so filling a secondary's cache with every replicated write
// (a bulk load, a million documents that expire unread) costs the apply
// its installs and then probes of a full cache, and buys nothing; what
// the secondary's own readers read comes in on their first read.
type SpareInstallSkipper interface {
	SkipSpareInstalls()
}

// CountNoter is implemented by batches that carry a collection's count
// changes to other places (a replica set's other members): the write path
// notes each change beside the keys it writes.
type CountNoter interface {
	NoteCounts(collID uint64, docs, bytes int64)
}

// GroupCommit is implemented by batches that commit durably in two steps:
// CommitNoWait applies the batch, visible at once, and wait returns once
// it is durable, or why not. A caller commits under its lock and waits
// outside it, so concurrent durable writers share one fsync. wait must be
// called once the commit succeeded.
type GroupCommit interface {
	CommitNoWait() (wait func() error, err error)
}

// CommitNoWait commits b durably in two steps, with b's own GroupCommit or
// else by a commit now and a sync of eng as the wait.
func CommitNoWait(b Batch, eng Engine) (wait func() error, err error) {
	if gc, ok := b.(GroupCommit); ok {
		return gc.CommitNoWait()
	}
	if err := b.Commit(false); err != nil {
		return nil, err
	}
	return eng.Sync, nil
}

// Iterator walks keys in ascending byte order. Key and Value are valid
// until the next positioning call; callers copy what they keep.
type Iterator interface {
	First() bool
	Last() bool
	SeekGE(key []byte) bool
	SeekLT(key []byte) bool
	Next() bool
	Prev() bool
	Valid() bool
	Key() []byte
	Value() []byte
	Error() error
	Close() error
}

// Metrics is the engine's own accounting.
type Metrics struct {
	// DiskBytes is the size of the engine's files on disk (0 in memory).
	DiskBytes int64
	// MemBytes is memory held by memtables and caches.
	MemBytes int64
	// What an operator watches in an LSM engine; zero where an engine has
	// no such thing.
	MemTableBytes     int64
	BlockCacheBytes   int64
	BlockCacheHits    int64
	BlockCacheMisses  int64
	Compactions       int64
	CompactionDebt    int64 // bytes to compact before the tree is stable
	Flushes           int64
	ReadAmplification int64
	L0Files           int64
	WALBytes          int64
	WriteStalls       int64
	// The resident cache in front of the engine, zero without one:
	// bytes held and the bound, reads served and not, entries evicted
	// to stay within the bound and because their value expired, warm-ups
	// of an index ended and the ranges they kept.
	ResidentBytes, ResidentMaxBytes             int64
	ResidentHits, ResidentMisses                int64
	ResidentEvictions, ResidentExpiredEvictions int64
	ResidentWarmUps, ResidentWarmed             int64
	// ResidentPending is how many documents the cache holds ahead of
	// the engine (a write-behind), within ResidentBytes.
	ResidentPending int64
}

// ExpiryBatch is implemented by batches that carry TTL deletions in their
// compact form: the key of the expired TTL index entry alone. Whoever
// applies the batch deletes the document from the deletion record that
// entry holds in its own storage (docstore.Store.ApplyExpiries), so a
// replicated deletion travels as one key, not as every key it removes.
type ExpiryBatch interface {
	// AddExpiry adds the TTL entry key; the batch copies it.
	AddExpiry(key []byte)
	// CommitAsync hands the batch on and returns at once; wait returns
	// once the batch is applied (or has failed). The TTL monitor keeps
	// several deletion batches in flight this way, each waiting for its
	// replication round trip while the next is gathered.
	CommitAsync() (wait func() error, err error)
}
