package shardmerge

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

func TestMergeBulkItems(t *testing.T) {
	ok := func(n, mod int32) bson.D {
		return bson.D{{Key: "ok", Value: 1.0}, {Key: "idx", Value: int32(0)}, {Key: "n", Value: n}, {Key: "nModified", Value: mod}}
	}
	failed := bson.D{{Key: "ok", Value: 0.0}, {Key: "idx", Value: int32(0)}, {Key: "code", Value: int32(11000)}}
	sum := MergeBulkItems(ok(2, 1), ok(3, 3))
	if got := sum; got[2].Value != int32(5) || got[3].Value != int32(4) {
		t.Fatalf("two shards' counts: %v, want n 5, nModified 4", got)
	}
	for _, pair := range [][2]bson.D{{ok(1, 1), failed}, {failed, ok(1, 1)}, {nil, failed}} {
		if got := MergeBulkItems(pair[0], pair[1]); BulkItemOK(got) {
			t.Fatalf("%v with %v: %v, want the error", pair[0], pair[1], got)
		}
	}
}

func TestBulkTotalsCountAnUpsertApart(t *testing.T) {
	var tot BulkTotals
	tot.Count("insert", bson.D{{Key: "ok", Value: 1.0}, {Key: "n", Value: int32(1)}})
	tot.Count("update", bson.D{{Key: "ok", Value: 1.0}, {Key: "n", Value: int32(1)}, {Key: "nModified", Value: int32(0)},
		{Key: "upserted", Value: bson.D{{Key: "_id", Value: 7}}}})
	tot.Count("update", bson.D{{Key: "ok", Value: 1.0}, {Key: "n", Value: int32(2)}, {Key: "nModified", Value: int32(1)}})
	tot.Count("delete", bson.D{{Key: "ok", Value: 0.0}, {Key: "code", Value: int32(2)}})
	want := bson.D{{Key: "nErrors", Value: int32(1)}, {Key: "nInserted", Value: int32(1)}, {Key: "nMatched", Value: int32(2)},
		{Key: "nModified", Value: int32(1)}, {Key: "nUpserted", Value: int32(1)}, {Key: "nDeleted", Value: int32(0)}}
	for i, e := range tot.Fields() {
		if e != want[i] {
			t.Fatalf("totals %v, want %v", tot.Fields(), want)
		}
	}
}

func TestStatementItem(t *testing.T) {
	upsert := StatementItem(3, "update", bson.D{{Key: "n", Value: int32(1)}, {Key: "nModified", Value: int32(0)},
		{Key: "upserted", Value: bson.A{bson.D{{Key: "index", Value: int32(0)}, {Key: "_id", Value: "k"}}}}})
	if upsert[1].Value != int32(3) || upsert[4].Key != "upserted" {
		t.Fatalf("an upsert's item: %v", upsert)
	}
	dup := StatementItem(4, "delete", bson.D{{Key: "n", Value: int32(0)},
		{Key: "writeErrors", Value: bson.A{bson.D{{Key: "index", Value: int32(0)}, {Key: "code", Value: int32(11000)}}}}})
	if BulkItemOK(dup) || dup[2].Key != "code" {
		t.Fatalf("a write error's item: %v", dup)
	}
}
