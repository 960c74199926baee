package integration

import (
	"fmt"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/readpref"
)

// TestLRUPageCacheKeepsMostRead is a page cache bounded to 20 documents
// whose reads keep pages alive (refreshOnRead on the same index): after
// the 10 most-read pages are read, 10 new pages evict the 10 unread ones,
// the collection never holds more than 20, and change streams see each
// eviction as a delete marked evicted.
func TestLRUPageCacheKeepsMostRead(t *testing.T) {
	s := startServer(t, testClockConfig())
	c := connect(t, s)
	ctx := ctxT(t)
	db := c.Database("web")
	mustDo(t, func() error {
		return db.RunCommand(ctx, bson.D{{Key: "createIndexes", Value: "pages"}, {Key: "indexes", Value: bson.A{bson.D{
			{Key: "key", Value: bson.D{{Key: "usedAt", Value: 1}}}, {Key: "name", Value: "lru"},
			{Key: "expireAfterSeconds", Value: 86400}, {Key: "refreshOnRead", Value: true},
			{Key: "lruLimit", Value: bson.D{{Key: "documents", Value: 20}}}}}}}).Err()
	})
	pages := db.Collection("pages")
	evictions := mongo.Pipeline{{{Key: "$match", Value: bson.D{{Key: "operationType", Value: "delete"}}}}}
	cs, err := pages.Watch(ctx, evictions)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close(ctx)
	insertPages := func(from, to int) {
		for i := from; i < to; i++ {
			mustDo(t, func() error {
				_, err := pages.InsertOne(ctx, bson.D{{Key: "_id", Value: fmt.Sprint("/page/", i)}, {Key: "usedAt", Value: serverNow(t, c)}, {Key: "html", Value: "<p>…</p>"}})
				return err
			})
			if n := storedDocs(t, pages); n > 20 {
				t.Fatalf("after inserting page %d the cache holds %d documents, limit 20", i, n)
			}
		}
	}
	insertPages(0, 20)
	setClockOffset(t, c, 3*3600) // past the throttle (a tenth of a day)
	for i := 0; i < 10; i++ {
		if err := pages.FindOne(ctx, bson.D{{Key: "_id", Value: fmt.Sprint("/page/", i)}}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	setClockOffset(t, c, 4*3600)
	insertPages(20, 30)
	evicted := map[string]bool{}
	for len(evicted) < 10 {
		ev := nextEvent(t, cs)
		mark := asM(ev["evicted"])
		if mark["index"] != "lru" {
			t.Fatalf("delete event without evicted: %v", ev)
		}
		evicted[asM(ev["documentKey"])["_id"].(string)] = true
	}
	for i := 0; i < 30; i++ {
		id := fmt.Sprint("/page/", i)
		if want := i >= 10 && i < 20; evicted[id] != want {
			t.Fatalf("%s evicted=%v; evicted %v, want the 10 unread pages", id, evicted[id], evicted)
		}
	}
	if n := statusMetric(t, c, "lru", "evictedDocuments"); n != 10 {
		t.Fatalf("metrics.lru.evictedDocuments = %d, want 10", n)
	}
	var spec bson.M
	cur, err := pages.Indexes().List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for cur.Next(ctx) {
		if err := cur.Decode(&spec); err == nil && spec["name"] == "lru" {
			break
		}
	}
	if lim := asM(spec["lruLimit"]); lim["documents"] != int32(20) {
		t.Fatalf("listIndexes: %v", spec)
	}
}

// serverNow is the server's clock, test offset included ($$NOW).
func serverNow(t *testing.T, c *mongo.Client) bson.DateTime {
	t.Helper()
	cur, err := c.Database("admin").Aggregate(ctxT(t), bson.A{bson.D{{Key: "$documents", Value: bson.A{bson.D{}}}}, bson.D{{Key: "$project", Value: bson.D{{Key: "now", Value: "$$NOW"}}}}})
	if err != nil || !cur.Next(ctxT(t)) {
		t.Fatalf("$$NOW: %v", err)
	}
	return bson.DateTime(cur.Current.Lookup("now").DateTime())
}

func TestLRULimitOptionErrors(t *testing.T) {
	db := newDB(t)
	ctx := ctxT(t)
	create := func(limit any, key bson.D) error {
		return db.RunCommand(ctx, bson.D{{Key: "createIndexes", Value: "c"}, {Key: "indexes", Value: bson.A{bson.D{
			{Key: "key", Value: key}, {Key: "name", Value: "x"}, {Key: "lruLimit", Value: limit}}}}}).Err()
	}
	at := bson.D{{Key: "at", Value: 1}}
	wantCode(t, create(5, at), 14, "must be an object")
	wantCode(t, create(bson.D{}, at), 67, "needs 'documents', 'bytes' or both")
	wantCode(t, create(bson.D{{Key: "documents", Value: 0}}, at), 67, "positive whole number")
	wantCode(t, create(bson.D{{Key: "documents", Value: 1.5}}, at), 67, "positive whole number")
	wantCode(t, create(bson.D{{Key: "documents", Value: "10"}}, at), 14, "must be a number")
	wantCode(t, create(bson.D{{Key: "rows", Value: 10}}, at), 67, "unknown lruLimit field 'rows'")
	wantCode(t, create(bson.D{{Key: "documents", Value: 10}}, bson.D{{Key: "a", Value: 1}, {Key: "b", Value: 1}}), 67, "single-field")
	if err := create(bson.D{{Key: "documents", Value: 10}, {Key: "bytes", Value: int64(1 << 20)}}, at); err != nil {
		t.Fatal(err)
	}
}

// TestLRULimitReplicaSet: the primary evicts in the same replicated write
// as the insert, so every member holds the same documents, never more than
// the limit.
func TestLRULimitReplicaSet(t *testing.T) {
	rs := startReplSet(t, 3)
	ctx := ctxT(t)
	db := rs.client().Database("web")
	mustDo(t, func() error {
		return db.RunCommand(ctx, bson.D{{Key: "createIndexes", Value: "pages"}, {Key: "indexes", Value: bson.A{bson.D{
			{Key: "key", Value: bson.D{{Key: "usedAt", Value: 1}}}, {Key: "name", Value: "lru"},
			{Key: "lruLimit", Value: bson.D{{Key: "documents", Value: 5}}}}}}}).Err()
	})
	pages := db.Collection("pages")
	for i := 0; i < 12; i++ {
		mustDo(t, func() error {
			_, err := pages.InsertOne(ctx, bson.D{{Key: "_id", Value: i}, {Key: "usedAt", Value: bson.DateTime(int64(1_700_000_000_000 + i))}})
			return err
		})
	}
	hash := rs.waitSameHash("web", 10*time.Second)
	for i := range rs.addrs {
		coll := rs.direct(i).Database("web").Collection("pages", options.Collection().SetReadPreference(readpref.SecondaryPreferred()))
		if n := storedDocs(t, coll); n != 5 {
			t.Fatalf("member %d stores %d documents, limit 5 (dbHash %s)", i, n, hash)
		}
		if n, err := coll.CountDocuments(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$gte", Value: 7}}}}); err != nil || n != 5 {
			t.Fatalf("member %d kept other documents than the 5 latest (%d, %v)", i, n, err)
		}
	}
}
