package commands

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestHandlerChangeStreamSharedEncoding: streams with the same options
// get one shared encoding of an event; a stream with a pipeline gets its
// own, shaped by it.
func TestHandlerChangeStreamSharedEncoding(t *testing.T) {
	h := newStreamHandler(t)
	open := func(stages ...bson.D) int64 {
		return cursorField(t, mustCall(t, h, "test", watchCmd("c", bson.D{}, 0, stages...)), "id").(int64)
	}
	a, b := open(), open()
	projected := open(bson.D{{Key: "$project", Value: bson.D{{Key: "ns", Value: 0}}}})
	mustCall(t, h, "test", bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: 1}}}}})
	next := func(id int64) bson.Raw {
		batch := cursorField(t, mustCall(t, h, "test", bson.D{{Key: "getMore", Value: id}, {Key: "collection", Value: "c"}}), "nextBatch").(bson.A)
		if len(batch) != 1 {
			t.Fatalf("cursor %d: %d events", id, len(batch))
		}
		return batch[0].(bson.Raw)
	}
	ea, eb, ep := next(a), next(b), next(projected)
	if &ea[0] != &eb[0] {
		t.Fatal("two streams with the same options encoded the same event twice")
	}
	if _, err := ea.LookupErr("ns"); err != nil {
		t.Fatalf("event without ns: %v", ea)
	}
	if _, err := ep.LookupErr("ns"); err == nil || &ep[0] == &ea[0] {
		t.Fatalf("the projected stream got the shared event: %v", ep)
	}
	if v, _ := ep.LookupErr("documentKey", "_id"); v.Int32() != 1 {
		t.Fatalf("projected event %v", ep)
	}
}
