package integration

import (
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// TestCartStaleLinesVanish: a cart whose lines expire one by one
// (expireElements on items.addedAt). A stale line is never read, even
// before the monitor removes it; the cart stays; the removal is an update
// marked expiredElements in change streams.
func TestCartStaleLinesVanish(t *testing.T) {
	s := startServer(t, testClockConfig())
	c := connect(t, s)
	ctx := ctxT(t)
	db := c.Database("shop")
	mustDo(t, func() error {
		return db.RunCommand(ctx, bson.D{{Key: "createIndexes", Value: "carts"}, {Key: "indexes", Value: bson.A{bson.D{
			{Key: "key", Value: bson.D{{Key: "items.addedAt", Value: 1}}}, {Key: "name", Value: "lines"},
			{Key: "expireAfterSeconds", Value: 3600}, {Key: "expireElements", Value: true}}}}}).Err()
	})
	carts := db.Collection("carts")
	updates := mongo.Pipeline{{{Key: "$match", Value: bson.D{{Key: "operationType", Value: "update"}}}}}
	cs, err := carts.Watch(ctx, updates)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close(ctx)
	now := time.Now()
	mustDo(t, func() error {
		_, err := carts.InsertOne(ctx, bson.D{{Key: "_id", Value: "ann"}, {Key: "items", Value: bson.A{
			bson.D{{Key: "sku", Value: "apple"}, {Key: "addedAt", Value: now}},
			bson.D{{Key: "sku", Value: "pear"}, {Key: "addedAt", Value: now.Add(2 * time.Hour)}},
		}}})
		return err
	})
	// An hour and a bit later the apple line has expired: no read returns
	// it, whatever the monitor has done yet.
	setClockOffset(t, c, 3601)
	var cart struct {
		Items []struct {
			SKU string `bson:"sku"`
		} `bson:"items"`
	}
	if err := carts.FindOne(ctx, bson.D{{Key: "_id", Value: "ann"}}).Decode(&cart); err != nil {
		t.Fatal(err)
	}
	if len(cart.Items) != 1 || cart.Items[0].SKU != "pear" {
		t.Fatalf("cart read with lines %v, want pear only", cart.Items)
	}
	if n, err := carts.CountDocuments(ctx, bson.D{{Key: "items.sku", Value: "apple"}}); err != nil || n != 0 {
		t.Fatalf("a query matched the expired line (%d, %v)", n, err)
	}
	ev := nextEvent(t, cs)
	marker := asM(ev["expiredElements"])
	if marker["index"] != "lines" || marker["expireAfterSeconds"] != int64(3600) {
		t.Fatalf("removal event %v, want expiredElements {index: lines}", ev)
	}
	// As mongod describes an array that lost its head: the pear moved to
	// index 0, and the array was truncated to one element.
	desc := asM(ev["updateDescription"])
	upd := asM(desc["updatedFields"])
	trunc, _ := desc["truncatedArrays"].(bson.A)
	if upd["items.0.sku"] != "pear" || len(trunc) != 1 || asM(trunc[0])["newSize"] != int32(1) {
		t.Fatalf("removal event's updateDescription %v", desc)
	}
	if n, err := carts.CountDocuments(ctx, bson.D{}); err != nil || n != 1 {
		t.Fatalf("the cart went with its line (%d, %v)", n, err)
	}
}

func TestExpireElementsOptionErrors(t *testing.T) {
	db := newDB(t)
	create := func(key string, opts ...bson.E) error {
		spec := append(bson.D{{Key: "key", Value: bson.D{{Key: key, Value: 1}}}, {Key: "name", Value: "x"}}, opts...)
		return db.RunCommand(ctxT(t), bson.D{{Key: "createIndexes", Value: "c"}, {Key: "indexes", Value: bson.A{spec}}}).Err()
	}
	ttl := bson.E{Key: "expireAfterSeconds", Value: 60}
	wantCode(t, create("items.at", bson.E{Key: "expireElements", Value: 1}, ttl), 14, "must be a bool")
	wantCode(t, create("items.at", bson.E{Key: "expireElements", Value: true}), 67, "requires 'expireAfterSeconds'")
	wantCode(t, create("at", bson.E{Key: "expireElements", Value: true}, ttl), 67, "path through an array")
	wantCode(t, create("items.at", bson.E{Key: "expireElements", Value: true}, ttl, bson.E{Key: "refreshOnRead", Value: true}), 67, "cannot be combined")
}
