package session

import (
	"encoding/binary"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/storage"
	"github.com/mayflydb/mayfly/internal/storage/pebblestore"
)

func recordN() bson.D { return bson.D{{Key: "n", Value: int32(1)}} }

func openEngine(t testing.TB) storage.Engine {
	t.Helper()
	eng, err := pebblestore.Open(pebblestore.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	return eng
}

func TestSweepRemovesOnlyIdleSessions(t *testing.T) {
	eng := openEngine(t)
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	write := func(id byte, at time.Time) {
		lsid := make([]byte, 16)
		lsid[0] = id
		txn, err := Begin(Write{Engine: eng, LSID: lsid, Txn: 1, Now: func() time.Time { return at }})
		if err != nil {
			t.Fatal(err)
		}
		b := eng.NewBatch()
		defer b.Close()
		if err := txn.Record(0, recordN)(b); err != nil {
			t.Fatal(err)
		}
		if err := b.Commit(false); err != nil {
			t.Fatal(err)
		}
	}
	write(1, start)
	write(2, start.Add(20*time.Minute))
	if n, err := Sweep(eng, start.Add(25*time.Minute)); err != nil || n != 0 {
		t.Fatalf("sweep at 25 min removed %d (%v), want none", n, err)
	}
	if n, err := Sweep(eng, start.Add(31*time.Minute)); err != nil || n != 1 {
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
	eng := openEngine(t)
	lsid := make([]byte, 16)
	now := func() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }
	attempt := func(txnNumber int64, stmts ...int32) *rangeCountingBatch {
		txn, err := Begin(Write{Engine: eng, LSID: lsid, Txn: txnNumber, StmtIDs: stmts, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		b := &rangeCountingBatch{Batch: eng.NewBatch()}
		defer b.Close()
		for i := range stmts {
			if err := txn.Record(i, recordN)(b); err != nil {
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
	prefix := append([]byte{tagSession, 16}, lsid...)
	it, _ := eng.NewIter(append(append([]byte(nil), prefix...), 1), append(append([]byte(nil), prefix...), 2))
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

// TestRetryAnswersFromRecordsAndRefusesOlderTxn: a retry of a txnNumber
// finds each recorded statement (by its stmtId) and no other, and an
// older txnNumber is refused once a newer one wrote.
func TestRetryAnswersFromRecordsAndRefusesOlderTxn(t *testing.T) {
	eng := openEngine(t)
	lsid := make([]byte, 16)
	now := func() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }
	first, err := Begin(Write{Engine: eng, LSID: lsid, Txn: 3, StmtIDs: []int32{10, 11}, Now: now})
	if err != nil || first.Retry() {
		t.Fatalf("first attempt: retry %v, err %v", first.Retry(), err)
	}
	b := eng.NewBatch()
	if err := first.Record(0, recordN)(b); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(false); err != nil {
		t.Fatal(err)
	}
	b.Close()
	again, err := Begin(Write{Engine: eng, LSID: lsid, Txn: 3, StmtIDs: []int32{10, 11}, Now: now})
	if err != nil || !again.Retry() {
		t.Fatalf("retry: retry %v, err %v", again.Retry(), err)
	}
	if rec, done, err := again.Prior(0); err != nil || !done || len(rec) != 1 {
		t.Fatalf("statement 10: %v %v %v, want its record", rec, done, err)
	}
	if _, done, err := again.Prior(1); err != nil || done {
		t.Fatalf("statement 11 never ran, found %v (%v)", done, err)
	}
	if got := again.Retried(); len(got) != 1 || got[0] != int32(10) {
		t.Fatalf("retried %v, want [10]", got)
	}
	if _, err := Begin(Write{Engine: eng, LSID: lsid, Txn: 2, Now: now}); err == nil {
		t.Fatal("an older txnNumber was accepted")
	}
}

type rangeCountingBatch struct {
	storage.Batch
	ranges int
}

var _ storage.Batch = (*rangeCountingBatch)(nil)

func (b *rangeCountingBatch) DeleteRange(start, end []byte) error {
	b.ranges++
	return b.Batch.DeleteRange(start, end)
}
