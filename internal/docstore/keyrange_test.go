package docstore

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestScanKeyRange: an index on a (a shard key) or starting with it that
// holds every document once per value, ascending, answers a range of a
// by reading the range's entries alone (KeysExamined counts them); any
// other index refuses, so that the caller reads the collection instead.
func TestScanKeyRange(t *testing.T) {
	cases := []struct {
		name     string
		spec     bson.D
		min, max []any
		want     int // documents with a in [min, max) of 100 with a = 0..99
		ok       bool
	}{
		{"ascending", ixSpec("a_1", bson.D{{Key: "a", Value: int32(1)}}), []any{int32(10)}, []any{int32(30)}, 20, true},
		{"compound, leading field bounded", ixSpec("a_1_b_1", bson.D{{Key: "a", Value: int32(1)}, {Key: "b", Value: int32(1)}}), []any{int32(90)}, []any{bson.MaxKey{}}, 10, true},
		{"from MinKey", ixSpec("a_1", bson.D{{Key: "a", Value: int32(1)}}), []any{bson.MinKey{}}, []any{int32(5)}, 5, true},
		{"descending", ixSpec("a_-1", bson.D{{Key: "a", Value: int32(-1)}}), []any{int32(10)}, []any{int32(30)}, 0, false},
		{"another key", ixSpec("b_1", bson.D{{Key: "b", Value: int32(1)}}), []any{int32(1)}, []any{int32(3)}, 0, false},
		{"sparse", ixSpec("a_1", bson.D{{Key: "a", Value: int32(1)}}, bson.E{Key: "sparse", Value: true}), []any{int32(10)}, []any{int32(30)}, 0, false},
		{"partial", ixSpec("a_1", bson.D{{Key: "a", Value: int32(1)}}, bson.E{Key: "partialFilterExpression", Value: bson.D{{Key: "a", Value: bson.D{{Key: "$gt", Value: 5}}}}}), []any{int32(10)}, []any{int32(30)}, 0, false},
		{"collation", ixSpec("a_1", bson.D{{Key: "a", Value: int32(1)}}, bson.E{Key: "collation", Value: bson.D{{Key: "locale", Value: "fr"}}}), []any{int32(10)}, []any{int32(30)}, 0, false},
		{"more bounds than fields", ixSpec("a_1", bson.D{{Key: "a", Value: int32(1)}}), []any{int32(1), int32(1)}, []any{int32(2), int32(2)}, 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := planColl(t, tc.spec)
			for i := range 100 {
				insert(t, c, bson.D{{Key: "_id", Value: int32(1000 - i)}, {Key: "a", Value: int32(i)}, {Key: "b", Value: int32(i % 7)}})
			}
			key := bson.D{{Key: "a", Value: int32(1)}}
			if len(tc.min) > 1 {
				key = append(key, bson.E{Key: "b", Value: int32(1)})
			}
			it, ok := c.ScanKeyRange(key, tc.min, tc.max)
			if ok != tc.ok {
				t.Fatalf("ScanKeyRange answered %v, want %v", ok, tc.ok)
			}
			if !ok {
				return
			}
			defer it.Close()
			n := 0
			for {
				doc, more, err := it.Next()
				if err != nil {
					t.Fatal(err)
				}
				if !more {
					break
				}
				n++
				if a := doc[1].Value.(int32); n == 1 && a != tc.min[0] && tc.min[0] != (bson.MinKey{}) {
					t.Fatalf("first document a=%d, want the range's start %v", a, tc.min[0])
				}
			}
			if n != tc.want || it.Stats.KeysExamined != int64(tc.want) {
				t.Fatalf("%d documents after %d keys, want %d after as many", n, it.Stats.KeysExamined, tc.want)
			}
		})
	}
	if _, ok := planColl(t).ScanKeyRange(bson.D{{Key: "_id", Value: int32(1)}}, []any{int32(0)}, []any{int32(1)}); ok {
		t.Fatal("the _id index, which has no entries, answered a key range")
	}
}
