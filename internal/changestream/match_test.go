package changestream

import (
	"context"
	"slices"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/aggregate"
	"github.com/mayflydb/mayfly/internal/keyenc"
)

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
	st := newTestStreams()
	call := &Call{Ctx: context.Background()}
	expiry := func(i int, index string, at int64) Record {
		ev := &Event{Op: OpDelete, DB: "db", Coll: "c", ID: keyenc.AppendValue(nil, int64(i))}
		if index != "" {
			ev.Expired = &Expiry{Index: index, AfterSecs: 0, AtMillis: at}
		}
		return Record{Pos: Position{TS: Timestamp{T: 1_700_000_000, I: 1}, Index: uint32(i)},
			WallMillis: at + 5, Event: ev}
	}
	recs := []Record{
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
		spec := Spec{Scope: Scope{DB: "db", Coll: "c"}, FullDocument: "default", Before: "off"}
		spec.Match, spec.Pipeline = PushDownMatch(p)
		if spec.Match == nil || spec.Match.sameForGroup != tc.same {
			t.Fatalf("%v: pushed down %v, same for a group %v; want %v", tc.filter, spec.Match != nil, spec.Match != nil && spec.Match.sameForGroup, tc.same)
		}
		c := &Stream{streams: st, spec: &spec}
		var got []int
		for i, rec := range recs {
			out, err := c.encodedEvents(call, rec)
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
