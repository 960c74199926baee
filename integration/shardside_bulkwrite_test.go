package integration

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/shardmeta"
)

// TestShardsideBulkWriteVersions: a shard checks the versions a router
// puts in each nsInfo entry of a bulkWrite. A stale one refuses the
// command (13388, nothing written, the other namespace's ops included);
// a fresh one runs its namespace's ops under the ownership filter, so a
// deleteMany removes the documents the shard owns and leaves its orphans.
func TestShardsideBulkWriteVersions(t *testing.T) {
	c := startShardedCluster(t)
	db := c.shard.client.Database("db")
	const docs = 40
	insertKeyed(t, db.Collection("c"), docs)
	fresh := c.table.ShardVersion("shA")
	owned := ownedIDs(t, c.table, "shA", docs)
	stale := fresh
	stale.Epoch, stale.Timestamp = bson.NewObjectID(), bson.Timestamp{T: 5, I: 1}
	dbVersion := bson.D{{Key: "uuid", Value: c.dbVersion.UUID}, {Key: "timestamp", Value: c.dbVersion.Timestamp}, {Key: "lastMod", Value: c.dbVersion.LastMod}}
	bulk := func(v bson.D) bson.D {
		return bson.D{{Key: "bulkWrite", Value: int32(1)}, {Key: "ops", Value: bson.A{
			bson.D{{Key: "insert", Value: int32(1)}, {Key: "document", Value: bson.D{{Key: "_id", Value: int32(1)}}}},
			bson.D{{Key: "delete", Value: int32(0)}, {Key: "filter", Value: bson.D{}}, {Key: "multi", Value: true}},
		}}, {Key: "nsInfo", Value: bson.A{
			append(bson.D{{Key: "ns", Value: "db.c"}}, v...),
			bson.D{{Key: "ns", Value: "db.plain"}, {Key: "shardVersion", Value: shardmeta.Unsharded.Doc()}, {Key: "databaseVersion", Value: dbVersion}},
		}}}
	}
	refused := rawReply(t, c.shard.admin(), bulk(bson.D{{Key: "shardVersion", Value: stale.Doc()}}))
	if codeOf(refused) != 13388 {
		t.Fatalf("stale nsInfo version: %v", refused)
	}
	if n, _ := db.Collection("c").CountDocuments(ctxT(t), bson.D{}); n != docs {
		t.Fatalf("the refused bulkWrite deleted: %d of %d left", n, docs)
	}
	if n, _ := db.Collection("plain").CountDocuments(ctxT(t), bson.D{}); n != 0 {
		t.Fatalf("the refused bulkWrite inserted into db.plain: %d", n)
	}
	res := rawReply(t, c.shard.admin(), bulk(bson.D{{Key: "shardVersion", Value: fresh.Doc()}}))
	if codeOf(res) != 0 || field(t, res, "nDeleted") != int32(len(owned)) || field(t, res, "nInserted") != int32(1) {
		t.Fatalf("fresh nsInfo version: %v, want %d owned documents deleted", res, len(owned))
	}
	if n, _ := db.Collection("c").CountDocuments(ctxT(t), bson.D{}); n != int64(docs-len(owned)) {
		t.Fatalf("%d documents left, want the %d orphans", n, docs-len(owned))
	}
}
