package integration

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// showExpandedEvents (issue #15): the DDL events and the extra fields
// mongod 8.0 reports with the option, checked against the shapes its
// source and jstests give, on a standalone and on a replica set of one;
// a stream without the option sees none of it.

func TestChangeStreamExpandedStandalone(t *testing.T) {
	checkExpandedEvents(t, newDB(t))
}

func TestChangeStreamExpandedOneMemberSet(t *testing.T) {
	rs := startReplSet(t, 1)
	checkExpandedEvents(t, rs.client().Database("ddl"))
}

// wantSame fails unless got, an embedded document of an event, is want
// field for field, in order.
func wantSame(t *testing.T, what string, got any, want bson.D) {
	t.Helper()
	g, err := bson.Marshal(got)
	if err != nil {
		t.Fatalf("%s: %v (%v)", what, err, got)
	}
	w, _ := bson.Marshal(want)
	if !bytes.Equal(g, w) {
		t.Fatalf("%s = %v, want %v", what, bson.Raw(g), bson.Raw(w))
	}
}

// collUUID is the collection's uuid as listCollections reports it.
func collUUID(t *testing.T, db *mongo.Database, name string) bson.Binary {
	t.Helper()
	specs, err := db.ListCollectionSpecifications(ctxT(t), bson.D{{Key: "name", Value: name}})
	if err != nil || len(specs) != 1 {
		t.Fatalf("listCollections %s: %v %v", name, specs, err)
	}
	return bson.Binary{Subtype: bson.TypeBinaryUUID, Data: specs[0].UUID.Data}
}

func wantUUID(t *testing.T, ev bson.M, want bson.Binary) {
	t.Helper()
	got, ok := ev["collectionUUID"].(bson.Binary)
	if !ok || got.Subtype != bson.TypeBinaryUUID || !bytes.Equal(got.Data, want.Data) {
		t.Fatalf("collectionUUID = %v, want %v: %v", ev["collectionUUID"], want, ev)
	}
}

func wantNoField(t *testing.T, ev bson.M, fields ...string) {
	t.Helper()
	for _, f := range fields {
		if _, ok := ev[f]; ok {
			t.Fatalf("event has %s: %v", f, ev)
		}
	}
}

var idIndexSpec = bson.D{{Key: "v", Value: int32(2)}, {Key: "key", Value: bson.D{{Key: "_id", Value: int32(1)}}}, {Key: "name", Value: "_id_"}}

func checkExpandedEvents(t *testing.T, db *mongo.Database) {
	ctx := ctxT(t)
	expanded := options.ChangeStream().SetShowExpandedEvents(true)
	all, err := db.Watch(ctx, mongo.Pipeline{}, expanded)
	if err != nil {
		t.Fatal(err)
	}
	defer all.Close(ctx)
	plain, err := db.Watch(ctx, mongo.Pipeline{})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close(ctx)
	one, err := db.Collection("base").Watch(ctx, mongo.Pipeline{}, expanded)
	if err != nil {
		t.Fatal(err)
	}
	defer one.Close(ctx)
	cluster, err := db.Client().Watch(ctx, mongo.Pipeline{}, expanded)
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close(ctx)
	w := watchRename(t, db)
	defer w.close()

	createTok := checkCreateAndCRUD(t, db, all)
	checkIndexEvents(t, db, all)
	checkModifyEvents(t, db, all)
	checkViewEvents(t, db, all)
	checkRenameEvents(t, db, all)
	w.check(t, db)

	// A collection stream sees its collection's DDL, not the views'.
	for _, op := range []string{"create", "insert", "createIndexes", "dropIndexes", "modify", "modify", "rename", "invalidate"} {
		wantOp(t, nextEvent(t, one), op)
	}
	// Without the option: the same writes, no DDL event, no extra field,
	// and none of a view's or a time-series collection's events, not
	// even their drops (on mongod they are system.views writes).
	for _, op := range []string{"insert", "insert", "delete", "rename"} {
		ev := nextEvent(t, plain)
		wantOp(t, ev, op)
		wantNoField(t, ev, "collectionUUID", "operationDescription")
	}

	// A cluster stream sees the collections' and the views' DDL too.
	var creates []any
	for len(creates) < 6 {
		if ev := nextEvent(t, cluster); ev["operationType"] == "create" {
			creates = append(creates, ev["nsType"])
		}
	}
	if fmt.Sprint(creates) != "[collection collection collection collection view timeseries]" {
		t.Fatalf("cluster stream's creates: %v", creates)
	}

	// A stream resumed after the create goes on with the insert.
	resumed, err := db.Watch(ctx, mongo.Pipeline{}, options.ChangeStream().SetShowExpandedEvents(true).SetResumeAfter(createTok))
	if err != nil {
		t.Fatal(err)
	}
	defer resumed.Close(ctx)
	ev := nextEvent(t, resumed)
	wantOp(t, ev, "insert")
	if asM(ev["documentKey"])["_id"] != int32(1) {
		t.Fatalf("resumed after create: %v", ev)
	}
	wantOp(t, nextEvent(t, resumed), "create") // the implicit one
}

// checkCreateAndCRUD: an explicit create, an insert's collectionUUID, an
// implicit create before its insert, a clustered collection's create, a
// delete's collectionUUID.
func checkCreateAndCRUD(t *testing.T, db *mongo.Database, cs *mongo.ChangeStream) any {
	ctx := ctxT(t)
	runCmd(t, db, bson.D{{Key: "create", Value: "base"}})
	mustDo(t, func() error {
		_, err := db.Collection("base").InsertOne(ctx, bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: 1}})
		return err
	})
	mustDo(t, func() error {
		_, err := db.Collection("implicit").InsertOne(ctx, bson.D{{Key: "_id", Value: 2}})
		return err
	})
	runCmd(t, db, bson.D{{Key: "create", Value: "clu"}, {Key: "clusteredIndex", Value: bson.D{{Key: "key", Value: bson.D{{Key: "_id", Value: 1}}}, {Key: "unique", Value: true}}}, {Key: "expireAfterSeconds", Value: 3600}})
	base := collUUID(t, db, "base")

	create := nextEvent(t, cs)
	wantOp(t, create, "create")
	wantUUID(t, create, base)
	wantSame(t, "create ns", create["ns"], bson.D{{Key: "db", Value: db.Name()}, {Key: "coll", Value: "base"}})
	wantSame(t, "create operationDescription", create["operationDescription"], bson.D{{Key: "idIndex", Value: idIndexSpec}})
	if create["nsType"] != "collection" {
		t.Fatalf("nsType = %v", create["nsType"])
	}
	wantNoField(t, create, "documentKey", "fullDocument")
	ins := nextEvent(t, cs)
	wantOp(t, ins, "insert")
	wantUUID(t, ins, base)
	wantNoField(t, ins, "operationDescription", "nsType")

	imp := nextEvent(t, cs)
	wantOp(t, imp, "create")
	wantUUID(t, imp, collUUID(t, db, "implicit"))
	wantOp(t, nextEvent(t, cs), "insert")

	clu := nextEvent(t, cs)
	wantOp(t, clu, "create")
	desc := asM(clu["operationDescription"])
	if _, ok := desc["clusteredIndex"]; !ok || desc["expireAfterSeconds"] != int64(3600) {
		t.Fatalf("clustered create: %v", clu)
	}
	if _, ok := desc["idIndex"]; ok {
		t.Fatalf("a clustered collection's create has an idIndex: %v", clu)
	}
	// A delete without a pre-image has an encoding of its own
	// (changestream/encode.go); with the option it carries the UUID too.
	mustDo(t, func() error {
		_, err := db.Collection("implicit").DeleteOne(ctx, bson.D{{Key: "_id", Value: 2}})
		return err
	})
	del := nextEvent(t, cs)
	wantOp(t, del, "delete")
	wantUUID(t, del, collUUID(t, db, "implicit"))
	return create["_id"]
}

// checkIndexEvents: indexes built over documents are one event; an empty
// collection's are one each; a drop is one per index, with its spec.
func checkIndexEvents(t *testing.T, db *mongo.Database, cs *mongo.ChangeStream) {
	ctx := ctxT(t)
	base := db.Collection("base")
	mustDo(t, func() error {
		_, err := base.Indexes().CreateMany(ctx, []mongo.IndexModel{
			{Keys: bson.D{{Key: "a", Value: 1}}},
			{Keys: bson.D{{Key: "b", Value: -1}}, Options: options.Index().SetSparse(true)},
		})
		return err
	})
	aSpec := bson.D{{Key: "v", Value: int32(2)}, {Key: "key", Value: bson.D{{Key: "a", Value: int32(1)}}}, {Key: "name", Value: "a_1"}}
	bSpec := bson.D{{Key: "v", Value: int32(2)}, {Key: "key", Value: bson.D{{Key: "b", Value: int32(-1)}}}, {Key: "name", Value: "b_-1"}, {Key: "sparse", Value: true}}
	ev := nextEvent(t, cs)
	wantOp(t, ev, "createIndexes")
	wantUUID(t, ev, collUUID(t, db, "base"))
	wantSame(t, "createIndexes operationDescription", ev["operationDescription"], bson.D{{Key: "indexes", Value: bson.A{aSpec, bSpec}}})

	runCmd(t, db, bson.D{{Key: "create", Value: "empty"}})
	wantOp(t, nextEvent(t, cs), "create")
	mustDo(t, func() error {
		_, err := db.Collection("empty").Indexes().CreateMany(ctx, []mongo.IndexModel{{Keys: bson.D{{Key: "x", Value: 1}}}, {Keys: bson.D{{Key: "y", Value: 1}}}})
		return err
	})
	for _, name := range []string{"x_1", "y_1"} {
		ev := nextEvent(t, cs)
		wantOp(t, ev, "createIndexes")
		specs, _ := asM(ev["operationDescription"])["indexes"].(bson.A)
		if len(specs) != 1 || asM(specs[0])["name"] != name {
			t.Fatalf("createIndexes on an empty collection: %v", ev)
		}
	}
	runCmd(t, db, bson.D{{Key: "dropIndexes", Value: "base"}, {Key: "index", Value: "b_-1"}})
	ev = nextEvent(t, cs)
	wantOp(t, ev, "dropIndexes")
	wantSame(t, "dropIndexes operationDescription", ev["operationDescription"], bson.D{{Key: "indexes", Value: bson.A{bSpec}}})
}

// checkModifyEvents: collMod of an index and of the validator.
func checkModifyEvents(t *testing.T, db *mongo.Database, cs *mongo.ChangeStream) {
	uuid := collUUID(t, db, "base")
	runCmd(t, db, bson.D{{Key: "collMod", Value: "base"}, {Key: "index", Value: bson.D{{Key: "keyPattern", Value: bson.D{{Key: "a", Value: 1}}}, {Key: "hidden", Value: true}}}})
	ev := nextEvent(t, cs)
	wantOp(t, ev, "modify")
	wantUUID(t, ev, uuid)
	wantSame(t, "modify operationDescription", ev["operationDescription"], bson.D{{Key: "index", Value: bson.D{{Key: "name", Value: "a_1"}, {Key: "hidden", Value: true}}}})
	wantSame(t, "modify stateBeforeChange", ev["stateBeforeChange"], bson.D{
		{Key: "collectionOptions", Value: bson.D{{Key: "uuid", Value: uuid}}},
		{Key: "indexOptions", Value: bson.D{{Key: "hidden", Value: false}}},
	})
	validator := bson.D{{Key: "a", Value: bson.D{{Key: "$type", Value: "number"}}}}
	runCmd(t, db, bson.D{{Key: "collMod", Value: "base"}, {Key: "validator", Value: validator}})
	ev = nextEvent(t, cs)
	wantOp(t, ev, "modify")
	wantSame(t, "modify operationDescription", ev["operationDescription"], bson.D{{Key: "validator", Value: validator}})
	wantSame(t, "modify stateBeforeChange", ev["stateBeforeChange"], bson.D{{Key: "collectionOptions", Value: bson.D{{Key: "uuid", Value: uuid}}}})
}

// checkViewEvents: a view's and a time-series collection's create, modify
// (collMod of the view's pipeline, of the time-series granularity) and
// drop, as mongod reports them from system.views: no collectionUUID, and
// nsType on the create.
func checkViewEvents(t *testing.T, db *mongo.Database, cs *mongo.ChangeStream) {
	pipeline := bson.A{bson.D{{Key: "$match", Value: bson.D{{Key: "a", Value: int32(2)}}}}}
	runCmd(t, db, bson.D{{Key: "create", Value: "v"}, {Key: "viewOn", Value: "base"}, {Key: "pipeline", Value: pipeline}})
	ev := nextEvent(t, cs)
	wantOp(t, ev, "create")
	wantSame(t, "view create operationDescription", ev["operationDescription"], bson.D{{Key: "viewOn", Value: "base"}, {Key: "pipeline", Value: pipeline}})
	if ev["nsType"] != "view" {
		t.Fatalf("view nsType = %v", ev["nsType"])
	}
	wantNoField(t, ev, "collectionUUID")
	changed := bson.A{bson.D{{Key: "$match", Value: bson.D{{Key: "a", Value: int32(3)}}}}}
	runCmd(t, db, bson.D{{Key: "collMod", Value: "v"}, {Key: "pipeline", Value: changed}})
	ev = nextEvent(t, cs)
	wantOp(t, ev, "modify")
	wantSame(t, "view modify operationDescription", ev["operationDescription"], bson.D{{Key: "viewOn", Value: "base"}, {Key: "pipeline", Value: changed}})
	wantNoField(t, ev, "collectionUUID", "stateBeforeChange", "nsType")
	runCmd(t, db, bson.D{{Key: "drop", Value: "v"}})
	ev = nextEvent(t, cs)
	wantOp(t, ev, "drop")
	wantNoField(t, ev, "collectionUUID", "operationDescription")

	runCmd(t, db, bson.D{{Key: "create", Value: "ts"}, {Key: "timeseries", Value: bson.D{{Key: "timeField", Value: "time"}}}})
	unpack := func(span int32) bson.D {
		return bson.D{{Key: "viewOn", Value: "system.buckets.ts"}, {Key: "pipeline", Value: bson.A{bson.D{{Key: "$_internalUnpackBucket", Value: bson.D{{Key: "timeField", Value: "time"}, {Key: "bucketMaxSpanSeconds", Value: span}}}}}}}
	}
	ev = nextEvent(t, cs)
	wantOp(t, ev, "create")
	wantSame(t, "time-series create operationDescription", ev["operationDescription"], unpack(3600))
	if ev["nsType"] != "timeseries" {
		t.Fatalf("time-series nsType = %v", ev["nsType"])
	}
	runCmd(t, db, bson.D{{Key: "collMod", Value: "ts"}, {Key: "timeseries", Value: bson.D{{Key: "granularity", Value: "minutes"}}}})
	ev = nextEvent(t, cs)
	wantOp(t, ev, "modify")
	wantSame(t, "time-series modify operationDescription", ev["operationDescription"], unpack(86400))
	wantNoField(t, ev, "collectionUUID", "stateBeforeChange", "nsType")
	runCmd(t, db, bson.D{{Key: "drop", Value: "ts"}})
	wantOp(t, nextEvent(t, cs), "drop")
}

// checkRenameEvents: a rename over an existing collection is one rename
// event, as mongod's one oplog entry, naming the replaced collection's
// UUID in operationDescription.dropTarget; no drop of the replaced one.
func checkRenameEvents(t *testing.T, db *mongo.Database, cs *mongo.ChangeStream) {
	uuid, target := collUUID(t, db, "base"), collUUID(t, db, "empty")
	runCmd(t, db.Client().Database("admin"), bson.D{
		{Key: "renameCollection", Value: db.Name() + ".base"}, {Key: "to", Value: db.Name() + ".empty"}, {Key: "dropTarget", Value: true},
	})
	ev := nextEvent(t, cs)
	wantOp(t, ev, "rename")
	wantUUID(t, ev, uuid)
	to := bson.D{{Key: "db", Value: db.Name()}, {Key: "coll", Value: "empty"}}
	wantSame(t, "rename to", ev["to"], to)
	wantSame(t, "rename operationDescription", ev["operationDescription"], bson.D{{Key: "to", Value: to}, {Key: "dropTarget", Value: target}})
}

// renameWatchers are streams open before the rename of base over empty:
// on the source without the option, on the target with and without it,
// and a cluster stream without it.
type renameWatchers struct {
	source, target, targetExpanded, cluster *mongo.ChangeStream
}

func watchRename(t *testing.T, db *mongo.Database) *renameWatchers {
	t.Helper()
	ctx := ctxT(t)
	watch := func(w interface {
		Watch(context.Context, any, ...options.Lister[options.ChangeStreamOptions]) (*mongo.ChangeStream, error)
	}, opts ...options.Lister[options.ChangeStreamOptions]) *mongo.ChangeStream {
		cs, err := w.Watch(ctx, mongo.Pipeline{}, opts...)
		if err != nil {
			t.Fatal(err)
		}
		return cs
	}
	return &renameWatchers{
		source:         watch(db.Collection("base")),
		target:         watch(db.Collection("empty")),
		targetExpanded: watch(db.Collection("empty"), options.ChangeStream().SetShowExpandedEvents(true)),
		cluster:        watch(db.Client()),
	}
}

func (w *renameWatchers) close() {
	for _, cs := range []*mongo.ChangeStream{w.source, w.target, w.targetExpanded, w.cluster} {
		_ = cs.Close(context.Background())
	}
}

// check: as on mongod 8.0 (change_stream_filter_helpers.cpp takes a
// rename whose 'to' is the watched namespace; metadata_notifications.js),
// the streams on the source and on the target both see the rename, then
// an invalidate; the target's drop reaches no stream; a stream without
// the option sees none of the views' events.
func (w *renameWatchers) check(t *testing.T, db *mongo.Database) {
	t.Helper()
	to := bson.D{{Key: "db", Value: db.Name()}, {Key: "coll", Value: "empty"}}
	wantOps := func(name string, cs *mongo.ChangeStream, ops ...string) {
		t.Helper()
		for _, op := range ops {
			ev := nextEvent(t, cs)
			if ev["operationType"] != op {
				t.Fatalf("%s stream: operationType = %v, want %s: %v", name, ev["operationType"], op, ev)
			}
			if op == "rename" {
				wantSame(t, name+" stream's rename to", ev["to"], to)
				wantNoField(t, ev, "operationDescription", "collectionUUID")
			}
		}
	}
	wantOps("source", w.source, "insert", "rename", "invalidate")
	wantOps("target", w.target, "rename", "invalidate")
	wantOps("expanded target", w.targetExpanded, "create", "createIndexes", "createIndexes")
	ev := nextEvent(t, w.targetExpanded)
	wantOp(t, ev, "rename")
	if _, ok := asM(ev["operationDescription"])["dropTarget"]; !ok {
		t.Fatalf("expanded target stream's rename: %v", ev)
	}
	wantOp(t, nextEvent(t, w.targetExpanded), "invalidate")
	var got []any
	for len(got) == 0 || got[len(got)-1] != "rename" {
		if ev := nextEvent(t, w.cluster); asM(ev["ns"])["db"] == db.Name() {
			got = append(got, ev["operationType"])
		}
	}
	if fmt.Sprint(got) != "[insert insert delete rename]" {
		t.Fatalf("cluster stream without the option: %v", got)
	}
}

// TestChangeStreamExpandedUpdateDescription: with the option an update's
// updateDescription has disambiguatedPaths ({} when no path is
// ambiguous); without it, never.
func TestChangeStreamExpandedUpdateDescription(t *testing.T) {
	db := newDB(t)
	ctx := ctxT(t)
	coll := db.Collection("u")
	mustDo(t, func() error {
		_, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}, {Key: "o", Value: bson.D{{Key: "0", Value: "a"}}}, {Key: "n", Value: 1}})
		return err
	})
	expanded, err := coll.Watch(ctx, mongo.Pipeline{}, options.ChangeStream().SetShowExpandedEvents(true))
	if err != nil {
		t.Fatal(err)
	}
	defer expanded.Close(ctx)
	plain, err := coll.Watch(ctx, mongo.Pipeline{})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close(ctx)
	for _, set := range []bson.D{{{Key: "n", Value: 2}}, {{Key: "o.0", Value: "b"}}} {
		mustDo(t, func() error {
			_, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$set", Value: set}})
			return err
		})
	}
	want := []bson.D{{}, {{Key: "o.0", Value: bson.A{"o", "0"}}}}
	for _, w := range want {
		ev := nextEvent(t, expanded)
		wantOp(t, ev, "update")
		wantSame(t, "disambiguatedPaths", asM(ev["updateDescription"])["disambiguatedPaths"], w)
		ev = nextEvent(t, plain)
		if _, ok := asM(ev["updateDescription"])["disambiguatedPaths"]; ok {
			t.Fatalf("a stream without showExpandedEvents has disambiguatedPaths: %v", ev)
		}
	}
}

// TestChangeStreamExpandedOnSecondary: DDL events travel in the entries
// of the set like any other, so a secondary's log holds them, and a
// stream opened there resumes after a create event's token from the
// primary.
func TestChangeStreamExpandedOnSecondary(t *testing.T) {
	rs := startReplSet(t, 3)
	ctx := ctxT(t)
	db := rs.client().Database("ddl")
	expanded := func() *options.ChangeStreamOptionsBuilder { return options.ChangeStream().SetShowExpandedEvents(true) }
	cs, err := db.Watch(ctx, mongo.Pipeline{}, expanded())
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close(ctx)
	runCmd(t, db, bson.D{{Key: "create", Value: "c"}})
	mustDo(t, func() error {
		_, err := db.Collection("c").Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "k", Value: 1}}})
		return err
	})
	create := nextEvent(t, cs)
	wantOp(t, create, "create")
	wantOp(t, nextEvent(t, cs), "createIndexes")

	primary := rs.waitPrimary(-1, 10*time.Second)
	sc := rs.direct((primary + 1) % 3)
	defer func() { _ = sc.Disconnect(context.Background()) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ss, err := sc.Database("ddl").Watch(ctx, mongo.Pipeline{}, expanded().SetResumeAfter(create["_id"]))
		if err == nil {
			ev := nextEvent(t, ss)
			_ = ss.Close(ctx)
			wantOp(t, ev, "createIndexes")
			wantUUID(t, ev, collUUID(t, db, "c"))
			specs, _ := asM(ev["operationDescription"])["indexes"].(bson.A)
			if len(specs) != 1 || asM(specs[0])["name"] != "k_1" {
				t.Fatalf("secondary's createIndexes: %v", ev)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("watch on a secondary: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
