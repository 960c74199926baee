package integration

import (
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/app"
)

func TestProfilerRecordsOperationsAndTTLDeletes(t *testing.T) {
	db := newDB(t)
	ctx := ctxT(t)
	was := runCmd(t, db, bson.D{{Key: "profile", Value: 2}})
	if field(t, was, "was") != int32(0) || field(t, was, "slowms") != int32(100) {
		t.Fatalf("profile reply: %v", was)
	}
	createTTL(t, db, "events", "at", 0)
	if _, err := db.Collection("events").InsertOne(ctx, bson.D{{Key: "at", Value: time.Now().Add(-time.Second)}}); err != nil {
		t.Fatal(err)
	}
	if err := db.Collection("events").FindOne(ctx, bson.D{{Key: "x", Value: 1}}).Err(); err == nil {
		t.Fatal("expected no document")
	}
	prof := db.Collection("system.profile")
	deadline := time.Now().Add(3 * time.Second)
	for {
		n, err := prof.CountDocuments(ctx, bson.D{{Key: "op", Value: "remove"}, {Key: "client", Value: "TTLMonitor"}, {Key: "ns", Value: "test.events"}})
		if err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the TTL monitor's delete did not reach system.profile")
		}
		time.Sleep(20 * time.Millisecond)
	}
	n, err := prof.CountDocuments(ctx, bson.D{{Key: "op", Value: "query"}, {Key: "ns", Value: "test.events"}})
	if err != nil || n != 1 {
		t.Fatalf("profiled finds: %d %v", n, err)
	}
	opts := runCmd(t, db.Client().Database("test").Collection("system.profile").Database(), bson.D{{Key: "listCollections", Value: 1}, {Key: "filter", Value: bson.D{{Key: "name", Value: "system.profile"}}}})
	first := field(t, field(t, opts, "cursor").(bson.D), "firstBatch").(bson.A)
	if len(first) != 1 || field(t, field(t, first[0].(bson.D), "options").(bson.D), "capped") != true {
		t.Fatalf("system.profile is a capped collection: %v", first)
	}
	off := runCmd(t, db, bson.D{{Key: "profile", Value: 0}})
	if field(t, off, "was") != int32(2) {
		t.Fatalf("profile 0: %v", off)
	}
}

func TestMongoshCurrentOpAndProfilingHelpers(t *testing.T) {
	s := startServer(t, app.Config{})
	out, _ := mongosh(t, dbURI(s, "test"), "--eval", `
		const ops = db.currentOp();
		if (!Array.isArray(ops.inprog) || ops.inprog.length < 1) throw new Error('currentOp: ' + JSON.stringify(ops));
		if (!ops.inprog.some(o => o.op === 'command' && o.ns === 'admin.$cmd.aggregate' || o.command && o.command.aggregate === 1)) throw new Error('own op missing: ' + JSON.stringify(ops.inprog));
		db.setProfilingLevel(2);
		db.c.insertOne({a: 1});
		const st = db.getProfilingStatus();
		if (st.was !== 2) throw new Error('status: ' + JSON.stringify(st));
		if (db.system.profile.countDocuments({op: 'insert', ns: 'test.c'}) !== 1) throw new Error('insert not profiled');
		print('profiling ok');`)
	if !strings.Contains(out, "profiling ok") {
		t.Fatalf("mongosh:\n%s", out)
	}
}
