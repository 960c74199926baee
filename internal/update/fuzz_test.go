package update

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/fuzzlimit"
)

// FuzzApply parses an update and applies it to a document, both built from
// the fuzzer's extended JSON. Besides not panicking, Apply must leave its
// input alone and, outside inserts, never change _id.
func FuzzApply(f *testing.F) {
	f.Add(`{"_id": 1, "a": [1, {"b": 2}]}`, `{"$set": {"a.1.b": 3}, "$inc": {"n": 1}}`, `{}`, int8(-1), false)
	f.Add(`{"_id": 1, "a": [3, 1]}`, `{"$push": {"a": {"$each": [2], "$sort": 1, "$slice": -2}}}`, `{}`, int8(-1), false)
	f.Add(`{"_id": 1, "a": [1, 2]}`, `{"$set": {"a.$[x]": 0}}`, `{"x": 2}`, int8(-1), false)
	f.Add(`{"_id": 1, "a": {"b": 1}}`, `{"$rename": {"a.b": "c.d"}}`, `{}`, int8(-1), true)
	f.Add(`{"_id": 1, "a": [5]}`, `{"$set": {"a.$": 1}}`, `{}`, int8(0), false)
	f.Fuzz(func(t *testing.T, docJSON, updateJSON, filterJSON string, pos int8, insert bool) {
		fuzzlimit.Run(t, func() {
			doc, ok1 := fuzzDoc(docJSON)
			upd, ok2 := fuzzDoc(updateJSON)
			filter, ok3 := fuzzDoc(filterJSON)
			if !ok1 || !ok2 || !ok3 {
				return
			}
			var filters []bson.D
			if len(filter) > 0 {
				filters = []bson.D{filter}
			}
			checkFuzzApply(t, doc, upd, filters, Context{Now: testNow, IsInsert: insert, Positional: int(pos)})
		}, docJSON, updateJSON, filterJSON, pos, insert)
	})
}

func fuzzDoc(s string) (bson.D, bool) {
	var d bson.D
	if err := bson.UnmarshalExtJSON([]byte(s), false, &d); err != nil {
		return nil, false
	}
	return d, true
}

func checkFuzzApply(t *testing.T, doc, upd bson.D, filters []bson.D, ctx Context) {
	u, err := Parse(upd, filters)
	if err != nil {
		return
	}
	before := cloneValue(doc).(bson.D)
	got, _, err := u.Apply(doc, ctx)
	if !identicalDocs(doc, before) {
		t.Fatalf("input modified")
	}
	if err != nil || ctx.IsInsert {
		return
	}
	oldID, had := bsonutil.Field(doc, "_id")
	newID, has := bsonutil.Field(got, "_id")
	if had && (!has || compareValues(oldID, newID) != 0) {
		t.Fatalf("_id changed from %v to %v", oldID, newID)
	}
}
