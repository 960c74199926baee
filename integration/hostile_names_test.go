package integration

import (
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/mayflydb/mayfly/internal/app"
)

// TestHostileDatabaseCaseEveryPath: every command that creates a database
// implicitly refuses a name differing only in case from an existing one
// with 13297, as mongod does, in the shape the command reports errors in
// (a write error for insert and update, a command error otherwise), and
// the database is not created.
func TestHostileDatabaseCaseEveryPath(t *testing.T) {
	c := connect(t, startServer(t, app.Config{}))
	ctx := ctxT(t)
	if _, err := c.Database("Cased").Collection("x").InsertOne(ctx, bson.D{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Database("test").Collection("src").InsertOne(ctx, bson.D{{Key: "_id", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	const msg = "db already exists with different case already have: [Cased] trying to create [cased]"
	lower := c.Database("cased")
	x := lower.Collection("x")
	upsert := options.UpdateOne().SetUpsert(true)
	cases := []struct {
		name string
		run  func() error
	}{
		{"insert (write error)", func() error { _, err := x.InsertOne(ctx, bson.D{}); return err }},
		{"update upsert (write error)", func() error {
			_, err := x.UpdateOne(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$set", Value: bson.D{{Key: "a", Value: 1}}}}, upsert)
			return err
		}},
		{"replace upsert (write error)", func() error {
			_, err := x.ReplaceOne(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "a", Value: 1}}, options.Replace().SetUpsert(true))
			return err
		}},
		{"findAndModify upsert", func() error {
			return x.FindOneAndUpdate(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$set", Value: bson.D{{Key: "a", Value: 1}}}}, options.FindOneAndUpdate().SetUpsert(true)).Err()
		}},
		{"createIndexes", func() error {
			_, err := x.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "a", Value: 1}}})
			return err
		}},
		{"create", func() error { return lower.CreateCollection(ctx, "x") }},
		{"create view", func() error { return lower.CreateView(ctx, "v", "x", mongo.Pipeline{}) }},
		{"collection bulk write (write error)", func() error {
			_, err := x.BulkWrite(ctx, []mongo.WriteModel{mongo.NewInsertOneModel().SetDocument(bson.D{})})
			return err
		}},
		{"client bulkWrite (write error)", func() error {
			_, err := c.BulkWrite(ctx, []mongo.ClientBulkWrite{{Database: "cased", Collection: "x", Model: &mongo.ClientInsertOneModel{Document: bson.D{}}}})
			return onlyWriteError(err)
		}},
		{"$out", func() error {
			_, err := c.Database("test").Collection("src").Aggregate(ctx, mongo.Pipeline{{{Key: "$out", Value: bson.D{{Key: "db", Value: "cased"}, {Key: "coll", Value: "out"}}}}})
			return err
		}},
		{"$merge", func() error {
			_, err := c.Database("test").Collection("src").Aggregate(ctx, mongo.Pipeline{{{Key: "$merge", Value: bson.D{{Key: "into", Value: bson.D{{Key: "db", Value: "cased"}, {Key: "coll", Value: "m"}}}}}}})
			return err
		}},
		{"renameCollection", func() error {
			return c.Database("admin").RunCommand(ctx, bson.D{{Key: "renameCollection", Value: "test.src"}, {Key: "to", Value: "cased.r"}}).Err()
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.run()
			wantCode(t, err, 13297, msg)
			var we mongo.WriteException
			var bwe mongo.BulkWriteException
			if isWrite := errorAs(err, &we) || errorAs(err, &bwe); isWrite != strings.HasSuffix(tc.name, "(write error)") {
				t.Errorf("a write error: %v, want the other shape: %v", isWrite, err)
			}
			names, err := c.ListDatabaseNames(ctx, bson.D{})
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range names {
				if n == "cased" {
					t.Fatalf("database cased created: %v", names)
				}
			}
		})
	}
}

// TestHostileSystemNamespaceEveryPath: every write path refuses the system
// collections clients may not write, with mongod's codes and messages
// (userAllowedWriteNS: 73 "cannot write to" for system.profile and
// system.views, 73 "Invalid system namespace" for the server's others;
// $out 17385/31321, $merge 31319/31320; renameCollection 20 with "error
// with source/target namespace: "), and lets through the ones clients
// may write (system.js, system.users, system.buckets.*).
func TestHostileSystemNamespaceEveryPath(t *testing.T) {
	c := connect(t, startServer(t, app.Config{}))
	ctx := ctxT(t)
	db := c.Database("test")
	if _, err := db.Collection("src").InsertOne(ctx, bson.D{{Key: "_id", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	filter := bson.D{{Key: "_id", Value: 1}}
	set := bson.D{{Key: "$set", Value: bson.D{{Key: "a", Value: 1}}}}
	upsert := options.UpdateOne().SetUpsert(true)
	refused := func(coll string) []struct {
		name string
		run  func() error
	} {
		x := db.Collection(coll)
		return []struct {
			name string
			run  func() error
		}{
			{"insert", func() error { _, err := x.InsertOne(ctx, bson.D{}); return err }},
			{"update upsert", func() error { _, err := x.UpdateOne(ctx, filter, set, upsert); return err }},
			{"update", func() error { _, err := x.UpdateMany(ctx, bson.D{}, set); return err }},
			{"delete", func() error { _, err := x.DeleteMany(ctx, bson.D{}); return err }},
			{"findAndModify", func() error { return x.FindOneAndDelete(ctx, filter).Err() }},
			{"findAndModify upsert", func() error {
				return x.FindOneAndUpdate(ctx, filter, set, options.FindOneAndUpdate().SetUpsert(true)).Err()
			}},
			{"createIndexes", func() error {
				_, err := x.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "a", Value: 1}}})
				return err
			}},
			{"collection bulk write", func() error {
				_, err := x.BulkWrite(ctx, []mongo.WriteModel{mongo.NewDeleteOneModel().SetFilter(filter)})
				return err
			}},
			{"client bulkWrite", func() error {
				_, err := c.BulkWrite(ctx, []mongo.ClientBulkWrite{{Database: "test", Collection: coll, Model: &mongo.ClientDeleteOneModel{Filter: filter}}})
				return onlyWriteError(err)
			}},
			{"applyOps", func() error {
				op := bson.D{{Key: "op", Value: "i"}, {Key: "ns", Value: "test." + coll}, {Key: "o", Value: bson.D{{Key: "_id", Value: 2}}}}
				return c.Database("admin").RunCommand(ctx, bson.D{{Key: "applyOps", Value: bson.A{op}}}).Err()
			}},
		}
	}
	for coll, msg := range map[string]string{
		"system.profile": "cannot write to test.system.profile",
		"system.views":   "cannot write to test.system.views",
		"system.foo":     "Invalid system namespace: test.system.foo",
		"system.roles":   "Invalid system namespace: test.system.roles", // admin's only
	} {
		for _, tc := range refused(coll) {
			t.Run(coll+"/"+tc.name, func(t *testing.T) { wantCode(t, tc.run(), 73, msg) })
		}
	}

	wantCode(t, db.CreateCollection(ctx, "system.indexes"), 73, "Invalid system namespace: test.system.indexes")
	wantCode(t, db.CreateView(ctx, "system.foo", "src", mongo.Pipeline{}), 73, "Invalid system namespace: test.system.foo")
	if err := db.CreateCollection(ctx, "system.profile", options.CreateCollection().SetCapped(true).SetSizeInBytes(1<<20)); err != nil {
		t.Errorf("create system.profile (allowed, to size it): %v", err)
	}

	src := db.Collection("src")
	stage := func(name string, target bson.D) error {
		_, err := src.Aggregate(ctx, mongo.Pipeline{{{Key: name, Value: target}}})
		return err
	}
	ns := func(d, coll string) bson.D { return bson.D{{Key: "db", Value: d}, {Key: "coll", Value: coll}} }
	wantCode(t, stage("$out", ns("test", "system.js")), 17385, "Can't $out to special collection: system.js")
	wantCode(t, stage("$out", ns("admin", "x")), 31321, "Can't $out to internal database: admin")
	wantCode(t, stage("$merge", bson.D{{Key: "into", Value: ns("test", "system.foo")}}), 31319, "Cannot $merge to special collection: system.foo")
	wantCode(t, stage("$merge", bson.D{{Key: "into", Value: ns("config", "x")}}), 31320, "Cannot $merge to internal database: config")

	rename := func(from, to string) error {
		return c.Database("admin").RunCommand(ctx, bson.D{{Key: "renameCollection", Value: from}, {Key: "to", Value: to}}).Err()
	}
	wantCode(t, rename("test.src", "test.system.foo"), 20, "error with target namespace: Invalid system namespace: test.system.foo")
	wantCode(t, rename("test.system.profile", "test.p"), 20, "error with source namespace: cannot write to test.system.profile")
	wantCode(t, rename("test.src", "test.system.views"), 20, "error with target namespace: cannot write to test.system.views")
	wantCode(t, rename("test.src", "test.system.js"), 20, "renaming system.js collection or renaming to system.js is not allowed")
	wantCode(t, rename("test.src", "test.system.users"), 20, "renaming system.users collection or renaming to system.users is not allowed")

	// What clients may write: mongod's isLegalClientSystemNS lets
	// system.users, system.js and system.buckets.* through in any database.
	for _, coll := range []string{"system.js", "system.buckets.m", "system.users"} {
		x := db.Collection(coll)
		if _, err := x.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}}); err != nil {
			t.Errorf("insert into %s: %v", coll, err)
		}
		if _, err := x.UpdateOne(ctx, filter, set, upsert); err != nil {
			t.Errorf("update %s: %v", coll, err)
		}
		if err := x.FindOneAndUpdate(ctx, filter, set).Err(); err != nil {
			t.Errorf("findAndModify %s: %v", coll, err)
		}
		if _, err := x.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "a", Value: 1}}}); err != nil {
			t.Errorf("createIndexes on %s: %v", coll, err)
		}
		if _, err := x.DeleteOne(ctx, filter); err != nil {
			t.Errorf("delete from %s: %v", coll, err)
		}
	}
	if _, err := c.Database("admin").Collection("system.roles").Indexes().List(ctx); err != nil {
		t.Fatal(err)
	}
}

// onlyWriteError turns a client bulkWrite's single operation error into a
// WriteException, so that its code, message and shape (an operation's
// error, not the command's) can be checked like a write error.
func onlyWriteError(err error) error {
	var be mongo.ClientBulkWriteException
	if errorAs(err, &be) && len(be.WriteErrors) == 1 {
		for _, we := range be.WriteErrors {
			return mongo.WriteException{WriteErrors: []mongo.WriteError{{Code: we.Code, Message: we.Message}}}
		}
	}
	return err
}
