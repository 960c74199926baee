package integration

import (
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// Argument validation answers mongod's codes and messages.
func TestArgumentValidationCodes(t *testing.T) {
	db := newDB(t)
	seedNumbers(t, db.Collection("c"))
	for _, tc := range []struct {
		name string
		cmd  bson.D
		code int32
		msg  string
	}{
		{"negative batchSize", bson.D{{Key: "find", Value: "c"}, {Key: "batchSize", Value: -1}}, 51024, "BSON field 'batchSize' value must be >= 0, actual value '-1'"},
		{"negative limit", bson.D{{Key: "find", Value: "c"}, {Key: "limit", Value: -2}}, 51024, "BSON field 'limit' value must be >= 0, actual value '-2'"},
		{"negative skip", bson.D{{Key: "find", Value: "c"}, {Key: "skip", Value: -3}}, 51024, "BSON field 'skip' value must be >= 0, actual value '-3'"},
		{"empty collection name", bson.D{{Key: "find", Value: ""}}, 73, "Invalid namespace specified 'test.'"},
		{"q of the wrong type", bson.D{{Key: "update", Value: "c"}, {Key: "updates", Value: bson.A{bson.D{{Key: "q", Value: 1}, {Key: "u", Value: bson.D{}}}}}}, 14, "BSON field 'update.updates.q' is the wrong type 'int', expected type 'object'"},
		{"missing q", bson.D{{Key: "update", Value: "c"}, {Key: "updates", Value: bson.A{bson.D{{Key: "u", Value: bson.D{}}}}}}, 40414, "BSON field 'update.updates.q' is missing but a required field"},
		{"delete q of the wrong type", bson.D{{Key: "delete", Value: "c"}, {Key: "deletes", Value: bson.A{bson.D{{Key: "q", Value: "x"}, {Key: "limit", Value: 0}}}}}, 14, "BSON field 'delete.deletes.q' is the wrong type 'string', expected type 'object'"},
	} {
		ce := cmdErr(t, db, tc.cmd)
		if ce.Code != tc.code || ce.Message != tc.msg {
			t.Errorf("%s: got (%d) %s", tc.name, ce.Code, ce.Message)
		}
	}
}

// Errors raised while a query runs carry mongod's context prefix.
func TestExecutionErrorContext(t *testing.T) {
	db := newDB(t)
	coll := db.Collection("c")
	if _, err := coll.InsertOne(ctxT(t), bson.D{{Key: "_id", Value: 1}, {Key: "s", Value: "text"}}); err != nil {
		t.Fatal(err)
	}
	err := coll.FindOneAndUpdate(ctxT(t), bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "s", Value: 1}}}}).Err()
	wantCode(t, err, 14, "Plan executor error during findAndModify :: caused by :: Cannot apply $inc to a value of non-numeric type.")
	_, err = coll.Find(ctxT(t), bson.D{{Key: "$expr", Value: bson.D{{Key: "$divide", Value: bson.A{1, 0}}}}})
	wantCode(t, err, 16608, "Executor error during find command :: caused by :: can't $divide by zero")
	_, err = coll.Aggregate(ctxT(t), bson.A{bson.D{{Key: "$project", Value: bson.D{{Key: "x", Value: bson.D{{Key: "$divide", Value: bson.A{1, 0}}}}}}}})
	wantCode(t, err, 16608, "PlanExecutor error during aggregation :: caused by :: can't $divide by zero")
}

func TestGetParameterDetailsAndListCommands(t *testing.T) {
	db := newDB(t)
	admin := db.Client().Database("admin")
	res := runCmd(t, admin, bson.D{{Key: "getParameter", Value: bson.D{{Key: "allParameters", Value: true}, {Key: "showDetails", Value: true}}}})
	fcv, ok := field(t, res, "featureCompatibilityVersion").(bson.D)
	if !ok || field(t, fcv, "settableAtRuntime") != false || field(t, fcv, "value") == nil {
		t.Fatalf("showDetails: %v", res)
	}
	one := runCmd(t, admin, bson.D{{Key: "getParameter", Value: bson.D{{Key: "showDetails", Value: true}}}, {Key: "featureCompatibilityVersion", Value: 1}})
	if _, ok := field(t, one, "featureCompatibilityVersion").(bson.D); !ok || len(one) != 2 {
		t.Fatalf("one parameter with details: %v", one)
	}
	ce := cmdErr(t, admin, bson.D{{Key: "getParameter", Value: bson.D{{Key: "bogus", Value: true}}}})
	if ce.Code != 40415 {
		t.Fatalf("unknown getParameter option: %v", ce)
	}
	lc := runCmd(t, admin, bson.D{{Key: "listCommands", Value: 1}})
	cmds := field(t, lc, "commands").(bson.D)
	find := field(t, cmds, "find").(bson.D)
	if versions := field(t, find, "apiVersions").(bson.A); len(versions) != 1 || versions[0] != "1" {
		t.Fatalf("find in listCommands: %v", find)
	}
	field(t, cmds, "listCommands")
	if field(t, field(t, cmds, "listDatabases").(bson.D), "adminOnly") != true {
		t.Fatal("listDatabases must be adminOnly")
	}
}

func TestShowRecordID(t *testing.T) {
	db := newDB(t)
	coll := db.Collection("c")
	seedNumbers(t, coll)
	cur, err := coll.Find(ctxT(t), bson.D{}, options.Find().SetShowRecordID(true).SetProjection(bson.D{{Key: "_id", Value: 0}, {Key: "n", Value: 1}}))
	if err != nil {
		t.Fatal(err)
	}
	var docs []bson.D
	if err := cur.All(ctxT(t), &docs); err != nil || len(docs) != 3 {
		t.Fatalf("%v %v", docs, err)
	}
	seen := map[int64]bool{}
	for _, d := range docs {
		last := d[len(d)-1]
		id, ok := last.Value.(int64)
		if last.Key != "$recordId" || !ok || seen[id] {
			t.Fatalf("want a distinct $recordId (long) last: %v", d)
		}
		seen[id] = true
	}
	// The same document keeps its record id.
	cur, _ = coll.Find(ctxT(t), bson.D{{Key: "n", Value: docs[0][0].Value}}, options.Find().SetShowRecordID(true))
	var again []bson.D
	if err := cur.All(ctxT(t), &again); err != nil || len(again) != 1 || !strings.Contains(bsonString(again[0]), "$recordId") || again[0][len(again[0])-1].Value != docs[0][len(docs[0])-1].Value {
		t.Fatalf("record id changed: %v vs %v", again, docs[0])
	}
}

func bsonString(d bson.D) string {
	b, _ := bson.MarshalExtJSON(d, false, false)
	return string(b)
}
