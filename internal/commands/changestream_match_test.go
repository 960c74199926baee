package commands

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestHandlerChangeStreamPushedDownMatch: a leading $match on
// operationType, ns or expired gives the same events as when run on the
// built event, shares one encoding between streams with the same filter,
// still runs the stages after it, and a $match on other fields is left
// to the pipeline.
func TestHandlerChangeStreamPushedDownMatch(t *testing.T) {
	h := newStreamHandler(t)
	open := func(stages ...bson.D) int64 {
		return cursorField(t, mustCall(t, h, "test", watchCmd("c", bson.D{}, 0, stages...)), "id").(int64)
	}
	match := func(f bson.D) bson.D { return bson.D{{Key: "$match", Value: f}} }
	deletes := match(bson.D{{Key: "operationType", Value: "delete"}})
	a, b := open(deletes), open(deletes)
	projected := open(deletes, bson.D{{Key: "$project", Value: bson.D{{Key: "ns", Value: 0}}}})
	byDoc := open(match(bson.D{{Key: "fullDocument.x", Value: 1}}))
	either := open(match(bson.D{{Key: "$or", Value: bson.A{
		bson.D{{Key: "operationType", Value: "insert"}},
		bson.D{{Key: "ns.coll", Value: "elsewhere"}},
	}}}))
	notExpired := open(match(bson.D{{Key: "expired", Value: bson.D{{Key: "$exists", Value: false}}}}))
	mustCall(t, h, "test", bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{
		bson.D{{Key: "_id", Value: 1}, {Key: "x", Value: 1}}, bson.D{{Key: "_id", Value: 2}}}}})
	mustCall(t, h, "test", bson.D{{Key: "delete", Value: "c"}, {Key: "deletes", Value: bson.A{
		bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: 1}}}, {Key: "limit", Value: 1}}}}})
	next := func(id int64) bson.A {
		return cursorField(t, mustCall(t, h, "test", bson.D{{Key: "getMore", Value: id}, {Key: "collection", Value: "c"}}), "nextBatch").(bson.A)
	}
	ops := func(batch bson.A) []string {
		var out []string
		for _, e := range batch {
			out = append(out, bson.Raw(e.(bson.Raw)).Lookup("operationType").StringValue())
		}
		return out
	}
	ea, eb, ep := next(a), next(b), next(projected)
	if len(ea) != 1 || len(eb) != 1 || ops(ea)[0] != "delete" {
		t.Fatalf("delete streams got %v and %v", ops(ea), ops(eb))
	}
	ra, rb := ea[0].(bson.Raw), eb[0].(bson.Raw)
	if &ra[0] != &rb[0] {
		t.Fatal("two streams with the same pushed-down $match encoded the same event twice")
	}
	if v, _ := ra.LookupErr("documentKey", "_id"); v.Int32() != 1 {
		t.Fatalf("delete event %v", ra)
	}
	if len(ep) != 1 {
		t.Fatalf("projected delete stream got %d events", len(ep))
	}
	if _, err := ep[0].(bson.Raw).LookupErr("ns"); err == nil || ops(ep)[0] != "delete" {
		t.Fatalf("the stages after the pushed-down $match did not run: %v", ep[0])
	}
	if got := next(byDoc); len(got) != 1 || bson.Raw(got[0].(bson.Raw)).Lookup("documentKey", "_id").Int32() != 1 {
		t.Fatalf("$match on fullDocument.x gave %v", got)
	}
	if got := ops(next(either)); len(got) != 2 || got[0] != "insert" || got[1] != "insert" {
		t.Fatalf("$or on operationType and ns.coll gave %v", got)
	}
	if got := ops(next(notExpired)); len(got) != 3 {
		t.Fatalf("expired $exists false gave %v", got)
	}
}
