package integration

import (
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Index specifications mongod refuses are refused, with its codes.
func TestIndexSpecRulesAsMongod(t *testing.T) {
	db := newDB(t)
	create := func(specs ...any) bson.D {
		return bson.D{{Key: "createIndexes", Value: "ix"}, {Key: "indexes", Value: bson.A(specs)}}
	}
	key := bson.D{{Key: "a", Value: 1}}

	ce := cmdErr(t, db, create(bson.D{{Key: "key", Value: key}}))
	if ce.Code != 9 || ce.Message != "Error in specification { key: { a: 1 } } :: caused by :: The 'name' field is a required property of an index specification" {
		t.Fatalf("spec without name: %v", ce)
	}

	named := bson.D{{Key: "key", Value: key}, {Key: "name", Value: "a_1"}}
	ce = cmdErr(t, db, create(named, named))
	if ce.Code != 68 || ce.Message != "Identical index already exists: a_1" {
		t.Fatalf("two identical specs: %v", ce)
	}

	ce = cmdErr(t, db, create(bson.D{{Key: "key", Value: key}, {Key: "name", Value: "a_1"}, {Key: "unique", Value: "yes"}}))
	if ce.Code != 14 || !strings.Contains(ce.Message, `The field 'unique has value unique: "yes", which is not convertible to bool`) {
		t.Fatalf("unique: \"yes\": %v", ce)
	}
	// Numbers convert to bool, as in mongod.
	runCmd(t, db, create(bson.D{{Key: "key", Value: key}, {Key: "name", Value: "a_1"}, {Key: "unique", Value: 1}}))

	specs, err := db.Collection("ix").Indexes().ListSpecifications(ctxT(t))
	if err != nil || len(specs) != 2 || specs[1].Version != 2 || specs[1].Unique == nil || !*specs[1].Unique {
		t.Fatalf("listIndexes: %+v %v", specs, err)
	}
	ce = cmdErr(t, db, create(bson.D{{Key: "key", Value: key}, {Key: "name", Value: "other"}, {Key: "unique", Value: true}}))
	if ce.Code != 85 || !strings.Contains(ce.Message, "Index already exists with a different name: a_1") {
		t.Fatalf("same index, other name: %v", ce)
	}
	ce = cmdErr(t, db, create(bson.D{{Key: "key", Value: key}, {Key: "name", Value: "a_1"}}))
	if ce.Code != 86 || !strings.Contains(ce.Message, `Requested index: { v: 2, key: { a: 1 }, name: "a_1" }, existing index: { v: 2, key: { a: 1 }, name: "a_1", unique: 1 }`) {
		t.Fatalf("same name, other options: %v", ce)
	}
}
