package session

import (
	"fmt"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/storage"
)

func migratedNow() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }

// writeStmts records statements stmts of txn on session lsid in eng, as a
// retryable write does.
func writeStmts(t *testing.T, eng storage.Engine, lsid string, txn int64, stmts ...int32) {
	t.Helper()
	writeStmtsAt(t, eng, migratedNow(), lsid, txn, stmts...)
}

func writeStmtsAt(t *testing.T, eng storage.Engine, at time.Time, lsid string, txn int64, stmts ...int32) {
	t.Helper()
	w, err := Begin(Write{Engine: eng, LSID: []byte(lsid), Txn: txn, StmtIDs: stmts, Now: func() time.Time { return at }, Migrated: true})
	if err != nil {
		t.Fatal(err)
	}
	w.Statements(len(stmts)) // one statement: recorded in the head
	b := eng.NewBatch()
	defer b.Close()
	for i, id := range stmts {
		if err := w.Record(i, func() bson.D { return bson.D{{Key: "n", Value: id}} })(b); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Commit(false); err != nil {
		t.Fatal(err)
	}
}

// moveAll exports every record of from, in small pages, into to.
func moveAll(t *testing.T, from, to storage.Engine) int {
	t.Helper()
	return exportPages(t, from, 16, nil, func(stmts []MovedStmt) {
		if err := ImportStmts(to, stmts); err != nil {
			t.Fatal(err)
		}
	})
}

// exportPages exports every page of one pass, handing each to page, and
// counts the statements.
func exportPages(t *testing.T, eng storage.Engine, limit int, seen Seen, page func([]MovedStmt)) int {
	t.Helper()
	var from []byte
	total := 0
	for range 1000 {
		stmts, next, err := ExportStmts(eng, from, limit, seen)
		if err != nil {
			t.Fatal(err)
		}
		page(stmts)
		total += len(stmts)
		if next == nil {
			return total
		}
		from = next
	}
	t.Fatal("export did not end")
	return 0
}

// retried answers statement stmt of txn on the session in eng as a retry
// does: its recorded result (n), or -1 when it must run.
func retried(t *testing.T, eng storage.Engine, lsid string, txn int64, stmt int32) (int32, error) {
	t.Helper()
	w, err := Begin(Write{Engine: eng, LSID: []byte(lsid), Txn: txn, StmtIDs: []int32{stmt}, Now: migratedNow, Migrated: true})
	if err != nil {
		return 0, err
	}
	d, ok, err := w.Prior(0)
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		return -1, nil
	}
	return d[0].Value.(int32), nil
}

// TestMigratedRecordsAnswerRetries: the statements a donor recorded
// answer retries on the recipient after export and import, whatever the
// recipient held of the same sessions; older txnNumbers are refused and
// not installed.
func TestMigratedRecordsAnswerRetries(t *testing.T) {
	donor, recipient := openEngine(t), openEngine(t)
	writeStmts(t, donor, "only-donor", 5, 0, 1, 2)
	writeStmts(t, donor, "old-then-new", 1, 0)
	writeStmts(t, donor, "old-then-new", 2, 7) // the session's latest: only it moves
	writeStmts(t, donor, "split-batch", 3, 0, 2)
	writeStmts(t, recipient, "split-batch", 3, 1, 3)
	writeStmts(t, donor, "recipient-newer", 4, 0)
	writeStmts(t, recipient, "recipient-newer", 9, 0)
	if n := moveAll(t, donor, recipient); n != 7 {
		t.Fatalf("exported %d statements, want 7 (3 + 1 + 2 + 1)", n)
	}
	cases := []struct {
		lsid      string
		txn       int64
		stmt      int32
		want      int32 // -1: runs
		tooOldErr bool
	}{
		{"only-donor", 5, 0, 0, false},
		{"only-donor", 5, 2, 2, false},
		{"only-donor", 5, 3, -1, false}, // a statement the donor never ran
		{"only-donor", 4, 0, 0, true},
		{"old-then-new", 2, 7, 7, false},
		{"old-then-new", 1, 0, 0, true},
		{"split-batch", 3, 0, 0, false}, // the donor's half
		{"split-batch", 3, 1, 1, false}, // the recipient's own half
		{"split-batch", 3, 3, 3, false},
		{"recipient-newer", 4, 0, 0, true},
		{"recipient-newer", 9, 0, 0, false},
		{"never-seen", 1, 0, -1, false},
	}
	for _, c := range cases {
		got, err := retried(t, recipient, c.lsid, c.txn, c.stmt)
		if c.tooOldErr {
			if err == nil || mongoerr.As(err).Code != mongoerr.TransactionTooOld {
				t.Errorf("%s txn %d: %v, want TransactionTooOld", c.lsid, c.txn, err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%s txn %d stmt %d: %d (%v), want %d", c.lsid, c.txn, c.stmt, got, err, c.want)
		}
	}
}

// TestMigratedRecordsNewerReplaceOlder: a second migration bringing a
// newer txnNumber of a session replaces the first one's records, one
// bringing an older txnNumber changes nothing, and the recipient's own
// newer write leaves the migrated records unread.
func TestMigratedRecordsNewerReplaceOlder(t *testing.T) {
	first, second, recipient := openEngine(t), openEngine(t), openEngine(t)
	writeStmts(t, first, "s", 2, 0, 1)
	moveAll(t, first, recipient)
	writeStmts(t, second, "s", 3, 5)
	moveAll(t, second, recipient)
	moveAll(t, first, recipient) // older again: ignored
	if got, err := retried(t, recipient, "s", 3, 5); err != nil || got != 5 {
		t.Fatalf("txn 3 stmt 5 after both moves: %d (%v)", got, err)
	}
	if _, err := retried(t, recipient, "s", 2, 0); err == nil || mongoerr.As(err).Code != mongoerr.TransactionTooOld {
		t.Fatalf("txn 2 after txn 3 moved in: %v, want TransactionTooOld", err)
	}
	left := 0
	it, _ := recipient.NewIter([]byte{tagSession}, []byte{tagSession + 1})
	for ok := it.First(); ok; ok = it.Next() {
		if _, kind, txn, _, isStmt := splitStmtKey(it.Key()); isStmt && kind == kindMigratedStmt {
			left++
			if txn != 3 {
				t.Errorf("a migrated statement of txn %d is left", txn)
			}
		}
	}
	it.Close()
	if left != 1 {
		t.Fatalf("%d migrated statements stored, want 1", left)
	}
	writeStmts(t, recipient, "s", 4, 0)
	if got, err := retried(t, recipient, "s", 4, 0); err != nil || got != 0 {
		t.Fatalf("the recipient's own txn 4: %d (%v)", got, err)
	}
}

// TestSweepKeepsEachHeadsRecords: the member's own records and a
// migration's are swept by their own heads.
func TestSweepKeepsEachHeadsRecords(t *testing.T) {
	donor, recipient := openEngine(t), openEngine(t)
	writeStmts(t, donor, "s", 2, 0)
	moveAll(t, donor, recipient)
	later := migratedNow().Add(20 * time.Minute)
	writeStmtsAt(t, recipient, later, "s", 2, 1) // the same txnNumber's other statement, here, later
	if n, err := Sweep(recipient, later.Add(15*time.Minute)); err != nil || n != 1 {
		t.Fatalf("sweep 35 min after the donor's write removed %d (%v), want the migrated head's", n, err)
	}
	if got, err := retried(t, recipient, "s", 2, 1); err != nil || got != 1 {
		t.Fatalf("the recipient's own statement after the sweep: %d (%v)", got, err)
	}
	if got, err := retried(t, recipient, "s", 2, 0); err != nil || got != -1 {
		t.Fatalf("the swept migrated statement: %d (%v), want none", got, err)
	}
}

// BenchmarkExportStmts exports the records of 64 sessions that each
// wrote 2,000 txnNumbers, as a migration's critical section does after a
// busy minute: the older statements' deletions and the heads' older
// versions are still in the memtable.
func BenchmarkExportStmts(b *testing.B) {
	eng := openEngine(b)
	for txn := int64(1); txn <= 2000; txn++ {
		for s := range 64 {
			w, err := Begin(Write{Engine: eng, LSID: []byte{byte(s), 'x'}, Txn: txn, Now: migratedNow})
			if err != nil {
				b.Fatal(err)
			}
			batch := eng.NewBatch()
			if err := w.Record(0, func() bson.D { return bson.D{{Key: "n", Value: int32(1)}} })(batch); err != nil {
				b.Fatal(err)
			}
			if err := batch.Commit(false); err != nil {
				b.Fatal(err)
			}
			batch.Close()
		}
	}
	for b.Loop() {
		stmts, next, err := ExportStmts(eng, nil, 4<<20, nil)
		if err != nil || next != nil || len(stmts) != 64 {
			b.Fatalf("%d statements, next %v: %v", len(stmts), next, err)
		}
	}
}

// TestExportStmtsReadsEverySessionsLatest: in one page or in pages of a
// statement or two, the export holds each session's latest txnNumber's
// statements, once, and none of an older one.
func TestExportStmtsReadsEverySessionsLatest(t *testing.T) {
	eng := openEngine(t)
	want := map[string]bool{}
	for s := range 20 {
		lsid := string([]byte{byte('a' + s), 'x'})
		for txn := int64(1); txn <= 3; txn++ {
			writeStmts(t, eng, lsid, txn, 0, 1)
		}
		want[lsid+"/3/0"], want[lsid+"/3/1"] = true, true
	}
	for _, limit := range []int{4 << 20, 16, 40} {
		got := map[string]bool{}
		exportPages(t, eng, limit, nil, func(stmts []MovedStmt) {
			for _, st := range stmts {
				k := fmt.Sprintf("%s/%d/%d", st.LSID, st.Txn, st.Stmt)
				if got[k] || !want[k] {
					t.Fatalf("limit %d: exported %s twice or not a latest statement", limit, k)
				}
				got[k] = true
			}
		})
		if len(got) != len(want) {
			t.Fatalf("limit %d: exported %d statements, want %d", limit, len(got), len(want))
		}
	}
}

// TestExportStmtsSeenSkipsUnchangedSessions: a second export given the
// first one's Seen holds exactly the sessions written since (a newer
// txnNumber, or a session that is new), in one page or in pages of a
// session or two.
func TestExportStmtsSeenSkipsUnchangedSessions(t *testing.T) {
	for _, limit := range []int{4 << 20, 100} {
		eng := openEngine(t)
		for s := range 10 {
			writeStmts(t, eng, fmt.Sprintf("s%d", s), 1, 0, 1)
		}
		seen := Seen{}
		if n := exportPages(t, eng, limit, seen, func([]MovedStmt) {}); n != 20 {
			t.Fatalf("limit %d: the first pass exported %d statements, want 20", limit, n)
		}
		writeStmts(t, eng, "s3", 2, 0)
		writeStmts(t, eng, "s7", 2, 0, 1, 2)
		writeStmts(t, eng, "new", 1, 0)
		if n := exportPages(t, eng, limit, seen, func([]MovedStmt) {}); n != 5 {
			t.Fatalf("limit %d: the second pass exported %d statements, want 5 (1 + 3 + 1)", limit, n)
		}
		if n := exportPages(t, eng, limit, seen, func([]MovedStmt) {}); n != 0 {
			t.Fatalf("limit %d: a pass with nothing written since exported %d statements", limit, n)
		}
	}
}
