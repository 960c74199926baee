package integration

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// bulkCounts are a client bulkWrite's counters.
type bulkCounts struct{ inserted, matched, modified, upserted, deleted int64 }

func (a bulkCounts) plus(b bulkCounts) bulkCounts {
	return bulkCounts{a.inserted + b.inserted, a.matched + b.matched, a.modified + b.modified, a.upserted + b.upserted, a.deleted + b.deleted}
}

func countsOf(r *mongo.ClientBulkWriteResult) bulkCounts {
	if r == nil {
		return bulkCounts{}
	}
	return bulkCounts{r.InsertedCount, r.MatchedCount, r.ModifiedCount, r.UpsertedCount, r.DeletedCount}
}

// groupState is what a group of documents holds after a write: how many
// documents, and how many of them have v: 1.
type groupState struct{ docs, changed int64 }

// bulkOpRow is one kind of client bulk write model, on group g of a
// collection whose two documents ids sit one on each shard.
type bulkOpRow struct {
	name   string
	plain  bool // on the unsharded collection (its database's primary shard)
	model  func(g int32, ids [2]int32) mongo.ClientWriteModel
	counts bulkCounts
	after  groupState
}

// bulkOpRows is every model of the driver's client bulk write, on the
// sharded collection by shard key and not, and on an unsharded one.
func bulkOpRows() []bulkOpRow {
	setV := bson.D{{Key: "$set", Value: bson.D{{Key: "v", Value: int32(1)}}}}
	byID := func(id int32) bson.D { return bson.D{{Key: "_id", Value: id}} }
	byGroup := func(g int32) bson.D { return bson.D{{Key: "g", Value: g}} }
	upsert := true
	insert := func(g int32, _ [2]int32) mongo.ClientWriteModel {
		return &mongo.ClientInsertOneModel{Document: bson.D{{Key: "_id", Value: 30_000 + g}, {Key: "g", Value: g}, {Key: "v", Value: int32(1)}}}
	}
	deleteMany := func(g int32, _ [2]int32) mongo.ClientWriteModel {
		return &mongo.ClientDeleteManyModel{Filter: byGroup(g)}
	}
	return []bulkOpRow{
		{"insertOne", false, insert, bulkCounts{inserted: 1}, groupState{3, 1}},
		{"updateOne by shard key", false, func(_ int32, ids [2]int32) mongo.ClientWriteModel {
			return &mongo.ClientUpdateOneModel{Filter: byID(ids[0]), Update: setV}
		}, bulkCounts{matched: 1, modified: 1}, groupState{2, 1}},
		{"updateOne without the shard key", false, func(g int32, _ [2]int32) mongo.ClientWriteModel {
			return &mongo.ClientUpdateOneModel{Filter: byGroup(g), Update: setV}
		}, bulkCounts{matched: 1, modified: 1}, groupState{2, 1}},
		{"updateOne upsert", false, func(g int32, _ [2]int32) mongo.ClientWriteModel {
			return &mongo.ClientUpdateOneModel{Filter: byID(40_000 + g), Update: bson.D{{Key: "$set", Value: bson.D{{Key: "g", Value: g}, {Key: "v", Value: int32(1)}}}}, Upsert: &upsert}
		}, bulkCounts{upserted: 1}, groupState{3, 1}},
		{"updateMany", false, func(g int32, _ [2]int32) mongo.ClientWriteModel {
			return &mongo.ClientUpdateManyModel{Filter: byGroup(g), Update: setV}
		}, bulkCounts{matched: 2, modified: 2}, groupState{2, 2}},
		{"replaceOne", false, func(g int32, ids [2]int32) mongo.ClientWriteModel {
			return &mongo.ClientReplaceOneModel{Filter: byID(ids[1]), Replacement: bson.D{{Key: "g", Value: g}, {Key: "v", Value: int32(1)}}}
		}, bulkCounts{matched: 1, modified: 1}, groupState{2, 1}},
		{"deleteOne", false, func(_ int32, ids [2]int32) mongo.ClientWriteModel {
			return &mongo.ClientDeleteOneModel{Filter: byID(ids[0])}
		}, bulkCounts{deleted: 1}, groupState{1, 0}},
		{"deleteMany", false, deleteMany, bulkCounts{deleted: 2}, groupState{0, 0}},
		{"insertOne (unsharded)", true, insert, bulkCounts{inserted: 1}, groupState{3, 1}},
		{"deleteMany (unsharded)", true, deleteMany, bulkCounts{deleted: 2}, groupState{0, 0}},
	}
}

// TestBulkOpRowsCoverEveryModel: the table holds every client write
// model of the driver, so a model added there needs a row here.
func TestBulkOpRowsCoverEveryModel(t *testing.T) {
	models := []mongo.ClientWriteModel{&mongo.ClientInsertOneModel{}, &mongo.ClientUpdateOneModel{}, &mongo.ClientUpdateManyModel{},
		&mongo.ClientReplaceOneModel{}, &mongo.ClientDeleteOneModel{}, &mongo.ClientDeleteManyModel{}}
	covered := map[string]bool{}
	for _, row := range bulkOpRows() {
		covered[fmt.Sprintf("%T", row.model(0, [2]int32{}))] = true
	}
	for _, m := range models {
		if name := fmt.Sprintf("%T", m); !covered[name] {
			t.Errorf("no row sends %s", name)
		}
	}
	if len(covered) != len(models) {
		t.Errorf("rows send %v, the driver's models are %d", slices.Sorted(maps.Keys(covered)), len(models))
	}
}

// TestShardedBulkWrite: the client bulkWrite through `mayfly route` on a
// config set and two shards, each a real process.
func TestShardedBulkWrite(t *testing.T) {
	c := startRoutedCluster(t)
	cl := c.client()
	addShardsAndShard(t, c, cl, "bw", "ordered", "unordered", "retry")
	runCmd(t, cl.Database("admin"), bson.D{{Key: "balancerStop", Value: 1}})
	for _, ordered := range []bool{true, false} {
		t.Run(fmt.Sprintf("ordered=%v", ordered), func(t *testing.T) { testBulkOpKinds(t, c, cl, ordered) })
	}
	t.Run("Retry", func(t *testing.T) { testBulkRetry(t, c, cl) })
	t.Run("ShardKeyMove", func(t *testing.T) { testBulkShardKeyMove(t, c, cl) })
	t.Run("Cursor", func(t *testing.T) { testBulkCursor(t, c) })
	t.Run("Refusals", func(t *testing.T) { testBulkRefusals(t, cl) })
	t.Run("OpErrors", func(t *testing.T) { testBulkOpErrors(t, c) })
}

// testBulkOpKinds sends every row, each on its own group, with a
// duplicate _id in the middle: ordered, the rows before it are applied
// and none after; unordered, all of them. Each group is then read on the
// shards directly.
func testBulkOpKinds(t *testing.T, c *routedCluster, cl *mongo.Client, ordered bool) {
	rows := bulkOpRows()
	collName := map[bool]string{true: "ordered", false: "unordered"}[ordered]
	sharded, plain := cl.Database("bw").Collection(collName), cl.Database("bw").Collection(collName+"_plain")
	docs := spreadGroups(t, len(rows), 2)
	for _, coll := range []*mongo.Collection{sharded, plain} {
		if _, err := coll.InsertMany(ctxT(t), docs); err != nil {
			t.Fatal(err)
		}
	}
	ids := groupIDs(docs)
	checkGroupsSpread(t, c, collName, ids)
	mid := len(rows) / 2
	var writes []mongo.ClientBulkWrite
	for g, row := range rows {
		if g == mid {
			dup := &mongo.ClientInsertOneModel{Document: bson.D{{Key: "_id", Value: ids[0][0]}}}
			writes = append(writes, mongo.ClientBulkWrite{Database: "bw", Collection: collName, Model: dup})
		}
		coll := collName
		if row.plain {
			coll += "_plain"
		}
		writes = append(writes, mongo.ClientBulkWrite{Database: "bw", Collection: coll, Model: row.model(int32(g), ids[g])})
	}
	res, err := cl.BulkWrite(ctxT(t), writes, options.ClientBulkWrite().SetOrdered(ordered).SetVerboseResults(true))
	var be mongo.ClientBulkWriteException
	if !errorAs(err, &be) || len(be.WriteErrors) != 1 || be.WriteErrors[mid].Code != 11000 {
		t.Fatalf("want one duplicate key error at op %d: %v (result %+v)", mid, err, res)
	}
	var want bulkCounts
	for g, row := range rows {
		applied := !ordered || g < mid
		state := groupState{2, 0}
		if applied {
			state, want = row.after, want.plus(row.counts)
		}
		if got := readGroup(t, c, collName, row.plain, int32(g)); got != state {
			t.Errorf("%s (applied %v): group holds %+v, want %+v", row.name, applied, got, state)
		}
	}
	if got := countsOf(be.PartialResult); got != want {
		t.Errorf("counters %+v, want %+v", got, want)
	}
}

// groupIDs are each group's two _ids, in the order spreadGroups made them.
func groupIDs(docs []any) map[int][2]int32 {
	out := map[int][2]int32{}
	seen := map[int]int{}
	for _, raw := range docs {
		d := raw.(bson.D)
		g, id := int(d[1].Value.(int32)), d[0].Value.(int32)
		pair := out[g]
		pair[seen[g]] = id
		seen[g]++
		out[g] = pair
	}
	return out
}

// checkGroupsSpread: each group has one document on each shard, so that
// a row by shard key writes one shard and the others write both.
func checkGroupsSpread(t *testing.T, c *routedCluster, coll string, ids map[int][2]int32) {
	t.Helper()
	for g := range ids {
		if spread := c.onShards(t, "bw", coll, bson.D{{Key: "g", Value: int32(g)}}); spread["shA"] != 1 || spread["shB"] != 1 {
			t.Fatalf("group %d is not one document on each shard: %v", g, spread)
		}
	}
}

// readGroup reads group g on every shard directly: the documents, and
// those with v: 1.
func readGroup(t *testing.T, c *routedCluster, coll string, plain bool, g int32) groupState {
	t.Helper()
	if plain {
		coll += "_plain"
	}
	docs := total(c.onShards(t, "bw", coll, bson.D{{Key: "g", Value: g}}))
	changed := total(c.onShards(t, "bw", coll, bson.D{{Key: "g", Value: g}, {Key: "v", Value: int32(1)}}))
	return groupState{docs, changed}
}

// testBulkRetry sends one retryable bulkWrite twice with the same lsid
// and txnNumber, raw: inserts on both shards, an update by key, a
// two-phase updateOne and a deleteOne. The second answer is the first's,
// and every write is applied once.
func testBulkRetry(t *testing.T, c *routedCluster, cl *mongo.Client) {
	coll := cl.Database("bw").Collection("retry")
	docs := spreadGroups(t, 2, 2)
	if _, err := coll.InsertMany(ctxT(t), docs); err != nil {
		t.Fatal(err)
	}
	ids := groupIDs(docs)
	inc := bson.D{{Key: "$inc", Value: bson.D{{Key: "v", Value: int32(1)}}}}
	ops := bson.A{
		bson.D{{Key: "insert", Value: int32(0)}, {Key: "document", Value: bson.D{{Key: "_id", Value: ids[0][0] + 50_000}, {Key: "g", Value: int32(7)}}}},
		bson.D{{Key: "insert", Value: int32(0)}, {Key: "document", Value: bson.D{{Key: "_id", Value: ids[0][1] + 50_000}, {Key: "g", Value: int32(7)}}}},
		bson.D{{Key: "update", Value: int32(0)}, {Key: "filter", Value: bson.D{{Key: "_id", Value: ids[0][0]}}}, {Key: "updateMods", Value: inc}},
		bson.D{{Key: "update", Value: int32(0)}, {Key: "filter", Value: bson.D{{Key: "g", Value: int32(1)}}}, {Key: "updateMods", Value: inc}},
		bson.D{{Key: "delete", Value: int32(0)}, {Key: "filter", Value: bson.D{{Key: "_id", Value: ids[0][1]}}}},
	}
	lsid := bson.D{{Key: "id", Value: bson.Binary{Subtype: 4, Data: []byte("bulkwrite-retry!")}}}
	cmd := bson.D{{Key: "bulkWrite", Value: int32(1)}, {Key: "ops", Value: ops}, {Key: "nsInfo", Value: bson.A{bson.D{{Key: "ns", Value: "bw.retry"}}}},
		{Key: "ordered", Value: false}, {Key: "lsid", Value: lsid}, {Key: "txnNumber", Value: int64(1)}, {Key: "$db", Value: "admin"}}
	var replies []string
	for try := 0; try < 2; try++ {
		r := rawCall(t, c.router, cmd)
		if codeOf(r) != 0 || field(t, r, "nErrors") != int32(0) || field(t, r, "nInserted") != int32(2) ||
			field(t, r, "nModified") != int32(2) || field(t, r, "nDeleted") != int32(1) {
			t.Fatalf("try %d: %v", try, r)
		}
		replies = append(replies, fmt.Sprint(field(t, field(t, r, "cursor").(bson.D), "firstBatch")))
	}
	if replies[0] != replies[1] {
		t.Errorf("the retry answered %s, the first try %s", replies[1], replies[0])
	}
	for _, check := range []struct {
		filter bson.D
		want   int64
	}{
		{bson.D{{Key: "g", Value: int32(7)}}, 2},                                  // each insert once
		{bson.D{{Key: "_id", Value: ids[0][0]}, {Key: "v", Value: int32(1)}}, 1},  // the update by key once
		{bson.D{{Key: "g", Value: int32(1)}, {Key: "v", Value: int32(1)}}, 1},     // the two-phase update once
		{bson.D{{Key: "_id", Value: ids[0][1]}}, 0},                               // deleted
		{bson.D{{Key: "v", Value: bson.D{{Key: "$gt", Value: int32(1)}}}}, 0},     // nothing twice
		{bson.D{{Key: "g", Value: bson.D{{Key: "$in", Value: bson.A{0, 1}}}}}, 3}, // 4 seeded, 1 deleted
	} {
		if n := total(c.onShards(t, "bw", "retry", check.filter)); n != check.want {
			t.Errorf("%v: %d documents on the shards, want %d", check.filter, n, check.want)
		}
	}
}

// testBulkShardKeyMove: a retryable updateOne that sets the shard key to
// a value another shard owns moves the document there (the shard answers
// WouldChangeOwningShard, the router moves it as for an update command).
func testBulkShardKeyMove(t *testing.T, c *routedCluster, cl *mongo.Client) {
	shardBy(t, cl, "bw.moves", "k")
	coll := cl.Database("bw").Collection("moves")
	if _, err := coll.InsertOne(ctxT(t), bson.D{{Key: "_id", Value: int32(1)}, {Key: "k", Value: int32(1)}}); err != nil {
		t.Fatal(err)
	}
	to := keyOnOtherShard(t, 1)
	before := c.onShards(t, "bw", "moves", bson.D{{Key: "_id", Value: int32(1)}})
	move := &mongo.ClientUpdateOneModel{Filter: bson.D{{Key: "k", Value: int32(1)}}, Update: bson.D{{Key: "$set", Value: bson.D{{Key: "k", Value: to}}}}}
	res, err := cl.BulkWrite(ctxT(t), []mongo.ClientBulkWrite{{Database: "bw", Collection: "moves", Model: move}})
	if err != nil || res.MatchedCount != 1 || res.ModifiedCount != 1 {
		t.Fatalf("updateOne moving the key: %+v, %v", res, err)
	}
	after := c.onShards(t, "bw", "moves", bson.D{{Key: "_id", Value: int32(1)}, {Key: "k", Value: to}})
	if total(after) != 1 || total(c.onShards(t, "bw", "moves", bson.D{})) != 1 || maps.Equal(before, after) {
		t.Fatalf("document on the shards before %v, after %v", before, after)
	}
}

// testBulkCursor: results beyond cursor.batchSize wait in a router
// cursor that getMore reads on, in op order.
func testBulkCursor(t *testing.T, c *routedCluster) {
	var ops bson.A
	for i := range 5 {
		ops = append(ops, bson.D{{Key: "insert", Value: int32(0)}, {Key: "document", Value: bson.D{{Key: "_id", Value: int32(60_000 + i)}}}})
	}
	cmd := bson.D{{Key: "bulkWrite", Value: int32(1)}, {Key: "ops", Value: ops}, {Key: "nsInfo", Value: bson.A{bson.D{{Key: "ns", Value: "bw.cursor"}}}},
		{Key: "cursor", Value: bson.D{{Key: "batchSize", Value: int32(2)}}}, {Key: "$db", Value: "admin"}}
	r := rawCall(t, c.router, cmd)
	cur := field(t, r, "cursor").(bson.D)
	id, _ := field(t, cur, "id").(int64)
	if first := field(t, cur, "firstBatch").(bson.A); len(first) != 2 || id == 0 || field(t, cur, "ns") != "admin.$cmd.bulkWrite" || field(t, r, "nInserted") != int32(5) {
		t.Fatalf("first batch: %v", r)
	}
	more := rawCall(t, c.router, bson.D{{Key: "getMore", Value: id}, {Key: "collection", Value: "$cmd.bulkWrite"}, {Key: "$db", Value: "admin"}})
	next := field(t, field(t, more, "cursor").(bson.D), "nextBatch").(bson.A)
	if len(next) != 3 || field(t, next[0].(bson.D), "idx") != int32(2) || field(t, field(t, more, "cursor").(bson.D), "id") != int64(0) {
		t.Fatalf("getMore: %v", more)
	}
}

// testBulkRefusals: bulkWrite runs against admin only (13), and not in a
// transaction, which the router does not route (263).
func testBulkRefusals(t *testing.T, cl *mongo.Client) {
	ops := bson.A{bson.D{{Key: "insert", Value: int32(0)}, {Key: "document", Value: bson.D{}}}}
	cmd := bson.D{{Key: "bulkWrite", Value: int32(1)}, {Key: "ops", Value: ops}, {Key: "nsInfo", Value: bson.A{bson.D{{Key: "ns", Value: "bw.refused"}}}}}
	if ce := cmdErr(t, cl.Database("bw"), cmd); ce.Code != 13 {
		t.Errorf("bulkWrite on bw: %v, want 13", ce)
	}
	sess, err := cl.StartSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.EndSession(ctxT(t))
	_, err = sess.WithTransaction(ctxT(t), func(ctx context.Context) (any, error) {
		return cl.BulkWrite(ctx, []mongo.ClientBulkWrite{{Database: "bw", Collection: "refused", Model: &mongo.ClientInsertOneModel{Document: bson.D{}}}})
	})
	var se mongo.ServerError
	if !errorAs(err, &se) || !se.HasErrorCode(263) {
		t.Errorf("bulkWrite in a transaction: %v, want 263", err)
	}
}

// testBulkOpErrors: an op the router cannot target fails as it fails on
// a mongod (a shard sent the same bulkWrite directly): the same code and
// message in its result item.
func testBulkOpErrors(t *testing.T, c *routedCluster) {
	for _, op := range []bson.D{
		{},
		{{Key: "upsert", Value: int32(0)}, {Key: "document", Value: bson.D{}}},
		{{Key: "insert", Value: int32(5)}, {Key: "document", Value: bson.D{}}},
		{{Key: "insert", Value: "0"}, {Key: "document", Value: bson.D{}}},
		{{Key: "insert", Value: int32(0)}},
	} {
		cmd := bson.D{{Key: "bulkWrite", Value: int32(1)}, {Key: "ops", Value: bson.A{op}},
			{Key: "nsInfo", Value: bson.A{bson.D{{Key: "ns", Value: "bw.operrors"}}}}, {Key: "$db", Value: "admin"}}
		routed, direct := firstItem(t, rawCall(t, c.router, cmd)), firstItem(t, rawCall(t, c.shards["shA"].addrs[0], cmd))
		for _, key := range []string{"ok", "code", "errmsg"} {
			if fmt.Sprint(field(t, routed, key)) != fmt.Sprint(field(t, direct, key)) {
				t.Errorf("op %v: through the router %v, on a mongod %v", op, routed, direct)
				break
			}
		}
	}
}

func firstItem(t *testing.T, reply bson.D) bson.D {
	t.Helper()
	batch, ok := field(t, field(t, reply, "cursor").(bson.D), "firstBatch").(bson.A)
	if !ok || len(batch) != 1 {
		t.Fatalf("reply %v", reply)
	}
	return batch[0].(bson.D)
}
