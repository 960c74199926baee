package commands

import (
	"context"
	"slices"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/aggregate"
	"github.com/mayflydb/mayfly/internal/changestream"
	"github.com/mayflydb/mayfly/internal/keyenc"
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

// TestReadsOnly: which filters a stream tests on the change itself.
func TestReadsOnly(t *testing.T) {
	roots := probeFields
	cases := []struct {
		filter bson.D
		want   bool
	}{
		{bson.D{{Key: "operationType", Value: "delete"}}, true},
		{bson.D{{Key: "expired", Value: bson.D{{Key: "$exists", Value: true}}}, {Key: "ns.coll", Value: "c"}}, true},
		{bson.D{{Key: "$and", Value: bson.A{bson.D{{Key: "expired.index", Value: "t"}}}}, {Key: "$comment", Value: "x"}}, true},
		{bson.D{{Key: "operationTypeX", Value: 1}}, false},
		{bson.D{{Key: "fullDocument.a", Value: 1}}, false},
		{bson.D{{Key: "$nor", Value: bson.A{bson.D{{Key: "documentKey._id", Value: 1}}}}}, false},
		{bson.D{{Key: "$where", Value: "true"}}, false},
		{bson.D{{Key: "$or", Value: "bad"}}, false},
	}
	for _, c := range cases {
		if got := readsOnly(c.filter, roots); got != c.want {
			t.Errorf("readsOnly(%v) = %v, want %v", c.filter, got, c.want)
		}
	}
}

// TestPushedDownMatchPerChange: the pushed-down filter's answer is reused
// only across changes it cannot tell apart; a filter on
// expired.expiredAt is asked for every change.
func TestPushedDownMatchPerChange(t *testing.T) {
	h := newStreamHandler(t)
	r := &request{ctx: context.Background(), db: "db", name: "getMore"}
	expiry := func(i int, index string, at int64) changestream.Record {
		ev := &changestream.Event{Op: changestream.OpDelete, DB: "db", Coll: "c", ID: keyenc.AppendValue(nil, int64(i))}
		if index != "" {
			ev.Expired = &changestream.Expiry{Index: index, AfterSecs: 0, AtMillis: at}
		}
		return changestream.Record{Pos: changestream.Position{TS: changestream.Timestamp{T: 1_700_000_000, I: 1}, Index: uint32(i)},
			WallMillis: at + 5, Event: ev}
	}
	recs := []changestream.Record{
		expiry(0, "a_1", 1000), expiry(1, "a_1", 3000), expiry(2, "b_1", 3000), expiry(3, "", 3000),
		expiry(4, "a_1", 1500), expiry(5, "a_1", 2500), expiry(6, "b_1", 1000),
	}
	cases := []struct {
		filter bson.D
		same   bool
		want   []int
	}{
		{bson.D{{Key: "expired.expiredAt", Value: bson.D{{Key: "$gte", Value: bson.DateTime(2000)}}}}, false, []int{1, 2, 5}},
		{bson.D{{Key: "expired", Value: bson.D{{Key: "$exists", Value: true}}}, {Key: "expired.index", Value: "a_1"}}, true, []int{0, 1, 4, 5}},
		{bson.D{{Key: "$or", Value: bson.A{bson.D{{Key: "expired.index", Value: "b_1"}},
			bson.D{{Key: "expired", Value: bson.D{{Key: "$exists", Value: false}}}}}}}, true, []int{2, 3, 6}},
		{bson.D{{Key: "expired", Value: bson.D{{Key: "index", Value: "a_1"}, {Key: "expireAfterSeconds", Value: int64(0)},
			{Key: "expiredAt", Value: bson.DateTime(1000)}}}}, false, []int{0}},
	}
	for _, tc := range cases {
		p, err := aggregate.Parse(bson.A{bson.D{{Key: "$match", Value: tc.filter}}}, aggregate.Options{})
		if err != nil {
			t.Fatal(err)
		}
		spec := streamSpec{scope: streamScope{db: "db", coll: "c"}, fullDocument: "default", before: "off"}
		spec.match, spec.pipeline = pushDownMatch(p)
		if spec.match == nil || spec.match.sameForGroup != tc.same {
			t.Fatalf("%v: pushed down %v, same for a group %v; want %v", tc.filter, spec.match != nil, spec.match != nil && spec.match.sameForGroup, tc.same)
		}
		c := &streamCursor{h: h, spec: &spec}
		var got []int
		for i, rec := range recs {
			out, err := c.encodedEvents(r, rec)
			if err != nil {
				t.Fatal(err)
			}
			if len(out) > 0 {
				got = append(got, i)
			}
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%v kept %v, want %v", tc.filter, got, tc.want)
		}
	}
}
