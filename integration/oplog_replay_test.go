package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/mayflydb/mayfly/internal/app"
)

// TestOplogReplaysOnAnotherServer: what a replica set shows as its oplog
// (local.oplog.rs) replays, one entry per applyOps as mongorestore
// --oplogReplay sends them, onto an empty standalone server into the same
// data, dbHash for dbHash; replaying the documents' entries again, as a
// restore over a dump that already holds some of them does, changes
// nothing.
func TestOplogReplaysOnAnotherServer(t *testing.T) {
	rs := startReplSet(t, 1)
	src := rs.client()
	defer src.Disconnect(context.Background())
	ctx := ctxT(t)
	shop := src.Database("shop")
	writeReplayWorkload(ctx, t, shop)

	entries := readOplog(ctx, t, src)
	dst := startServer(t, app.Config{})
	dc, err := mongo.Connect(options.Client().ApplyURI(dst.uri))
	if err != nil {
		t.Fatal(err)
	}
	defer dc.Disconnect(context.Background())
	for round, replay := range [][]bson.D{entries, onNamespace(entries, "shop.carts")} {
		for _, e := range replay {
			var res bson.D
			if err := dc.Database("admin").RunCommand(ctx, bson.D{{Key: "applyOps", Value: bson.A{e}}}).Decode(&res); err != nil {
				t.Fatalf("round %d: applyOps of %v: %v", round, e, err)
			}
		}
		if want, got := sameHashSoon(ctx, t, shop, dc.Database("shop")); want != got {
			t.Fatalf("round %d: after %d entries the replayed database differs: source %s, replay %s", round, len(replay), want, got)
		}
	}
	if want, got := indexSpecs(ctx, t, shop.Collection("carts")), indexSpecs(ctx, t, dc.Database("shop").Collection("carts")); want != got {
		t.Fatalf("replayed indexes differ:\n source %s\n replay %s", want, got)
	}
	n, err := dc.Database("shop").Collection("carts").CountDocuments(ctx, bson.D{})
	if err != nil || n != 40 {
		t.Fatalf("replayed carts: %d, %v; want the 40 not deleted", n, err)
	}
	t.Logf("%d oplog entries replayed, those of shop.carts twice; dbHash %v", len(entries), dbHash(ctx, t, shop)["md5"])
}

// onNamespace keeps the entries whose operations are all on ns.
func onNamespace(entries []bson.D, ns string) []bson.D {
	var out []bson.D
	for _, e := range entries {
		if allOn(e, ns) {
			out = append(out, e)
		}
	}
	return out
}

func allOn(op bson.D, ns string) bool {
	m := map[string]any{}
	for _, e := range op {
		m[e.Key] = e.Value
	}
	if o, ok := m["o"].(bson.D); ok && m["op"] == "c" && len(o) > 0 && o[0].Key == "applyOps" {
		inner, _ := o[0].Value.(bson.A)
		for _, v := range inner {
			if d, ok := v.(bson.D); !ok || !allOn(d, ns) {
				return false
			}
		}
		return len(inner) > 0
	}
	return m["ns"] == ns
}

// writeReplayWorkload makes every kind of entry the oplog shows: inserts
// one by one and in batches, updates by operators of every shape, a
// replacement, deletes, TTL deletions, index builds, a collMod, a rename
// and a drop.
func writeReplayWorkload(ctx context.Context, t *testing.T, db *mongo.Database) {
	t.Helper()
	carts := db.Collection("carts")
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	_, err := carts.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "at", Value: 1}},
		Options: options.Index().SetExpireAfterSeconds(3600)})
	must("TTL index", err)
	now := time.Now()
	var docs []any
	for i := range 50 {
		docs = append(docs, bson.D{{Key: "_id", Value: int32(i)}, {Key: "at", Value: now},
			{Key: "items", Value: bson.A{"a", "b", bson.D{{Key: "sku", Value: "c"}, {Key: "n", Value: int32(i)}}}},
			{Key: "sub", Value: bson.D{{Key: "x", Value: int32(1)}, {Key: "deep", Value: bson.D{{Key: "y", Value: 2.5}}}}}})
	}
	_, err = carts.InsertMany(ctx, docs)
	must("insertMany", err)
	updates := []bson.D{
		{{Key: "$set", Value: bson.D{{Key: "sub.deep.z", Value: true}, {Key: "items.1", Value: "B"}, {Key: "sub.7", Value: "seven"}}}},
		{{Key: "$unset", Value: bson.D{{Key: "sub.x", Value: ""}}}},
		{{Key: "$push", Value: bson.D{{Key: "items", Value: "d"}}}},
		{{Key: "$pop", Value: bson.D{{Key: "items", Value: 1}}}, {Key: "$inc", Value: bson.D{{Key: "sub.deep.y", Value: 1}}}},
		{{Key: "$inc", Value: bson.D{{Key: "items.2.n", Value: 5}}}, {Key: "$currentDate", Value: bson.D{{Key: "seen", Value: true}}}},
		{{Key: "$set", Value: bson.D{{Key: "items", Value: bson.A{"z"}}}}},
	}
	for i, u := range updates {
		_, err := carts.UpdateOne(ctx, bson.D{{Key: "_id", Value: int32(i)}}, u)
		must("update", err)
	}
	_, err = carts.UpdateMany(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$gte", Value: 40}}}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "visits", Value: 1}}}})
	must("updateMany", err)
	_, err = carts.ReplaceOne(ctx, bson.D{{Key: "_id", Value: int32(5)}}, bson.D{{Key: "at", Value: now}, {Key: "replaced", Value: true}})
	must("replace", err)
	_, err = carts.DeleteMany(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$gte", Value: 45}}}})
	must("deleteMany", err)
	// Five expire at once: the set's monitor deletes them.
	_, err = carts.UpdateMany(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$gte", Value: 40}}}}, bson.D{{Key: "$set", Value: bson.D{{Key: "at", Value: now.Add(-2 * time.Hour)}}}})
	must("expire", err)
	waitCount(ctx, t, carts, 40)
	_, err = carts.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "items.sku", Value: 1}}, Options: options.Index().SetSparse(true)})
	must("index", err)
	must("collMod", db.RunCommand(ctx, bson.D{{Key: "collMod", Value: "carts"},
		{Key: "index", Value: bson.D{{Key: "name", Value: "at_1"}, {Key: "expireAfterSeconds", Value: 7200}}}}).Err())
	_, err = db.Collection("drafts").InsertOne(ctx, bson.D{{Key: "_id", Value: "d1"}, {Key: "text", Value: "hi"}})
	must("drafts", err)
	must("rename", db.Client().Database("admin").RunCommand(ctx, bson.D{{Key: "renameCollection", Value: "shop.drafts"}, {Key: "to", Value: "shop.notes"}}).Err())
	_, err = db.Collection("scratch").InsertOne(ctx, bson.D{{Key: "x", Value: 1}})
	must("scratch", err)
	must("drop", db.Collection("scratch").Drop(ctx))
}

func waitCount(ctx context.Context, t *testing.T, c *mongo.Collection, want int64) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		n, err := c.EstimatedDocumentCount(ctx)
		if err == nil && n == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d documents (%v), want %d", c.Name(), n, err, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// readOplog reads local.oplog.rs as mongodump --oplog does: the oldest
// and newest entries' ts by {$natural: ±1}, then the entries between
// them with its $and filter and oplogReplay flag, in small batches.
func readOplog(ctx context.Context, t *testing.T, c *mongo.Client) []bson.D {
	t.Helper()
	oplog := c.Database("local").Collection("oplog.rs")
	edge := func(dir int) bson.Timestamp {
		var e struct {
			TS bson.Timestamp `bson:"ts"`
		}
		if err := oplog.FindOne(ctx, bson.D{}, options.FindOne().SetSort(bson.D{{Key: "$natural", Value: dir}})).Decode(&e); err != nil {
			t.Fatalf("oplog edge %d: %v", dir, err)
		}
		return e.TS
	}
	first, last := edge(1), edge(-1)
	cur, err := c.Database("local").RunCommandCursor(ctx, bson.D{
		{Key: "find", Value: "oplog.rs"},
		{Key: "filter", Value: bson.D{{Key: "$and", Value: bson.A{
			bson.D{{Key: "ts", Value: bson.D{{Key: "$gte", Value: first}}}},
			bson.D{{Key: "ts", Value: bson.D{{Key: "$lte", Value: last}}}},
		}}}},
		{Key: "oplogReplay", Value: true},
		{Key: "batchSize", Value: 10},
	})
	if err != nil {
		t.Fatal(err)
	}
	var out []bson.D
	if err := cur.All(ctx, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func dbHash(ctx context.Context, t *testing.T, db *mongo.Database) bson.M {
	t.Helper()
	var res bson.M
	if err := db.RunCommand(ctx, bson.D{{Key: "dbHash", Value: 1}}).Decode(&res); err != nil {
		t.Fatalf("dbHash %s: %v", db.Name(), err)
	}
	return res
}

// indexSpecs is a collection's index list as text.
func indexSpecs(ctx context.Context, t *testing.T, c *mongo.Collection) string {
	t.Helper()
	cur, err := c.Indexes().List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var specs []bson.Raw
	if err := cur.All(ctx, &specs); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprint(specs)
}

// sameHashSoon waits up to 5 s for the two databases' dbHash to agree and
// returns the last pair. Both may still move after the oplog was read:
// dbHash counts every stored document, expired ones included, and an
// expired document stays stored until a TTL deletion removes it, on the
// set (whose last deletions may be applied after the read) as on the
// replay (where a delete of a document already expired there finds
// nothing to every read, and the monitor removes it).
func sameHashSoon(ctx context.Context, t *testing.T, a, b *mongo.Database) (string, string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		x, y := fmt.Sprint(dbHash(ctx, t, a)["md5"]), fmt.Sprint(dbHash(ctx, t, b)["md5"])
		if x == y || time.Now().After(deadline) {
			return x, y
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestOplogTailable: a tailable awaitData find on local.oplog.rs, as
// oplog tailers open it from the newest entry's ts, receives each later
// write of the namespace it filters on, in order, waits at the end
// without closing, and receives the next write after that.
func TestOplogTailable(t *testing.T) {
	rs := startReplSet(t, 1)
	c := rs.client()
	defer c.Disconnect(context.Background())
	ctx := ctxT(t)
	live := c.Database("shop").Collection("live")
	if _, err := live.InsertOne(ctx, bson.D{{Key: "_id", Value: 0}}); err != nil {
		t.Fatal(err)
	}
	oplog := c.Database("local").Collection("oplog.rs")
	var newest struct {
		TS bson.Timestamp `bson:"ts"`
	}
	if err := oplog.FindOne(ctx, bson.D{}, options.FindOne().SetSort(bson.D{{Key: "$natural", Value: -1}})).Decode(&newest); err != nil {
		t.Fatal(err)
	}
	cur, err := oplog.Find(ctx, bson.D{{Key: "ts", Value: bson.D{{Key: "$gt", Value: newest.TS}}}, {Key: "ns", Value: "shop.live"}},
		options.Find().SetCursorType(options.TailableAwait).SetMaxAwaitTime(300*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cur.Close(context.Background())
	next := func(want int32) {
		t.Helper()
		for cur.Next(ctx) == false {
			if cur.Err() != nil || cur.ID() == 0 {
				t.Fatalf("the tailable cursor ended: %v", cur.Err())
			}
		}
		var e struct {
			Op string `bson:"op"`
			O  bson.D `bson:"o"`
		}
		if err := cur.Decode(&e); err != nil {
			t.Fatal(err)
		}
		if e.Op != "i" || len(e.O) == 0 || e.O[0].Value != want {
			t.Fatalf("entry %+v, want the insert of %d", e, want)
		}
	}
	for i := int32(1); i <= 3; i++ {
		if _, err := live.InsertOne(ctx, bson.D{{Key: "_id", Value: i}}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Database("shop").Collection("other").InsertOne(ctx, bson.D{{Key: "_id", Value: 100 + i}}); err != nil {
			t.Fatal(err)
		}
	}
	for i := int32(1); i <= 3; i++ {
		next(i)
	}
	if cur.TryNext(ctx) || cur.Err() != nil || cur.ID() == 0 {
		t.Fatalf("at the end: an entry, an error (%v) or a closed cursor", cur.Err())
	}
	if _, err := live.InsertOne(ctx, bson.D{{Key: "_id", Value: int32(4)}}); err != nil {
		t.Fatal(err)
	}
	next(4)
}
