package commands

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/changestream"
)

// openTestStream opens a stream on test.s, from now, with fullDocument
// mode; joined, it reads through the shared RecentLog once two have.
func openTestStream(tb testing.TB, h *Handler, mode string, join bool) *changestream.Stream {
	tb.Helper()
	spec := &changestream.Spec{Scope: changestream.Scope{DB: "test", Coll: "s"}, FullDocument: mode, Before: "off"}
	s, err := h.streams.Open(spec)
	if err != nil {
		tb.Fatal(err)
	}
	if join {
		s.Join()
	}
	return s
}

// BenchmarkTenStreamsRead: ten streams on a sessions collection reading
// each batch of 47 touches (the events a getMore found per batch in the
// bench's sessions run), each scanning the log itself as before against
// through the shared RecentLog. The touches' writes are not timed.
func BenchmarkTenStreamsRead(b *testing.B) {
	const streams, perBatch = 10, 47
	for _, mode := range []string{"scan", "recent"} {
		b.Run(mode, func(b *testing.B) {
			h := newStreamHandler(b)
			call := h.streamCall(&request{ctx: context.Background(), db: "test", name: "getMore"})
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
			var cs []*changestream.Stream
			for range streams {
				// Not joined, a stream scans the log itself.
				cs = append(cs, openTestStream(b, h, "default", mode == "recent"))
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
					batch, err := c.Read(call, -1)
					if err != nil || len(batch) != perBatch {
						b.Fatalf("%d events of %d, %v", len(batch), perBatch, err)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed())/float64(b.N*streams*perBatch), "ns/event/stream")
		})
	}
}

// TestTenStreamsReadTheSameEvents: streams through the shared RecentLog
// and a stream scanning the log itself return the same bytes for every
// event.
func TestTenStreamsReadTheSameEvents(t *testing.T) {
	h := newStreamHandler(t)
	call := h.streamCall(&request{ctx: context.Background(), db: "test", name: "getMore"})
	if err := h.deps.Changes.Record(); err != nil {
		t.Fatal(err)
	}
	shared := []*changestream.Stream{openTestStream(t, h, "updateLookup", false), openTestStream(t, h, "updateLookup", false)}
	for i := range 30 {
		mustCall(t, h, "test", bson.D{{Key: "insert", Value: "s"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: i}, {Key: "at", Value: time.Unix(int64(i), 0)}}}}})
	}
	// Before any stream joins, a stream from the log's start scans it
	// itself.
	own, err := h.streams.Open(&changestream.Spec{Scope: changestream.Scope{DB: "test", Coll: "s"}, FullDocument: "updateLookup", Before: "off", Resumed: true})
	if err != nil {
		t.Fatal(err)
	}
	ownBatch, err := own.Read(call, -1)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, d := range ownBatch {
		want = append(want, d.String())
	}
	if len(want) != 30 {
		t.Fatalf("the log gave %d events, want 30", len(want))
	}
	for _, c := range shared {
		c.Join()
	}
	if n := h.streams.Readers(); n != 2 {
		t.Fatalf("%d streams read through the RecentLog, want 2", n)
	}
	for i, c := range shared {
		var got []string
		for len(got) < len(want) {
			batch, err := c.Read(call, 7)
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

// TestStreamCursorsCountInTheRecentLog: an open stream counts in the
// shared RecentLog until its cursor is removed.
func TestStreamCursorsCountInTheRecentLog(t *testing.T) {
	h := newStreamHandler(t)
	var ids []int64
	for range 2 {
		open := mustCall(t, h, "test", watchCmd("c", bson.D{}, 0))
		ids = append(ids, cursorField(t, open, "id").(int64))
	}
	if n := h.streams.Readers(); n != 2 {
		t.Fatalf("two open streams count %d in the RecentLog", n)
	}
	mustCall(t, h, "test", bson.D{{Key: "killCursors", Value: "c"}, {Key: "cursors", Value: bson.A{ids[0]}}})
	if n := h.streams.Readers(); n != 1 {
		t.Fatalf("after one was killed, %d count in the RecentLog", n)
	}
}
