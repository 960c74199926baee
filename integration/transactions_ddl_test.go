package integration

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/readconcern"

	"github.com/mayflydb/mayfly/internal/txnrules"
)

// Collections and indexes created inside a transaction, as mongod 8.0
// creates them (docs/design/0015): visible to others only at the commit,
// gone with an abort, refused where mongod refuses them.

// txnStatement runs one statement of the session's transaction in sctx
// against db.coll, a collection that does not exist yet.
type txnStatement func(sctx context.Context, db *mongo.Database, coll string) error

// missingCollectionCase is a transaction command run on a collection that
// does not exist: creates says whether mongod creates it.
type missingCollectionCase struct {
	command string
	creates bool
	run     txnStatement
}

func runStatement(cmd bson.D) txnStatement {
	return func(sctx context.Context, db *mongo.Database, coll string) error {
		return db.RunCommand(sctx, append(bson.D{{Key: cmd[0].Key, Value: coll}}, cmd[1:]...)).Err()
	}
}

// missingCollectionCases has a row for every command the server runs in
// a transaction (txnrules.Commands) but those in
// notAboutCollections.
var missingCollectionCases = []missingCollectionCase{
	{"create", true, runStatement(bson.D{{Key: "create"}})},
	{"createIndexes", true, runStatement(bson.D{{Key: "createIndexes"}, {Key: "indexes", Value: bson.A{bson.D{{Key: "key", Value: bson.D{{Key: "x", Value: 1}}}, {Key: "name", Value: "x_1"}}}}})},
	{"insert", true, runStatement(bson.D{{Key: "insert"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: 1}}}}})},
	{"update", true, runStatement(bson.D{{Key: "update"}, {Key: "updates", Value: bson.A{bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: 1}}}, {Key: "u", Value: bson.D{{Key: "$set", Value: bson.D{{Key: "a", Value: 1}}}}}, {Key: "upsert", Value: true}}}}})},
	{"findAndModify", true, runStatement(bson.D{{Key: "findAndModify"}, {Key: "query", Value: bson.D{{Key: "_id", Value: 1}}}, {Key: "update", Value: bson.D{{Key: "$set", Value: bson.D{{Key: "a", Value: 1}}}}}, {Key: "upsert", Value: true}})},
	{"bulkWrite", true, func(sctx context.Context, db *mongo.Database, coll string) error {
		return db.Client().Database("admin").RunCommand(sctx, bson.D{{Key: "bulkWrite", Value: 1},
			{Key: "ops", Value: bson.A{bson.D{{Key: "insert", Value: 0}, {Key: "document", Value: bson.D{{Key: "_id", Value: 1}}}}}},
			{Key: "nsInfo", Value: bson.A{bson.D{{Key: "ns", Value: db.Name() + "." + coll}}}}}).Err()
	}},
	{"delete", false, runStatement(bson.D{{Key: "delete"}, {Key: "deletes", Value: bson.A{bson.D{{Key: "q", Value: bson.D{}}, {Key: "limit", Value: 0}}}}})},
	{"find", false, runStatement(bson.D{{Key: "find"}})},
	{"aggregate", false, runStatement(bson.D{{Key: "aggregate"}, {Key: "pipeline", Value: bson.A{}}, {Key: "cursor", Value: bson.D{}}})},
	{"distinct", false, runStatement(bson.D{{Key: "distinct"}, {Key: "key", Value: "a"}})},
}

// notAboutCollections are the transaction commands that name a cursor or
// the transaction itself, not a collection.
var notAboutCollections = []string{"getMore", "killCursors", "commitTransaction", "abortTransaction"}

func TestTransactionDDLCasesCoverEveryTransactionCommand(t *testing.T) {
	var covered []string
	for _, c := range missingCollectionCases {
		covered = append(covered, c.command)
	}
	covered = append(covered, notAboutCollections...)
	registry := txnrules.Commands()
	slices.Sort(covered)
	slices.Sort(registry)
	if !slices.Equal(covered, registry) {
		t.Fatalf("cases cover %v; the server runs %v in a transaction", covered, registry)
	}
}

// TestTransactionDDL: on a one-member set, every transaction command on a
// missing collection, committed and aborted; then the refusals.
func TestTransactionDDL(t *testing.T) {
	rs := startReplSet(t, 1)
	cl := rs.client()
	db := cl.Database("txnddl")
	for _, c := range missingCollectionCases {
		t.Run(c.command, func(t *testing.T) {
			wantCreatedAtCommit(t, db, c)
			wantGoneAfterAbort(t, db, c)
		})
	}
	t.Run("refusals", func(t *testing.T) { wantDDLRefusals(t, db) })
	t.Run("indexes", func(t *testing.T) { wantIndexesAtCommit(t, db) })
	t.Run("concurrent create", func(t *testing.T) { wantConcurrentCreateConflicts(t, db) })
	t.Run("collMod unique across a transaction", func(t *testing.T) { wantUniqueConversionConflicts(t, db) })
}

// wantUniqueConversionConflicts: a transaction inserts a key another
// document holds, and before it commits the index is made unique
// (prepareUnique, then unique: no committed duplicate stops it). The
// commit must fail with a transient WriteConflict rather than put the
// duplicate into the unique index; validate then finds the collection
// clean.
func wantUniqueConversionConflicts(t *testing.T, db *mongo.Database) {
	coll := db.Collection("uq")
	ctx := ctxT(t)
	if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "k", Value: 1}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}, {Key: "k", Value: 7}}); err != nil {
		t.Fatal(err)
	}
	sctx, sess := inTransaction(t, db.Client(), nil)
	if _, err := coll.InsertOne(sctx, bson.D{{Key: "_id", Value: 2}, {Key: "k", Value: 7}}); err != nil {
		t.Fatal(err)
	}
	for _, opt := range []string{"prepareUnique", "unique"} {
		err := db.RunCommand(ctx, bson.D{{Key: "collMod", Value: "uq"}, {Key: "index", Value: bson.D{{Key: "name", Value: "k_1"}, {Key: opt, Value: true}}}}).Err()
		if err != nil {
			t.Fatalf("collMod %s: %v", opt, err)
		}
	}
	err := sess.CommitTransaction(sctx)
	var se mongo.ServerError
	if !errors.As(err, &se) || !se.HasErrorCode(112) || !se.HasErrorLabel("TransientTransactionError") {
		t.Fatalf("commit across the unique conversion: %v, want a transient WriteConflict", err)
	}
	if n, err := coll.CountDocuments(ctx, bson.D{}); err != nil || n != 1 {
		t.Fatalf("%d documents after the refused commit, %v; want 1", n, err)
	}
	validateDB(ctx, t, db)
}

// inTransaction starts a transaction (read concern local unless rc) on
// a new session and returns its context; the session ends with the test.
func inTransaction(t *testing.T, cl *mongo.Client, rc *readconcern.ReadConcern) (context.Context, *mongo.Session) {
	t.Helper()
	sess, err := cl.StartSession()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sess.EndSession(context.Background()) })
	opts := options.Transaction()
	if rc != nil {
		opts.SetReadConcern(rc)
	}
	if err := sess.StartTransaction(opts); err != nil {
		t.Fatal(err)
	}
	return mongo.NewSessionContext(ctxT(t), sess), sess
}

// collectionExists asks outside any transaction.
func collectionExists(t *testing.T, db *mongo.Database, coll string) bool {
	t.Helper()
	names, err := db.ListCollectionNames(ctxT(t), bson.D{{Key: "name", Value: coll}})
	if err != nil {
		t.Fatal(err)
	}
	return len(names) == 1
}

func wantCreatedAtCommit(t *testing.T, db *mongo.Database, c missingCollectionCase) {
	coll := "commit_" + c.command
	sctx, sess := inTransaction(t, db.Client(), nil)
	if err := c.run(sctx, db, coll); err != nil {
		t.Fatalf("%s on a missing collection in a transaction: %v", c.command, err)
	}
	if collectionExists(t, db, coll) {
		t.Fatalf("%s: the collection is visible outside the transaction before its commit", c.command)
	}
	if c.creates {
		// The transaction's later statements see it.
		if err := db.Collection(coll).FindOne(sctx, bson.D{}).Err(); err != nil && !errors.Is(err, mongo.ErrNoDocuments) {
			t.Fatalf("%s: a find in the transaction: %v", c.command, err)
		}
	}
	if err := sess.CommitTransaction(ctxT(t)); err != nil {
		t.Fatalf("%s: commit: %v", c.command, err)
	}
	if got := collectionExists(t, db, coll); got != c.creates {
		t.Fatalf("%s: after the commit the collection exists: %v, want %v", c.command, got, c.creates)
	}
}

func wantGoneAfterAbort(t *testing.T, db *mongo.Database, c missingCollectionCase) {
	coll := "abort_" + c.command
	sctx, sess := inTransaction(t, db.Client(), nil)
	if err := c.run(sctx, db, coll); err != nil {
		t.Fatalf("%s: %v", c.command, err)
	}
	if err := sess.AbortTransaction(ctxT(t)); err != nil {
		t.Fatalf("%s: abort: %v", c.command, err)
	}
	if collectionExists(t, db, coll) {
		t.Fatalf("%s: the collection exists after the abort", c.command)
	}
	// Its name is free: a create outside the transaction succeeds.
	if err := db.CreateCollection(ctxT(t), coll); err != nil {
		t.Fatalf("%s: create after the abort: %v", c.command, err)
	}
}

// ddlRefusal is a statement mongod refuses in a transaction: prepare sets
// the scene outside it, run is the refused statement.
type ddlRefusal struct {
	name    string
	rc      *readconcern.ReadConcern
	prepare func(t *testing.T, db *mongo.Database, coll string)
	before  txnStatement // statements of the transaction before run
	run     txnStatement
	code    int32
	msg     string
}

func createdWith(docs int) func(t *testing.T, db *mongo.Database, coll string) {
	return func(t *testing.T, db *mongo.Database, coll string) {
		runCmd(t, db, bson.D{{Key: "create", Value: coll}})
		runCmd(t, db, bson.D{{Key: "createIndexes", Value: coll}, {Key: "indexes", Value: bson.A{bson.D{{Key: "key", Value: bson.D{{Key: "a", Value: 1}}}, {Key: "name", Value: "a_1"}}}}})
		for i := range docs {
			if _, err := db.Collection(coll).InsertOne(ctxT(t), bson.D{{Key: "_id", Value: i}}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

var indexB = bson.A{bson.D{{Key: "key", Value: bson.D{{Key: "b", Value: 1}}}, {Key: "name", Value: "b_1"}}}

var ddlRefusals = []ddlRefusal{
	{name: "createIndexes new index on an existing empty collection", prepare: createdWith(0),
		run: runStatement(bson.D{{Key: "createIndexes"}, {Key: "indexes", Value: indexB}}), code: 263, msg: "Cannot create new indexes on existing collection txnddl.%s in a multi-document transaction."},
	{name: "createIndexes new index on an existing collection", prepare: createdWith(2),
		run: runStatement(bson.D{{Key: "createIndexes"}, {Key: "indexes", Value: indexB}}), code: 263, msg: "Cannot create new indexes on existing collection txnddl.%s in a multi-document transaction."},
	{name: "createIndexes on a collection the transaction created and filled",
		before: runStatement(bson.D{{Key: "insert"}, {Key: "documents", Value: bson.A{bson.D{{Key: "a", Value: 1}}}}}),
		run:    runStatement(bson.D{{Key: "createIndexes"}, {Key: "indexes", Value: indexB}}), code: 263, msg: "Cannot create new indexes on non-empty collection txnddl.%s in a multi-document transaction."},
	{name: "createIndexes conflicting with an existing index", prepare: createdWith(0),
		run: runStatement(bson.D{{Key: "createIndexes"}, {Key: "indexes", Value: bson.A{bson.D{{Key: "key", Value: bson.D{{Key: "a", Value: -1}}}, {Key: "name", Value: "a_1"}}}}}), code: 86},
	{name: "create of an existing collection", prepare: createdWith(0),
		run: runStatement(bson.D{{Key: "create"}}), code: 48, msg: "Collection txnddl.%s already exists."},
	{name: "create of a collection the transaction created",
		before: runStatement(bson.D{{Key: "create"}}),
		run:    runStatement(bson.D{{Key: "create"}}), code: 48, msg: "Collection txnddl.%s already exists."},
	{name: "create of a view", run: runStatement(bson.D{{Key: "create"}, {Key: "viewOn", Value: "other"}}), code: 263, msg: "Cannot create a view in a multi-document transaction."},
	{name: "create of a time-series collection", run: runStatement(bson.D{{Key: "create"}, {Key: "timeseries", Value: bson.D{{Key: "timeField", Value: "t"}}}}), code: 263, msg: "Cannot create a time-series collection in a multi-document transaction."},
	{name: "create with read concern snapshot", rc: readconcern.Snapshot(),
		run: runStatement(bson.D{{Key: "create"}}), code: 72, msg: `Command create does not support { readConcern: { level: "snapshot", provenance: "clientSupplied" } } :: caused by :: read concern not supported`},
	{name: "createIndexes with read concern majority", rc: readconcern.Majority(),
		run: runStatement(bson.D{{Key: "createIndexes"}, {Key: "indexes", Value: indexB}}), code: 72, msg: `Command createIndexes does not support { readConcern: { level: "majority", provenance: "clientSupplied" } } :: caused by :: read concern not supported`},
	{name: "create after a read with read concern snapshot", rc: readconcern.Snapshot(),
		before: runStatement(bson.D{{Key: "find"}}),
		run:    runStatement(bson.D{{Key: "create"}}), code: 72, msg: `Command create does not support { readConcern: { level: "snapshot", provenance: "clientSupplied" } }`},
}

// wantDDLRefusals: each refusal has mongod's code and text, aborts the
// transaction and leaves nothing behind.
func wantDDLRefusals(t *testing.T, db *mongo.Database) {
	for i, c := range ddlRefusals {
		coll := fmt.Sprintf("refused_%d", i)
		if c.prepare != nil {
			c.prepare(t, db, coll)
		}
		existed := collectionExists(t, db, coll)
		sctx, sess := inTransaction(t, db.Client(), c.rc)
		if c.before != nil {
			if err := c.before(sctx, db, coll); err != nil {
				t.Fatalf("%s: the statement before: %v", c.name, err)
			}
		}
		msg := c.msg
		if strings.Contains(msg, "%s") {
			msg = fmt.Sprintf(msg, coll)
		}
		wantCode(t, c.run(sctx, db, coll), c.code, msg)
		err := db.RunCommand(sctx, bson.D{{Key: "find", Value: coll}}).Err()
		wantCode(t, err, 251, "has been aborted")
		_ = sess.AbortTransaction(ctxT(t))
		if got := collectionExists(t, db, coll); got != existed {
			t.Fatalf("%s: the collection exists: %v after the refusal, %v before", c.name, got, existed)
		}
	}
}

// wantIndexesAtCommit: indexes built in the transaction serve its own
// reads, appear to others at the commit, and hold after it: a unique index
// refuses a duplicate, a TTL index hides an expired document.
func wantIndexesAtCommit(t *testing.T, db *mongo.Database) {
	const coll = "indexed"
	sctx, sess := inTransaction(t, db.Client(), nil)
	runIn := func(cmd bson.D) bson.D {
		var out bson.D
		if err := db.RunCommand(sctx, cmd).Decode(&out); err != nil {
			t.Fatalf("%v: %v", cmd, err)
		}
		return out
	}
	runIn(bson.D{{Key: "create", Value: coll}})
	reply := runIn(bson.D{{Key: "createIndexes", Value: coll}, {Key: "indexes", Value: bson.A{
		bson.D{{Key: "key", Value: bson.D{{Key: "u", Value: 1}}}, {Key: "name", Value: "u_1"}, {Key: "unique", Value: true}},
		bson.D{{Key: "key", Value: bson.D{{Key: "t", Value: 1}}}, {Key: "name", Value: "t_1"}, {Key: "expireAfterSeconds", Value: 0}},
	}}})
	if field(t, reply, "numIndexesBefore") != int32(1) || field(t, reply, "numIndexesAfter") != int32(3) || field(t, reply, "createdCollectionAutomatically") != true {
		t.Fatalf("createIndexes in the transaction: %v", reply)
	}
	past := bson.NewDateTimeFromTime(time.Now().Add(-time.Hour))
	runIn(bson.D{{Key: "insert", Value: coll}, {Key: "documents", Value: bson.A{
		bson.D{{Key: "_id", Value: 1}, {Key: "u", Value: 1}},
		bson.D{{Key: "_id", Value: 2}, {Key: "u", Value: 2}, {Key: "t", Value: past}},
	}}})
	found := runIn(bson.D{{Key: "find", Value: coll}, {Key: "hint", Value: "u_1"}})
	if n := len(field(t, field(t, found, "cursor").(bson.D), "firstBatch").(bson.A)); n != 1 {
		t.Fatalf("the transaction reads %d documents through its new index, want 1 (the other expired)", n)
	}
	err := db.RunCommand(ctxT(t), bson.D{{Key: "listIndexes", Value: coll}}).Err()
	wantCode(t, err, 26, "")
	if err := sess.CommitTransaction(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	specs, err := db.Collection(coll).Indexes().ListSpecifications(ctxT(t))
	if err != nil || len(specs) != 3 || specs[1].Name != "u_1" || specs[2].ExpireAfterSeconds == nil {
		t.Fatalf("indexes after the commit: %v, %v", specs, err)
	}
	_, err = db.Collection(coll).InsertOne(ctxT(t), bson.D{{Key: "_id", Value: 3}, {Key: "u", Value: 1}})
	wantCode(t, err, 11000, "u_1 dup key")
	if n := countDocs(t, db.Collection(coll)); n != 1 {
		t.Fatalf("%d documents after the commit, want 1 (one expired)", n)
	}
}

// wantConcurrentCreateConflicts: a namespace created by others while the
// transaction held its own creation fails the commit with WriteConflict,
// as mongod's, whether the other creation came before or after the
// transaction's statement; the other's collection is left as it made it.
func wantConcurrentCreateConflicts(t *testing.T, db *mongo.Database) {
	for i, outsideFirst := range []bool{false, true} {
		coll := fmt.Sprintf("raced_%d", i)
		sctx, sess := inTransaction(t, db.Client(), nil)
		// The transaction's snapshot is taken by its first statement.
		if err := db.RunCommand(sctx, bson.D{{Key: "find", Value: "other"}}).Err(); err != nil {
			t.Fatal(err)
		}
		outside := func() {
			if _, err := db.Collection(coll).InsertOne(ctxT(t), bson.D{{Key: "_id", Value: "outside"}}); err != nil {
				t.Fatal(err)
			}
		}
		if outsideFirst {
			outside()
		}
		if err := db.RunCommand(sctx, bson.D{{Key: "create", Value: coll}}).Err(); err != nil {
			t.Fatalf("create of a collection created after the transaction's snapshot: %v", err)
		}
		if _, err := db.Collection(coll).InsertOne(sctx, bson.D{{Key: "_id", Value: "inside"}}); err != nil {
			t.Fatal(err)
		}
		if !outsideFirst {
			outside()
		}
		wantCode(t, sess.CommitTransaction(ctxT(t)), 112, "Write conflict")
		var docs []bson.M
		cur, err := db.Collection(coll).Find(ctxT(t), bson.D{})
		if err == nil {
			err = cur.All(ctxT(t), &docs)
		}
		if err != nil || len(docs) != 1 || docs[0]["_id"] != "outside" {
			t.Fatalf("after the failed commit: %v, %v; want only the outside document", docs, err)
		}
	}
}

// TestTransactionDDLReplicates: on three members, a collection created in
// a transaction with an index and a document reaches the secondaries at
// the commit whole: listed, indexed, counted, with equal dbHash.
func TestTransactionDDLReplicates(t *testing.T) {
	rs := startReplSet(t, 3)
	db := rs.client().Database("txnddl")
	sctx, sess := inTransaction(t, db.Client(), nil)
	if err := db.RunCommand(sctx, bson.D{{Key: "createIndexes", Value: "replicated"}, {Key: "indexes", Value: bson.A{
		bson.D{{Key: "key", Value: bson.D{{Key: "x", Value: 1}}}, {Key: "name", Value: "x_1"}}}}}).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Collection("replicated").InsertOne(sctx, bson.D{{Key: "_id", Value: 1}, {Key: "x", Value: 7}}); err != nil {
		t.Fatal(err)
	}
	if err := sess.CommitTransaction(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	rs.waitSameHash("txnddl", 20*time.Second)
	primary := rs.waitPrimary(-1, 20*time.Second)
	for i := range rs.addrs {
		if i == primary {
			continue
		}
		coll := rs.direct(i).Database("txnddl").Collection("replicated")
		specs, err := coll.Indexes().ListSpecifications(ctxT(t))
		if err != nil || len(specs) != 2 || specs[1].Name != "x_1" {
			t.Fatalf("member %d's indexes: %v, %v", i, specs, err)
		}
		n, err := coll.CountDocuments(ctxT(t), bson.D{{Key: "x", Value: 7}})
		if err != nil || n != 1 {
			t.Fatalf("member %d counts %d documents (%v), want 1", i, n, err)
		}
	}
}
