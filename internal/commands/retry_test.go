package commands

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/storage"
	"github.com/mayflydb/mayfly/internal/storage/pebblestore"
)

func TestSweepSessionsRemovesOnlyIdleOnes(t *testing.T) {
	eng, err := pebblestore.Open(pebblestore.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	write := func(id byte, at time.Time) {
		rt := &retryTxn{eng: eng, session: []byte{tagSession, 16}, txn: 1, newer: true, now: func() time.Time { return at }}
		rt.session = append(rt.session, make([]byte, 16)...)
		rt.session[2] = id
		b := eng.NewBatch()
		defer b.Close()
		opt := rt.options(docstore.WriteOptions{}, 0, recordN(1))
		if err := opt.Extra(b); err != nil {
			t.Fatal(err)
		}
		if err := b.Commit(false); err != nil {
			t.Fatal(err)
		}
	}
	write(1, start)
	write(2, start.Add(20*time.Minute))
	if n, err := SweepSessions(eng, start.Add(25*time.Minute)); err != nil || n != 0 {
		t.Fatalf("sweep at 25 min removed %d (%v), want none", n, err)
	}
	if n, err := SweepSessions(eng, start.Add(31*time.Minute)); err != nil || n != 1 {
		t.Fatalf("sweep at 31 min removed %d (%v), want the idle one", n, err)
	}
	it, _ := eng.NewIter([]byte{tagSession}, []byte{tagSession + 1})
	defer it.Close()
	left := 0
	for ok := it.First(); ok; ok = it.Next() {
		if it.Key()[2] != 2 {
			t.Fatalf("a record of the idle session is left: %x", it.Key())
		}
		left++
	}
	if left != 2 {
		t.Fatalf("%d records of the active session left, want its head and its statement", left)
	}
}

// TestNewerTxnDropsOlderRecordsKeyByKey: a session's newer txnNumber
// deletes every statement record of the one before, across the attempts
// that wrote them, with point deletions only (a range tombstone per write
// would make every new iterator fragment them all again).
func TestNewerTxnDropsOlderRecordsKeyByKey(t *testing.T) {
	eng, err := pebblestore.Open(pebblestore.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	session := append([]byte{tagSession, 16}, make([]byte, 16)...)
	now := func() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }
	attempt := func(txn int64, stmts ...int32) *rangeCountingBatch {
		rt := &retryTxn{eng: eng, session: session, txn: txn, stmtIDs: stmts, now: now}
		if err := rt.checkOrder(); err != nil {
			t.Fatal(err)
		}
		b := &rangeCountingBatch{Batch: eng.NewBatch()}
		defer b.Close()
		for i := range stmts {
			if err := rt.options(docstore.WriteOptions{}, i, recordN(1)).Extra(b); err != nil {
				t.Fatal(err)
			}
		}
		if err := b.Commit(false); err != nil {
			t.Fatal(err)
		}
		return b
	}
	attempt(7, 0, 1, 2)
	attempt(7, 3, 4) // a retry that ran the rest
	if b := attempt(8, 0); b.ranges != 0 {
		t.Fatalf("txn 8 deleted with %d range deletions, want point deletions", b.ranges)
	}
	it, _ := eng.NewIter(append(append([]byte(nil), session...), 1), append(append([]byte(nil), session...), 2))
	defer it.Close()
	var left []int64
	for ok := it.First(); ok; ok = it.Next() {
		k := it.Key()
		left = append(left, int64(binary.BigEndian.Uint64(k[len(k)-12:])))
	}
	if len(left) != 1 || left[0] != 8 {
		t.Fatalf("statement records left by txnNumber: %v, want only txn 8's one", left)
	}
}

type rangeCountingBatch struct {
	storage.Batch
	ranges int
}

func (b *rangeCountingBatch) DeleteRange(start, end []byte) error {
	b.ranges++
	return b.Batch.DeleteRange(start, end)
}
