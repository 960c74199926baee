package integration

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"

	"github.com/mayflydb/mayfly/internal/app"
	"github.com/mayflydb/mayfly/internal/storage/pebblestore/faultfs"
)

// TestHostileAggregateArguments sends the aggregate shapes that used to
// panic a handler and leave its currentOp record active.
func TestHostileAggregateArguments(t *testing.T) {
	admin := connect(t, startServer(t, app.Config{})).Database("admin")
	cases := []struct {
		cmd  bson.D
		code int32
		msg  string
	}{
		{bson.D{{Key: "aggregate", Value: 1}, {Key: "pipeline", Value: bson.A{}}, {Key: "cursor", Value: bson.D{}}}, 73, "{aggregate: 1} is not valid for an empty pipeline."},
		{bson.D{{Key: "aggregate", Value: 1}, {Key: "cursor", Value: bson.D{}}}, 40414, "BSON field 'aggregate.pipeline' is missing but a required field"},
		{bson.D{{Key: "aggregate", Value: nil}, {Key: "pipeline", Value: bson.A{}}, {Key: "cursor", Value: bson.D{}}}, 14, "collection name has invalid type: null"},
	}
	for _, c := range cases {
		ce := cmdErr(t, admin, c.cmd)
		if ce.Code != c.code || ce.Message != c.msg {
			t.Errorf("%v: got %d %q; want %d %q", c.cmd, ce.Code, ce.Message, c.code, c.msg)
		}
	}
	ops := runCmd(t, admin, bson.D{{Key: "currentOp", Value: 1}})
	for _, op := range field(t, ops, "inprog").(bson.A) {
		cmd, _ := field(t, op.(bson.D), "command").(bson.D)
		if len(cmd) > 0 && cmd[0].Key == "aggregate" {
			t.Errorf("an aggregate is still in currentOp: %v", op)
		}
	}
}

// openCursor runs find with a small batch and returns the cursor's id and
// the first batch's size.
func openCursor(t *testing.T, db *mongo.Database, coll string, filter, sort bson.D) (int64, int) {
	t.Helper()
	cmd := bson.D{{Key: "find", Value: coll}, {Key: "filter", Value: filter}, {Key: "batchSize", Value: 5}}
	if sort != nil {
		cmd = append(cmd, bson.E{Key: "sort", Value: sort})
	}
	reply := runCmd(t, db, cmd)
	cur := field(t, reply, "cursor").(bson.D)
	return field(t, cur, "id").(int64), len(field(t, cur, "firstBatch").(bson.A))
}

func getMore(db *mongo.Database, coll string, id int64) (bson.D, error) {
	var out bson.D
	err := db.RunCommand(context.Background(), bson.D{{Key: "getMore", Value: id}, {Key: "collection", Value: coll}}).Decode(&out)
	return out, err
}

func nextBatchLen(t *testing.T, reply bson.D) int {
	t.Helper()
	return len(field(t, field(t, reply, "cursor").(bson.D), "nextBatch").(bson.A))
}

// TestHostileCursorReturnsOnlyLiveDocuments: documents deleted, expired or
// changed to no longer match after a cursor's first batch are not returned
// by getMore, and a dropped collection's cursor gets 175.
func TestHostileCursorReturnsOnlyLiveDocuments(t *testing.T) {
	db := connect(t, startServer(t, app.Config{TTLDisabled: true})).Database("test")
	ctx := ctxT(t)
	docs := make([]any, 100)
	for i := range docs {
		docs[i] = bson.D{{Key: "_id", Value: i}, {Key: "k", Value: 1}, {Key: "at", Value: time.Now().Add(time.Second)}}
	}
	for _, name := range []string{"deleted", "expired", "sorted", "changed", "dropped"} {
		if _, err := db.Collection(name).InsertMany(ctx, docs); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"expired", "sorted"} {
		_, err := db.Collection(name).Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "at", Value: 1}}, Options: options.Index().SetExpireAfterSeconds(0)})
		if err != nil {
			t.Fatal(err)
		}
	}
	ids := map[string]int64{}
	for _, name := range []string{"deleted", "expired", "sorted", "changed", "dropped"} {
		var sort bson.D
		if name == "sorted" { // a blocking sort holds its results past the scan
			sort = bson.D{{Key: "k", Value: 1}, {Key: "_id", Value: 1}}
		}
		id, n := openCursor(t, db, name, bson.D{{Key: "k", Value: 1}}, sort)
		if id == 0 || n != 5 {
			t.Fatalf("%s: cursor %d with %d documents", name, id, n)
		}
		ids[name] = id
	}
	if _, err := db.Collection("deleted").DeleteMany(ctx, bson.D{}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Collection("changed").UpdateMany(ctx, bson.D{}, bson.D{{Key: "$set", Value: bson.D{{Key: "k", Value: 2}}}}); err != nil {
		t.Fatal(err)
	}
	if err := db.Collection("dropped").Drop(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Until(docs[0].(bson.D)[2].Value.(time.Time)) + 50*time.Millisecond)
	for _, name := range []string{"deleted", "expired", "sorted", "changed"} {
		reply, err := getMore(db, name, ids[name])
		if err != nil {
			t.Fatalf("%s: getMore: %v", name, err)
		}
		if n := nextBatchLen(t, reply); n != 0 {
			t.Errorf("%s: getMore returned %d documents that are no longer there or no longer match", name, n)
		}
	}
	_, err := getMore(db, "dropped", ids["dropped"])
	wantCode(t, err, 175, "collection dropped. UUID ")
}

// TestHostileCursorSessionRules: a cursor is continued only in the
// session that opened it (mongod's 50736, 50737, 50738).
func TestHostileCursorSessionRules(t *testing.T) {
	db := connect(t, startServer(t, app.Config{})).Database("test")
	docs := make([]any, 20)
	for i := range docs {
		docs[i] = bson.D{{Key: "_id", Value: i}}
	}
	if _, err := db.Collection("c").InsertMany(ctxT(t), docs); err != nil {
		t.Fatal(err)
	}
	lsid := func(b byte) bson.D {
		return bson.D{{Key: "id", Value: bson.Binary{Subtype: 4, Data: bytes.Repeat([]byte{b}, 16)}}}
	}
	open := func(session bson.D) int64 {
		cmd := bson.D{{Key: "find", Value: "c"}, {Key: "batchSize", Value: 2}, {Key: "lsid", Value: session}}
		return field(t, field(t, runCmd(t, db, cmd), "cursor").(bson.D), "id").(int64)
	}
	more := func(id int64, session bson.D) error {
		cmd := bson.D{{Key: "getMore", Value: id}, {Key: "collection", Value: "c"}, {Key: "batchSize", Value: 1}, {Key: "lsid", Value: session}}
		return db.RunCommand(context.Background(), cmd).Err()
	}
	// The driver adds its own lsid to every command, so "outside a
	// session" is covered by the handler's unit test.
	inA := open(lsid(1))
	wantCode(t, more(inA, lsid(2)), 50738, "which was created in session 01010101-0101-0101-0101-010101010101 - ")
	if err := more(inA, lsid(1)); err != nil {
		t.Errorf("getMore in the cursor's own session: %v", err)
	}
}

// TestHostileRefusalsAsMongod: what a standalone mongod refuses is refused
// here too, with its code and message, and nothing is written.
func TestHostileRefusalsAsMongod(t *testing.T) {
	c := connect(t, startServer(t, app.Config{}))
	ctx := ctxT(t)
	db := c.Database("test")
	for _, wc := range []bson.D{{{Key: "w", Value: 2}}, {{Key: "w", Value: "dc1"}}} {
		err := db.RunCommand(ctx, bson.D{{Key: "insert", Value: "wc"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: 1}}}}, {Key: "writeConcern", Value: wc}}).Err()
		wantCode(t, err, 2, "when a host is not")
	}
	if n, _ := db.Collection("wc").CountDocuments(ctx, bson.D{}); n != 0 {
		t.Errorf("%d documents written under a refused write concern", n)
	}
	for _, ok := range []bson.D{{{Key: "w", Value: 1}}, {{Key: "w", Value: "majority"}}, {{Key: "w", Value: 0}}} {
		if err := db.RunCommand(ctx, bson.D{{Key: "insert", Value: "wc"}, {Key: "documents", Value: bson.A{bson.D{}}}, {Key: "writeConcern", Value: ok}}).Err(); err != nil {
			t.Errorf("write concern %v: %v", ok, err)
		}
	}
	wantCode(t, c.Database("admin").RunCommand(ctx, bson.D{{Key: "dropDatabase", Value: 1}}).Err(), 20, "Dropping the 'admin' database is prohibited.")

	if _, err := c.Database("Cased").Collection("x").InsertOne(ctx, bson.D{}); err != nil {
		t.Fatal(err)
	}
	_, err := c.Database("cased").Collection("x").InsertOne(ctx, bson.D{})
	wantCode(t, err, 13297, "db already exists with different case already have: [Cased] trying to create [cased]")

	_, err = db.Collection("system.foo").InsertOne(ctx, bson.D{})
	wantCode(t, err, 73, "Invalid system namespace: test.system.foo")
	_, err = db.Collection("system.profile").InsertOne(ctx, bson.D{})
	wantCode(t, err, 73, "cannot write to test.system.profile")
	if _, err := db.Collection("system.js").InsertOne(ctx, bson.D{{Key: "_id", Value: "f"}}); err != nil {
		t.Errorf("insert into system.js: %v", err)
	}
}

// TestHostileFailedWriteNeverVisible: a journaled insert answered with
// 14031 on a full disk is not read back, not before space returns and not
// after.
func TestHostileFailedWriteNeverVisible(t *testing.T) {
	full := &faultfs.DiskFull{}
	srv := startServer(t, app.Config{DataDir: t.TempDir(), FS: faultfs.Wrap(vfs.Default, full), RecoverInterval: 20 * time.Millisecond})
	db := connect(t, srv).Database("test")
	coll := db.Collection("docs", options.Collection().SetWriteConcern(writeconcern.Journaled()))
	acked := map[int32]bool{}
	insertAcked(t, coll, acked, 0, 10)
	full.Set(true)
	ctx := ctxT(t)
	_, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 100}})
	wantCode(t, err, outOfDiskSpace, refusedMsg)
	notThere := func(when string) {
		t.Helper()
		if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: 100}}).Err(); err != mongo.ErrNoDocuments {
			t.Errorf("%s: findOne of the refused insert: %v", when, err)
		}
		if n, err := coll.CountDocuments(ctx, bson.D{}); err != nil || n != int64(len(acked)) {
			t.Errorf("%s: countDocuments = %d, %v; want %d", when, n, err, len(acked))
		}
	}
	notThere("disk full")
	full.Set(false)
	waitForWrites(t, coll, acked)
	notThere("after recovery")
}

// heavyPipeline takes seconds per document: a $reduce over a million
// elements, each mapping a small array.
func heavyPipeline() bson.A {
	inner := bson.D{{Key: "$size", Value: bson.D{{Key: "$map", Value: bson.D{
		{Key: "input", Value: bson.D{{Key: "$range", Value: bson.A{0, 20}}}},
		{Key: "in", Value: bson.D{{Key: "$multiply", Value: bson.A{"$$this", 2}}}},
	}}}}}
	return bson.A{bson.D{{Key: "$project", Value: bson.D{{Key: "x", Value: bson.D{{Key: "$reduce", Value: bson.D{
		{Key: "input", Value: bson.D{{Key: "$range", Value: bson.A{0, 1_000_000}}}},
		{Key: "initialValue", Value: 0},
		{Key: "in", Value: bson.D{{Key: "$add", Value: bson.A{"$$value", inner}}}},
	}}}}}}}}
}

// TestHostileMaxTimeInsideExpressions: maxTimeMS stops an expression that
// runs for seconds on one document, not only between documents.
func TestHostileMaxTimeInsideExpressions(t *testing.T) {
	db := connect(t, startServer(t, app.Config{})).Database("test")
	if _, err := db.Collection("one").InsertOne(ctxT(t), bson.D{{Key: "_id", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err := db.RunCommand(ctxT(t), bson.D{{Key: "aggregate", Value: "one"}, {Key: "pipeline", Value: heavyPipeline()},
		{Key: "cursor", Value: bson.D{}}, {Key: "maxTimeMS", Value: 500}}).Err()
	took := time.Since(start)
	wantCode(t, err, 50, "operation exceeded time limit")
	t.Logf("maxTimeMS 500 answered after %v", took)
	if took > 900*time.Millisecond {
		t.Fatalf("maxTimeMS 500 answered after %v", took)
	}
}

// TestHostileMaxTimeInsideFindExpr: maxTimeMS also stops a find whose
// $expr runs for seconds on each document.
func TestHostileMaxTimeInsideFindExpr(t *testing.T) {
	db := connect(t, startServer(t, app.Config{})).Database("test")
	if _, err := db.Collection("one").InsertOne(ctxT(t), bson.D{{Key: "_id", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	heavy := heavyPipeline()[0].(bson.D)[0].Value.(bson.D)[0].Value // the $reduce
	start := time.Now()
	err := db.RunCommand(ctxT(t), bson.D{{Key: "find", Value: "one"},
		{Key: "filter", Value: bson.D{{Key: "$expr", Value: bson.D{{Key: "$gt", Value: bson.A{heavy, 0}}}}}},
		{Key: "maxTimeMS", Value: 500}}).Err()
	took := time.Since(start)
	wantCode(t, err, 50, "operation exceeded time limit")
	t.Logf("find with a heavy $expr, maxTimeMS 500, answered after %v", took)
	if took > 900*time.Millisecond {
		t.Fatalf("maxTimeMS 500 answered after %v", took)
	}
}

// TestHostileGetMoreAfterMaxTime: a cursor opened with maxTimeMS keeps
// working in later getMores (the find's own time limit ended with it).
func TestHostileGetMoreAfterMaxTime(t *testing.T) {
	db := connect(t, startServer(t, app.Config{})).Database("test")
	docs := make([]any, 2000)
	for i := range docs {
		docs[i] = bson.D{{Key: "_id", Value: i}}
	}
	if _, err := db.Collection("c").InsertMany(ctxT(t), docs); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []bson.D{
		{{Key: "find", Value: "c"}, {Key: "batchSize", Value: 2}, {Key: "maxTimeMS", Value: 60000}},
		{{Key: "aggregate", Value: "c"}, {Key: "pipeline", Value: heavyPipeline()[:0]}, {Key: "cursor", Value: bson.D{{Key: "batchSize", Value: 2}}}, {Key: "maxTimeMS", Value: 60000}},
	} {
		id := field(t, field(t, runCmd(t, db, cmd), "cursor").(bson.D), "id").(int64)
		reply, err := getMore(db, "c", id)
		if err != nil {
			t.Fatalf("%s: getMore: %v", cmd[0].Key, err)
		}
		if n := nextBatchLen(t, reply); n != 1998 {
			t.Fatalf("%s: getMore returned %d documents", cmd[0].Key, n)
		}
	}
}

// TestHostileReplyTooLarge: a $group building a document over 16 MiB gets
// mongod's BSONObjectTooLarge, and the connection carries on.
func TestHostileReplyTooLarge(t *testing.T) {
	db := connect(t, startServer(t, app.Config{})).Database("test")
	pad := strings.Repeat("x", 1<<20)
	docs := make([]any, 21)
	for i := range docs {
		docs[i] = bson.D{{Key: "_id", Value: i}, {Key: "pad", Value: pad}}
	}
	if _, err := db.Collection("big").InsertMany(ctxT(t), docs); err != nil {
		t.Fatal(err)
	}
	err := db.RunCommand(ctxT(t), bson.D{{Key: "aggregate", Value: "big"}, {Key: "pipeline", Value: bson.A{
		bson.D{{Key: "$group", Value: bson.D{{Key: "_id", Value: nil}, {Key: "all", Value: bson.D{{Key: "$push", Value: "$pad"}}}}}},
	}}, {Key: "cursor", Value: bson.D{}}}).Err()
	wantCode(t, err, 10334, "is invalid. Size must be between 0 and 16793600(16MB) First element: _id: null")
	runCmd(t, db, bson.D{{Key: "ping", Value: 1}})
}

// TestHostileMaxTimeInsideWriteAndCountExpr: maxTimeMS also stops a heavy
// $expr in the filters of update, delete, findAndModify, count and
// distinct, inside one document's evaluation.
func TestHostileMaxTimeInsideWriteAndCountExpr(t *testing.T) {
	db := connect(t, startServer(t, app.Config{})).Database("test")
	if _, err := db.Collection("one").InsertOne(ctxT(t), bson.D{{Key: "_id", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	heavy := heavyPipeline()[0].(bson.D)[0].Value.(bson.D)[0].Value // the $reduce
	q := bson.D{{Key: "$expr", Value: bson.D{{Key: "$gt", Value: bson.A{heavy, 0}}}}}
	for _, cmd := range []bson.D{
		{{Key: "update", Value: "one"}, {Key: "updates", Value: bson.A{bson.D{{Key: "q", Value: q}, {Key: "u", Value: bson.D{{Key: "$set", Value: bson.D{{Key: "x", Value: 1}}}}}}}}},
		{{Key: "delete", Value: "one"}, {Key: "deletes", Value: bson.A{bson.D{{Key: "q", Value: q}, {Key: "limit", Value: 1}}}}},
		{{Key: "findAndModify", Value: "one"}, {Key: "query", Value: q}, {Key: "remove", Value: true}},
		{{Key: "count", Value: "one"}, {Key: "query", Value: q}},
		{{Key: "distinct", Value: "one"}, {Key: "key", Value: "_id"}, {Key: "query", Value: q}},
	} {
		start := time.Now()
		err := db.RunCommand(ctxT(t), append(cmd, bson.E{Key: "maxTimeMS", Value: 500})).Err()
		took := time.Since(start)
		if took > 1500*time.Millisecond {
			t.Fatalf("%s with a heavy $expr and maxTimeMS 500 answered after %v (%v)", cmd[0].Key, took, err)
		}
		if code := serverCode(err); code != 50 {
			t.Fatalf("%s: %v, want MaxTimeMSExpired (50)", cmd[0].Key, err)
		}
	}
}
