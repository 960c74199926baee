package integration

import (
	"fmt"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestCollModLRULimitAndExpireElements: through the Go driver, collMod
// lowers a cache's lruLimit and the cache holds the new limit before the
// reply, its evictions coming to change streams as deletes marked
// evicted; and collMod turns a cart's TTL index into an expireElements
// one, after which the cart outlives its stale line, which reads drop.
func TestCollModLRULimitAndExpireElements(t *testing.T) {
	s := startServer(t, testClockConfig())
	c := connect(t, s)
	ctx := ctxT(t)
	db := c.Database("web")
	mustDo(t, func() error {
		return db.RunCommand(ctx, bson.D{{Key: "createIndexes", Value: "pages"}, {Key: "indexes", Value: bson.A{bson.D{
			{Key: "key", Value: bson.D{{Key: "usedAt", Value: 1}}}, {Key: "name", Value: "lru"},
			{Key: "lruLimit", Value: bson.D{{Key: "documents", Value: 20}}}}}}}).Err()
	})
	pages := db.Collection("pages")
	cs, err := pages.Watch(ctx, mongo.Pipeline{{{Key: "$match", Value: bson.D{{Key: "operationType", Value: "delete"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close(ctx)
	start := time.Now()
	var docs []any
	for i := 0; i < 20; i++ {
		docs = append(docs, bson.D{{Key: "_id", Value: fmt.Sprint("/page/", i)}, {Key: "usedAt", Value: start.Add(time.Duration(i) * time.Second)}})
	}
	mustDo(t, func() error { _, err := pages.InsertMany(ctx, docs); return err })

	var reply bson.M
	mustDo(t, func() error {
		return db.RunCommand(ctx, bson.D{{Key: "collMod", Value: "pages"}, {Key: "index", Value: bson.D{{Key: "name", Value: "lru"}, {Key: "lruLimit", Value: bson.D{{Key: "documents", Value: 5}}}}}}).Decode(&reply)
	})
	if asM(reply["lruLimit_old"])["documents"] != int32(20) || asM(reply["lruLimit_new"])["documents"] != int32(5) {
		t.Fatalf("collMod reply %v", reply)
	}
	if n := storedDocs(t, pages); n != 5 {
		t.Fatalf("%d pages stored after lowering the limit to 5", n)
	}
	evicted := map[string]bool{}
	for len(evicted) < 15 {
		ev := nextEvent(t, cs)
		if asM(ev["evicted"])["index"] != "lru" {
			t.Fatalf("delete event without evicted: %v", ev)
		}
		evicted[asM(ev["documentKey"])["_id"].(string)] = true
	}
	for i := 0; i < 20; i++ {
		if id := fmt.Sprint("/page/", i); evicted[id] != (i < 15) {
			t.Fatalf("%s evicted=%v, want the 15 least recently used", id, evicted[id])
		}
	}

	carts := db.Collection("carts")
	mustDo(t, func() error {
		_, err := carts.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "items.addedAt", Value: 1}}, Options: options.Index().SetExpireAfterSeconds(60).SetName("lines")})
		return err
	})
	now := serverNow(t, c).Time()
	mustDo(t, func() error {
		_, err := carts.InsertOne(ctx, bson.D{{Key: "_id", Value: "c1"}, {Key: "items", Value: bson.A{
			bson.D{{Key: "sku", Value: "stale"}, {Key: "addedAt", Value: now.Add(-30 * time.Second)}},
			bson.D{{Key: "sku", Value: "fresh"}, {Key: "addedAt", Value: now}}}}})
		return err
	})
	mustDo(t, func() error {
		return db.RunCommand(ctx, bson.D{{Key: "collMod", Value: "carts"}, {Key: "index", Value: bson.D{{Key: "name", Value: "lines"}, {Key: "expireElements", Value: true}}}}).Decode(&reply)
	})
	if reply["expireElements_old"] != false || reply["expireElements_new"] != true {
		t.Fatalf("collMod reply %v", reply)
	}
	setClockOffset(t, c, 45) // the stale line's expiry has passed, not the fresh one's
	var cart struct {
		Items []struct {
			SKU string `bson:"sku"`
		} `bson:"items"`
	}
	if err := carts.FindOne(ctx, bson.D{{Key: "_id", Value: "c1"}}).Decode(&cart); err != nil || len(cart.Items) != 1 || cart.Items[0].SKU != "fresh" {
		t.Fatalf("cart %+v (%v), want only the fresh line", cart, err)
	}
	time.Sleep(1500 * time.Millisecond) // a monitor pass trims the cart, never deletes it
	if n := storedDocs(t, carts); n != 1 {
		t.Fatalf("%d carts stored, want 1", n)
	}
}
