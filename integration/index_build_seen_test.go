package integration

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// heldBuild is a real server holding a build of two indexes, k_1 and
// u_-1, over indexBuildDocs documents of ib.c after its first batch.
type heldBuild struct {
	cl    *mongo.Client
	db    *mongo.Database
	coll  *mongo.Collection
	hold  *buildHold
	reply <-chan error
}

func startHeldBuild(t *testing.T) *heldBuild {
	t.Helper()
	bin, dir, addr := buildBinary(t), t.TempDir(), freePort(t)
	if _, err := startMayfly(t, bin, dir, addr, "--setParameter", "enableTestCommands=1"); err != nil {
		t.Fatal(err)
	}
	cl := quickClient(t, addr, 10*time.Second)
	b := &heldBuild{cl: cl, db: cl.Database("ib"), coll: cl.Database("ib").Collection("c")}
	loadIndexBuildDocs(t, b.coll)
	b.hold = holdIndexBuilds(t, cl)
	reply := make(chan error, 1)
	go func() {
		reply <- b.db.RunCommand(context.Background(), bson.D{{Key: "createIndexes", Value: "c"}, {Key: "indexes", Value: bson.A{
			bson.D{{Key: "key", Value: bson.D{{Key: "k", Value: 1}}}, {Key: "name", Value: "k_1"}},
			bson.D{{Key: "key", Value: bson.D{{Key: "u", Value: -1}}}, {Key: "name", Value: "u_-1"}},
		}}}).Err()
	}()
	b.reply = reply
	b.hold.waitEntered()
	return b
}

// indexBuildSurfaces is every way a client sees or names an index, each
// asserting what mongod answers while the index is being built: listed
// (with its build's UUID when asked), counted by collStats, shown with
// its progress by currentOp, and not found by collMod, by a hint, or by a
// dropIndexes that names part of its build.
func indexBuildSurfaces() map[string]func(t *testing.T, b *heldBuild) {
	notHinted := func(t *testing.T, err error) {
		wantCode(t, err, 2, "hint provided does not correspond to an existing index")
	}
	ctx := context.Background()
	return map[string]func(t *testing.T, b *heldBuild){
		"listIndexes": func(t *testing.T, b *heldBuild) {
			got := listIndexes(t, b.db, nil)
			wantListed(t, got, []string{`{"v": 2, "key": {"_id": 1}, "name": "_id_"}`, `{"v": 2, "key": {"at": 1}, "name": "at_1", "expireAfterSeconds": 0}`,
				`{"v": 2, "key": {"k": 1}, "name": "k_1"}`, `{"v": 2, "key": {"u": -1}, "name": "u_-1"}`})
		},
		"listIndexes includeBuildUUIDs": func(t *testing.T, b *heldBuild) {
			got := listIndexes(t, b.db, bson.E{Key: "includeBuildUUIDs", Value: true})
			uuid := buildUUIDOf(t, got[2], "buildUUID")
			if other := buildUUIDOf(t, got[3], "buildUUID"); other != uuid {
				t.Fatalf("one build, two UUIDs: %s, %s", uuid, other)
			}
			wantListed(t, got[:2], []string{`{"v": 2, "key": {"_id": 1}, "name": "_id_"}`, `{"v": 2, "key": {"at": 1}, "name": "at_1", "expireAfterSeconds": 0}`})
			wantListed(t, []bson.Raw{got[2].Lookup("spec").Document()}, []string{`{"v": 2, "key": {"k": 1}, "name": "k_1"}`})
		},
		"listIndexes includeIndexBuildInfo": func(t *testing.T, b *heldBuild) {
			got := listIndexes(t, b.db, bson.E{Key: "includeIndexBuildInfo", Value: true})
			for i, d := range got {
				if _, err := d.LookupErr("spec"); err != nil {
					t.Fatalf("entry %d without spec: %s", i, d)
				}
				_, err := d.LookupErr("indexBuildInfo", "buildUUID")
				if building := i >= 2; building != (err == nil) {
					t.Fatalf("entry %d: building %v, indexBuildInfo.buildUUID: %v (%s)", i, building, err, d)
				}
			}
		},
		"listIndexes both flags": func(t *testing.T, b *heldBuild) {
			err := b.db.RunCommand(ctx, bson.D{{Key: "listIndexes", Value: "c"}, {Key: "includeBuildUUIDs", Value: true}, {Key: "includeIndexBuildInfo", Value: true}}).Err()
			wantCode(t, err, 72, "The includeBuildUUIDs flag and includeBuildIndexInfo flag cannot both be set to true")
		},
		"collStats": func(t *testing.T, b *heldBuild) {
			var res struct {
				NIndexes    int32    `bson:"nindexes"`
				IndexBuilds []string `bson:"indexBuilds"`
			}
			if err := b.db.RunCommand(ctx, bson.D{{Key: "collStats", Value: "c"}}).Decode(&res); err != nil {
				t.Fatal(err)
			}
			if res.NIndexes != 4 || fmt.Sprint(res.IndexBuilds) != "[k_1 u_-1]" {
				t.Fatalf("collStats nindexes %d, indexBuilds %v; want 4, [k_1 u_-1]", res.NIndexes, res.IndexBuilds)
			}
		},
		"currentOp": func(t *testing.T, b *heldBuild) {
			op := builderOp(t, b.cl)
			msg, _ := op.Lookup("msg").StringValueOK()
			prefix := "Index Build: scanning collection Index Build: scanning collection: "
			done, total := op.Lookup("progress", "done").AsInt64(), op.Lookup("progress", "total").AsInt64()
			if !strings.HasPrefix(msg, prefix) || done < 1 || done >= total || total != indexBuildDocs {
				t.Fatalf("builder: msg %q, progress %d/%d; want %q…, 0 < done < %d", msg, done, total, prefix, indexBuildDocs)
			}
			if want := fmt.Sprintf("%s%d/%d %d%%", prefix, done, total, done*100/total); msg != want {
				t.Fatalf("msg %q, want %q", msg, want)
			}
			if names := op.Lookup("command", "indexes").String(); !strings.Contains(names, `"k_1"`) || !strings.Contains(names, `"u_-1"`) {
				t.Fatalf("builder's command names %s", names)
			}
		},
		"collMod by name": func(t *testing.T, b *heldBuild) {
			err := b.db.RunCommand(ctx, bson.D{{Key: "collMod", Value: "c"}, {Key: "index", Value: bson.D{{Key: "name", Value: "k_1"}, {Key: "hidden", Value: true}}}}).Err()
			wantCode(t, err, 27, "cannot find index k_1 for ns ib.c")
		},
		"collMod by key": func(t *testing.T, b *heldBuild) {
			err := b.db.RunCommand(ctx, bson.D{{Key: "collMod", Value: "c"}, {Key: "index", Value: bson.D{{Key: "keyPattern", Value: bson.D{{Key: "u", Value: -1}}}, {Key: "hidden", Value: true}}}}).Err()
			wantCode(t, err, 27, "cannot find index")
		},
		"dropIndexes of part of the build by name": func(t *testing.T, b *heldBuild) {
			err := b.db.RunCommand(ctx, bson.D{{Key: "dropIndexes", Value: "c"}, {Key: "index", Value: "k_1"}}).Err()
			wantCode(t, err, 27, "can't drop unfinished index with name: k_1")
		},
		"dropIndexes of part of the build by key": func(t *testing.T, b *heldBuild) {
			err := b.db.RunCommand(ctx, bson.D{{Key: "dropIndexes", Value: "c"}, {Key: "index", Value: bson.D{{Key: "u", Value: -1}}}}).Err()
			wantCode(t, err, 27, "can't drop unfinished index with name: u_-1")
		},
		"dropIndexes of part of the build in a list": func(t *testing.T, b *heldBuild) {
			err := b.db.RunCommand(ctx, bson.D{{Key: "dropIndexes", Value: "c"}, {Key: "index", Value: bson.A{"at_1", "u_-1"}}}).Err()
			wantCode(t, err, 27, "can't drop unfinished index with name: u_-1")
		},
		"find hint": func(t *testing.T, b *heldBuild) {
			_, err := b.coll.Find(ctx, bson.D{{Key: "k", Value: 3}}, options.Find().SetHint("k_1"))
			notHinted(t, err)
		},
		"count hint": func(t *testing.T, b *heldBuild) {
			_, err := b.coll.CountDocuments(ctx, bson.D{{Key: "k", Value: 3}}, options.Count().SetHint(bson.D{{Key: "k", Value: 1}}))
			notHinted(t, err)
		},
		"aggregate hint": func(t *testing.T, b *heldBuild) {
			_, err := b.coll.Aggregate(ctx, bson.A{bson.D{{Key: "$match", Value: bson.D{{Key: "u", Value: 3}}}}}, options.Aggregate().SetHint("u_-1"))
			notHinted(t, err)
		},
		"update hint": func(t *testing.T, b *heldBuild) {
			_, err := b.coll.UpdateOne(ctx, bson.D{{Key: "k", Value: 3}}, bson.D{{Key: "$set", Value: bson.D{{Key: "x", Value: 1}}}}, options.UpdateOne().SetHint("k_1"))
			notHinted(t, err)
		},
		"delete hint": func(t *testing.T, b *heldBuild) {
			_, err := b.coll.DeleteOne(ctx, bson.D{{Key: "k", Value: 3}}, options.DeleteOne().SetHint("k_1"))
			notHinted(t, err)
		},
	}
}

// TestIndexBuildAsCommandsSeeIt runs every row of indexBuildSurfaces while
// one build is held, then drops both of its indexes: the build answers
// IndexBuildAborted, and nothing of it is left.
func TestIndexBuildAsCommandsSeeIt(t *testing.T) {
	b := startHeldBuild(t)
	rows := indexBuildSurfaces()
	for _, name := range slices.Sorted(maps.Keys(rows)) {
		t.Run(name, func(t *testing.T) { rows[name](t, b) })
	}
	ctx := context.Background()
	if err := b.db.RunCommand(ctx, bson.D{{Key: "dropIndexes", Value: "c"}, {Key: "index", Value: bson.A{"u_-1", "k_1"}}}).Err(); err != nil {
		t.Fatalf("dropIndexes of the whole build: %v", err)
	}
	b.hold.release()
	wantCode(t, <-b.reply, 276, "Index build aborted")
	wantListed(t, listIndexes(t, b.db, nil), []string{`{"v": 2, "key": {"_id": 1}, "name": "_id_"}`, `{"v": 2, "key": {"at": 1}, "name": "at_1", "expireAfterSeconds": 0}`})
	validateDB(ctx, t, b.db)
}

func listIndexes(t *testing.T, db *mongo.Database, flag any) []bson.Raw {
	t.Helper()
	cmd := bson.D{{Key: "listIndexes", Value: "c"}}
	if flag != nil {
		cmd = append(cmd, flag.(bson.E))
	}
	var res struct {
		Cursor struct {
			FirstBatch []bson.Raw `bson:"firstBatch"`
		} `bson:"cursor"`
	}
	if err := db.RunCommand(context.Background(), cmd).Decode(&res); err != nil {
		t.Fatalf("%v: %v", cmd, err)
	}
	return res.Cursor.FirstBatch
}

func wantListed(t *testing.T, got []bson.Raw, want []string) {
	t.Helper()
	var have []string
	for _, d := range got {
		have = append(have, d.String())
	}
	if len(have) != len(want) {
		t.Fatalf("listed %v, want %v", have, want)
	}
	for i := range want {
		var w bson.D
		if err := bson.UnmarshalExtJSON([]byte(want[i]), false, &w); err != nil {
			t.Fatal(err)
		}
		wb, _ := bson.Marshal(w)
		if have[i] != bson.Raw(wb).String() {
			t.Fatalf("entry %d: %s, want %s", i, have[i], bson.Raw(wb))
		}
	}
}

func buildUUIDOf(t *testing.T, d bson.Raw, path ...string) string {
	t.Helper()
	v, err := d.LookupErr(path...)
	if err != nil {
		t.Fatalf("no %v in %s", path, d)
	}
	sub, data, ok := v.BinaryOK()
	if !ok || sub != bson.TypeBinaryUUID || len(data) != 16 {
		t.Fatalf("%v is %s, want a UUID", path, v)
	}
	return fmt.Sprintf("%x", data)
}

// builderOp is currentOp's entry for the index builder.
func builderOp(t *testing.T, cl *mongo.Client) bson.Raw {
	t.Helper()
	var res struct {
		InProg []bson.Raw `bson:"inprog"`
	}
	if err := cl.Database("admin").RunCommand(context.Background(), bson.D{{Key: "currentOp", Value: 1}}).Decode(&res); err != nil {
		t.Fatal(err)
	}
	for _, op := range res.InProg {
		if desc, _ := op.Lookup("desc").StringValueOK(); strings.HasPrefix(desc, "IndexBuildsCoordinatorMongod-") {
			return op
		}
	}
	t.Fatalf("no index builder in currentOp: %v", res.InProg)
	return nil
}

// TestIndexBuildKilledByItsOpID: killOp of the builder currentOp shows
// stops the build, as killOp of mongod's builder does; the command
// answers Interrupted and the build leaves no index behind.
func TestIndexBuildKilledByItsOpID(t *testing.T) {
	b := startHeldBuild(t)
	opid := builderOp(t, b.cl).Lookup("opid").AsInt64()
	if err := b.cl.Database("admin").RunCommand(context.Background(), bson.D{{Key: "killOp", Value: 1}, {Key: "op", Value: opid}}).Err(); err != nil {
		t.Fatalf("killOp %d: %v", opid, err)
	}
	b.hold.release()
	wantCode(t, <-b.reply, 11601, "")
	wantListed(t, listIndexes(t, b.db, nil), []string{`{"v": 2, "key": {"_id": 1}, "name": "_id_"}`, `{"v": 2, "key": {"at": 1}, "name": "at_1", "expireAfterSeconds": 0}`})
	validateDB(context.Background(), t, b.db)
}
