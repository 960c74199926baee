package commands

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
)

// TestCollectionlessAggregateWrites: every first stage {aggregate: 1}
// runs ($documents, $listLocalSessions, $currentOp) ends in $out or
// $merge (into another database: admin is internal) as mongod's do: the
// command succeeds with an empty cursor, and $out leaves its collection
// behind even when nothing came out.
func TestCollectionlessAggregateWrites(t *testing.T) {
	firsts := map[string]any{
		"$documents":         bson.A{bson.D{{Key: "_id", Value: int32(1)}}},
		"$listLocalSessions": bson.D{},
		"$currentOp":         bson.D{},
	}
	writes := map[string]func(coll string) any{
		"$out": func(coll string) any { return bson.D{{Key: "db", Value: "test"}, {Key: "coll", Value: coll}} },
		"$merge": func(coll string) any {
			return bson.D{{Key: "into", Value: bson.D{{Key: "db", Value: "test"}, {Key: "coll", Value: coll}}}}
		},
	}
	for first, spec := range firsts {
		for write, target := range writes {
			h, c := newTestHandler(t)
			coll := "into_" + write[1:]
			reply := runOn(h, c, "admin", bson.D{{Key: "aggregate", Value: int32(1)}, {Key: "pipeline", Value: bson.A{
				bson.D{{Key: first, Value: spec}}, bson.D{{Key: "$limit", Value: int32(1)}},
				bson.D{{Key: write, Value: target(coll)}},
			}}, {Key: "cursor", Value: bson.D{}}})
			if code := replyCode(reply); code != 0 {
				t.Errorf("%s then %s: %v", first, write, reply)
				continue
			}
			if batch := firstBatch(t, reply); len(batch) != 0 {
				t.Errorf("%s then %s: first batch %v, want none", first, write, batch)
			}
			if (write == "$out" || first == "$documents") && h.deps.Store.Collection("test", coll) == nil {
				t.Errorf("%s then %s: no collection %s", first, write, coll)
			}
		}
	}
}

// TestMergeGeneratesMissingID: a result without _id merged on _id gets
// an ObjectId, as mongod's $merge gives it, whether the 'on' fields are
// the default or name _id among others.
func TestMergeGeneratesMissingID(t *testing.T) {
	for _, on := range []any{nil, bson.A{"_id", "a"}} {
		h, c := newTestHandler(t)
		if on != nil {
			runOn(h, c, "test", bson.D{{Key: "createIndexes", Value: "dst"}, {Key: "indexes", Value: bson.A{
				bson.D{{Key: "key", Value: bson.D{{Key: "_id", Value: int32(1)}, {Key: "a", Value: int32(1)}}}, {Key: "name", Value: "id_a"}, {Key: "unique", Value: true}},
			}}})
		}
		merge := bson.D{{Key: "into", Value: "dst"}}
		if on != nil {
			merge = append(merge, bson.E{Key: "on", Value: on})
		}
		reply := runOn(h, c, "test", bson.D{{Key: "aggregate", Value: int32(1)}, {Key: "pipeline", Value: bson.A{
			bson.D{{Key: "$documents", Value: bson.A{bson.D{{Key: "a", Value: int32(1)}}}}},
			bson.D{{Key: "$merge", Value: merge}},
		}}, {Key: "cursor", Value: bson.D{}}})
		if code := replyCode(reply); code != 0 {
			t.Fatalf("on %v: %v", on, reply)
		}
		docs := firstBatch(t, runOn(h, c, "test", bson.D{{Key: "find", Value: "dst"}}))
		if len(docs) != 1 {
			t.Fatalf("on %v: %v", on, docs)
		}
		if id, _ := bsonutil.Field(bsonutil.ToD(docs[0]), "_id"); !isObjectID(id) {
			t.Errorf("on %v: _id %v, want an ObjectId", on, id)
		}
	}
}

func isObjectID(v any) bool {
	_, ok := v.(bson.ObjectID)
	return ok
}
