package repl

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/mayflydb/mayfly/internal/changestream"
	"github.com/mayflydb/mayfly/internal/storage"
)

// TestMembersWriteTheSameChangeLog: entries whose events hold runs of TTL
// deletions (compact records) leave every member with the primary's log,
// byte for byte, so that a token from one member resumes on another.
func TestMembersWriteTheSameChangeLog(t *testing.T) {
	c := newCluster(t)
	for w := 0; w < 3; w++ {
		var events [][]byte
		events = append(events, (&changestream.Event{Op: changestream.OpInsert, DB: "db", Coll: "a"}).Encode(nil))
		for i := 0; i < 40*(w+1); i++ {
			ev := changestream.Event{Op: changestream.OpDelete, DB: "db", Coll: "a", ID: fmt.Appendf(nil, "id%06d", i),
				UUID: bytes.Repeat([]byte{1}, 16), Expired: &changestream.Expiry{Index: "t", AfterSecs: 5, AtMillis: int64(1000 + i)}}
			events = append(events, ev.Encode(nil))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := c.leader().propose(ctx, &entry{kind: kindWrite, events: events})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := c.put("done", "1"); err != nil {
		t.Fatal(err)
	}
	logs := map[uint64][]byte{}
	for id := uint64(1); id <= 3; id++ {
		c.waitValue(id, "done", "1")
		logs[id] = changeLog(t, c.bases[id])
	}
	for id := uint64(2); id <= 3; id++ {
		if !bytes.Equal(logs[id], logs[1]) {
			t.Fatalf("member %d's change log differs from member 1's (%d bytes, %d)", id, len(logs[id]), len(logs[1]))
		}
	}
	n := 0
	if err := changestream.Scan(c.bases[1], changestream.Position{}, func(rec changestream.Record) (bool, error) {
		n++
		return true, nil
	}); err != nil || n != 3+40+80+120 {
		t.Fatalf("%d events read back (%v), want %d", n, err, 3+40+80+120)
	}
	// Three writes of 1 insert + 1 compact record each: the runs compacted.
	if recs := bytes.Count(logs[1], []byte{'\n'}); recs != 6 {
		t.Fatalf("%d records stored, want 6", recs)
	}
}

// changeLog is the change log's records as stored, a line per record.
func changeLog(t *testing.T, r storage.Reader) []byte {
	it, err := r.NewIter(changestream.LogStart, changestream.LogEnd)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	var out []byte
	for ok := it.First(); ok; ok = it.Next() {
		out = fmt.Appendf(out, "%x=%x\n", it.Key(), it.Value())
	}
	return out
}
