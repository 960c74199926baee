package integration

import (
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/mayflydb/mayfly/internal/app"
)

// TestChangeStreamDatabaseAndCluster: a database stream sees every
// collection of its database and ends with dropDatabase; a cluster stream
// sees every database and goes on.
func TestChangeStreamDatabaseAndCluster(t *testing.T) {
	c := connect(t, startServer(t, app.Config{}))
	ctx := ctxT(t)
	shop, other := c.Database("shop"), c.Database("other")
	dbs, err := shop.Watch(ctx, mongo.Pipeline{})
	if err != nil {
		t.Fatal(err)
	}
	defer dbs.Close(ctx)
	all, err := c.Watch(ctx, mongo.Pipeline{})
	if err != nil {
		t.Fatal(err)
	}
	defer all.Close(ctx)
	mustDo(t, func() error {
		_, err := shop.Collection("a").InsertOne(ctx, bson.D{{Key: "_id", Value: 1}})
		return err
	})
	mustDo(t, func() error {
		_, err := other.Collection("b").InsertOne(ctx, bson.D{{Key: "_id", Value: 2}})
		return err
	})
	mustDo(t, func() error {
		_, err := shop.Collection("c").InsertOne(ctx, bson.D{{Key: "_id", Value: 3}})
		return err
	})
	mustDo(t, func() error {
		return c.Database("admin").RunCommand(ctx, bson.D{{Key: "renameCollection", Value: "shop.c"}, {Key: "to", Value: "shop.d"}}).Err()
	})
	mustDo(t, func() error { return shop.Drop(ctx) })

	for _, want := range []string{"a", "c"} {
		ev := nextEvent(t, dbs)
		wantOp(t, ev, "insert")
		if asM(ev["ns"])["coll"] != want {
			t.Fatalf("database stream: ns %v, want shop.%s", ev["ns"], want)
		}
	}
	ren := nextEvent(t, dbs)
	wantOp(t, ren, "rename")
	if to := asM(ren["to"]); to["db"] != "shop" || to["coll"] != "d" {
		t.Fatalf("rename to = %v", ren["to"])
	}
	for _, coll := range []string{"a", "d"} {
		drop := nextEvent(t, dbs)
		wantOp(t, drop, "drop")
		if asM(drop["ns"])["coll"] != coll {
			t.Fatalf("drop of %v, want shop.%s", drop["ns"], coll)
		}
	}
	dd := nextEvent(t, dbs)
	wantOp(t, dd, "dropDatabase")
	if ns := asM(dd["ns"]); ns["db"] != "shop" || len(ns) != 1 {
		t.Fatalf("dropDatabase ns = %v", ns)
	}
	wantOp(t, nextEvent(t, dbs), "invalidate")
	if dbs.Next(ctx) {
		t.Fatalf("event after invalidate: %v", dbs.Current)
	}
	if dbs.ID() != 0 {
		t.Fatalf("cursor %d still open after invalidate", dbs.ID())
	}

	var got []string
	for len(got) < 7 {
		ev := nextEvent(t, all)
		ns := asM(ev["ns"])
		got = append(got, ev["operationType"].(string)+":"+ns["db"].(string))
	}
	want := []string{"insert:shop", "insert:other", "insert:shop", "rename:shop", "drop:shop", "drop:shop", "dropDatabase:shop"}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("cluster stream %v, want %v", got, want)
		}
	}
}

// TestChangeStreamCollectionInvalidate: a collection stream ends with
// drop then invalidate; startAfter the invalidate token opens a stream
// on the collection created again, resumeAfter it is refused.
func TestChangeStreamCollectionInvalidate(t *testing.T) {
	db := newDB(t)
	ctx := ctxT(t)
	coll := db.Collection("c")
	mustDo(t, func() error { _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}}); return err })
	cs, err := coll.Watch(ctx, mongo.Pipeline{})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close(ctx)
	mustDo(t, func() error { return coll.Drop(ctx) })
	wantOp(t, nextEvent(t, cs), "drop")
	inv := nextEvent(t, cs)
	wantOp(t, inv, "invalidate")
	mustDo(t, func() error { _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 2}}); return err })
	after, err := coll.Watch(ctx, mongo.Pipeline{}, options.ChangeStream().SetStartAfter(inv["_id"]))
	if err != nil {
		t.Fatal(err)
	}
	defer after.Close(ctx)
	ev := nextEvent(t, after)
	wantOp(t, ev, "insert")
	if asM(ev["documentKey"])["_id"] != int32(2) {
		t.Fatalf("startAfter: %v", ev)
	}
	_, err = coll.Watch(ctx, mongo.Pipeline{}, options.ChangeStream().SetResumeAfter(inv["_id"]))
	wantCode(t, err, 260, "not allowed from an invalidate notification")
}

// TestChangeStreamFullDocumentModes: updateLookup reads the document as
// it is now; whenAvailable and required use the post-image a collection
// with changeStreamPreAndPostImages keeps, and required fails without.
func TestChangeStreamFullDocumentModes(t *testing.T) {
	db := newDB(t)
	ctx := ctxT(t)
	plain := db.Collection("plain")
	mustDo(t, func() error {
		_, err := plain.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}, {Key: "n", Value: 0}})
		return err
	})
	lookup, err := plain.Watch(ctx, mongo.Pipeline{}, options.ChangeStream().SetFullDocument(options.UpdateLookup))
	if err != nil {
		t.Fatal(err)
	}
	defer lookup.Close(ctx)
	required, err := plain.Watch(ctx, mongo.Pipeline{}, options.ChangeStream().SetFullDocument(options.Required))
	if err != nil {
		t.Fatal(err)
	}
	defer required.Close(ctx)
	inc := bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}}
	mustDo(t, func() error { _, err := plain.UpdateOne(ctx, bson.D{{Key: "_id", Value: 1}}, inc); return err })
	mustDo(t, func() error { _, err := plain.UpdateOne(ctx, bson.D{{Key: "_id", Value: 1}}, inc); return err })
	// updateLookup reads the current document: both events see n = 2.
	for i := 0; i < 2; i++ {
		ev := nextEvent(t, lookup)
		if asM(ev["fullDocument"])["n"] != int32(2) {
			t.Fatalf("updateLookup fullDocument = %v", ev["fullDocument"])
		}
	}
	if required.Next(ctx) {
		t.Fatalf("required without post-images gave %v", required.Current)
	}
	wantCode(t, required.Err(), 47, "post-image was not found")

	mustDo(t, func() error {
		return db.CreateCollection(ctx, "imaged", options.CreateCollection().SetChangeStreamPreAndPostImages(bson.D{{Key: "enabled", Value: true}}))
	})
	imaged := db.Collection("imaged")
	var info bson.M
	mustDo(t, func() error {
		return db.RunCommand(ctx, bson.D{{Key: "listCollections", Value: 1}, {Key: "filter", Value: bson.D{{Key: "name", Value: "imaged"}}}}).Decode(&info)
	})
	if first := asM(asM(info["cursor"])["firstBatch"].(bson.A)[0]); asM(asM(first["options"])["changeStreamPreAndPostImages"])["enabled"] != true {
		t.Fatalf("listCollections options = %v", first["options"])
	}
	mustDo(t, func() error {
		_, err := imaged.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}, {Key: "n", Value: 0}})
		return err
	})
	images, err := imaged.Watch(ctx, mongo.Pipeline{}, options.ChangeStream().SetFullDocument(options.Required).SetFullDocumentBeforeChange(options.Required))
	if err != nil {
		t.Fatal(err)
	}
	defer images.Close(ctx)
	mustDo(t, func() error { _, err := imaged.UpdateOne(ctx, bson.D{{Key: "_id", Value: 1}}, inc); return err })
	mustDo(t, func() error { _, err := imaged.UpdateOne(ctx, bson.D{{Key: "_id", Value: 1}}, inc); return err })
	for want := int32(1); want <= 2; want++ {
		ev := nextEvent(t, images)
		if asM(ev["fullDocument"])["n"] != want || asM(ev["fullDocumentBeforeChange"])["n"] != want-1 {
			t.Fatalf("post-image %v pre-image %v, want n %d and %d", ev["fullDocument"], ev["fullDocumentBeforeChange"], want, want-1)
		}
	}
	// collMod switches them off: a delete then has no pre-image.
	mustDo(t, func() error {
		return db.RunCommand(ctx, bson.D{{Key: "collMod", Value: "imaged"}, {Key: "changeStreamPreAndPostImages", Value: bson.D{{Key: "enabled", Value: false}}}}).Err()
	})
	when, err := imaged.Watch(ctx, mongo.Pipeline{}, options.ChangeStream().SetFullDocumentBeforeChange(options.WhenAvailable))
	if err != nil {
		t.Fatal(err)
	}
	defer when.Close(ctx)
	mustDo(t, func() error { _, err := imaged.DeleteOne(ctx, bson.D{{Key: "_id", Value: 1}}); return err })
	del := nextEvent(t, when)
	if v, ok := del["fullDocumentBeforeChange"]; !ok || v != nil {
		t.Fatalf("whenAvailable without a pre-image: %v", del)
	}
}

// TestChangeStreamPipelineAndErrors: stages after $changeStream run on
// the events; a stage that changes _id, an unsupported stage and bad
// resume options fail as on mongod.
func TestChangeStreamPipelineAndErrors(t *testing.T) {
	db := newDB(t)
	ctx := ctxT(t)
	coll := db.Collection("c")
	pipe := mongo.Pipeline{
		{{Key: "$match", Value: bson.D{{Key: "fullDocument.keep", Value: true}}}},
		{{Key: "$project", Value: bson.D{{Key: "operationType", Value: 1}, {Key: "k", Value: "$fullDocument._id"}}}},
		{{Key: "$addFields", Value: bson.D{{Key: "seen", Value: true}}}},
	}
	cs, err := coll.Watch(ctx, pipe)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close(ctx)
	mustDo(t, func() error {
		_, err := coll.InsertMany(ctx, []any{bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "_id", Value: 2}, {Key: "keep", Value: true}}})
		return err
	})
	ev := nextEvent(t, cs)
	if ev["k"] != int32(2) || ev["seen"] != true || len(ev) != 4 {
		t.Fatalf("pipeline output %v", ev)
	}
	_, err = coll.Watch(ctx, mongo.Pipeline{{{Key: "$group", Value: bson.D{{Key: "_id", Value: nil}}}}})
	wantCode(t, err, 20, "$group is not permitted in a $changeStream pipeline")
	bad := bson.D{{Key: "_data", Value: "00"}}
	_, err = coll.Watch(ctx, mongo.Pipeline{}, options.ChangeStream().SetResumeAfter(bad))
	wantCode(t, err, 9, "Bad resume token")
	_, err = coll.Watch(ctx, mongo.Pipeline{}, options.ChangeStream().SetResumeAfter(bad).SetStartAtOperationTime(&bson.Timestamp{T: 1}))
	wantCode(t, err, 40674, "Only one type of resume option")
	idChange, err := coll.Watch(ctx, mongo.Pipeline{{{Key: "$project", Value: bson.D{{Key: "_id", Value: 0}}}}})
	if err != nil {
		t.Fatal(err)
	}
	defer idChange.Close(ctx)
	mustDo(t, func() error { _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 3}}); return err })
	if idChange.Next(ctx) {
		t.Fatal("an event without its _id")
	}
	wantCode(t, idChange.Err(), 280, "_id field, which contains the resume token, was modified")
}

// TestChangeStreamHistoryLost: once the change log's retention has
// dropped the changes after a token, resuming from it answers 286, and a
// token that was never in the log answers 280.
func TestChangeStreamHistoryLost(t *testing.T) {
	db := newDB(t)
	ctx := ctxT(t)
	coll := db.Collection("c")
	cs, err := coll.Watch(ctx, mongo.Pipeline{})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close(ctx)
	mustDo(t, func() error { _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}}); return err })
	mustDo(t, func() error { _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 2}}); return err })
	first := nextEvent(t, cs)["_id"]
	// A token of this server's form naming no change in the log.
	tok := asM(first)["_data"].(string)
	unknown := bson.D{{Key: "_data", Value: tok[:len(tok)-10] + "00000F0000"}}
	_, err = coll.Watch(ctx, mongo.Pipeline{}, options.ChangeStream().SetResumeAfter(unknown))
	wantCode(t, err, 280, "the resume token was not found")

	time.Sleep(2100 * time.Millisecond)
	mustDo(t, func() error {
		return db.Client().Database("admin").RunCommand(ctx, bson.D{{Key: "setParameter", Value: 1}, {Key: "mayflyChangeStreamRetentionSecs", Value: 1}}).Err()
	})
	_, err = coll.Watch(ctx, mongo.Pipeline{}, options.ChangeStream().SetResumeAfter(first))
	wantCode(t, err, 286, "Resume of change stream was not possible")
	hourAgo := &bson.Timestamp{T: uint32(time.Now().Add(-time.Hour).Unix())}
	_, err = coll.Watch(ctx, mongo.Pipeline{}, options.ChangeStream().SetStartAtOperationTime(hourAgo))
	wantCode(t, err, 286, "")
	// A stream opened now starts after the trimmed changes and works.
	fresh, err := coll.Watch(ctx, mongo.Pipeline{})
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close(ctx)
	mustDo(t, func() error { _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 3}}); return err })
	if ev := nextEvent(t, fresh); asM(ev["documentKey"])["_id"] != int32(3) {
		t.Fatalf("after the trim: %v", ev)
	}
}
