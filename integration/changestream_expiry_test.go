package integration

import (
	"slices"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/mayflydb/mayfly/internal/app"
)

// TestChangeStreamExpiryEvents: documents the TTL monitor deletes come as
// deletes marked expired, with the TTL index, its expireAfterSeconds and
// the moment each expired; a stream filters them with one $match. With
// pre-images on, the expired document comes along. It measures how late
// each event's wallTime is after expiredAt over 20 000 expiries in one
// second and holds the p99 to the deletion lateness target (250 ms).
func TestChangeStreamExpiryEvents(t *testing.T) {
	s := startServer(t, app.Config{TTLSleepSecs: 1})
	db := connect(t, s).Database("shop")
	ctx := ctxT(t)
	mustDo(t, func() error {
		return db.CreateCollection(ctx, "carts", options.CreateCollection().SetChangeStreamPreAndPostImages(bson.D{{Key: "enabled", Value: true}}))
	})
	carts := db.Collection("carts")
	mustDo(t, func() error {
		_, err := carts.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "touched", Value: 1}}, Options: options.Index().SetExpireAfterSeconds(2).SetName("touched_ttl")})
		return err
	})
	expiries := bson.A{bson.D{{Key: "$match", Value: bson.D{{Key: "operationType", Value: "delete"}, {Key: "expired", Value: bson.D{{Key: "$exists", Value: true}}}}}}}
	cs, err := carts.Watch(ctx, expiries, options.ChangeStream().SetFullDocumentBeforeChange(options.WhenAvailable))
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close(ctx)
	// A client's delete is not an expiry: the $match leaves it out.
	mustDo(t, func() error { _, err := carts.InsertOne(ctx, bson.D{{Key: "_id", Value: -1}}); return err })
	mustDo(t, func() error { _, err := carts.DeleteOne(ctx, bson.D{{Key: "_id", Value: -1}}); return err })

	const n = 20000                      // a storm: 20 000 expiries a second
	base := time.Now().Add(-time.Second) // expiring 1 s to 2 s from now
	docs := make([]any, n)
	for i := range docs {
		touched := base.Add(time.Duration(i) * time.Second / n)
		docs[i] = bson.D{{Key: "_id", Value: int32(i)}, {Key: "touched", Value: bson.NewDateTimeFromTime(touched)}, {Key: "items", Value: bson.A{"sku", i}}}
	}
	mustDo(t, func() error {
		_, err := carts.InsertMany(ctx, docs, options.InsertMany().SetOrdered(false))
		return err
	})

	late := make([]time.Duration, 0, n)
	seen := map[int32]bool{}
	for len(seen) < n {
		ev := nextEvent(t, cs)
		id := asM(ev["documentKey"])["_id"].(int32)
		exp := asM(ev["expired"])
		if exp["index"] != "touched_ttl" || exp["expireAfterSeconds"] != int64(2) {
			t.Fatalf("expired = %v", exp)
		}
		touched := base.Add(time.Duration(id) * time.Second / n)
		expiredAt := exp["expiredAt"].(bson.DateTime)
		if want := bson.NewDateTimeFromTime(touched.Add(2 * time.Second)); expiredAt != want {
			t.Fatalf("expiredAt %v, want %v", expiredAt.Time(), want.Time())
		}
		pre := asM(ev["fullDocumentBeforeChange"])
		if pre["_id"] != id || len(pre["items"].(bson.A)) != 2 {
			t.Fatalf("fullDocumentBeforeChange = %v", pre)
		}
		if seen[id] {
			t.Fatalf("document %d expired twice", id)
		}
		seen[id] = true
		late = append(late, ev["wallTime"].(bson.DateTime).Time().Sub(expiredAt.Time()))
	}
	slices.Sort(late)
	p50, p99 := late[len(late)/2], late[len(late)*99/100]
	t.Logf("expiry events: %d, wallTime - expiredAt p50 %v p99 %v max %v", n, p50, p99, late[len(late)-1])
	if late[0] < 0 {
		t.Fatalf("an expiry event before its expiry: %v", late[0])
	}
	// The 250 ms target is the bench's to measure (-storm-streams); here
	// a bound far below mongod's 60 s pass tells prompt deletion from a
	// sweep without failing on a busy machine.
	if p99 > 3*time.Second {
		t.Fatalf("p99 lateness %v: the events are not prompt", p99)
	}
}

// TestChangeStreamExpiredReplacedByInsert: an insert over an expired
// document the monitor has not deleted yet reports that document's expiry
// first, then the insert.
func TestChangeStreamExpiredReplacedByInsert(t *testing.T) {
	s := startServer(t, app.Config{TTLDisabled: true})
	db := connect(t, s).Database("shop")
	ctx := ctxT(t)
	sessions := db.Collection("sessions")
	mustDo(t, func() error {
		_, err := sessions.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "at", Value: 1}}, Options: options.Index().SetExpireAfterSeconds(60)})
		return err
	})
	old := time.Now().Add(-time.Hour)
	mustDo(t, func() error {
		_, err := sessions.InsertOne(ctx, bson.D{{Key: "_id", Value: "s1"}, {Key: "at", Value: bson.NewDateTimeFromTime(old)}})
		return err
	})
	cs, err := sessions.Watch(ctx, mongo.Pipeline{})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close(ctx)
	mustDo(t, func() error {
		_, err := sessions.InsertOne(ctx, bson.D{{Key: "_id", Value: "s1"}, {Key: "at", Value: bson.NewDateTimeFromTime(time.Now())}})
		return err
	})
	exp := nextEvent(t, cs)
	wantOp(t, exp, "delete")
	e := asM(exp["expired"])
	if e["index"] != "at_1" || e["expiredAt"].(bson.DateTime) != bson.NewDateTimeFromTime(old.Add(time.Minute)) {
		t.Fatalf("expired = %v", e)
	}
	ins := nextEvent(t, cs)
	wantOp(t, ins, "insert")
	if asM(ins["documentKey"])["_id"] != "s1" {
		t.Fatalf("insert = %v", ins)
	}
}

// TestCartExpiryGivesStockBack is the application: carts reserve stock
// and expire when abandoned; a watcher gives an expired cart's items back.
func TestCartExpiryGivesStockBack(t *testing.T) {
	db := connect(t, startServer(t, app.Config{})).Database("shop")
	ctx := ctxT(t)
	mustDo(t, func() error {
		return db.CreateCollection(ctx, "carts", options.CreateCollection().SetChangeStreamPreAndPostImages(bson.D{{Key: "enabled", Value: true}}))
	})
	carts, stock := db.Collection("carts"), db.Collection("stock")
	mustDo(t, func() error {
		_, err := carts.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "touched", Value: 1}}, Options: options.Index().SetExpireAfterSeconds(1)})
		return err
	})
	mustDo(t, func() error {
		_, err := stock.InsertOne(ctx, bson.D{{Key: "_id", Value: "apple"}, {Key: "qty", Value: 10}})
		return err
	})
	expired := mongo.Pipeline{{{Key: "$match", Value: bson.D{{Key: "operationType", Value: "delete"}, {Key: "expired", Value: bson.D{{Key: "$exists", Value: true}}}}}}}
	cs, err := carts.Watch(ctx, expired, options.ChangeStream().SetFullDocumentBeforeChange(options.WhenAvailable))
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close(ctx)
	type item struct {
		SKU string `bson:"sku"`
		N   int    `bson:"n"`
	}
	mustDo(t, func() error {
		_, err := carts.InsertOne(ctx, bson.D{{Key: "_id", Value: "c1"}, {Key: "items", Value: []item{{"apple", 3}}}, {Key: "touched", Value: time.Now()}})
		return err
	})
	mustDo(t, func() error {
		_, err := stock.UpdateByID(ctx, "apple", bson.D{{Key: "$inc", Value: bson.D{{Key: "qty", Value: -3}}}})
		return err
	})
	var ev struct {
		Before struct {
			Items []item `bson:"items"`
		} `bson:"fullDocumentBeforeChange"`
	}
	if !cs.Next(ctx) {
		t.Fatal(cs.Err())
	}
	mustDo(t, func() error { return cs.Decode(&ev) })
	for _, it := range ev.Before.Items {
		mustDo(t, func() error {
			_, err := stock.UpdateByID(ctx, it.SKU, bson.D{{Key: "$inc", Value: bson.D{{Key: "qty", Value: it.N}}}})
			return err
		})
	}
	var apple struct {
		Qty int `bson:"qty"`
	}
	mustDo(t, func() error { return stock.FindOne(ctx, bson.D{{Key: "_id", Value: "apple"}}).Decode(&apple) })
	if apple.Qty != 10 {
		t.Fatalf("stock %d after the cart expired, want 10", apple.Qty)
	}
}
