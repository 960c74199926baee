package router

import (
	"maps"
	"slices"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/shardmerge"
)

// writesWithoutShardKey are the routed commands that can write one
// document chosen by a filter, each with such a request whose filter
// lacks the shard key (db.sharded is sharded on _id).
func writesWithoutShardKey() map[string]bson.D {
	byA := bson.D{{Key: "a", Value: int32(1)}}
	set := bson.D{{Key: "$set", Value: bson.D{{Key: "b", Value: int32(1)}}}}
	fam := []bson.E{{Key: "query", Value: byA}, {Key: "update", Value: set}}
	return map[string]bson.D{
		"update":        {{Key: "update", Value: "sharded"}, {Key: "updates", Value: bson.A{bson.D{{Key: "q", Value: byA}, {Key: "u", Value: set}}}}},
		"delete":        {{Key: "delete", Value: "sharded"}, {Key: "deletes", Value: bson.A{bson.D{{Key: "q", Value: byA}, {Key: "limit", Value: int32(1)}}}}},
		"findAndModify": append(bson.D{{Key: "findAndModify", Value: "sharded"}}, fam...),
		"findandmodify": append(bson.D{{Key: "findandmodify", Value: "sharded"}}, fam...),
		"bulkWrite": {{Key: "bulkWrite", Value: int32(1)}, {Key: "ops", Value: bson.A{bson.D{{Key: "update", Value: int32(0)},
			{Key: "filter", Value: byA}, {Key: "updateMods", Value: set}}}}, {Key: "nsInfo", Value: bson.A{bson.D{{Key: "ns", Value: "db.sharded"}}}}},
	}
}

// notSingleDocumentWrites are the other routed commands, and why.
func notSingleDocumentWrites() map[string]string {
	ddl := "a definition, sent to every shard holding the collection"
	read := "a read"
	return map[string]string{
		"insert": "each document carries its _id (the router adds one), so its shard is known",
		"find":   read, "aggregate": read, "count": read, "distinct": read, "listIndexes": read,
		"createSearchIndexes": ddl, "updateSearchIndex": ddl, "dropSearchIndex": ddl, "listSearchIndexes": read,
		"listCollections": read, "explain": "explains; writes are refused", "validate": "checks each shard's part",
		"create": ddl, "createIndexes": ddl, "dropIndexes": ddl, "collMod": ddl, "drop": ddl, "dropDatabase": ddl,
	}
}

// TestEveryWriteWithoutShardKeyRunsInTwoPhases: every routed command is
// classified, and each single-document write without the shard key first
// asks the shards for a match (phase one, a find with the statement's
// filter) and, finding none, writes nothing and answers n: 0 — where
// before 8.0 mongos refused it.
func TestEveryWriteWithoutShardKeyRunsInTwoPhases(t *testing.T) {
	writes, others := writesWithoutShardKey(), notSingleDocumentWrites()
	checkClassified(t, slices.Sorted(maps.Keys(routedCommands())), writes, others)
	fc := startFakeCluster(t)
	for _, name := range slices.Sorted(maps.Keys(writes)) {
		fc.setStale(0)
		reply := fc.run(commandDB(writes[name]), writes[name])
		finds, _ := fc.counts("find", shardmeta_collections)
		written, _ := fc.counts(name, shardmeta_collections)
		if !bsonutil.TrueValue(mustField(reply, "ok")) || finds != 1 || written != 0 || matched(reply) != 0 {
			t.Errorf("%s without the shard key: reply %v; %d phase-one finds, %d writes sent; want 1 and 0", name, reply, finds, written)
		}
		fc.sets[1].mu.Lock()
		filter := mustField(fc.shard.last["find"], "filter")
		fc.sets[1].mu.Unlock()
		if bsonutil.Compare(filter, bson.D{{Key: "a", Value: int32(1)}}) != 0 {
			t.Errorf("%s: phase one asked for %v", name, filter)
		}
	}
}

// matched is a write reply's n, findAndModify's lastErrorObject.n, or
// bulkWrite's nMatched and nDeleted (its op's n must be 0 too).
func matched(reply bson.D) int64 {
	if last, ok := bsonutil.Field(reply, "lastErrorObject"); ok {
		return toInt64(mustField(bsonutil.ToD(last), "n"))
	}
	if _, ok := bsonutil.Field(reply, "nMatched"); ok {
		items := bsonutil.ToA(mustField(bsonutil.ToD(mustField(reply, "cursor")), "firstBatch"))
		if len(items) != 1 || !shardmerge.BulkItemOK(bsonutil.ToD(items[0])) {
			return -1
		}
		return toInt64(mustField(reply, "nMatched")) + toInt64(mustField(reply, "nDeleted")) + toInt64(mustField(bsonutil.ToD(items[0]), "n"))
	}
	return toInt64(mustField(reply, "n"))
}

// checkClassified fails for each name that is in both of a and b, or in
// neither: every name must be in exactly one class.
func checkClassified[A, B any](t *testing.T, names []string, a map[string]A, b map[string]B) {
	t.Helper()
	for _, name := range names {
		_, inA := a[name]
		_, inB := b[name]
		if inA == inB {
			t.Errorf("command %s: in the first class %v, in the second %v; it must be in exactly one", name, inA, inB)
		}
	}
}
