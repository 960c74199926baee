package integration

import (
	"errors"
	"fmt"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/mayflydb/mayfly/internal/shardkey"
)

// shardBy shards ns on {field: "hashed"} through the router.
func shardBy(t *testing.T, cl *mongo.Client, ns, field string) {
	t.Helper()
	runCmd(t, cl.Database("admin"), bson.D{{Key: "shardCollection", Value: ns}, {Key: "key", Value: bson.D{{Key: field, Value: "hashed"}}}})
}

// onShards counts a filter's documents on every shard directly (orphans
// included), by shard.
func (c *routedCluster) onShards(t *testing.T, db, coll string, filter bson.D) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	for _, name := range shardNames() {
		n, err := c.shardColl(name, db, coll).CountDocuments(ctxT(t), filter)
		if err != nil {
			t.Fatal(err)
		}
		out[name] = n
	}
	return out
}

func total(counts map[string]int64) int64 {
	var n int64
	for _, v := range counts {
		n += v
	}
	return n
}

// writeWithoutKey is one single-document write whose filter lacks the
// shard key; it returns how many documents it wrote.
type writeWithoutKey struct {
	name    string
	command string // the router command it arrives as
	run     func(t *testing.T, coll *mongo.Collection, filter bson.D) (int64, error)
}

// writesWithoutShardKey is every single-document write a driver sends as
// update, delete or findAndModify: the router's write commands that can
// name one document (insert always carries its _id).
func writesWithoutShardKey() []writeWithoutKey {
	set := bson.D{{Key: "$inc", Value: bson.D{{Key: "v", Value: 1}}}}
	return []writeWithoutKey{
		{"updateOne", "update", func(t *testing.T, c *mongo.Collection, f bson.D) (int64, error) {
			r, err := c.UpdateOne(ctxT(t), f, set)
			return modified(r, err)
		}},
		{"replaceOne", "update", func(t *testing.T, c *mongo.Collection, f bson.D) (int64, error) {
			r, err := c.ReplaceOne(ctxT(t), f, bson.D{{Key: "g", Value: f[0].Value}, {Key: "v", Value: 100}})
			return modified(r, err)
		}},
		{"deleteOne", "delete", func(t *testing.T, c *mongo.Collection, f bson.D) (int64, error) {
			r, err := c.DeleteOne(ctxT(t), f)
			if err != nil {
				return 0, err
			}
			return r.DeletedCount, nil
		}},
		{"findOneAndUpdate", "findAndModify", func(t *testing.T, c *mongo.Collection, f bson.D) (int64, error) {
			return found(c.FindOneAndUpdate(ctxT(t), f, set))
		}},
		{"findOneAndReplace", "findAndModify", func(t *testing.T, c *mongo.Collection, f bson.D) (int64, error) {
			return found(c.FindOneAndReplace(ctxT(t), f, bson.D{{Key: "g", Value: f[0].Value}, {Key: "v", Value: 100}}))
		}},
		{"findOneAndDelete", "findAndModify", func(t *testing.T, c *mongo.Collection, f bson.D) (int64, error) {
			return found(c.FindOneAndDelete(ctxT(t), f))
		}},
	}
}

func modified(r *mongo.UpdateResult, err error) (int64, error) {
	if err != nil {
		return 0, err
	}
	return r.ModifiedCount, nil
}

func found(r *mongo.SingleResult) (int64, error) {
	if err := r.Err(); errors.Is(err, mongo.ErrNoDocuments) {
		return 0, nil
	} else if err != nil {
		return 0, err
	}
	return 1, nil
}

// testWritesWithoutShardKey: each single-document write whose filter
// lacks the shard key writes exactly one of the matching documents
// spread over both shards (8.0's two phases), none when nothing matches;
// an updateOne's sort picks across shards.
func testWritesWithoutShardKey(t *testing.T, c *routedCluster, cl *mongo.Client) {
	shardBy(t, cl, "test.nokey", "_id")
	coll := cl.Database("test").Collection("nokey")
	rows := writesWithoutShardKey()
	docs := spreadGroups(t, len(rows), 10)
	if _, err := coll.InsertMany(ctxT(t), docs); err != nil {
		t.Fatal(err)
	}
	commands := map[string]bool{}
	for g, row := range rows {
		commands[row.command] = true
		filter := bson.D{{Key: "g", Value: int32(g)}}
		if spread := c.onShards(t, "test", "nokey", filter); spread["shA"] == 0 || spread["shB"] == 0 {
			t.Fatalf("%s: group %d is not on both shards: %v", row.name, g, spread)
		}
		n, err := row.run(t, coll, filter)
		if err != nil || n != 1 {
			t.Fatalf("%s without the shard key: wrote %d, %v; want 1", row.name, n, err)
		}
		untouched, err := coll.CountDocuments(ctxT(t), bson.D{{Key: "g", Value: int32(g)}, {Key: "v", Value: int32(0)}})
		if err != nil || untouched != 9 {
			t.Fatalf("%s: %d of the group untouched (%v), want 9", row.name, untouched, err)
		}
		if n, err := row.run(t, coll, bson.D{{Key: "g", Value: int32(99)}}); err != nil || n != 0 {
			t.Fatalf("%s matching nothing: wrote %d, %v", row.name, n, err)
		}
	}
	if len(commands) != 3 {
		t.Fatalf("the rows reach commands %v, want update, delete and findAndModify", commands)
	}
	checkSortedUpdateOne(t, coll)
}

// spreadGroups makes groups of size documents {_id, g, v: 0}, each half
// on either side of hash 0, where the two shards' chunks meet.
func spreadGroups(t *testing.T, groups, size int) []any {
	t.Helper()
	var docs []any
	filled := map[[2]int]int{} // (group, side) → documents
	for id := int32(0); len(docs) < groups*size && id < 10_000; id++ {
		side := 0
		if mustHashSign(t, id) {
			side = 1
		}
		for g := 0; g < groups; g++ {
			if filled[[2]int{g, side}] < size/2 {
				filled[[2]int{g, side}]++
				docs = append(docs, bson.D{{Key: "_id", Value: id}, {Key: "g", Value: int32(g)}, {Key: "v", Value: int32(0)}})
				break
			}
		}
	}
	return docs
}

// checkSortedUpdateOne: updateOne with sort changes the first document in
// that order over both shards (the highest _id of group 0).
func checkSortedUpdateOne(t *testing.T, coll *mongo.Collection) {
	t.Helper()
	var last bson.M
	if err := coll.FindOne(ctxT(t), bson.D{{Key: "g", Value: int32(0)}}, options.FindOne().SetSort(bson.D{{Key: "_id", Value: -1}})).Decode(&last); err != nil {
		t.Fatal(err)
	}
	opts := options.UpdateOne().SetSort(bson.D{{Key: "_id", Value: -1}})
	if _, err := coll.UpdateOne(ctxT(t), bson.D{{Key: "g", Value: int32(0)}}, bson.D{{Key: "$set", Value: bson.D{{Key: "last", Value: true}}}}, opts); err != nil {
		t.Fatal(err)
	}
	var got bson.M
	if err := coll.FindOne(ctxT(t), bson.D{{Key: "last", Value: true}}).Decode(&got); err != nil || got["_id"] != last["_id"] {
		t.Fatalf("sorted updateOne changed %v (%v), want _id %v", got, err, last["_id"])
	}
}

// keyOnOtherShard returns a value of k whose hash falls in a chunk of
// another shard than v's (chunks split at hash 0 across two shards),
// from a range of its own (above 10,000), so that no two documents of
// the test meet on one key.
func keyOnOtherShard(t *testing.T, v int32) int32 {
	t.Helper()
	side := mustHashSign(t, v)
	for w := 10_000 + 100*v; w < 10_000+100*v+100; w++ {
		if mustHashSign(t, w) != side {
			return w
		}
	}
	t.Fatal("no key on the other shard")
	return 0
}

// keyOnSameShard returns another value of k whose hash is on v's side,
// from another range of its own (above 20,000).
func keyOnSameShard(t *testing.T, v int32) int32 {
	t.Helper()
	side := mustHashSign(t, v)
	for w := 20_000 + 100*v; w < 20_000+100*v+100; w++ {
		if mustHashSign(t, w) == side {
			return w
		}
	}
	t.Fatal("no key on the same shard")
	return 0
}

func mustHashSign(t *testing.T, v int32) bool {
	t.Helper()
	h, err := shardkey.Hash(v)
	if err != nil {
		t.Fatal(err)
	}
	return h < 0
}

// testShardKeyUpdates: mongod 8.0's rules for changing a document's shard
// key through the router. A retryable write may move the document to the
// shard owning its new key (updateOne, findOneAndUpdate, a replacement
// without the key, an upsert whose update sets the key elsewhere), or
// keep it within its chunk; outside a retryable write a change is refused
// with 20, and a multi-update changing it with 72.
func testShardKeyUpdates(t *testing.T, c *routedCluster, cl *mongo.Client) {
	shardBy(t, cl, "test.skey", "k")
	coll := cl.Database("test").Collection("skey")
	docs := make([]any, 0, 20)
	for i := int32(1); i <= 20; i++ {
		docs = append(docs, bson.D{{Key: "_id", Value: i}, {Key: "k", Value: i}})
	}
	if _, err := coll.InsertMany(ctxT(t), docs); err != nil {
		t.Fatal(err)
	}
	moveTo := keyOnOtherShard(t, 1)
	if r, err := coll.UpdateOne(ctxT(t), bson.D{{Key: "k", Value: int32(1)}}, bson.D{{Key: "$set", Value: bson.D{{Key: "k", Value: moveTo}}}}); err != nil || r.ModifiedCount != 1 {
		t.Fatalf("retryable updateOne moving the key: %+v, %v", r, err)
	}
	checkOneCopy(t, c, coll, 1, moveTo)
	stay := keyOnSameShard(t, 2)
	if r, err := coll.UpdateOne(ctxT(t), bson.D{{Key: "k", Value: int32(2)}}, bson.D{{Key: "$set", Value: bson.D{{Key: "k", Value: stay}}}}); err != nil || r.ModifiedCount != 1 {
		t.Fatalf("retryable updateOne keeping the chunk: %+v, %v", r, err)
	}
	checkOneCopy(t, c, coll, 2, stay)
	var after bson.M
	famTo := keyOnOtherShard(t, 3)
	err := coll.FindOneAndUpdate(ctxT(t), bson.D{{Key: "k", Value: int32(3)}}, bson.D{{Key: "$set", Value: bson.D{{Key: "k", Value: famTo}}}},
		options.FindOneAndUpdate().SetReturnDocument(options.After)).Decode(&after)
	if err != nil || after["k"] != famTo {
		t.Fatalf("findOneAndUpdate moving the key: %v, %v", after, err)
	}
	checkOneCopy(t, c, coll, 3, famTo)
	if r, err := coll.ReplaceOne(ctxT(t), bson.D{{Key: "k", Value: int32(4)}}, bson.D{{Key: "x", Value: 1}}); err != nil || r.ModifiedCount != 1 {
		t.Fatalf("replacement without the shard key: %+v, %v", r, err)
	}
	checkOneCopy(t, c, coll, 4, nil)
	upsertFrom := int32(7001)
	upsertTo := keyOnOtherShard(t, upsertFrom)
	r, err := coll.UpdateOne(ctxT(t), bson.D{{Key: "k", Value: upsertFrom}}, bson.D{{Key: "$set", Value: bson.D{{Key: "k", Value: upsertTo}}}, {Key: "$setOnInsert", Value: bson.D{{Key: "_id", Value: int32(500)}}}},
		options.UpdateOne().SetUpsert(true))
	if err != nil || r.UpsertedID != int32(500) {
		t.Fatalf("upsert setting the key elsewhere: %+v, %v", r, err)
	}
	checkOneCopy(t, c, coll, 500, upsertTo)
	checkShardKeyRefusals(t, c, coll)
}

// checkShardKeyRefusals: outside a retryable write any change of the key
// is 20, even within its chunk; a multi-update changing it is 72; neither
// writes anything.
func checkShardKeyRefusals(t *testing.T, c *routedCluster, coll *mongo.Collection) {
	t.Helper()
	plain := c.client(options.Client().SetRetryWrites(false)).Database("test").Collection("skey")
	for _, to := range []int32{keyOnOtherShard(t, 5), keyOnSameShard(t, 5)} {
		_, err := plain.UpdateOne(ctxT(t), bson.D{{Key: "k", Value: int32(5)}}, bson.D{{Key: "$set", Value: bson.D{{Key: "k", Value: to}}}})
		wantCode(t, err, 20, "Must run update to shard key field in a multi-statement transaction or with retryWrites: true.")
	}
	_, err := coll.UpdateMany(ctxT(t), bson.D{{Key: "k", Value: bson.D{{Key: "$in", Value: bson.A{int32(6), int32(7)}}}}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "k", Value: 1000}}}})
	wantCode(t, err, 72, "Multi-update operations are not allowed when updating the shard key field.")
	for _, k := range []int32{5, 6, 7} {
		n, err := coll.CountDocuments(ctxT(t), bson.D{{Key: "_id", Value: k}, {Key: "k", Value: k}})
		if err != nil || n != 1 {
			t.Fatalf("document %d after the refusals: %d, %v", k, n, err)
		}
	}
}

// checkOneCopy: document id has key k (nil: no key) through the router,
// and exactly one copy on the shards.
func checkOneCopy(t *testing.T, c *routedCluster, coll *mongo.Collection, id int32, k any) {
	t.Helper()
	var got bson.M
	if err := coll.FindOne(ctxT(t), bson.D{{Key: "_id", Value: id}}).Decode(&got); err != nil || got["k"] != k {
		t.Fatalf("document %d through the router: %v (%v), want k %v; on the shards %v", id, got, err, k, c.shardDocs(t, coll.Name(), bson.D{{Key: "_id", Value: id}}))
	}
	if n := total(c.onShards(t, "test", coll.Name(), bson.D{{Key: "_id", Value: id}})); n != 1 {
		t.Fatalf("document %d has %d copies on the shards", id, n)
	}
}

func (c *routedCluster) shardDocs(t *testing.T, coll string, filter bson.D) map[string][]bson.M {
	out := map[string][]bson.M{}
	for _, name := range shardNames() {
		cur, err := c.shardColl(name, "test", coll).Find(ctxT(t), filter)
		if err != nil {
			t.Fatal(err)
		}
		var docs []bson.M
		if err := cur.All(ctxT(t), &docs); err != nil {
			t.Fatal(err)
		}
		out[name] = docs
	}
	return out
}

// testDropClearsShards: a sharded collection dropped through the router
// (or its database) can be used again unsharded at once, through this
// router and on every shard; a drop made directly on one shard drops
// only that shard's documents and leaves the collection sharded, as
// mongod.
func testDropClearsShards(t *testing.T, c *routedCluster, cl *mongo.Client) {
	for _, viaDatabase := range []bool{false, true} {
		db := fmt.Sprintf("dropped%t", viaDatabase)
		runCmd(t, cl.Database("admin"), bson.D{{Key: "enableSharding", Value: db}})
		shardBy(t, cl, db+".c", "_id")
		coll := cl.Database(db).Collection("c")
		insertIDs(t, coll, 0, 40)
		if viaDatabase {
			if err := cl.Database(db).Drop(ctxT(t)); err != nil {
				t.Fatal(err)
			}
		} else if err := coll.Drop(ctxT(t)); err != nil {
			t.Fatal(err)
		}
		insertIDs(t, coll, 100, 110)
		n, err := coll.CountDocuments(ctxT(t), bson.D{})
		if err != nil || n != 10 {
			t.Fatalf("%s: unsharded again, %d documents (%v), want 10", db, n, err)
		}
		if counts := c.onShards(t, db, "c", bson.D{}); total(counts) != 10 {
			t.Fatalf("%s: the shards hold %v, want 10 in all", db, counts)
		}
	}
	shardBy(t, cl, "test.direct", "_id")
	coll := cl.Database("test").Collection("direct")
	insertIDs(t, coll, 0, 40)
	before := c.onShards(t, "test", "direct", bson.D{})
	if err := c.shardColl("shA", "test", "direct").Drop(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	n, err := coll.CountDocuments(ctxT(t), bson.D{})
	if err != nil || n != before["shB"] {
		t.Fatalf("after a drop on shA alone: %d documents through the router (%v), want shB's %d", n, err, before["shB"])
	}
	insertIDs(t, coll, 100, 140) // still sharded: spread over both again
	if after := c.onShards(t, "test", "direct", bson.D{{Key: "_id", Value: bson.D{{Key: "$gte", Value: 100}}}}); after["shA"] == 0 || after["shB"] == 0 {
		t.Fatalf("new documents after a direct drop: %v, want both shards", after)
	}
}

func insertIDs(t *testing.T, coll *mongo.Collection, from, to int) {
	t.Helper()
	docs := make([]any, 0, to-from)
	for i := from; i < to; i++ {
		docs = append(docs, bson.D{{Key: "_id", Value: int32(i)}})
	}
	if _, err := coll.InsertMany(ctxT(t), docs); err != nil {
		t.Fatal(err)
	}
}

// testShardingWithData: a collection with documents is sharded only over
// an index on the key (72 before), as 8.0 without the balancer: one chunk
// on its primary shard, every document still read through the router;
// each shard then has the key's index.
func testShardingWithData(t *testing.T, c *routedCluster, cl *mongo.Client) {
	coll := cl.Database("test").Collection("withdata")
	insertIDs(t, coll, 0, 30)
	admin := cl.Database("admin")
	shard := bson.D{{Key: "shardCollection", Value: "test.withdata"}, {Key: "key", Value: bson.D{{Key: "_id", Value: "hashed"}}}}
	wantCode(t, cmdErrOf(admin, shard), 72, "Please create an index that starts with the proposed shard key before sharding the collection")
	if _, err := coll.Indexes().CreateOne(ctxT(t), mongo.IndexModel{Keys: bson.D{{Key: "_id", Value: "hashed"}}}); err != nil {
		t.Fatal(err)
	}
	runCmd(t, admin, shard)
	chunks, err := cl.Database("config").Collection("chunks").CountDocuments(ctxT(t), bson.D{{Key: "uuid", Value: collectionUUID(t, cl, "test.withdata")}})
	if err != nil || chunks != 1 {
		t.Fatalf("chunks of a collection sharded with data: %d, %v; want 1", chunks, err)
	}
	n, err := coll.CountDocuments(ctxT(t), bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: bson.A{int32(3), int32(17), int32(29)}}}}})
	if err != nil || n != 3 {
		t.Fatalf("targeted reads after sharding: %d, %v", n, err)
	}
	for _, name := range shardNames() {
		cur, err := c.shardColl(name, "test", "withdata").Indexes().ListSpecifications(ctxT(t))
		if err != nil || len(cur) != 2 || cur[1].Name != "_id_hashed" {
			t.Fatalf("indexes on %s: %v, %v", name, cur, err)
		}
	}
}

func collectionUUID(t *testing.T, cl *mongo.Client, ns string) any {
	t.Helper()
	var d bson.M
	if err := cl.Database("config").Collection("collections").FindOne(ctxT(t), bson.D{{Key: "_id", Value: ns}}).Decode(&d); err != nil {
		t.Fatal(err)
	}
	return d["uuid"]
}
