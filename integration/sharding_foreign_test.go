package integration

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/mayflydb/mayfly/internal/bsonutil"
)

// TestShardedForeignStages: through the router, $lookup, $unionWith,
// $out and $merge (also inside $facet), and renameCollection, run when
// every collection they name is unsharded on the database's primary
// shard, with the results a shard gives directly; they are refused (20)
// when the source or a named collection is sharded.
func TestShardedForeignStages(t *testing.T) {
	c := startRoutedCluster(t)
	cl := c.client()
	addShardsAndShard(t, c, cl, "fs", "sharded")
	db := cl.Database("fs")
	for _, coll := range []string{"plain", "other", "sharded"} {
		docs := []any{bson.D{{Key: "_id", Value: 1}, {Key: "k", Value: 1}}, bson.D{{Key: "_id", Value: 2}, {Key: "k", Value: 2}}}
		if _, err := db.Collection(coll).InsertMany(ctxT(t), docs); err != nil {
			t.Fatal(err)
		}
	}
	lookup := func(from string) bson.D {
		return bson.D{{Key: "$lookup", Value: bson.D{{Key: "from", Value: from}, {Key: "localField", Value: "k"},
			{Key: "foreignField", Value: "k"}, {Key: "as", Value: "joined"}}}}
	}
	reads := map[string]bson.A{
		"$lookup":    {lookup("other")},
		"$unionWith": {bson.D{{Key: "$unionWith", Value: "other"}}},
		"$facet":     {bson.D{{Key: "$facet", Value: bson.D{{Key: "a", Value: bson.A{lookup("other")}}}}}},
	}
	primary := c.shardColl(primaryShard(t, cl, "fs"), "fs", "plain")
	for stage, pipeline := range reads {
		got := aggregateEach(t, db.Collection("plain"), append(pipeline, bson.D{{Key: "$sort", Value: bson.D{{Key: "_id", Value: 1}}}}))
		want := aggregateEach(t, primary, append(pipeline, bson.D{{Key: "$sort", Value: bson.D{{Key: "_id", Value: 1}}}}))
		if len(got) == 0 || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s through the router: %v, on the primary shard %v", stage, got, want)
		}
		if err := aggregateErr(db.Collection("sharded"), pipeline); !isCode(err, 20) {
			t.Errorf("%s on a sharded collection: %v, want 20", stage, err)
		}
	}
	if err := aggregateErr(db.Collection("plain"), bson.A{lookup("sharded")}); !isCode(err, 20) {
		t.Errorf("$lookup from a sharded collection: %v, want 20", err)
	}
	writes := map[string]bson.D{
		"$out":   {{Key: "$out", Value: "outTarget"}},
		"$merge": {{Key: "$merge", Value: bson.D{{Key: "into", Value: "mergeTarget"}}}},
	}
	for stage, s := range writes {
		if err := aggregateErr(db.Collection("plain"), bson.A{s}); err != nil {
			t.Fatalf("%s: %v", stage, err)
		}
	}
	for _, target := range []string{"outTarget", "mergeTarget"} {
		if n, err := db.Collection(target).CountDocuments(ctxT(t), bson.D{}); err != nil || n != 2 {
			t.Errorf("%s through the router: %d documents, %v", target, n, err)
		}
	}
	if err := aggregateErr(db.Collection("plain"), bson.A{bson.D{{Key: "$out", Value: "sharded"}}}); !isCode(err, 20) {
		t.Errorf("$out into a sharded collection: %v, want 20", err)
	}
	rename := func(from, to string) error {
		return cl.Database("admin").RunCommand(ctxT(t), bson.D{{Key: "renameCollection", Value: "fs." + from}, {Key: "to", Value: "fs." + to}}).Err()
	}
	if err := rename("outTarget", "renamed"); err != nil {
		t.Fatalf("renameCollection through the router: %v", err)
	}
	if n, err := db.Collection("renamed").CountDocuments(ctxT(t), bson.D{}); err != nil || n != 2 {
		t.Errorf("the renamed collection: %d documents, %v", n, err)
	}
	if err := rename("sharded", "gone"); !isCode(err, 20) {
		t.Errorf("renameCollection of a sharded collection: %v, want 20", err)
	}
	if err := rename("renamed", "sharded"); !isCode(err, 20) {
		t.Errorf("renameCollection onto a sharded collection: %v, want 20", err)
	}
}

func aggregateErr(coll *mongo.Collection, pipeline bson.A) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cur, err := coll.Aggregate(ctx, pipeline)
	if err != nil {
		return err
	}
	return cur.Close(ctx)
}

func isCode(err error, code int) bool {
	var se mongo.ServerError
	return errors.As(err, &se) && se.HasErrorCode(code)
}

// primaryShard is the id of a database's primary shard.
func primaryShard(t *testing.T, cl *mongo.Client, db string) string {
	t.Helper()
	var d struct {
		Primary string `bson:"primary"`
	}
	if err := cl.Database("config").Collection("databases").FindOne(ctxT(t), bson.D{{Key: "_id", Value: db}}).Decode(&d); err != nil {
		t.Fatal(err)
	}
	return d.Primary
}

// TestShardedStats: dbStats through the router holds each shard's reply
// under raw and, as mongos, the sums of the shards' own counts and sizes;
// the router's serverStatus counts what it answered.
func TestShardedStats(t *testing.T) {
	c := startRoutedCluster(t)
	cl := c.client()
	addShardsAndShard(t, c, cl, "st", "sharded")
	db := cl.Database("st")
	for _, coll := range []string{"sharded", "plain"} {
		docs := make([]any, 50)
		for i := range docs {
			docs[i] = bson.D{{Key: "_id", Value: i}, {Key: "pad", Value: fmt.Sprintf("%0100d", i)}}
		}
		if _, err := db.Collection(coll).InsertMany(ctxT(t), docs); err != nil {
			t.Fatal(err)
		}
	}
	routed := runCmd(t, db, bson.D{{Key: "dbStats", Value: 1}})
	want := map[string]float64{}
	for _, name := range shardNames() {
		direct := runCmd(t, c.shards[name].direct(0).Database("st"), bson.D{{Key: "dbStats", Value: 1}})
		for _, f := range []string{"collections", "objects", "indexes", "dataSize", "indexSize"} {
			want[f] += bsonutil.ToFloat(field(t, direct, f))
		}
	}
	for f, w := range want {
		if got := bsonutil.ToFloat(field(t, routed, f)); got != w {
			t.Errorf("dbStats %s through the router: %v, the shards' sum %v", f, got, w)
		}
	}
	if want["objects"] != 100 || len(bsonutil.ToD(field(t, routed, "raw"))) != 2 {
		t.Errorf("dbStats through the router: %v", routed)
	}
	checkRouterStatus(t, cl, db)
}

// checkRouterStatus: the router's serverStatus is its own process's, and
// its opcounters move with the commands it answers (100 documents were
// inserted through it).
func checkRouterStatus(t *testing.T, cl *mongo.Client, db *mongo.Database) {
	t.Helper()
	admin := cl.Database("admin")
	before := runCmd(t, admin, bson.D{{Key: "serverStatus", Value: 1}})
	if field(t, before, "process") != "mongos" || bsonutil.ToFloat(bsonutil.ToD(field(t, before, "connections"))[0].Value) < 1 {
		t.Fatalf("the router's serverStatus: %v", before)
	}
	counters := func(d bson.D) bson.D { return bsonutil.ToD(field(t, d, "opcounters")) }
	if n := bsonutil.ToFloat(field(t, counters(before), "insert")); n != 100 {
		t.Errorf("opcounters.insert %v after 100 documents inserted through the router", n)
	}
	if _, err := db.Collection("plain").Find(ctxT(t), bson.D{}); err != nil {
		t.Fatal(err)
	}
	if err := db.RunCommand(ctxT(t), bson.D{{Key: "find", Value: 1}}).Err(); err == nil {
		t.Fatal("a find of collection 1 succeeded")
	}
	status := runCmd(t, admin, bson.D{{Key: "serverStatus", Value: 1}})
	after := counters(status)
	if q := bsonutil.ToFloat(field(t, after, "query")) - bsonutil.ToFloat(field(t, counters(before), "query")); q != 2 {
		t.Errorf("two finds through the router, one refused, counted %v queries (mongod counts a query as it starts)", q)
	}
	checkRouterLatencies(t, before, status)
}

// checkRouterLatencies: between two of the router's serverStatus, the
// one good find and the one refused are in opLatencies.reads and
// metrics.commands.find, and the refusal in asserts.user.
func checkRouterLatencies(t *testing.T, before, after bson.D) {
	t.Helper()
	at := func(d bson.D, path ...string) float64 {
		for _, p := range path[:len(path)-1] {
			d = bsonutil.ToD(field(t, d, p))
		}
		return bsonutil.ToFloat(field(t, d, path[len(path)-1]))
	}
	for _, c := range []struct {
		path []string
		want float64
	}{
		{[]string{"opLatencies", "reads", "ops"}, 2},
		{[]string{"metrics", "commands", "find", "total"}, 2},
		{[]string{"metrics", "commands", "find", "failed"}, 1},
		{[]string{"asserts", "user"}, 1},
	} {
		if got := at(after, c.path...) - atOr(t, before, c.path); got != c.want {
			t.Errorf("the router's %v moved by %v over two finds, one refused; want %v", c.path, got, c.want)
		}
	}
	if at(after, "opLatencies", "reads", "latency") <= at(before, "opLatencies", "reads", "latency") {
		t.Errorf("opLatencies.reads.latency did not grow: %v", field(t, after, "opLatencies"))
	}
}

// atOr reads a number at path, 0 where the path ends early.
func atOr(t *testing.T, d bson.D, path []string) float64 {
	t.Helper()
	for i, p := range path {
		v, ok := bsonutil.Field(d, p)
		if !ok {
			return 0
		}
		if i == len(path)-1 {
			return bsonutil.ToFloat(v)
		}
		d = bsonutil.ToD(v)
	}
	return 0
}
