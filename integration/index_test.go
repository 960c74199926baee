package integration

import (
	"fmt"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/mayflydb/mayfly/internal/app"
	"github.com/mayflydb/mayfly/internal/catalog"
)

// createIndex runs createIndexes with one raw specification, named as
// drivers name it when the spec has a key and no name.
func createIndex(t *testing.T, db *mongo.Database, coll string, spec bson.D) (bson.D, error) {
	t.Helper()
	spec = withDriverName(spec)
	var out bson.D
	err := db.RunCommand(ctxT(t), bson.D{{Key: "createIndexes", Value: coll}, {Key: "indexes", Value: bson.A{spec}}}).Decode(&out)
	return out, err
}

func mustCreateIndex(t *testing.T, db *mongo.Database, coll string, spec bson.D) bson.D {
	t.Helper()
	out, err := createIndex(t, db, coll, spec)
	if err != nil {
		t.Fatalf("createIndexes %v: %v", spec, err)
	}
	return out
}

func withDriverName(spec bson.D) bson.D {
	var key bson.D
	for _, e := range spec {
		switch e.Key {
		case "name":
			return spec
		case "key":
			key, _ = e.Value.(bson.D)
		}
	}
	if key == nil {
		return spec
	}
	return append(append(bson.D(nil), spec...), bson.E{Key: "name", Value: catalog.GenerateName(key)})
}

func keySpec(key bson.D, opts ...bson.E) bson.D {
	return append(bson.D{{Key: "key", Value: key}}, opts...)
}

func insertDocs(t *testing.T, c *mongo.Collection, docs ...bson.D) {
	t.Helper()
	for _, d := range docs {
		if _, err := c.InsertOne(ctxT(t), d); err != nil {
			t.Fatalf("insert %v: %v", d, err)
		}
	}
}

// keysPerIndex asks validate how many entries each index holds.
func keysPerIndex(t *testing.T, db *mongo.Database, coll string) map[string]int64 {
	t.Helper()
	res := runCmd(t, db, bson.D{{Key: "validate", Value: coll}})
	if field(t, res, "valid") != true {
		t.Fatalf("validate: %v", res)
	}
	out := map[string]int64{}
	for _, e := range field(t, res, "keysPerIndex").(bson.D) {
		out[e.Key] = toInt64(e.Value)
	}
	return out
}

func toInt64(v any) int64 {
	switch n := v.(type) {
	case int32:
		return int64(n)
	case int64:
		return n
	case float64:
		return int64(n)
	}
	return -1
}

func TestCreateIndexNamesAndReply(t *testing.T) {
	db := newDB(t)
	cases := []struct {
		key  bson.D
		name string
	}{
		{bson.D{{Key: "a", Value: 1}}, "a_1"},
		{bson.D{{Key: "a", Value: 1}, {Key: "b.c", Value: -1}}, "a_1_b.c_-1"},
		{bson.D{{Key: "d", Value: int64(-1)}}, "d_-1"},
		{bson.D{{Key: "e", Value: 1.5}}, "e_1.5"},
	}
	first := mustCreateIndex(t, db, "names", keySpec(cases[0].key))
	if field(t, first, "numIndexesBefore") != int32(1) || field(t, first, "numIndexesAfter") != int32(2) || field(t, first, "createdCollectionAutomatically") != true {
		t.Fatalf("reply %v", first)
	}
	for _, tc := range cases[1:] {
		mustCreateIndex(t, db, "names", keySpec(tc.key))
	}
	specs, err := db.Collection("names").Indexes().ListSpecifications(ctxT(t))
	if err != nil || len(specs) != len(cases)+1 {
		t.Fatalf("listIndexes %v %v", specs, err)
	}
	for i, tc := range cases {
		if specs[i+1].Name != tc.name {
			t.Fatalf("index %v named %q, want %q", tc.key, specs[i+1].Name, tc.name)
		}
	}
	again := mustCreateIndex(t, db, "names", keySpec(cases[0].key))
	if field(t, again, "note") != "all indexes already exist" || field(t, again, "numIndexesAfter") != int32(5) {
		t.Fatalf("repeat: %v", again)
	}
}

func TestCreateIndexConflicts(t *testing.T) {
	db := newDB(t)
	mustCreateIndex(t, db, "c", keySpec(bson.D{{Key: "a", Value: 1}}, bson.E{Key: "name", Value: "byA"}))
	mustCreateIndex(t, db, "c", keySpec(bson.D{{Key: "t", Value: 1}}, bson.E{Key: "expireAfterSeconds", Value: 60}))
	cases := []struct {
		name string
		spec bson.D
		code int32
		msg  string
	}{
		{"same key, other name", keySpec(bson.D{{Key: "a", Value: 1}}, bson.E{Key: "name", Value: "other"}), 85, "Index already exists with a different name: byA"},
		{"same name, other key", keySpec(bson.D{{Key: "b", Value: 1}}, bson.E{Key: "name", Value: "byA"}), 86, "An existing index has the same name as the requested index."},
		{"same name and key, other unique", keySpec(bson.D{{Key: "a", Value: 1}}, bson.E{Key: "name", Value: "byA"}, bson.E{Key: "unique", Value: true}), 86, ""},
		{"equivalent, other TTL", keySpec(bson.D{{Key: "t", Value: 1}}, bson.E{Key: "expireAfterSeconds", Value: 30}), 85, "An equivalent index already exists with the same name but different options."},
		{"sparse and partial together", keySpec(bson.D{{Key: "s", Value: 1}}, bson.E{Key: "sparse", Value: true}, bson.E{Key: "partialFilterExpression", Value: bson.D{{Key: "s", Value: 1}}}), 67, "cannot mix \"partialFilterExpression\" and \"sparse\" options"},
		{"duplicate field", keySpec(bson.D{{Key: "a", Value: 1}, {Key: "a", Value: -1}}), 67, "duplicate field"},
		{"empty key", keySpec(bson.D{}), 67, "Index keys cannot be empty."},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := createIndex(t, db, "c", tc.spec)
			wantCode(t, err, tc.code, tc.msg)
		})
	}
}

func TestCreateIndexUnsupportedTypesFail(t *testing.T) {
	db := newDB(t)
	cases := []struct {
		name string
		spec bson.D
	}{
		{"text", keySpec(bson.D{{Key: "body", Value: "text"}})},
		{"2dsphere", keySpec(bson.D{{Key: "loc", Value: "2dsphere"}})},
		{"2d", keySpec(bson.D{{Key: "loc", Value: "2d"}})},
		{"wildcard", keySpec(bson.D{{Key: "$**", Value: 1}})},
		{"wildcard under a path", keySpec(bson.D{{Key: "a.$**", Value: 1}})},
		{"unknown plugin", keySpec(bson.D{{Key: "c", Value: "nope"}})},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := createIndex(t, db, "u", tc.spec)
			wantCode(t, err, 67, "")
		})
	}
	// A simple collation is the default and is accepted.
	mustCreateIndex(t, db, "u", keySpec(bson.D{{Key: "c", Value: 1}}, bson.E{Key: "collation", Value: bson.D{{Key: "locale", Value: "simple"}}}))
}

func TestIndexLimitOf64(t *testing.T) {
	db := newDB(t)
	for i := 0; i < 63; i++ {
		mustCreateIndex(t, db, "many", keySpec(bson.D{{Key: fmt.Sprintf("f%d", i), Value: 1}}))
	}
	_, err := createIndex(t, db, "many", keySpec(bson.D{{Key: "f63", Value: 1}}))
	wantCode(t, err, 67, "add index fails, too many indexes for test.many key:{ f63: 1 }")
}

func TestUniqueIndexDuplicateKeyError(t *testing.T) {
	db := newDB(t)
	c := db.Collection("users")
	mustCreateIndex(t, db, "users", keySpec(bson.D{{Key: "org", Value: 1}, {Key: "email", Value: -1}}, bson.E{Key: "unique", Value: true}))
	insertDocs(t, c, bson.D{{Key: "org", Value: 7}, {Key: "email", Value: "a@x"}})
	_, err := c.InsertOne(ctxT(t), bson.D{{Key: "org", Value: 7}, {Key: "email", Value: "a@x"}})
	var we mongo.WriteException
	if !errorAs(err, &we) || len(we.WriteErrors) != 1 {
		t.Fatalf("want a write error, got %v", err)
	}
	e := we.WriteErrors[0]
	if e.Code != 11000 || e.Message != `E11000 duplicate key error collection: test.users index: org_1_email_-1 dup key: { org: 7, email: "a@x" }` {
		t.Fatalf("write error %d %q", e.Code, e.Message)
	}
	var raw struct {
		KeyPattern bson.D `bson:"keyPattern"`
		KeyValue   bson.D `bson:"keyValue"`
	}
	if err := bson.Unmarshal(e.Raw, &raw); err != nil {
		t.Fatal(err)
	}
	wantPattern := bson.D{{Key: "org", Value: int32(1)}, {Key: "email", Value: int32(-1)}}
	wantValue := bson.D{{Key: "org", Value: int32(7)}, {Key: "email", Value: "a@x"}}
	if !equalDocs([]bson.D{raw.KeyPattern, raw.KeyValue}, []bson.D{wantPattern, wantValue}) {
		t.Fatalf("keyPattern %v keyValue %v", raw.KeyPattern, raw.KeyValue)
	}
	// An update into a taken key fails the same way; the index is unchanged.
	insertDocs(t, c, bson.D{{Key: "_id", Value: "b"}, {Key: "org", Value: 7}, {Key: "email", Value: "b@x"}})
	_, err = c.UpdateOne(ctxT(t), bson.D{{Key: "_id", Value: "b"}}, bson.D{{Key: "$set", Value: bson.D{{Key: "email", Value: "a@x"}}}})
	wantCode(t, err, 11000, `dup key: { org: 7, email: "a@x" }`)
	// Building a unique index over duplicates fails and leaves no index.
	insertDocs(t, db.Collection("dups"), bson.D{{Key: "k", Value: 1}}, bson.D{{Key: "k", Value: 1}})
	_, err = createIndex(t, db, "dups", keySpec(bson.D{{Key: "k", Value: 1}}, bson.E{Key: "unique", Value: true}))
	wantCode(t, err, 11000, "E11000 duplicate key error collection: test.dups index: k_1 dup key: { k: 1 }")
	if specs, _ := db.Collection("dups").Indexes().ListSpecifications(ctxT(t)); len(specs) != 1 {
		t.Fatalf("failed build left indexes: %v", specs)
	}
}

func TestSparsePartialAndMultikeyEntries(t *testing.T) {
	db := newDB(t)
	c := db.Collection("e")
	insertDocs(t, c,
		bson.D{{Key: "_id", Value: 1}, {Key: "s", Value: 1}, {Key: "tags", Value: bson.A{"a", "b", "a"}}, {Key: "st", Value: "on"}, {Key: "a", Value: bson.A{bson.D{{Key: "b", Value: 1}}, bson.D{{Key: "b", Value: 2}}}}},
		bson.D{{Key: "_id", Value: 2}, {Key: "tags", Value: bson.A{}}, {Key: "st", Value: "off"}, {Key: "a", Value: bson.D{{Key: "b", Value: 3}}}},
		bson.D{{Key: "_id", Value: 3}, {Key: "s", Value: nil}, {Key: "tags", Value: "c"}},
	)
	mustCreateIndex(t, db, "e", keySpec(bson.D{{Key: "s", Value: 1}}, bson.E{Key: "sparse", Value: true}))
	mustCreateIndex(t, db, "e", keySpec(bson.D{{Key: "tags", Value: 1}}))
	mustCreateIndex(t, db, "e", keySpec(bson.D{{Key: "st", Value: 1}}, bson.E{Key: "partialFilterExpression", Value: bson.D{{Key: "st", Value: "on"}}}))
	mustCreateIndex(t, db, "e", keySpec(bson.D{{Key: "a.b", Value: -1}}))
	want := map[string]int64{"_id_": 3, "s_1": 2, "tags_1": 4, "st_1": 1, "a.b_-1": 4}
	check := func(when string) {
		got := keysPerIndex(t, db, "e")
		for name, n := range want {
			if got[name] != n {
				t.Fatalf("%s: %s has %d keys, want %d (%v)", when, name, got[name], n, got)
			}
		}
	}
	check("after building")
	// Writes keep the entries in step: moving into and out of the partial
	// filter, growing an array, leaving the sparse index.
	ctx := ctxT(t)
	if _, err := c.UpdateOne(ctx, bson.D{{Key: "_id", Value: 2}}, bson.D{{Key: "$set", Value: bson.D{{Key: "st", Value: "on"}}}, {Key: "$push", Value: bson.D{{Key: "tags", Value: "z"}}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.UpdateOne(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$unset", Value: bson.D{{Key: "s", Value: ""}}}, {Key: "$set", Value: bson.D{{Key: "st", Value: "off"}}}}); err != nil {
		t.Fatal(err)
	}
	want = map[string]int64{"_id_": 3, "s_1": 1, "tags_1": 4, "st_1": 1, "a.b_-1": 4}
	check("after updates")
	if _, err := c.DeleteOne(ctx, bson.D{{Key: "_id", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	want = map[string]int64{"_id_": 2, "s_1": 1, "tags_1": 2, "st_1": 1, "a.b_-1": 2}
	check("after a delete")
}

func TestPartialUniqueAllowsDuplicatesOutsideFilter(t *testing.T) {
	db := newDB(t)
	c := db.Collection("pu")
	mustCreateIndex(t, db, "pu", keySpec(bson.D{{Key: "email", Value: 1}}, bson.E{Key: "unique", Value: true},
		bson.E{Key: "partialFilterExpression", Value: bson.D{{Key: "active", Value: true}}}))
	insertDocs(t, c,
		bson.D{{Key: "email", Value: "a"}, {Key: "active", Value: false}},
		bson.D{{Key: "email", Value: "a"}, {Key: "active", Value: false}},
		bson.D{{Key: "email", Value: "a"}, {Key: "active", Value: true}})
	_, err := c.InsertOne(ctxT(t), bson.D{{Key: "email", Value: "a"}, {Key: "active", Value: true}})
	wantCode(t, err, 11000, "index: email_1 dup key: { email: \"a\" }")
	// A sparse unique index lets any number of documents lack the field.
	mustCreateIndex(t, db, "su", keySpec(bson.D{{Key: "k", Value: 1}}, bson.E{Key: "unique", Value: true}, bson.E{Key: "sparse", Value: true}))
	insertDocs(t, db.Collection("su"), bson.D{{Key: "x", Value: 1}}, bson.D{{Key: "x", Value: 2}}, bson.D{{Key: "k", Value: 1}})
	_, err = db.Collection("su").InsertOne(ctxT(t), bson.D{{Key: "k", Value: 1}})
	wantCode(t, err, 11000, "")
}

func TestParallelArraysCannotBeIndexed(t *testing.T) {
	db := newDB(t)
	c := db.Collection("pa")
	mustCreateIndex(t, db, "pa", keySpec(bson.D{{Key: "a", Value: 1}, {Key: "b", Value: 1}}))
	insertDocs(t, c, bson.D{{Key: "a", Value: bson.A{1, 2}}, {Key: "b", Value: 1}}, bson.D{{Key: "a", Value: 1}, {Key: "b", Value: bson.A{1, 2}}})
	_, err := c.InsertOne(ctxT(t), bson.D{{Key: "a", Value: bson.A{1, 2}}, {Key: "b", Value: bson.A{3, 4}}})
	wantCode(t, err, 171, "cannot index parallel arrays [a_1_b_1]")
	// The same data refuses the index when it is built afterwards.
	insertDocs(t, db.Collection("pb"), bson.D{{Key: "a", Value: bson.A{1, 2}}, {Key: "b", Value: bson.A{3, 4}}})
	_, err = createIndex(t, db, "pb", keySpec(bson.D{{Key: "a", Value: 1}, {Key: "b", Value: 1}}))
	wantCode(t, err, 171, "cannot index parallel arrays")
	if specs, _ := db.Collection("pb").Indexes().ListSpecifications(ctxT(t)); len(specs) != 1 {
		t.Fatalf("failed build left indexes: %v", specs)
	}
}

func TestHiddenIndexIsKeptButNotUsed(t *testing.T) {
	db := newDB(t)
	c := db.Collection("h")
	mustCreateIndex(t, db, "h", keySpec(bson.D{{Key: "k", Value: 1}}, bson.E{Key: "hidden", Value: true}))
	insertDocs(t, c, bson.D{{Key: "k", Value: 1}}, bson.D{{Key: "k", Value: 2}})
	li := runCmd(t, db, bson.D{{Key: "listIndexes", Value: "h"}})
	batch := field(t, field(t, li, "cursor").(bson.D), "firstBatch").(bson.A)
	if len(batch) != 2 || field(t, batch[1].(bson.D), "hidden") != true {
		t.Fatalf("listIndexes: %v", batch)
	}
	if got := keysPerIndex(t, db, "h")["k_1"]; got != 2 {
		t.Fatalf("a hidden index is maintained: %d keys", got)
	}
	plan := explainFind(t, db, bson.D{{Key: "find", Value: "h"}, {Key: "filter", Value: bson.D{{Key: "k", Value: 1}}}}, "queryPlanner")
	if stage := planStages(t, plan); stage != "COLLSCAN" {
		t.Fatalf("hidden index planned: %s", stage)
	}
	err := c.FindOne(ctxT(t), bson.D{{Key: "k", Value: 1}}, options.FindOne().SetHint("k_1")).Err()
	wantCode(t, err, 2, "hint provided does not correspond to an existing index")
	runCmd(t, db, bson.D{{Key: "collMod", Value: "h"}, {Key: "index", Value: bson.D{{Key: "name", Value: "k_1"}, {Key: "hidden", Value: false}}}})
	plan = explainFind(t, db, bson.D{{Key: "find", Value: "h"}, {Key: "filter", Value: bson.D{{Key: "k", Value: 1}}}}, "queryPlanner")
	if stage := planStages(t, plan); stage != "FETCH>IXSCAN" {
		t.Fatalf("unhidden index not planned: %s", stage)
	}
}

func TestValidateCommand(t *testing.T) {
	s := startServer(t, app.Config{})
	db := connect(t, s).Database("test")
	c := db.Collection("v")
	mustCreateIndex(t, db, "v", keySpec(bson.D{{Key: "k", Value: 1}}))
	insertDocs(t, c, bson.D{{Key: "_id", Value: 1}, {Key: "k", Value: bson.A{1, 2}}}, bson.D{{Key: "_id", Value: 2}, {Key: "k", Value: 3}})
	res := runCmd(t, db, bson.D{{Key: "validate", Value: "v"}, {Key: "full", Value: true}})
	want := []string{"ns", "uuid", "nInvalidDocuments", "nNonCompliantDocuments", "nrecords", "nIndexes", "keysPerIndex", "indexDetails",
		"valid", "repaired", "warnings", "errors", "extraIndexEntries", "missingIndexEntries", "corruptRecords", "ok"}
	if len(res) != len(want) {
		t.Fatalf("reply %v", res)
	}
	for i, k := range want {
		if res[i].Key != k {
			t.Fatalf("field %d is %s, want %s: %v", i, res[i].Key, k, res)
		}
	}
	if field(t, res, "valid") != true || field(t, res, "nrecords") != int32(2) || fmt.Sprint(field(t, res, "keysPerIndex")) != `{"_id_":{"$numberInt":"2"},"k_1":{"$numberInt":"3"}}` {
		t.Fatalf("reply %v", res)
	}
	// Remove one index entry behind the server's back.
	deleteFirstIndexEntry(t, s)
	res = runCmd(t, db, bson.D{{Key: "validate", Value: "v"}})
	missing := field(t, res, "missingIndexEntries").(bson.A)
	if field(t, res, "valid") != false || len(missing) != 1 || field(t, missing[0].(bson.D), "indexName") != "k_1" {
		t.Fatalf("after corruption: %v", res)
	}
	errs, warns := field(t, res, "errors").(bson.A), field(t, res, "warnings").(bson.A)
	if len(errs) != 1 || errs[0] != "Index with name 'k_1' has inconsistencies." || len(warns) != 1 || warns[0] != "Detected 1 missing index entries." {
		t.Fatalf("messages: %v", res)
	}
	if field(t, res, "advice") != "A corrupt namespace has been detected. See http://dochub.mongodb.org/core/data-recovery for recovery steps." {
		t.Fatalf("advice: %v", res)
	}
	// Dropping the damaged index leaves a valid collection for the
	// harness's own validate.
	if err := c.Indexes().DropOne(ctxT(t), "k_1"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		cmd  bson.D
		code int32
		msg  string
	}{
		{bson.D{{Key: "validate", Value: "none"}}, 26, "Collection 'test.none' does not exist to validate."},
		{bson.D{{Key: "validate", Value: "v"}, {Key: "background", Value: true}}, 115, "is not supported in standalone mode"},
		{bson.D{{Key: "validate", Value: "v"}, {Key: "background", Value: true}, {Key: "full", Value: true}}, 72, ""},
		{bson.D{{Key: "validate", Value: "v"}, {Key: "repair", Value: true}}, 115, ""},
		{bson.D{{Key: "validate", Value: "v"}, {Key: "bogus", Value: true}}, 40415, ""},
	} {
		ce := cmdErr(t, db, tc.cmd)
		if ce.Code != tc.code || !strings.Contains(ce.Message, tc.msg) {
			t.Fatalf("%v: %d %q", tc.cmd, ce.Code, ce.Message)
		}
	}
}

// deleteFirstIndexEntry deletes the first secondary index entry in the
// store (keys tagged 'i', see docstore/keys.go).
func deleteFirstIndexEntry(t *testing.T, s *testServer) {
	t.Helper()
	eng := s.app.Store().Engine()
	it, err := eng.NewIter([]byte{'i'}, []byte{'j'})
	if err != nil {
		t.Fatal(err)
	}
	if !it.First() {
		t.Fatal("no index entry to delete")
	}
	key := append([]byte(nil), it.Key()...)
	_ = it.Close()
	b := eng.NewBatch()
	defer b.Close()
	if err := b.Delete(key); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(true); err != nil {
		t.Fatal(err)
	}
}
