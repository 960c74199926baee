package integration

import (
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/mayflydb/mayfly/internal/txnrules"
)

// writePath is one way a command writes {_id: id, a: 1} into a
// collection of the test database, and where its reply holds the error.
type writePath struct {
	name    string // the registry's name for the command
	variant string
	db      string
	cmd     func(coll string, id int) bson.D
	// errorDoc finds the error in the reply (the reply itself for a
	// command that fails as a whole).
	errorDoc func(t *testing.T, reply bson.D) bson.D
	// topLevel: the command fails as a whole, so the error names its code
	// (codeName); writeErrors entries and client bulkWrite's reply items
	// do not.
	topLevel bool
	// context is what mongod puts before the message: aggregate adds its
	// executor's.
	context string
	// viaTemp: $out writes into a temporary collection first, which the
	// duplicate key message names.
	viaTemp bool
	// dupOnly: the command needs the unique index on a, which only the
	// duplicate key collection has.
	dupOnly bool
}

const aggContext = "PlanExecutor error during aggregation :: caused by :: "

func doc(id int) bson.D { return bson.D{{Key: "_id", Value: id}, {Key: "a", Value: 1}} }

func writePaths() []writePath {
	return []writePath{
		{name: "insert", db: "test", errorDoc: firstWriteError, cmd: func(coll string, id int) bson.D {
			return bson.D{{Key: "insert", Value: coll}, {Key: "documents", Value: bson.A{doc(id)}}}
		}},
		{name: "update", variant: "upsert", db: "test", errorDoc: firstWriteError, cmd: func(coll string, id int) bson.D {
			return bson.D{{Key: "update", Value: coll}, {Key: "updates", Value: bson.A{bson.D{
				{Key: "q", Value: bson.D{{Key: "_id", Value: id}}}, {Key: "u", Value: bson.D{{Key: "$set", Value: bson.D{{Key: "a", Value: 1}}}}}, {Key: "upsert", Value: true}}}}}
		}},
		{name: "findAndModify", variant: "upsert", db: "test", errorDoc: wholeReply, topLevel: true, cmd: func(coll string, id int) bson.D {
			return bson.D{{Key: "findAndModify", Value: coll}, {Key: "query", Value: bson.D{{Key: "_id", Value: id}}},
				{Key: "update", Value: bson.D{{Key: "$set", Value: bson.D{{Key: "a", Value: 1}}}}}, {Key: "upsert", Value: true}}
		}},
		{name: "bulkWrite", variant: "insert", db: "admin", errorDoc: firstBulkWriteItem, cmd: func(coll string, id int) bson.D {
			return bson.D{{Key: "bulkWrite", Value: 1},
				{Key: "ops", Value: bson.A{bson.D{{Key: "insert", Value: 0}, {Key: "document", Value: doc(id)}}}},
				{Key: "nsInfo", Value: bson.A{bson.D{{Key: "ns", Value: "test." + coll}}}}}
		}},
		{name: "aggregate", variant: "$merge", db: "test", errorDoc: wholeReply, topLevel: true, context: aggContext, cmd: func(coll string, id int) bson.D {
			return aggregateFrom(id, bson.D{{Key: "$merge", Value: bson.D{{Key: "into", Value: coll}, {Key: "whenMatched", Value: "merge"}, {Key: "whenNotMatched", Value: "insert"}}}})
		}},
		{name: "aggregate", variant: "$merge whenMatched fail", db: "test", errorDoc: wholeReply, topLevel: true, context: aggContext, dupOnly: true, cmd: func(coll string, id int) bson.D {
			return aggregateFrom(id, bson.D{{Key: "$merge", Value: bson.D{{Key: "into", Value: coll}, {Key: "on", Value: "a"}, {Key: "whenMatched", Value: "fail"}}}})
		}},
		{name: "aggregate", variant: "$out", db: "test", errorDoc: wholeReply, topLevel: true, context: aggContext, viaTemp: true, cmd: func(coll string, id int) bson.D {
			// The target's documents twice over, under new _ids: {a: 1} twice.
			return bson.D{{Key: "aggregate", Value: coll}, {Key: "pipeline", Value: bson.A{
				bson.D{{Key: "$unionWith", Value: coll}}, bson.D{{Key: "$unset", Value: "_id"}}, bson.D{{Key: "$out", Value: coll}}}},
				{Key: "cursor", Value: bson.D{}}}
		}},
	}
}

// aggregateFrom runs stages over a one-document pipeline source {_id: id, a: 1}.
func aggregateFrom(id int, stages ...bson.D) bson.D {
	pipeline := bson.A{bson.D{{Key: "$documents", Value: bson.A{doc(id)}}}}
	for _, s := range stages {
		pipeline = append(pipeline, s)
	}
	return bson.D{{Key: "aggregate", Value: 1}, {Key: "pipeline", Value: pipeline}, {Key: "cursor", Value: bson.D{}}}
}

func firstWriteError(t *testing.T, reply bson.D) bson.D {
	t.Helper()
	errs, _ := lookupField(reply, "writeErrors").(bson.A)
	if len(errs) != 1 {
		t.Fatalf("want one writeError in %v", reply)
	}
	d, _ := errs[0].(bson.D)
	return d
}

func firstBulkWriteItem(t *testing.T, reply bson.D) bson.D {
	t.Helper()
	cur, _ := lookupField(reply, "cursor").(bson.D)
	batch, _ := lookupField(cur, "firstBatch").(bson.A)
	if len(batch) != 1 {
		t.Fatalf("want one reply item in %v", reply)
	}
	d, _ := batch[0].(bson.D)
	return d
}

func wholeReply(_ *testing.T, reply bson.D) bson.D { return reply }

// TestWriteErrorReplies: every command that writes documents answers a
// duplicate key and a failed validation with mongod's whole error: code,
// codeName where mongod gives it, keyPattern and keyValue or errInfo, and
// mongod's message. Delete writes no document, so it can meet neither;
// every other retryable write must have a row.
func TestWriteErrorReplies(t *testing.T) {
	db := newDB(t)
	runCmd(t, db, bson.D{{Key: "createIndexes", Value: "dup"}, {Key: "indexes", Value: bson.A{bson.D{
		{Key: "key", Value: bson.D{{Key: "a", Value: 1}}}, {Key: "name", Value: "a_1"}, {Key: "unique", Value: true}}}}})
	runCmd(t, db, bson.D{{Key: "insert", Value: "dup"}, {Key: "documents", Value: bson.A{doc(1)}}})
	runCmd(t, db, bson.D{{Key: "create", Value: "valid"}, {Key: "validator", Value: bson.D{{Key: "a", Value: bson.D{{Key: "$type", Value: "string"}}}}}})

	covered := map[string]bool{"delete": true}
	for i, path := range writePaths() {
		covered[path.name] = true
		id := 100 + i
		t.Run(path.name+path.variant+"/duplicate", func(t *testing.T) {
			reply := anyReply(t, db.Client().Database(path.db), path.cmd("dup", id))
			checkDupKey(t, path, path.errorDoc(t, reply))
		})
		if path.viaTemp || path.dupOnly {
			continue // $out replaces the target, validator and all
		}
		t.Run(path.name+path.variant+"/validation", func(t *testing.T) {
			reply := anyReply(t, db.Client().Database(path.db), path.cmd("valid", id))
			checkValidation(t, path, id, path.errorDoc(t, reply))
		})
	}
	for _, name := range txnrules.RetryableWrites() {
		if !covered[name] {
			t.Errorf("write command %s has no row", name)
		}
	}
}

// anyReply runs cmd and returns its reply, failed or not.
func anyReply(t *testing.T, db *mongo.Database, cmd bson.D) bson.D {
	t.Helper()
	var reply bson.D
	if err := db.RunCommand(ctxT(t), cmd).Decode(&reply); err != nil {
		return rawError(t, err)
	}
	return reply
}

func checkDupKey(t *testing.T, path writePath, errDoc bson.D) {
	t.Helper()
	want := bson.D{{Key: "code", Value: int32(11000)},
		{Key: "keyPattern", Value: bson.D{{Key: "a", Value: int32(1)}}}, {Key: "keyValue", Value: bson.D{{Key: "a", Value: int32(1)}}}}
	checkError(t, path, errDoc, "DuplicateKey", want)
	msg, _ := lookupField(errDoc, "errmsg").(string)
	prefix, suffix := path.context+"E11000 duplicate key error collection: test.dup index: a_1 dup key: { a: 1 }", ""
	if path.viaTemp {
		prefix, suffix = path.context+"E11000 duplicate key error collection: test.tmp.agg_out.", " index: a_1 dup key: { a: 1 }"
	}
	if !strings.HasPrefix(msg, prefix) || !strings.HasSuffix(msg, suffix) {
		t.Fatalf("errmsg %q, want mongod's E11000 form", msg)
	}
}

func checkValidation(t *testing.T, path writePath, id int, errDoc bson.D) {
	t.Helper()
	checkError(t, path, errDoc, "DocumentValidationFailure", bson.D{
		{Key: "code", Value: int32(121)}, {Key: "errmsg", Value: path.context + "Document failed validation"}})
	info, _ := lookupField(errDoc, "errInfo").(bson.D)
	if got := lookupField(info, "failingDocumentId"); !sameValue(got, int32(id)) {
		t.Fatalf("errInfo.failingDocumentId %v, want %d in %v", got, id, errDoc)
	}
	if details, _ := lookupField(info, "details").(bson.D); len(details) == 0 {
		t.Fatalf("errInfo without details: %v", errDoc)
	}
}

func checkError(t *testing.T, path writePath, errDoc bson.D, codeName string, want bson.D) {
	t.Helper()
	if path.topLevel {
		want = append(want, bson.E{Key: "codeName", Value: codeName}, bson.E{Key: "ok", Value: 0.0})
	} else if lookupField(errDoc, "codeName") != nil {
		t.Fatalf("codeName in a per-write error, which mongod leaves out: %v", errDoc)
	}
	wantFields(t, errDoc, want)
}
