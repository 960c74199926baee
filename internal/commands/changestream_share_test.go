package commands

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/changestream"
)

// scanRead is a stream's read before the shared tail: its own scan of
// the log, every record decoded for it.
func scanRead(c *streamCursor, r *request) (int, error) {
	feed := c.h.deps.Changes
	hwm, err := feed.Now()
	if err != nil {
		return 0, err
	}
	n := 0
	err = changestream.Scan(feed.Reader, c.pos, func(rec changestream.Record) (bool, error) {
		docs, err := c.encodedEvents(r, rec)
		c.pos = rec.Pos
		n += len(docs)
		return true, err
	})
	if hwm.After(c.pos) {
		c.pos = hwm
	}
	return n, err
}

// BenchmarkTenStreamsRead: ten streams on a sessions collection reading
// each batch of 47 touches (the events a getMore found per batch in the
// bench's sessions run), each scanning the log itself as before against
// through the shared tail. The touches' writes are not timed.
func BenchmarkTenStreamsRead(b *testing.B) {
	const streams, perBatch = 10, 47
	for _, mode := range []string{"scan", "tail"} {
		b.Run(mode, func(b *testing.B) {
			h := newStreamHandler(b)
			r := &request{ctx: context.Background(), db: "test", name: "getMore"}
			docs := bson.A{}
			for i := range perBatch {
				docs = append(docs, bson.D{{Key: "_id", Value: fmt.Sprintf("session-%d", i)}, {Key: "user", Value: i}, {Key: "lastSeen", Value: bson.DateTime(0)}})
			}
			if _, err := call0(h, bson.D{{Key: "insert", Value: "s"}, {Key: "documents", Value: docs}}); err != nil {
				b.Fatal(err)
			}
			if err := h.deps.Changes.Record(); err != nil {
				b.Fatal(err)
			}
			var cs []*streamCursor
			for range streams {
				c := &streamCursor{h: h, spec: &streamSpec{scope: streamScope{db: "test", coll: "s"}, fullDocument: "default", before: "off"}}
				var err error
				if c.pos, err = h.deps.Changes.Now(); err != nil {
					b.Fatal(err)
				}
				c.join()
				cs = append(cs, c)
			}
			var touches bson.A
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				touches = touches[:0]
				for j := range perBatch {
					touches = append(touches, bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: fmt.Sprintf("session-%d", j)}}},
						{Key: "u", Value: bson.D{{Key: "$set", Value: bson.D{{Key: "lastSeen", Value: bson.DateTime(i*perBatch + j + 1)}}}}}})
				}
				if _, err := call0(h, bson.D{{Key: "update", Value: "s"}, {Key: "updates", Value: touches}}); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				for _, c := range cs {
					var n int
					var err error
					if mode == "scan" {
						n, err = scanRead(c, r)
					} else {
						var batch []bson.Raw
						batch, err = c.read(r, -1)
						n = len(batch)
					}
					if err != nil || n != perBatch {
						b.Fatalf("%d events of %d, %v", n, perBatch, err)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed())/float64(b.N*streams*perBatch), "ns/event/stream")
		})
	}
}

// TestTenStreamsReadTheSameEvents: streams through the shared tail and a
// stream scanning the log itself return the same bytes for every event;
// the streams count in and out of the tail as cursors.
func TestTenStreamsReadTheSameEvents(t *testing.T) {
	h := newStreamHandler(t)
	r := &request{ctx: context.Background(), db: "test", name: "getMore"}
	if err := h.deps.Changes.Record(); err != nil {
		t.Fatal(err)
	}
	newCursor := func() *streamCursor {
		c := &streamCursor{h: h, spec: &streamSpec{scope: streamScope{db: "test", coll: "s"}, fullDocument: "updateLookup", before: "off"}}
		var err error
		if c.pos, err = h.deps.Changes.Now(); err != nil {
			t.Fatal(err)
		}
		return c
	}
	tailed := []*streamCursor{newCursor(), newCursor()}
	for _, c := range tailed {
		c.join()
	}
	for i := range 30 {
		mustCall(t, h, "test", bson.D{{Key: "insert", Value: "s"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: i}, {Key: "at", Value: time.Unix(int64(i), 0)}}}}})
	}
	own := newCursor()
	own.pos = changestream.Position{}
	var want []string
	if err := changestream.Scan(h.deps.Changes.Reader, own.pos, func(rec changestream.Record) (bool, error) {
		docs, err := own.encodedEvents(r, rec)
		for _, d := range docs {
			want = append(want, bson.Raw(d).String())
		}
		return true, err
	}); err != nil {
		t.Fatal(err)
	}
	if len(want) != 30 {
		t.Fatalf("the log gave %d events, want 30", len(want))
	}
	for i, c := range tailed {
		var got []string
		for len(got) < len(want) {
			batch, err := c.read(r, 7)
			if err != nil {
				t.Fatal(err)
			}
			if len(batch) == 0 {
				t.Fatalf("stream %d stopped after %d events", i, len(got))
			}
			for _, d := range batch {
				got = append(got, d.String())
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("stream %d read\n%v\nwant\n%v", i, got, want)
		}
	}
}

// TestStreamCursorsCountInTheTail: an open stream counts in the tail
// until its cursor is removed.
func TestStreamCursorsCountInTheTail(t *testing.T) {
	h := newStreamHandler(t)
	var ids []int64
	for range 2 {
		open := mustCall(t, h, "test", watchCmd("c", bson.D{}, 0))
		ids = append(ids, cursorField(t, open, "id").(int64))
	}
	if n := h.tail.Readers(); n != 2 {
		t.Fatalf("two open streams count %d in the tail", n)
	}
	mustCall(t, h, "test", bson.D{{Key: "killCursors", Value: "c"}, {Key: "cursors", Value: bson.A{ids[0]}}})
	if n := h.tail.Readers(); n != 1 {
		t.Fatalf("after one was killed, %d count in the tail", n)
	}
}
