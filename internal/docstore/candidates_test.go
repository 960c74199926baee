package docstore

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/keyenc"
	"github.com/mayflydb/mayfly/internal/query"
)

func TestCandidateIDsOnlyForExactPlans(t *testing.T) {
	s, _ := openStore(t)
	c, _ := s.CreateCollection("db", "c", CreateOptions{})
	mustIndex(t, c, bson.D{{Key: "key", Value: bson.D{{Key: "tok", Value: 1}}}, {Key: "name", Value: "tok_1"}})
	ids := []any{int32(3), "s", bson.NewObjectID(), 2.5, int64(1) << 40}
	for _, id := range ids {
		insert(t, c, bson.D{{Key: "_id", Value: id}, {Key: "tok", Value: bson.A{"a", "a", "b"}}, {Key: "n", Value: 1}})
	}
	cases := []struct {
		filter bson.D
		exact  bool
	}{
		{bson.D{{Key: "tok", Value: "a"}}, true},
		{bson.D{{Key: "tok", Value: bson.D{{Key: "$in", Value: bson.A{"a", "b"}}}}}, true},
		{bson.D{{Key: "tok", Value: "a"}, {Key: "n", Value: 1}}, false}, // n is left over
		{bson.D{{Key: "n", Value: 1}}, false},                           // a collection scan
		{bson.D{{Key: "_id", Value: int32(3)}}, false},                  // a point read
		{bson.D{{Key: "tok", Value: nil}}, false},                       // null bounds hold missing fields too
	}
	for _, tc := range cases {
		f, err := query.NewFilter(tc.filter)
		if err != nil {
			t.Fatal(err)
		}
		plan, err := c.PlanQuery(f, nil)
		if err != nil {
			t.Fatal(err)
		}
		it, ok := c.CandidateIDs(plan, f)
		if ok != tc.exact {
			t.Errorf("%v: exact %v, want %v", tc.filter, ok, tc.exact)
		}
		if !ok {
			continue
		}
		var got []any
		for {
			id, more, err := it.Next()
			if err != nil {
				t.Fatal(err)
			}
			if !more {
				break
			}
			got = append(got, id)
		}
		it.Close()
		if len(got) != len(ids) {
			t.Errorf("%v: %d candidates, want each document once (%d)", tc.filter, len(got), len(ids))
		}
		for _, id := range got {
			// The _id must find the document again, as Modify encodes it.
			d, err := c.loadLocked(keyenc.AppendValue(nil, id))
			if err != nil {
				t.Fatal(err)
			}
			if d == nil {
				t.Errorf("%v: candidate %v (%T) does not lead back to its document", tc.filter, id, id)
			}
		}
	}
}
