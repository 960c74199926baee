package docstore

import (
	"sync"
	"sync/atomic"
)

// txnTable is first-committer-wins's memory: while any transaction is
// open, every committed write stamps the keys it wrote (documents, and
// unique-index values) with a sequence number that grows with each
// commit; a transaction conflicts on a key stamped after its snapshot.
//
// Why it is sound: a write stamps after its batch is applied, and reads
// open only then. A transaction counts itself open before it takes its
// snapshot. So a write that saw no transaction open was applied before
// any later snapshot was taken, and is in it; a write stamped with a
// sequence at or below a transaction's start was applied before that
// transaction read the sequence, so before its snapshot too. A write
// applied before a snapshot but stamped after costs a needless conflict,
// never a missed one.
type txnTable struct {
	open   atomic.Int64
	mu     sync.Mutex
	seq    uint64
	starts map[*Txn]uint64
	stamps map[string]uint64
	// pruneAt is the table size past which end drops the stamps no open
	// transaction can conflict on.
	pruneAt int
}

// minPrune is the smallest table end bothers to prune.
const minPrune = 1024

// begin registers x as open and returns the sequence its snapshot holds;
// the caller takes the snapshot after.
func (tt *txnTable) begin(x *Txn) uint64 {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	if tt.starts == nil {
		tt.starts = map[*Txn]uint64{}
		tt.stamps = map[string]uint64{}
	}
	tt.starts[x] = tt.seq
	tt.open.Add(1)
	return tt.seq
}

// end forgets x; the stamps go once no transaction is open, or, past
// pruneAt, those at or below the oldest open start.
func (tt *txnTable) end(x *Txn) {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	if _, ok := tt.starts[x]; !ok {
		return
	}
	delete(tt.starts, x)
	tt.open.Add(-1)
	if len(tt.starts) == 0 {
		clear(tt.stamps)
		return
	}
	if len(tt.stamps) > max(tt.pruneAt, minPrune) {
		tt.prune()
	}
}

func (tt *txnTable) prune() {
	oldest := tt.seq
	for _, s := range tt.starts {
		oldest = min(oldest, s)
	}
	for k, s := range tt.stamps {
		if s <= oldest {
			delete(tt.stamps, k)
		}
	}
	tt.pruneAt = 2 * len(tt.stamps)
}

// stamp records that keys were just written, when a transaction is open.
func (tt *txnTable) stamp(keys [][]byte) {
	if len(keys) == 0 || tt.open.Load() == 0 {
		return
	}
	tt.mu.Lock()
	defer tt.mu.Unlock()
	tt.seq++
	for _, k := range keys {
		tt.stamps[string(k)] = tt.seq
	}
}

// conflicts reports whether any of keys was stamped after start.
func (tt *txnTable) conflicts(keys [][]byte, start uint64) bool {
	if len(keys) == 0 {
		return false
	}
	tt.mu.Lock()
	defer tt.mu.Unlock()
	for _, k := range keys {
		if tt.stamps[string(k)] > start {
			return true
		}
	}
	return false
}

// noteUnique records a unique secondary index's value key as written:
// two transactions adding the same value under different _ids conflict
// on it, as they do on one document.
func (t *tx) noteUnique(ix *indexState, key []byte) {
	if !ix.def.RefusesDuplicates() || ix.def.IsID() {
		return
	}
	k := make([]byte, 0, len(ix.prefix)+len(key))
	t.noteWritten(append(append(k, ix.prefix...), key...))
}

// stampExpired stamps the documents an expiry batch deleted, once it is
// applied.
func (c *Collection) stampExpired(ids [][]byte) {
	if c.store.txns.open.Load() == 0 {
		return
	}
	keys := make([][]byte, len(ids))
	for i, id := range ids {
		keys[i] = docKey(c.meta().ID, id)
	}
	c.store.txns.stamp(keys)
}
