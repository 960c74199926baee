package integration

import (
	"context"
	"fmt"
	"regexp"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestCreateIndexesAbortsWholeBuild: mongod builds a createIndexes'
// indexes as one build (index_builds_coordinator); a duplicate key in
// the second index aborts the first too, the reply is the second's error
// with createIndexes' "Index build failed" context
// (create_indexes_cmd.cpp), and no stream sees a createIndexes
// (jstests/change_streams/ddl_abort_index_build_event.js: only the
// system events, which Mayfly has none of).
func TestCreateIndexesAbortsWholeBuild(t *testing.T) {
	db := newDB(t)
	ctx := ctxT(t)
	c := db.Collection("c")
	insertDocs(t, c, bson.D{{Key: "_id", Value: 0}, {Key: "a", Value: 0}, {Key: "b", Value: 0}}, bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: 1}, {Key: "b", Value: 0}})
	cs, err := c.Watch(ctx, mongo.Pipeline{}, options.ChangeStream().SetShowExpandedEvents(true))
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close(ctx)
	ce := cmdErr(t, db, bson.D{{Key: "createIndexes", Value: "c"}, {Key: "indexes", Value: bson.A{
		bson.D{{Key: "key", Value: bson.D{{Key: "a", Value: 1}}}, {Key: "name", Value: "a_1"}, {Key: "unique", Value: true}},
		bson.D{{Key: "key", Value: bson.D{{Key: "b", Value: 1}}}, {Key: "name", Value: "b_1"}, {Key: "unique", Value: true}},
	}}})
	uuid := collUUID(t, db, "c")
	want := regexp.MustCompile(`^Index build failed: [0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}: Collection test\.c \( ` +
		regexp.QuoteMeta(uuidString(uuid.Data)) + ` \) :: caused by :: E11000 duplicate key error collection: test\.c index: b_1 dup key: \{ b: 0 \}$`)
	if ce.Code != 11000 || ce.Name != "DuplicateKey" || !want.MatchString(ce.Message) {
		t.Fatalf("error %d %s %q", ce.Code, ce.Name, ce.Message)
	}
	var extra struct {
		KeyPattern bson.D `bson:"keyPattern"`
		KeyValue   bson.D `bson:"keyValue"`
	}
	if err := bson.Unmarshal(ce.Raw, &extra); err != nil {
		t.Fatal(err)
	}
	wantSame(t, "keyPattern", extra.KeyPattern, bson.D{{Key: "b", Value: int32(1)}})
	wantSame(t, "keyValue", extra.KeyValue, bson.D{{Key: "b", Value: int32(0)}})
	specs, err := c.Indexes().ListSpecifications(ctx)
	if err != nil || len(specs) != 1 {
		t.Fatalf("indexes after the aborted build: %v %v", specs, err)
	}
	insertDocs(t, c, bson.D{{Key: "_id", Value: 2}})
	wantOp(t, nextEvent(t, cs), "insert") // no createIndexes before it
}

func uuidString(b []byte) string {
	h := fmt.Sprintf("%x", b)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// TestChangeStreamRenameAcrossDatabases: mongod 8.0 renames across
// databases by copying (rename_collection.cpp,
// renameCollectionAcrossDatabases): a "tmpXXXXX.renameCollection" of the
// target database is created, given the source's indexes, filled, renamed
// over the target, and the source dropped; each stream sees its part
// (jstests/change_streams/ddl_rename_cross_db.js).
func TestChangeStreamRenameAcrossDatabases(t *testing.T) {
	t.Run("standalone", func(t *testing.T) { checkRenameAcrossDatabases(t, newDB(t).Client()) })
	t.Run("replset", func(t *testing.T) { checkRenameAcrossDatabases(t, startReplSet(t, 1).client()) })
}

var tmpRenameColl = regexp.MustCompile(`^tmp[a-zA-Z0-9]{5}\.renameCollection$`)

func checkRenameAcrossDatabases(t *testing.T, client *mongo.Client) {
	ctx := ctxT(t)
	db1, db2 := client.Database("rsrc"), client.Database("rdst")
	insertDocs(t, db1.Collection("source"), bson.D{{Key: "_id", Value: 1}, {Key: "k", Value: "a"}}, bson.D{{Key: "_id", Value: 2}, {Key: "k", Value: "b"}})
	mustCreateIndex(t, db1, "source", keySpec(bson.D{{Key: "k", Value: 1}}))
	insertDocs(t, db2.Collection("target"), bson.D{{Key: "_id", Value: "old"}})
	srcUUID, oldTarget := collUUID(t, db1, "source"), collUUID(t, db2, "target")

	expanded := options.ChangeStream().SetShowExpandedEvents(true)
	var streams []*mongo.ChangeStream
	watch := func(w interface {
		Watch(context.Context, any, ...options.Lister[options.ChangeStreamOptions]) (*mongo.ChangeStream, error)
	}, opts ...options.Lister[options.ChangeStreamOptions]) *mongo.ChangeStream {
		cs, err := w.Watch(ctx, mongo.Pipeline{}, opts...)
		if err != nil {
			t.Fatal(err)
		}
		streams = append(streams, cs)
		return cs
	}
	defer func() {
		for _, cs := range streams {
			_ = cs.Close(context.Background())
		}
	}()
	srcPlain, srcExp := watch(db1.Collection("source")), watch(db1.Collection("source"), expanded)
	db1Plain := watch(db1)
	db2Plain, db2Exp := watch(db2), watch(db2, expanded)
	dstPlain, dstExp := watch(db2.Collection("target")), watch(db2.Collection("target"), expanded)
	clusterPlain, clusterExp := watch(client), watch(client, expanded)

	runCmd(t, client.Database("admin"), bson.D{
		{Key: "renameCollection", Value: "rsrc.source"}, {Key: "to", Value: "rdst.target"}, {Key: "dropTarget", Value: true},
	})
	newUUID := collUUID(t, db2, "target")
	if string(newUUID.Data) == string(srcUUID.Data) {
		t.Fatal("the renamed collection kept the source's UUID; mongod's copy has a new one")
	}
	insertDocs(t, db1.Collection("after"), bson.D{{Key: "_id", Value: 1}})
	insertDocs(t, db2.Collection("after"), bson.D{{Key: "_id", Value: 1}})

	// want reads a stream's next events: op@ns for each ("tmp" stands for
	// the temporary collection of rdst), and checks what each kind carries.
	var tmp string
	want := func(name string, cs *mongo.ChangeStream, exp bool, evs ...string) {
		t.Helper()
		for _, w := range evs {
			ev := nextEvent(t, cs)
			ns := asM(ev["ns"])
			coll, _ := ns["coll"].(string)
			if tmpRenameColl.MatchString(coll) {
				if tmp == "" {
					tmp = coll
				}
				if coll == tmp {
					coll = "tmp"
				}
			}
			got := fmt.Sprintf("%v@%v.%v", ev["operationType"], ns["db"], coll)
			if ev["operationType"] == "invalidate" {
				got = "invalidate"
			}
			if got != w {
				t.Fatalf("%s stream: %s, want %s: %v", name, got, w, ev)
			}
			switch {
			case !exp:
				wantNoField(t, ev, "collectionUUID", "operationDescription")
			case w == "drop@rsrc.source":
				wantUUID(t, ev, srcUUID)
			case w != "invalidate" && coll == "tmp":
				wantUUID(t, ev, newUUID)
			}
			switch ev["operationType"] {
			case "rename":
				to := bson.D{{Key: "db", Value: "rdst"}, {Key: "coll", Value: "target"}}
				wantSame(t, name+" rename to", ev["to"], to)
				if exp {
					wantSame(t, name+" rename operationDescription", ev["operationDescription"], bson.D{{Key: "to", Value: to}, {Key: "dropTarget", Value: oldTarget}})
				}
			case "createIndexes":
				if idx, _ := asM(ev["operationDescription"])["indexes"].(bson.A); len(idx) != 1 || asM(idx[0])["name"] != "k_1" {
					t.Fatalf("%s createIndexes: %v", name, ev)
				}
			case "insert":
				if asM(ev["fullDocument"])["_id"] == nil || asM(ev["documentKey"])["_id"] == nil {
					t.Fatalf("%s insert: %v", name, ev)
				}
			}
		}
	}
	copyPlain := []string{"insert@rdst.tmp", "insert@rdst.tmp", "rename@rdst.tmp"}
	copyExp := append([]string{"create@rdst.tmp", "createIndexes@rdst.tmp"}, copyPlain...)
	want("source", srcPlain, false, "drop@rsrc.source", "invalidate")
	want("expanded source", srcExp, true, "drop@rsrc.source", "invalidate")
	want("rsrc", db1Plain, false, "drop@rsrc.source", "insert@rsrc.after")
	want("rdst", db2Plain, false, append(copyPlain, "insert@rdst.after")...)
	want("expanded rdst", db2Exp, true, copyExp...)
	want("target", dstPlain, false, "rename@rdst.tmp", "invalidate")
	want("expanded target", dstExp, true, "rename@rdst.tmp", "invalidate")
	want("cluster", clusterPlain, false, append(copyPlain, "drop@rsrc.source")...)
	want("expanded cluster", clusterExp, true, append(copyExp, "drop@rsrc.source")...)
}
