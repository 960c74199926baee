package commands

import (
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/clock"
)

// TestHandlerExpiredElementsInEveryRead: a cart line past its expiry is
// left out by find, aggregate, distinct and findAndModify alike.
func TestHandlerExpiredElementsInEveryRead(t *testing.T) {
	clk := clock.NewManual(refreshT0)
	h, _ := newClockedHandler(t, clk)
	mustCall(t, h, "test", bson.D{{Key: "createIndexes", Value: "carts"}, {Key: "indexes", Value: bson.A{bson.D{
		{Key: "key", Value: bson.D{{Key: "items.addedAt", Value: 1}}}, {Key: "name", Value: "lines"},
		{Key: "expireAfterSeconds", Value: 60}, {Key: "expireElements", Value: true}}}}})
	line := func(sku string, age time.Duration) bson.D {
		return bson.D{{Key: "sku", Value: sku}, {Key: "addedAt", Value: bson.NewDateTimeFromTime(refreshT0.Add(-age))}}
	}
	mustCall(t, h, "test", bson.D{{Key: "insert", Value: "carts"}, {Key: "documents", Value: bson.A{
		bson.D{{Key: "_id", Value: 1}, {Key: "items", Value: bson.A{line("stale", 2*time.Minute), line("fresh", 0)}}}}}})
	lines := func(doc bson.Raw) int {
		arr, _ := doc.Lookup("items").ArrayOK()
		vals, _ := arr.Values()
		return len(vals)
	}
	out := mustCall(t, h, "test", bson.D{{Key: "find", Value: "carts"}})
	if n := lines(firstBatch(t, out)[0].(bson.Raw)); n != 1 {
		t.Fatalf("find returned %d lines, want 1", n)
	}
	out = mustCall(t, h, "test", bson.D{{Key: "aggregate", Value: "carts"}, {Key: "pipeline", Value: bson.A{bson.D{{Key: "$unwind", Value: "$items"}}}}, {Key: "cursor", Value: bson.D{}}})
	if n := len(firstBatch(t, out)); n != 1 {
		t.Fatalf("$unwind gave %d lines, want 1", n)
	}
	out = mustCall(t, h, "test", bson.D{{Key: "distinct", Value: "carts"}, {Key: "key", Value: "items.sku"}})
	if v, _ := bsonutil.Field(out, "values"); len(v.(bson.A)) != 1 || v.(bson.A)[0] != "fresh" {
		t.Fatalf("distinct values %v", v)
	}
	out = mustCall(t, h, "test", bson.D{{Key: "findAndModify", Value: "carts"}, {Key: "query", Value: bson.D{{Key: "items.sku", Value: "stale"}}}, {Key: "update", Value: bson.D{{Key: "$set", Value: bson.D{{Key: "x", Value: 1}}}}}})
	if v, _ := bsonutil.Field(out, "value"); v != nil {
		t.Fatalf("findAndModify matched on an expired line: %v", v)
	}
}
