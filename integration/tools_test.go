package integration

// The MongoDB Database Tools (mongodump, mongorestore, mongoexport,
// mongoimport, mongostat, mongotop; 100.x) cannot be installed here: their
// Go modules are not reachable from this machine and Debian does not package
// them. So these tests send, through the Go driver, the exact commands and
// fields each tool sends (read from the tools' source): the command names,
// the fields they add (bypassEmptyTsReplacement, ignoreUnknownIndexOptions,
// a $natural hint, recordStats: 0) and the reply fields they decode.
// --archive and --gzip change only how the tools write and read their
// files, not what they send; the dump below goes through a gzip stream of
// raw BSON so the round trip keeps every byte. --oplog applies to replica
// sets only: against a standalone mongodump refuses it before sending
// anything, and mongorestore --oplogReplay has nothing to replay.

import (
	"bytes"
	"compress/gzip"
	"io"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"

	"github.com/mayflydb/mayfly/internal/app"
)

// dumpedCollection is what mongodump writes for one collection: its
// listCollections options, its listIndexes specs and its documents.
type dumpedCollection struct {
	name    string
	options bson.D
	indexes []bson.D
	data    []byte // gzip of the raw BSON documents, as --gzip writes
}

// probeServer is what every tool sends before its work: buildInfo for the
// version (versionArray decides bypassEmptyTsReplacement), ismaster for the
// node type, atlasVersion to rule out the Atlas proxy (it must fail).
func probeServer(t *testing.T, c *mongo.Client) {
	t.Helper()
	admin := c.Database("admin")
	bi := runCmd(t, admin, bson.D{{Key: "buildInfo", Value: 1}})
	va := field(t, bi, "versionArray").(bson.A)
	if len(va) < 3 || va[0].(int32) < 8 {
		t.Fatalf("versionArray %v: the tools need >= 8.0 to send bypassEmptyTsReplacement", va)
	}
	im := runCmd(t, admin, bson.D{{Key: "ismaster", Value: 1}})
	for _, e := range im {
		if e.Key == "setName" || e.Key == "hosts" || e.Key == "msg" {
			t.Fatalf("a standalone must not answer %s in ismaster: %v", e.Key, im)
		}
	}
	if err := admin.RunCommand(ctxT(t), bson.D{{Key: "atlasVersion", Value: 1}}).Err(); err == nil {
		t.Fatal("atlasVersion must fail on a server that is not the Atlas proxy")
	}
}

// mongodump: listDatabases (names), listCollections, listIndexes, an
// estimated count (the count command), then find with {$natural: 1}.
func mongodump(t *testing.T, c *mongo.Client, dbName string) []dumpedCollection {
	t.Helper()
	ctx := ctxT(t)
	probeServer(t, c)
	names, err := c.ListDatabaseNames(ctx, bson.D{})
	if err != nil || !containsString(names, dbName) {
		t.Fatalf("listDatabases: %v %v", names, err)
	}
	db := c.Database(dbName)
	cur, err := db.ListCollections(ctx, bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	var specs []struct {
		Name    string `bson:"name"`
		Type    string `bson:"type"`
		Options bson.D `bson:"options"`
	}
	if err := cur.All(ctx, &specs); err != nil {
		t.Fatal(err)
	}
	var out []dumpedCollection
	for _, s := range specs {
		coll := db.Collection(s.Name)
		d := dumpedCollection{name: s.Name, options: s.Options}
		ic, err := coll.Indexes().List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := ic.All(ctx, &d.indexes); err != nil {
			t.Fatal(err)
		}
		if _, err := coll.EstimatedDocumentCount(ctx); err != nil {
			t.Fatalf("count %s: %v", s.Name, err)
		}
		d.data = dumpDocs(t, coll, bson.D{})
		out = append(out, d)
	}
	return out
}

func dumpDocs(t *testing.T, coll *mongo.Collection, sort bson.D) []byte {
	t.Helper()
	ctx := ctxT(t)
	opts := options.Find().SetBatchSize(50)
	if len(sort) > 0 {
		opts.SetSort(sort)
	} else {
		opts.SetHint(bson.D{{Key: "$natural", Value: 1}})
	}
	cur, err := coll.Find(ctx, bson.D{}, opts)
	if err != nil {
		t.Fatalf("find %s: %v", coll.Name(), err)
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	for cur.Next(ctx) {
		if _, err := zw.Write(cur.Current); err != nil {
			t.Fatal(err)
		}
	}
	if err := cur.Err(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// readDump reads back the raw documents of a gzip BSON stream.
func readDump(t *testing.T, data []byte) []bson.Raw {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	all, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	var docs []bson.Raw
	for len(all) > 0 {
		n := int(int32(all[0]) | int32(all[1])<<8 | int32(all[2])<<16 | int32(all[3])<<24)
		docs = append(docs, bson.Raw(all[:n]))
		all = all[n:]
	}
	return docs
}

// insertBatch is the tools' buffered bulk insert: an unordered insert with
// bypassEmptyTsReplacement, written with w: majority.
func insertBatch(t *testing.T, db *mongo.Database, coll string, docs []bson.Raw) {
	t.Helper()
	arr := bson.A{}
	for _, d := range docs {
		arr = append(arr, d)
	}
	reply := runCmd(t, db, bson.D{
		{Key: "insert", Value: coll}, {Key: "ordered", Value: false}, {Key: "documents", Value: arr},
		{Key: "writeConcern", Value: bson.D{{Key: "w", Value: "majority"}}},
		{Key: "bypassEmptyTsReplacement", Value: true},
	})
	if n := field(t, reply, "n").(int32); int(n) != len(docs) {
		t.Fatalf("insert into %s: n=%d of %d: %v", coll, n, len(docs), reply)
	}
}

// mongorestore: create with the dumped options, createIndexes with the
// dumped specs less "v" and ignoreUnknownIndexOptions, then the documents.
func mongorestore(t *testing.T, c *mongo.Client, dbName string, dump []dumpedCollection, drop bool) {
	t.Helper()
	probeServer(t, c)
	db := c.Database(dbName)
	for _, d := range dump {
		exists, err := db.ListCollectionNames(ctxT(t), bson.D{{Key: "name", Value: d.name}})
		if err != nil {
			t.Fatal(err)
		}
		if drop && len(exists) > 0 {
			if err := db.Collection(d.name).Drop(ctxT(t)); err != nil {
				t.Fatal(err)
			}
		}
		runCmd(t, db, append(bson.D{{Key: "create", Value: d.name}}, d.options...))
		indexes := bson.A{}
		for _, ix := range d.indexes {
			if name, _ := lookupValue(ix, "name").(string); name == "_id_" {
				continue
			}
			spec := bson.D{}
			for _, e := range ix {
				if e.Key != "v" {
					spec = append(spec, e)
				}
			}
			indexes = append(indexes, spec)
		}
		if len(indexes) > 0 {
			runCmd(t, db, bson.D{{Key: "createIndexes", Value: d.name}, {Key: "indexes", Value: indexes}, {Key: "ignoreUnknownIndexOptions", Value: true}})
		}
		docs := readDump(t, d.data)
		for len(docs) > 0 {
			n := min(len(docs), 1000)
			insertBatch(t, db, d.name, docs[:n])
			docs = docs[n:]
		}
	}
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func seedToolsData(t *testing.T, db *mongo.Database) {
	t.Helper()
	ctx := ctxT(t)
	createTTL(t, db, "sessions", "accessTime", 3600)
	runCmd(t, db, bson.D{{Key: "createIndexes", Value: "sessions"}, {Key: "indexes", Value: bson.A{
		bson.D{{Key: "key", Value: bson.D{{Key: "user", Value: 1}}}, {Key: "name", Value: "user_1"}, {Key: "unique", Value: true}},
	}}})
	now := time.Now()
	var docs []any
	for i := range 2500 {
		docs = append(docs, bson.D{{Key: "_id", Value: i}, {Key: "user", Value: i}, {Key: "accessTime", Value: now},
			{Key: "stamp", Value: bson.Timestamp{}}})
	}
	// The seed writes its zero timestamps literally, as a restore does.
	if err := db.RunCommand(ctx, bson.D{{Key: "insert", Value: "sessions"}, {Key: "documents", Value: bson.A(docs[:1000])},
		{Key: "bypassEmptyTsReplacement", Value: true}}).Err(); err != nil {
		t.Fatal(err)
	}
	if err := db.RunCommand(ctx, bson.D{{Key: "insert", Value: "sessions"}, {Key: "documents", Value: bson.A(docs[1000:])},
		{Key: "bypassEmptyTsReplacement", Value: true}}).Err(); err != nil {
		t.Fatal(err)
	}
	runCmd(t, db, bson.D{{Key: "create", Value: "capped"}, {Key: "capped", Value: true}, {Key: "size", Value: int64(1 << 20)}})
	if _, err := db.Collection("capped").InsertOne(ctx, bson.D{{Key: "x", Value: 1}}); err != nil {
		t.Fatal(err)
	}
}

func TestToolsDumpRestoreRoundTrip(t *testing.T) {
	src := connect(t, startServer(t, app.Config{}))
	seedToolsData(t, src.Database("shop"))
	dump := mongodump(t, src, "shop")
	if len(dump) != 2 {
		t.Fatalf("dumped %d collections, want 2", len(dump))
	}

	dst := connect(t, startServer(t, app.Config{}))
	mongorestore(t, dst, "shop", dump, false)
	// Restoring again with --drop replaces, without duplicate key errors.
	mongorestore(t, dst, "shop", dump, true)

	ctx := ctxT(t)
	sessions := dst.Database("shop").Collection("sessions")
	n, err := sessions.CountDocuments(ctx, bson.D{})
	if err != nil || n != 2500 {
		t.Fatalf("restored %d sessions (%v), want 2500", n, err)
	}
	var doc bson.D
	if err := sessions.FindOne(ctx, bson.D{{Key: "_id", Value: 7}}).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	if ts := lookupValue(doc, "stamp"); ts != (bson.Timestamp{}) {
		t.Fatalf("bypassEmptyTsReplacement must keep Timestamp(0,0), got %v", ts)
	}
	var ix []bson.M
	cur, err := sessions.Indexes().List(ctx)
	if err != nil || cur.All(ctx, &ix) != nil {
		t.Fatal(err)
	}
	found := 0
	for _, spec := range ix {
		if spec["name"] == "accessTime_1" && toInt64(spec["expireAfterSeconds"]) == 3600 {
			found++
		}
		if spec["name"] == "user_1" && spec["unique"] == true {
			found++
		}
	}
	if found != 2 {
		t.Fatalf("restored indexes lack the TTL or unique index: %v", ix)
	}
	var opts struct {
		Options bson.M `bson:"options"`
	}
	lc, err := dst.Database("shop").ListCollections(ctx, bson.D{{Key: "name", Value: "capped"}})
	if err != nil || !lc.Next(ctx) || lc.Decode(&opts) != nil || opts.Options["capped"] != true {
		t.Fatalf("capped options not restored: %v %v", opts, err)
	}
}

func TestInsertReplacesEmptyTimestampUnlessBypassed(t *testing.T) {
	db := newDB(t)
	ctx := ctxT(t)
	runCmd(t, db, bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{
		bson.D{{Key: "_id", Value: 1}, {Key: "ts", Value: bson.Timestamp{}}},
	}}})
	runCmd(t, db, bson.D{{Key: "insert", Value: "c"}, {Key: "bypassEmptyTsReplacement", Value: true}, {Key: "documents", Value: bson.A{
		bson.D{{Key: "_id", Value: 2}, {Key: "ts", Value: bson.Timestamp{}}},
	}}})
	var one, two bson.M
	if db.Collection("c").FindOne(ctx, bson.D{{Key: "_id", Value: 1}}).Decode(&one) != nil ||
		db.Collection("c").FindOne(ctx, bson.D{{Key: "_id", Value: 2}}).Decode(&two) != nil {
		t.Fatal("find")
	}
	if ts := one["ts"].(bson.Timestamp); ts.T == 0 || time.Since(time.Unix(int64(ts.T), 0)) > time.Minute {
		t.Fatalf("an empty top-level timestamp is filled with the time on insert, got %v", ts)
	}
	if two["ts"] != (bson.Timestamp{}) {
		t.Fatalf("bypassEmptyTsReplacement keeps it, got %v", two["ts"])
	}
	err := db.RunCommand(ctx, bson.D{{Key: "insert", Value: "c"}, {Key: "bypassEmptyTsReplacement", Value: "yes"},
		{Key: "documents", Value: bson.A{bson.D{}}}}).Err()
	wantCode(t, err, 14, "bypassEmptyTsReplacement")
}

// mongoimport: insert batches as mongorestore does; --mode upsert and
// --mode merge send updates with upsert, also with bypassEmptyTsReplacement.
func TestToolsImportExport(t *testing.T) {
	c := connect(t, startServer(t, app.Config{}))
	probeServer(t, c)
	db := c.Database("imp")
	var docs []bson.Raw
	for i := range 300 {
		raw, _ := bson.Marshal(bson.D{{Key: "_id", Value: i}, {Key: "name", Value: "n"}, {Key: "i", Value: i}})
		docs = append(docs, raw)
	}
	if err := db.Collection("people").Drop(ctxT(t)); err != nil { // --drop
		t.Fatal(err)
	}
	insertBatch(t, db, "people", docs)
	reply := runCmd(t, db, bson.D{
		{Key: "update", Value: "people"}, {Key: "ordered", Value: false},
		{Key: "updates", Value: bson.A{
			bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: 1}}}, {Key: "u", Value: bson.D{{Key: "_id", Value: 1}, {Key: "name", Value: "replaced"}}}, {Key: "upsert", Value: true}},
			bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: 1000}}}, {Key: "u", Value: bson.D{{Key: "$set", Value: bson.D{{Key: "name", Value: "merged"}}}}}, {Key: "upsert", Value: true}},
		}},
		{Key: "writeConcern", Value: bson.D{{Key: "w", Value: "majority"}}},
		{Key: "bypassEmptyTsReplacement", Value: true},
	})
	if toInt64(field(t, reply, "n")) != 2 {
		t.Fatalf("upsert mode: %v", reply)
	}
	// --mode delete: one delete per document, by _id, limit 1.
	reply = runCmd(t, db, bson.D{
		{Key: "delete", Value: "people"}, {Key: "ordered", Value: false},
		{Key: "deletes", Value: bson.A{bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: 1000}}}, {Key: "limit", Value: 1}}}},
		{Key: "writeConcern", Value: bson.D{{Key: "w", Value: "majority"}}},
		{Key: "bypassEmptyTsReplacement", Value: true},
	})
	if toInt64(field(t, reply, "n")) != 1 {
		t.Fatalf("delete mode: %v", reply)
	}

	// mongoexport: an estimated count for progress, then find with a
	// $natural hint (or --sort); the output is extended JSON.
	coll := db.Collection("people", options.Collection().SetWriteConcern(writeconcern.Majority()))
	est, err := coll.EstimatedDocumentCount(ctxT(t))
	if err != nil || est != 300 {
		t.Fatalf("estimated count %d %v", est, err)
	}
	exported := readDump(t, dumpDocs(t, coll, bson.D{}))
	sorted := readDump(t, dumpDocs(t, coll, bson.D{{Key: "i", Value: -1}}))
	if len(exported) != 300 || len(sorted) != 300 {
		t.Fatalf("exported %d / %d documents, want 300", len(exported), len(sorted))
	}
	if sorted[0].Lookup("i").AsInt64() != 299 {
		t.Fatalf("--sort {i:-1}: first is %v", sorted[0])
	}
	if _, err := bson.MarshalExtJSON(exported[0], false, false); err != nil {
		t.Fatal(err)
	}
}

func lookupValue(d bson.D, key string) any {
	for _, e := range d {
		if e.Key == key {
			return e.Value
		}
	}
	return nil
}
