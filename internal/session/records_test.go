package session

import (
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/keyspace"
	"github.com/mayflydb/mayfly/internal/storage"
	"github.com/mayflydb/mayfly/internal/storage/pebblestore"
	"github.com/mayflydb/mayfly/internal/storage/storagetest"
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
	for _, stmts := range []int{1, 2} { // recorded in the head, in records of their own
		t.Run(fmt.Sprintf("%d statements", stmts), func(t *testing.T) { testSweep(t, stmts) })
	}
}

func testSweep(t *testing.T, stmts int) {
	eng := openEngine(t)
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	write := func(id byte, at time.Time) {
		lsid := make([]byte, 16)
		lsid[0] = id
		txn, err := Begin(Write{Engine: eng, LSID: lsid, Txn: 1, Now: func() time.Time { return at }})
		if err != nil {
			t.Fatal(err)
		}
		txn.Statements(stmts)
		b := eng.NewBatch()
		defer b.Close()
		for i := range stmts {
			if err := txn.Record(i, recordN)(b); err != nil {
				t.Fatal(err)
			}
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
	want := 1 + stmts // the head and each statement's record
	if stmts == 1 {
		want = 1 // the head holds the statement
	}
	if left != want {
		t.Fatalf("%d records of the active session left, want its head and its statements' (%d statements)", left, stmts)
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
	ranges, sets, deletes int
}

var _ storage.Batch = (*rangeCountingBatch)(nil)

func (b *rangeCountingBatch) DeleteRange(start, end []byte) error {
	b.ranges++
	return b.Batch.DeleteRange(start, end)
}

func (b *rangeCountingBatch) Set(k, v []byte) error {
	b.sets++
	return b.Batch.Set(k, v)
}

func (b *rangeCountingBatch) Delete(k []byte) error {
	b.deletes++
	return b.Batch.Delete(k)
}

// TestOneStatementIsRecordedInTheHead: a command of one statement with a
// small result writes its session's head alone, and the next txnNumber
// deletes nothing for it; a command of several statements, or a result
// over maxInline, has statement records, which the next txnNumber
// deletes. A retry answers every recorded statement in each shape, and
// a second command of a txnNumber whose head holds a statement keeps it.
func TestOneStatementIsRecordedInTheHead(t *testing.T) {
	eng := openEngine(t)
	lsid := make([]byte, 16)
	now := func() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }
	big := bson.D{{Key: "n", Value: int32(1)}, {Key: "pad", Value: string(make([]byte, maxInline))}}
	type command struct {
		txn                  int64
		stmts                []int32
		resultOf             int // -1: a result over maxInline
		wantSets, wantDelete int
	}
	commands := []command{
		{txn: 1, stmts: []int32{0}, wantSets: 1},
		{txn: 2, stmts: []int32{0, 1, 2}, wantSets: 6},              // a head and a record each
		{txn: 3, stmts: []int32{5}, wantSets: 1, wantDelete: 3},     // txn 2's three records
		{txn: 4, stmts: []int32{0}, resultOf: -1, wantSets: 2},      // txn 3's was in the head
		{txn: 5, stmts: []int32{9}, wantSets: 1, wantDelete: 1},     // txn 4's record
		{txn: 5, stmts: []int32{9, 10}, wantSets: 2, wantDelete: 0}, // a retry that runs statement 10
		{txn: 6, stmts: []int32{0}, wantSets: 1, wantDelete: 1},     // statement 10's record, not 9's
	}
	for _, c := range commands {
		w, err := Begin(Write{Engine: eng, LSID: lsid, Txn: c.txn, StmtIDs: c.stmts, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		w.Statements(len(c.stmts))
		b := &rangeCountingBatch{Batch: eng.NewBatch()}
		for i := range c.stmts {
			if _, done, err := w.Prior(i); err != nil || done {
				continue
			}
			r := bson.D{{Key: "n", Value: c.stmts[i]}}
			if c.resultOf < 0 {
				r = big
			}
			if err := w.Record(i, func() bson.D { return r })(b); err != nil {
				t.Fatal(err)
			}
		}
		if err := b.Commit(false); err != nil {
			t.Fatal(err)
		}
		b.Close()
		if b.sets != c.wantSets || b.deletes != c.wantDelete || b.ranges != 0 {
			t.Errorf("txn %d %v: %d sets, %d deletions, %d range deletions; want %d, %d, 0",
				c.txn, c.stmts, b.sets, b.deletes, b.ranges, c.wantSets, c.wantDelete)
		}
		again, err := Begin(Write{Engine: eng, LSID: lsid, Txn: c.txn, StmtIDs: c.stmts, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		for i, id := range c.stmts {
			rec, done, err := again.Prior(i)
			want := int32(id)
			if c.resultOf < 0 {
				want = 1
			}
			if err != nil || !done || rec[0].Value != want {
				t.Errorf("txn %d: a retry of statement %d answered %v, %v (%v); want n %d", c.txn, id, rec, done, err, want)
			}
		}
	}
	if n := countKeys(t, eng, append([]byte{tagSession, 16}, append(lsid, kindStmt)...)); n != 0 {
		t.Errorf("%d statement records left after txn 6's one statement, want none", n)
	}
}

// countKeys counts the keys under prefix.
func countKeys(t *testing.T, eng storage.Engine, prefix []byte) int {
	t.Helper()
	return storagetest.CountKeys(t, eng, prefix, keyspace.PrefixEnd(prefix))
}

// TestFailedBatchLeavesNoStatementInTheHead: a one-statement command
// whose first batch never commits, then commits with a result too large
// for the head, answers a retry with what committed.
func TestFailedBatchLeavesNoStatementInTheHead(t *testing.T) {
	eng := openEngine(t)
	lsid := make([]byte, 16)
	now := func() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }
	w, err := Begin(Write{Engine: eng, LSID: lsid, Txn: 1, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	w.Statements(1)
	failed := eng.NewBatch()
	if err := w.Record(0, func() bson.D { return bson.D{{Key: "n", Value: int32(7)}} })(failed); err != nil {
		t.Fatal(err)
	}
	failed.Close() // never committed
	big := bson.D{{Key: "n", Value: int32(1)}, {Key: "pad", Value: string(make([]byte, maxInline))}}
	b := eng.NewBatch()
	defer b.Close()
	if err := w.Record(0, func() bson.D { return big })(b); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(false); err != nil {
		t.Fatal(err)
	}
	again, err := Begin(Write{Engine: eng, LSID: lsid, Txn: 1, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	rec, done, err := again.Prior(0)
	if err != nil || !done || len(rec) != 2 || rec[0].Value != int32(1) {
		t.Fatalf("retry answered %v, %v (%v); want the committed result, n 1 with its padding", rec, done, err)
	}
}
