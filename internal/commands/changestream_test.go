package commands

import (
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/changestream"
	"github.com/mayflydb/mayfly/internal/clock"
	"github.com/mayflydb/mayfly/internal/cursor"
	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/server"
	"github.com/mayflydb/mayfly/internal/storage/pebblestore"
)

// newStreamHandler is newTestHandler with a change log, as a standalone
// server runs.
func newStreamHandler(t testing.TB) *Handler {
	t.Helper()
	return newClockedStreamHandler(t, clock.Real{})
}

// newClockedStreamHandler is newStreamHandler on clk.
func newClockedStreamHandler(t testing.TB, clk clock.Clock) *Handler {
	t.Helper()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	base, err := pebblestore.Open(pebblestore.Options{InMemory: true, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	sig := changestream.NewSignal()
	eng, err := changestream.NewEngine(base, clk, sig)
	if err != nil {
		t.Fatal(err)
	}
	store, err := docstore.Open(eng, docstore.Options{Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	cursors := cursor.NewRegistry(nil, 0)
	t.Cleanup(func() { cursors.CloseAll(); _ = base.Close() })
	return New(Deps{Store: store, Cursors: cursors, Logger: logger, Clock: clk,
		Changes: &changestream.Feed{Reader: eng, Latest: eng.Latest, Signal: sig, Record: eng.Record}})
}

func watchCmd(coll any, spec bson.D, batch int32, stages ...bson.D) bson.D {
	pipeline := bson.A{bson.D{{Key: "$changeStream", Value: spec}}}
	for _, s := range stages {
		pipeline = append(pipeline, s)
	}
	return bson.D{{Key: "aggregate", Value: coll}, {Key: "pipeline", Value: pipeline}, {Key: "cursor", Value: bson.D{{Key: "batchSize", Value: batch}}}}
}

func cursorField(t *testing.T, reply bson.D, key string) any {
	t.Helper()
	cur, _ := bsonutil.Field(reply, "cursor")
	v, ok := bsonutil.Field(cur.(bson.D), key)
	if !ok {
		t.Fatalf("no cursor.%s in %v", key, reply)
	}
	if raws, ok := v.([]bson.Raw); ok {
		return asArray(raws)
	}
	return v
}

// TestHandlerChangeStreamBatches: the reply shape, batchSize, and a
// getMore that returns what committed since, then waits and comes back
// empty with the token moved on.
func TestHandlerChangeStreamBatches(t *testing.T) {
	h := newStreamHandler(t)
	open := mustCall(t, h, "test", watchCmd("c", bson.D{}, 0))
	if len(firstBatch(t, open)) != 0 {
		t.Fatalf("first batch %v", open)
	}
	start := cursorField(t, open, "postBatchResumeToken")
	if tok, _ := bsonutil.Field(start.(bson.D), "_data"); tok == "" || tok == (changestream.Token{}).String() {
		t.Fatalf("batchSize 0 gave postBatchResumeToken %v", start)
	}
	id := cursorField(t, open, "id").(int64)
	for i := 0; i < 3; i++ {
		mustCall(t, h, "test", bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: i}}}}})
	}
	more := bson.D{{Key: "getMore", Value: id}, {Key: "collection", Value: "c"}, {Key: "batchSize", Value: int32(2)}, {Key: "maxTimeMS", Value: int64(100)}}
	next := mustCall(t, h, "test", more)
	batch := cursorField(t, next, "nextBatch").(bson.A)
	if len(batch) != 2 {
		t.Fatalf("batchSize 2 gave %d events", len(batch))
	}
	last, _ := bson.Raw(batch[1].(bson.Raw)).LookupErr("_id")
	if pbrt := cursorField(t, next, "postBatchResumeToken"); bson.Raw(mustMarshal(t, pbrt)).String() != last.Document().String() {
		t.Fatalf("postBatchResumeToken %v is not the last event's token %v", pbrt, last)
	}
	if got := len(cursorField(t, mustCall(t, h, "test", more), "nextBatch").(bson.A)); got != 1 {
		t.Fatalf("third event: %d", got)
	}
	began := time.Now()
	empty := mustCall(t, h, "test", more)
	if waited := time.Since(began); len(cursorField(t, empty, "nextBatch").(bson.A)) != 0 || waited < 80*time.Millisecond {
		t.Fatalf("empty getMore after %v: %v", waited, empty)
	}
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	raw, err := bson.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// TestHandlerChangeStreamRefusals: where and how a stream may not be
// opened.
func TestHandlerChangeStreamRefusals(t *testing.T) {
	h := newStreamHandler(t)
	mustCall(t, h, "test", bson.D{{Key: "create", Value: "v"}, {Key: "viewOn", Value: "c"}, {Key: "pipeline", Value: bson.A{}}})
	cases := []struct {
		db   string
		cmd  bson.D
		code mongoerr.Code
	}{
		{"test", watchCmd("v", bson.D{}, 1), mongoerr.CommandNotSupportedOnView},
		{"admin", watchCmd(int32(1), bson.D{}, 1), mongoerr.InvalidNamespace},
		{"test", watchCmd(int32(1), bson.D{{Key: "allChangesForCluster", Value: true}}, 1), mongoerr.InvalidNamespace},
		{"test", watchCmd("c", bson.D{{Key: "bogus", Value: 1}}, 1), mongoerr.Location40415},
		{"test", watchCmd("c", bson.D{{Key: "showExpandedEvents", Value: "yes"}}, 1), mongoerr.TypeMismatch},
		{"test", watchCmd("c", bson.D{{Key: "allowToRunOnSystemNS", Value: true}}, 1), mongoerr.InvalidOptions},
		{"test", watchCmd("system.views", bson.D{}, 1), mongoerr.InvalidNamespace},
		{"test", watchCmd("c", bson.D{{Key: "fullDocument", Value: "always"}}, 1), mongoerr.BadValue},
		{"test", watchCmd("c", bson.D{}, 1, bson.D{{Key: "$sort", Value: bson.D{{Key: "x", Value: 1}}}}), mongoerr.IllegalOperation},
		{"test", watchCmd("c", bson.D{{Key: "startAtOperationTime", Value: "now"}}, 1), mongoerr.TypeMismatch},
		{"test", watchCmd("c", bson.D{}, 1, bson.D{{Key: "$changeStream", Value: bson.D{}}}), mongoerr.Location40602},
		{"test", bson.D{{Key: "aggregate", Value: "c"}, {Key: "pipeline", Value: bson.A{bson.D{{Key: "$match", Value: bson.D{}}}, bson.D{{Key: "$changeStream", Value: bson.D{}}}}}, {Key: "cursor", Value: bson.D{}}}, mongoerr.Location40602},
	}
	for _, c := range cases {
		_, err := call(t, h, c.db, c.cmd)
		if mongoerr.As(err).Code != c.code {
			t.Errorf("%s %v: %v, want code %d", c.db, c.cmd, err, c.code)
		}
	}
	plain, _ := newTestHandler(t)
	if _, err := call(t, plain, "test", watchCmd("c", bson.D{}, 1)); mongoerr.As(err).Code != mongoerr.Location40573 {
		t.Fatalf("without a change log: %v", err)
	}
}

// TestStreamBehindAFlowGathersItsBatch: a getMore on a stream whose last
// batch had events, finding a short batch, waits changestream.GatherWait for more and
// returns them together; a trickle, a full batch and a stream's first
// batch after an empty one are answered at once. The wait runs on the
// handler's clock, which the test moves.
func TestStreamBehindAFlowGathersItsBatch(t *testing.T) {
	clk := clock.NewManual(time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC))
	h := newClockedStreamHandler(t, clk)
	id := cursorField(t, mustCall(t, h, "test", watchCmd("c", bson.D{}, 0)), "id").(int64)
	next := 0
	insert := func(n int) {
		docs := bson.A{}
		for range n {
			docs = append(docs, bson.D{{Key: "_id", Value: next}})
			next++
		}
		mustCall(t, h, "test", bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: docs}})
	}
	more := bson.D{{Key: "getMore", Value: id}, {Key: "collection", Value: "c"}, {Key: "maxTimeMS", Value: int64(60000)}}
	getMore := func() <-chan int {
		got := make(chan int, 1)
		go func() {
			reply := runOn(h, server.NewDetachedConn(1, "127.0.0.1:50000"), "test", more)
			cur, _ := bsonutil.Field(reply, "cursor")
			batch, _ := bsonutil.Field(cur.(bson.D), "nextBatch")
			got <- len(asArray(batch))
		}()
		return got
	}
	atOnce := func(what string, want int) {
		t.Helper()
		select {
		case n := <-getMore():
			if n != want {
				t.Fatalf("%s: %d events, want %d", what, n, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: the getMore waited", what)
		}
	}
	insert(20)
	atOnce("the first batch after an empty one", 20)
	insert(20)
	got := getMore()
	waitTimers(t, clk, 2) // the getMore's own wait and the gathering's
	insert(30)
	clk.Advance(changestream.GatherWait)
	select {
	case n := <-got:
		if n != 50 {
			t.Fatalf("a stream behind a flow got %d events, want the 20 waiting and the 30 gathered", n)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the gathering getMore did not return once its wait passed")
	}
	insert(3)
	atOnce("a trickle", 3)
	insert(changestream.GatherFull)
	atOnce("a full batch", changestream.GatherFull)
	big := bson.A{}
	for i := range changestream.GatherFrom {
		big = append(big, bson.D{{Key: "_id", Value: -1 - i}, {Key: "pad", Value: strings.Repeat("x", changestream.GatherBytes/changestream.GatherFrom)}})
	}
	mustCall(t, h, "test", bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: big}})
	atOnce("a batch of changestream.GatherBytes", changestream.GatherFrom)
}

// waitTimers waits until clk has n timers pending.
func waitTimers(t *testing.T, clk *clock.Manual, n int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); clk.Pending() < n; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d timers pending, want %d", clk.Pending(), n)
		}
	}
}
