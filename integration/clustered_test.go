package integration

import (
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/mayflydb/mayfly/internal/app"
)

func clusteredOptions(secs int64) *options.CreateCollectionOptionsBuilder {
	return options.CreateCollection().
		SetClusteredIndex(bson.D{{Key: "key", Value: bson.D{{Key: "_id", Value: 1}}}, {Key: "unique", Value: true}}).
		SetExpireAfterSeconds(secs)
}

// TestClusteredTTLCollection: through the Go driver, a clustered
// collection with expireAfterSeconds lists as mongod's does, never
// returns a document whose date _id has expired, has the monitor delete
// it as a delete marked expired in change streams, keeps ObjectId _ids
// (mongod's TTL on a clustered collection reads date _ids only), and
// collMod turns the expiry off.
func TestClusteredTTLCollection(t *testing.T) {
	s := startServer(t, app.Config{TTLSleepSecs: 1})
	c := connect(t, s)
	db := c.Database("metrics")
	ctx := ctxT(t)
	mustDo(t, func() error { return db.CreateCollection(ctx, "events", clusteredOptions(2)) })
	events := db.Collection("events")

	specs, err := events.Indexes().ListSpecifications(ctx)
	if err != nil || len(specs) != 1 || specs[0].Name != "_id_" || specs[0].Clustered == nil || !*specs[0].Clustered || specs[0].Unique == nil || !*specs[0].Unique {
		t.Fatalf("listIndexes: %+v %v", specs, err)
	}
	colls, err := db.ListCollectionSpecifications(ctx, bson.D{{Key: "name", Value: "events"}})
	if err != nil || len(colls) != 1 || colls[0].IDIndex.Name != "" {
		t.Fatalf("listCollections: %+v %v", colls, err)
	}
	var opts struct {
		Clustered struct {
			V      int32  `bson:"v"`
			Name   string `bson:"name"`
			Unique bool   `bson:"unique"`
		} `bson:"clusteredIndex"`
		Expire int64 `bson:"expireAfterSeconds"`
	}
	if err := bson.Unmarshal(colls[0].Options, &opts); err != nil || opts.Clustered.V != 2 || opts.Clustered.Name != "_id_" || !opts.Clustered.Unique || opts.Expire != 2 {
		t.Fatalf("options %v (%v)", colls[0].Options, err)
	}

	expiries := mongo.Pipeline{{{Key: "$match", Value: bson.D{{Key: "operationType", Value: "delete"}}}}}
	cs, err := events.Watch(ctx, expiries)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close(ctx)
	now := time.Now()
	const n = 50
	docs := []any{bson.D{{Key: "_id", Value: bson.NewObjectIDFromTimestamp(now.Add(-time.Hour))}, {Key: "kind", Value: "oid"}}}
	for i := 0; i < n; i++ {
		docs = append(docs, bson.D{{Key: "_id", Value: bson.NewDateTimeFromTime(now.Add(time.Duration(i) * 10 * time.Millisecond))}, {Key: "kind", Value: "date"}})
	}
	mustDo(t, func() error { _, err := events.InsertMany(ctx, docs); return err })

	// Until they are deleted, every read leaves out what has expired.
	for {
		cur, err := events.Find(ctx, bson.D{{Key: "kind", Value: "date"}})
		if err != nil {
			t.Fatal(err)
		}
		var got []struct {
			ID time.Time `bson:"_id"`
		}
		if err := cur.All(ctx, &got); err != nil {
			t.Fatal(err)
		}
		readAt := time.Now()
		for _, d := range got {
			if !d.ID.Add(2 * time.Second).After(readAt.Add(-50 * time.Millisecond)) {
				t.Fatalf("find returned a document expired at %v (read at %v)", d.ID.Add(2*time.Second), readAt)
			}
		}
		if len(got) == 0 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	seen := map[time.Time]bool{}
	for len(seen) < n {
		ev := nextEvent(t, cs)
		exp := asM(ev["expired"])
		if exp["index"] != "_id_" || exp["expireAfterSeconds"] != int64(2) {
			t.Fatalf("delete event %v: want expired by _id_ after 2 s", ev)
		}
		id := asM(ev["documentKey"])["_id"].(bson.DateTime)
		if exp["expiredAt"] != bson.NewDateTimeFromTime(id.Time().Add(2*time.Second)) {
			t.Fatalf("expiredAt %v for _id %v", exp["expiredAt"], id.Time())
		}
		seen[id.Time()] = true
	}
	if left := storedDocs(t, events); left != 1 {
		t.Fatalf("%d documents stored, want the ObjectId one", left)
	}

	mustDo(t, func() error {
		return db.RunCommand(ctx, bson.D{{Key: "collMod", Value: "events"}, {Key: "expireAfterSeconds", Value: "off"}}).Err()
	})
	old := bson.D{{Key: "_id", Value: bson.NewDateTimeFromTime(now.Add(-time.Hour))}}
	mustDo(t, func() error { _, err := events.InsertOne(ctx, old); return err })
	time.Sleep(1500 * time.Millisecond) // a monitor pass
	if n, err := events.CountDocuments(ctx, old); err != nil || n != 1 {
		t.Fatalf("expiry off: old document count %d (%v)", n, err)
	}
	err = db.RunCommand(ctx, bson.D{{Key: "collMod", Value: "events"}, {Key: "expireAfterSeconds", Value: "soon"}}).Err()
	wantCode(t, err, 72, "Accepted value is 'off'")
	err = db.CreateCollection(ctx, "plain", options.CreateCollection().SetExpireAfterSeconds(5))
	wantCode(t, err, 72, "clustered collections or timeseries collections")
}

// TestReplicaSetClusteredTTL: the primary deletes a clustered
// collection's expired documents; no member ever returns one, and every
// member converges to the live ones.
func TestReplicaSetClusteredTTL(t *testing.T) {
	rs := startReplSet(t, 3)
	cl := rs.client()
	db := cl.Database("test")
	ctx := ctxT(t)
	mustDo(t, func() error { return db.CreateCollection(ctx, "log", clusteredOptions(1)) })
	now := time.Now()
	var docs []any
	for i := 0; i < 100; i++ {
		at := now.Add(time.Hour)
		if i%2 == 0 {
			at = now // expires in a second
		}
		docs = append(docs, bson.D{{Key: "_id", Value: bson.NewDateTimeFromTime(at.Add(time.Duration(i) * time.Millisecond))}, {Key: "i", Value: i}})
	}
	mustDo(t, func() error { _, err := db.Collection("log").InsertMany(ctx, docs); return err })
	rs.waitLiveOnEveryMember(t, "log", "_id", time.Second, 50)
}
