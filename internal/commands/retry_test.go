package commands

import (
	"testing"
	"time"

	"github.com/mayflydb/mayfly/internal/docstore"
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
