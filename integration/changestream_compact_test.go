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

// expireTogether makes n documents of coll that expire in one moment, a
// second from now, so that one TTL pass deletes them in one batch: the
// log holds their events as compact records.
func expireTogether(t *testing.T, coll *mongo.Collection, n int) {
	t.Helper()
	ctx := ctxT(t)
	mustDo(t, func() error {
		_, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "at", Value: 1}}, Options: options.Index().SetExpireAfterSeconds(0).SetName("at_ttl")})
		return err
	})
	at := bson.NewDateTimeFromTime(time.Now().Add(time.Second))
	docs := make([]any, n)
	for i := range docs {
		docs[i] = bson.D{{Key: "_id", Value: int32(i)}, {Key: "at", Value: at}}
	}
	mustDo(t, func() error { _, err := coll.InsertMany(ctx, docs); return err })
}

// readExpiries reads n expiry events: their _ids and resume tokens.
func readExpiries(t *testing.T, cs *mongo.ChangeStream, n int) (ids []int64, tokens []bson.Raw) {
	t.Helper()
	for len(ids) < n {
		ev := nextEvent(t, cs)
		if ev["operationType"] != "delete" {
			continue // the inserts
		}
		if asM(ev["expired"])["index"] != "at_ttl" {
			t.Fatalf("not an expiry: %v", ev)
		}
		// A TTL deletion knows the key-encoded _id: a number comes back
		// of equal value, not always of its type (docs/design/0012).
		switch id := asM(ev["documentKey"])["_id"].(type) {
		case int32:
			ids = append(ids, int64(id))
		case int64:
			ids = append(ids, id)
		default:
			t.Fatalf("documentKey %v", ev["documentKey"])
		}
		raw, err := bson.Marshal(ev["_id"])
		if err != nil {
			t.Fatal(err)
		}
		tokens = append(tokens, raw)
	}
	return ids, tokens
}

// TestChangeStreamResumesInsideAnExpiryBatch: a stream resumed after any
// expiry of one TTL batch (the first, the second, the middle one, the
// last but one and the last), with resumeAfter or startAfter, reads the
// batch's rest exactly, and small getMore batches cut the batch anywhere
// without losing or repeating an event.
func TestChangeStreamResumesInsideAnExpiryBatch(t *testing.T) {
	s := startServer(t, app.Config{TTLSleepSecs: 1})
	db := connect(t, s).Database("shop")
	ctx := ctxT(t)
	coll := db.Collection("sessions")
	cs, err := coll.Watch(ctx, mongo.Pipeline{}, options.ChangeStream().SetBatchSize(7))
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close(ctx)
	const n = 600
	expireTogether(t, coll, n)
	ids, tokens := readExpiries(t, cs, n)
	seen := map[int64]bool{}
	for _, id := range ids {
		if seen[id] {
			t.Fatalf("document %d expired twice", id)
		}
		seen[id] = true
	}
	for _, i := range []int{0, 1, n / 2, n - 2} {
		for _, startAfter := range []bool{false, true} {
			opts := options.ChangeStream().SetResumeAfter(tokens[i]).SetBatchSize(5)
			if startAfter {
				opts = options.ChangeStream().SetStartAfter(tokens[i]).SetBatchSize(5)
			}
			rs, err := coll.Watch(ctx, mongo.Pipeline{}, opts)
			if err != nil {
				t.Fatalf("resume after expiry %d: %v", i, err)
			}
			got, _ := readExpiries(t, rs, n-1-i)
			_ = rs.Close(ctx)
			if fmt.Sprint(got) != fmt.Sprint(ids[i+1:]) {
				t.Fatalf("resumed after expiry %d (startAfter %v): %d events, not the %d that follow", i, startAfter, len(got), n-1-i)
			}
		}
	}
	// After the last one comes the next write.
	rs, err := coll.Watch(ctx, mongo.Pipeline{}, options.ChangeStream().SetResumeAfter(tokens[n-1]))
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close(ctx)
	mustDo(t, func() error { _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: "next"}}); return err })
	if ev := nextEvent(t, rs); ev["operationType"] != "insert" || asM(ev["documentKey"])["_id"] != "next" {
		t.Fatalf("after the batch's last expiry: %v", ev)
	}
}

// TestChangeStreamExpiryBatchResumesOnASecondary: a token of an expiry in
// the middle of a TTL batch, read on the primary, resumes on a secondary
// at the very next expiry: every member wrote the same log.
func TestChangeStreamExpiryBatchResumesOnASecondary(t *testing.T) {
	rs := startReplSet(t, 3)
	ctx := ctxT(t)
	coll := rs.client().Database("shop").Collection("sessions")
	cs, err := coll.Watch(ctx, mongo.Pipeline{})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close(ctx)
	const n = 300
	expireTogether(t, coll, n)
	ids, tokens := readExpiries(t, cs, n)
	primary := rs.waitPrimary(-1, 10*time.Second)
	sc := rs.direct((primary + 1) % 3)
	defer func() { _ = sc.Disconnect(context.Background()) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ss, err := sc.Database("shop").Collection("sessions").Watch(ctx, mongo.Pipeline{}, options.ChangeStream().SetResumeAfter(tokens[n/2]))
		if err == nil {
			got, _ := readExpiries(t, ss, n-1-n/2)
			_ = ss.Close(ctx)
			if fmt.Sprint(got) != fmt.Sprint(ids[n/2+1:]) {
				t.Fatalf("the secondary's events after expiry %d are not the primary's", n/2)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("watch on a secondary: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
