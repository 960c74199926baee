package shardmerge

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
)

// BulkItemOK reports whether a bulkWrite result item succeeded.
func BulkItemOK(item bson.D) bool {
	v, _ := bsonutil.Field(item, "ok")
	return bsonutil.TrueValue(v)
}

// MergeBulkItems combines two shards' results for one bulkWrite op: an
// error wins, else the counts add up.
func MergeBulkItems(prev, next bson.D) bson.D {
	switch {
	case prev == nil || !BulkItemOK(next):
		if prev != nil && !BulkItemOK(prev) {
			return prev
		}
		return next
	case !BulkItemOK(prev):
		return prev
	}
	out := bsonutil.WithField(prev, "n", int32(number(prev, "n")+number(next, "n")))
	if _, ok := bsonutil.Field(prev, "nModified"); ok {
		out = bsonutil.WithField(out, "nModified", int32(number(prev, "nModified")+number(next, "nModified")))
	}
	return out
}

// StatementItem is an update or delete command's reply to its one
// statement, op i of a bulkWrite, as that op's result item.
func StatementItem(i int, kind string, reply bson.D) bson.D {
	wes, _ := bsonutil.Field(reply, "writeErrors")
	if wes := bsonutil.ToA(wes); len(wes) > 0 {
		item := bson.D{{Key: "ok", Value: 0.0}, {Key: "idx", Value: int32(i)}}
		for _, e := range bsonutil.ToD(wes[0]) {
			if e.Key != "index" {
				item = append(item, e)
			}
		}
		item = append(item, bson.E{Key: "n", Value: int32(0)})
		if kind == "update" {
			item = append(item, bson.E{Key: "nModified", Value: int32(0)})
		}
		return item
	}
	item := bson.D{{Key: "ok", Value: 1.0}, {Key: "idx", Value: int32(i)}, {Key: "n", Value: int32(number(reply, "n"))}}
	if kind != "update" {
		return item
	}
	item = append(item, bson.E{Key: "nModified", Value: int32(number(reply, "nModified"))})
	ups, _ := bsonutil.Field(reply, "upserted")
	if ups := bsonutil.ToA(ups); len(ups) > 0 {
		id, _ := bsonutil.Field(bsonutil.ToD(ups[0]), "_id")
		item = append(item, bson.E{Key: "upserted", Value: bson.D{{Key: "_id", Value: id}}})
	}
	return item
}

// BulkTotals are a bulkWrite reply's counters, summed from the ops'
// results as mongod counts them (an upsert is not a match).
type BulkTotals struct {
	errors, inserted, matched, modified, upserted, deleted int64
}

// Count adds the result item of an op of kind ("insert", "update",
// "delete").
func (t *BulkTotals) Count(kind string, item bson.D) {
	if !BulkItemOK(item) {
		t.errors++
		return
	}
	n := int64(number(item, "n"))
	switch kind {
	case "insert":
		t.inserted += n
	case "delete":
		t.deleted += n
	case "update":
		t.modified += int64(number(item, "nModified"))
		if _, upserted := bsonutil.Field(item, "upserted"); upserted {
			t.upserted++
			n--
		}
		t.matched += n
	}
}

// Fields are the counters as the reply gives them.
func (t *BulkTotals) Fields() bson.D {
	return bson.D{
		{Key: "nErrors", Value: int32(t.errors)}, {Key: "nInserted", Value: int32(t.inserted)},
		{Key: "nMatched", Value: int32(t.matched)}, {Key: "nModified", Value: int32(t.modified)},
		{Key: "nUpserted", Value: int32(t.upserted)}, {Key: "nDeleted", Value: int32(t.deleted)},
	}
}
