package integration

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/mayflydb/mayfly/internal/app"
)

// nextEvent waits for the stream's next event.
func nextEvent(t *testing.T, cs *mongo.ChangeStream) bson.M {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if !cs.Next(ctx) {
		t.Fatalf("no change event: %v", cs.Err())
	}
	var ev bson.M
	if err := cs.Decode(&ev); err != nil {
		t.Fatal(err)
	}
	return ev
}

func wantOp(t *testing.T, ev bson.M, op string) {
	t.Helper()
	if ev["operationType"] != op {
		t.Fatalf("operationType = %v, want %s: %v", ev["operationType"], op, ev)
	}
}

// TestChangeStreamCollectionStandalone watches a collection on a plain
// standalone server: every kind of document change in order, with the
// fields drivers read, then resumes from a token in the middle.
func TestChangeStreamCollectionStandalone(t *testing.T) {
	db := newDB(t)
	checkCollectionStream(t, db)
}

func checkCollectionStream(t *testing.T, db *mongo.Database) {
	ctx := ctxT(t)
	coll := db.Collection("carts")
	cs, err := coll.Watch(ctx, mongo.Pipeline{})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close(ctx)
	if cs.ResumeToken() == nil {
		t.Fatal("no postBatchResumeToken in the first batch")
	}
	mustDo(t, func() error {
		_, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}, {Key: "items", Value: bson.A{"a"}}})
		return err
	})
	mustDo(t, func() error {
		_, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$push", Value: bson.D{{Key: "items", Value: "b"}}}, {Key: "$set", Value: bson.D{{Key: "n", Value: 2}}}})
		return err
	})
	mustDo(t, func() error {
		_, err := coll.ReplaceOne(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "items", Value: bson.A{}}})
		return err
	})
	mustDo(t, func() error { _, err := coll.DeleteOne(ctx, bson.D{{Key: "_id", Value: 1}}); return err })

	ins := nextEvent(t, cs)
	wantOp(t, ins, "insert")
	if fd := asM(ins["fullDocument"]); fd["_id"] != int32(1) {
		t.Fatalf("insert fullDocument = %v", fd)
	}
	if ns := asM(ins["ns"]); ns["db"] != db.Name() || ns["coll"] != "carts" {
		t.Fatalf("ns = %v", ns)
	}
	if _, ok := ins["clusterTime"].(bson.Timestamp); !ok {
		t.Fatalf("clusterTime = %T", ins["clusterTime"])
	}
	if _, ok := ins["wallTime"].(bson.DateTime); !ok {
		t.Fatalf("wallTime = %T", ins["wallTime"])
	}
	upd := nextEvent(t, cs)
	wantOp(t, upd, "update")
	desc := asM(upd["updateDescription"])
	if uf := asM(desc["updatedFields"]); uf["items.1"] != "b" || uf["n"] != int32(2) || len(uf) != 2 {
		t.Fatalf("updatedFields = %v", uf)
	}
	if _, has := upd["fullDocument"]; has {
		t.Fatalf("default fullDocument on an update: %v", upd)
	}
	rep := nextEvent(t, cs)
	wantOp(t, rep, "replace")
	if fd := asM(rep["fullDocument"]); len(fd["items"].(bson.A)) != 0 {
		t.Fatalf("replace fullDocument = %v", fd)
	}
	del := nextEvent(t, cs)
	wantOp(t, del, "delete")
	if dk := asM(del["documentKey"]); dk["_id"] != int32(1) {
		t.Fatalf("documentKey = %v", dk)
	}
	if _, has := del["expired"]; has {
		t.Fatalf("a client's delete is marked expired: %v", del)
	}

	// Resume after the update: the replace and the delete come again,
	// with the same tokens.
	updToken := upd["_id"]
	rs, err := coll.Watch(ctx, mongo.Pipeline{}, options.ChangeStream().SetResumeAfter(updToken))
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close(ctx)
	again := nextEvent(t, rs)
	wantOp(t, again, "replace")
	if fmt.Sprint(again["_id"]) != fmt.Sprint(rep["_id"]) {
		t.Fatalf("resumed token %v, want %v", again["_id"], rep["_id"])
	}
	wantOp(t, nextEvent(t, rs), "delete")
}

func mustDo(t *testing.T, f func() error) {
	t.Helper()
	if err := f(); err != nil {
		t.Fatal(err)
	}
}

// TestChangeStreamAwaitsAndPostBatchToken checks that a getMore waits for
// the next change (up to maxAwaitTimeMS) and that empty batches move the
// resume token forward.
func TestChangeStreamAwaitsAndPostBatchToken(t *testing.T) {
	db := newDB(t)
	ctx := ctxT(t)
	coll := db.Collection("c")
	other := db.Collection("other")
	cs, err := coll.Watch(ctx, mongo.Pipeline{}, options.ChangeStream().SetMaxAwaitTime(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close(ctx)
	first := fmt.Sprint(cs.ResumeToken())
	// A change elsewhere moves the token without an event.
	mustDo(t, func() error { _, err := other.InsertOne(ctx, bson.D{{Key: "x", Value: 1}}); return err })
	// (The driver's first TryNext consumes the empty first batch; the
	// second runs a getMore.)
	for i := 0; i < 2; i++ {
		if cs.TryNext(ctx) || cs.Err() != nil {
			t.Fatalf("an event of another collection: %v (%v)", cs.Current, cs.Err())
		}
	}
	if moved := fmt.Sprint(cs.ResumeToken()); moved == first {
		t.Fatalf("postBatchResumeToken did not move past another collection's change: %s", moved)
	}
	// A waiting getMore returns as soon as the insert commits.
	go func() {
		time.Sleep(300 * time.Millisecond)
		_, _ = coll.InsertOne(context.Background(), bson.D{{Key: "_id", Value: "late"}})
	}()
	start := time.Now()
	ev := nextEvent(t, cs)
	took := time.Since(start)
	wantOp(t, ev, "insert")
	if took < 250*time.Millisecond || took > 1500*time.Millisecond {
		t.Fatalf("event after %v, want about 300ms (the getMore waits for it)", took)
	}
}

// TestChangeStreamOnReplicaSet watches through a three-member set: the
// events are those of a standalone, and a secondary holds the same log,
// so a token from the primary resumes on it.
func TestChangeStreamOnReplicaSet(t *testing.T) {
	rs := startReplSet(t, 3)
	c := rs.client()
	db := c.Database("shop")
	checkCollectionStream(t, db)
	ctx := ctxT(t)
	coll := db.Collection("orders")
	cs, err := coll.Watch(ctx, mongo.Pipeline{})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close(ctx)
	for i := 0; i < 5; i++ {
		mustDo(t, func() error { _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: i}}); return err })
	}
	var tokens []string
	var firstToken any
	for i := 0; i < 5; i++ {
		ev := nextEvent(t, cs)
		wantOp(t, ev, "insert")
		if i == 0 {
			firstToken = ev["_id"]
		}
		tokens = append(tokens, fmt.Sprint(ev["_id"]))
	}
	if !sort.StringsAreSorted(tokens) {
		t.Fatalf("tokens out of order: %v", tokens)
	}
	primary := rs.waitPrimary(-1, 10*time.Second)
	secondary := (primary + 1) % 3
	sc := rs.direct(secondary)
	defer func() { _ = sc.Disconnect(context.Background()) }()
	checkSecondaryExpiry(t, c.Database("shop"), sc.Database("shop"))
	checkDropDatabase(t, c.Database("gone"))
	deadline := time.Now().Add(10 * time.Second)
	for {
		ss, err := sc.Database("shop").Collection("orders").Watch(ctx, mongo.Pipeline{}, options.ChangeStream().SetResumeAfter(firstToken))
		if err == nil {
			var got []string
			for len(got) < 4 {
				got = append(got, fmt.Sprint(nextEvent(t, ss)["_id"]))
			}
			_ = ss.Close(ctx)
			if fmt.Sprint(got) != fmt.Sprint(tokens[1:]) {
				t.Fatalf("secondary's events %v, want %v", got, tokens[1:])
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("watch on secondary: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// checkSecondaryExpiry: the primary's TTL deletion reaches a stream
// opened on a secondary as an expiry event.
func checkSecondaryExpiry(t *testing.T, primary, secondary *mongo.Database) {
	t.Helper()
	ctx := ctxT(t)
	sessions := primary.Collection("sessions")
	mustDo(t, func() error {
		_, err := sessions.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "at", Value: 1}}, Options: options.Index().SetExpireAfterSeconds(1)})
		return err
	})
	var ss *mongo.ChangeStream
	deadline := time.Now().Add(10 * time.Second)
	for {
		var err error
		if ss, err = secondary.Collection("sessions").Watch(ctx, mongo.Pipeline{}); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("watch on a secondary: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	defer ss.Close(ctx)
	mustDo(t, func() error {
		_, err := sessions.InsertOne(ctx, bson.D{{Key: "_id", Value: "s"}, {Key: "at", Value: bson.NewDateTimeFromTime(time.Now())}})
		return err
	})
	wantOp(t, nextEvent(t, ss), "insert")
	exp := nextEvent(t, ss)
	wantOp(t, exp, "delete")
	if asM(exp["expired"])["index"] != "at_1" {
		t.Fatalf("expiry on a secondary: %v", exp)
	}
}

// checkDropDatabase: a database stream sees a collection's drop, the
// database's and its own end (in a replica set the database's event is
// an entry with no writes of its own).
func checkDropDatabase(t *testing.T, db *mongo.Database) {
	t.Helper()
	ctx := ctxT(t)
	mustDo(t, func() error { _, err := db.Collection("c").InsertOne(ctx, bson.D{{Key: "_id", Value: 1}}); return err })
	cs, err := db.Watch(ctx, mongo.Pipeline{})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close(ctx)
	mustDo(t, func() error { return db.Drop(ctx) })
	for _, op := range []string{"drop", "dropDatabase", "invalidate"} {
		wantOp(t, nextEvent(t, cs), op)
	}
}

// TestChangeStreamOneMemberSet: a replica set of one, as rs.initiate()
// makes it, streams as a standalone does.
func TestChangeStreamOneMemberSet(t *testing.T) {
	rs := startReplSet(t, 1)
	checkCollectionStream(t, rs.client().Database("shop"))
}

// asM reads an embedded document of a decoded event.
func asM(v any) bson.M {
	m := bson.M{}
	d, _ := v.(bson.D)
	for _, e := range d {
		m[e.Key] = e.Value
	}
	return m
}

var _ = app.Config{}

// TestChangeStreamStandaloneLogStartsWithFirstStream: a standalone server
// keeps no change log before its first stream, so a stream asked to start
// before that answers 286 instead of silently missing what happened; from
// the first stream on, changes are kept (the unit test of the engine
// covers its restart).
func TestChangeStreamStandaloneLogStartsWithFirstStream(t *testing.T) {
	dir := t.TempDir()
	srv := startServer(t, app.Config{DataDir: dir})
	ctx := ctxT(t)
	coll := connect(t, srv).Database("shop").Collection("early")
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: "before"}}); err != nil {
		t.Fatal(err)
	}
	past := bson.Timestamp{T: uint32(time.Now().Add(-time.Hour).Unix())}
	_, err := coll.Watch(ctx, mongo.Pipeline{}, options.ChangeStream().SetStartAtOperationTime(&past))
	wantCode(t, err, 286, "Resume of change stream was not possible")
	cs, err := coll.Watch(ctx, mongo.Pipeline{})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close(ctx)
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: "after"}}); err != nil {
		t.Fatal(err)
	}
	if !cs.Next(ctx) {
		t.Fatalf("no event for a write after the first stream: %v", cs.Err())
	}
	if id := cs.Current.Lookup("documentKey", "_id").StringValue(); id != "after" {
		t.Fatalf("first event is for %q, want after", id)
	}
}
