package integration

import (
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

func validated(t *testing.T, db *mongo.Database, validator bson.D, extra ...bson.E) *mongo.Collection {
	t.Helper()
	runCmd(t, db, append(bson.D{{Key: "create", Value: "v"}, {Key: "validator", Value: validator}}, extra...))
	return db.Collection("v")
}

func writeErrorOf(t *testing.T, err error) mongo.WriteError {
	t.Helper()
	var we mongo.WriteException
	if !errorAs(err, &we) || len(we.WriteErrors) != 1 {
		t.Fatalf("want one write error, got %v", err)
	}
	return we.WriteErrors[0]
}

func TestSchemaValidationWithQueryOperators(t *testing.T) {
	db := newDB(t)
	c := validated(t, db, bson.D{{Key: "qty", Value: bson.D{{Key: "$gt", Value: 0}}}, {Key: "name", Value: bson.D{{Key: "$type", Value: "string"}}}})
	ctx := ctxT(t)
	if _, err := c.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}, {Key: "qty", Value: 5}, {Key: "name", Value: "ok"}}); err != nil {
		t.Fatal(err)
	}
	_, err := c.InsertOne(ctx, bson.D{{Key: "_id", Value: 2}, {Key: "qty", Value: 0}, {Key: "name", Value: 7}})
	we := writeErrorOf(t, err)
	if we.Code != 121 || we.Message != "Document failed validation" {
		t.Fatalf("insert: %+v", we)
	}
	want := `{"failingDocumentId":2,"details":{"operatorName":"$and","clausesNotSatisfied":[` +
		`{"index":0,"details":{"operatorName":"$gt","specifiedAs":{"qty":{"$gt":0}},"reason":"comparison failed","consideredValue":0}},` +
		`{"index":1,"details":{"operatorName":"$type","specifiedAs":{"name":{"$type":"string"}},"reason":"type did not match","consideredValue":7,"consideredType":"int"}}]}}`
	if got := bsonString(bsonRawToD(t, we.Details)); got != want {
		t.Fatalf("errInfo\n got %s\nwant %s", got, want)
	}
	_, err = c.UpdateOne(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$set", Value: bson.D{{Key: "qty", Value: -1}}}})
	if we := writeErrorOf(t, err); we.Code != 121 {
		t.Fatalf("update: %+v", we)
	}
	// bypassDocumentValidation lets it through.
	if _, err := c.InsertOne(ctx, bson.D{{Key: "_id", Value: 3}, {Key: "qty", Value: -5}}, options.InsertOne().SetBypassDocumentValidation(true)); err != nil {
		t.Fatalf("bypass: %v", err)
	}
	err = c.FindOneAndUpdate(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$set", Value: bson.D{{Key: "qty", Value: -1}}}}).Err()
	wantCode(t, err, 121, "Document failed validation")

	// moderate: a document that already fails may change; warn: allowed.
	runCmd(t, db, bson.D{{Key: "collMod", Value: "v"}, {Key: "validationLevel", Value: "moderate"}})
	if _, err := c.UpdateOne(ctx, bson.D{{Key: "_id", Value: 3}}, bson.D{{Key: "$set", Value: bson.D{{Key: "qty", Value: -6}}}}); err != nil {
		t.Fatalf("moderate update of an invalid document: %v", err)
	}
	if _, err := c.UpdateOne(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$set", Value: bson.D{{Key: "qty", Value: -6}}}}); err == nil {
		t.Fatal("moderate must still check valid documents")
	}
	runCmd(t, db, bson.D{{Key: "collMod", Value: "v"}, {Key: "validationAction", Value: "warn"}})
	if _, err := c.InsertOne(ctx, bson.D{{Key: "_id", Value: 4}, {Key: "qty", Value: -1}}); err != nil {
		t.Fatalf("warn: %v", err)
	}
	colls, err := db.ListCollectionSpecifications(ctx, bson.D{{Key: "name", Value: "v"}})
	if err != nil || len(colls) != 1 {
		t.Fatal(err)
	}
	var opts bson.D
	if err := bson.Unmarshal(colls[0].Options, &opts); err != nil {
		t.Fatal(err)
	}
	for _, part := range []string{`"validationLevel":"moderate"`, `"validationAction":"warn"`, `"validator":{"qty"`} {
		if !strings.Contains(bsonString(opts), part) {
			t.Fatalf("listCollections options %s lack %s", opts, part)
		}
	}
}

func TestSchemaValidationRefusals(t *testing.T) {
	db := newDB(t)
	ce := cmdErr(t, db, bson.D{{Key: "create", Value: "j"}, {Key: "validator", Value: bson.D{{Key: "$jsonSchema", Value: bson.D{{Key: "colour", Value: 1}}}}}})
	if ce.Code != 9 || ce.Message != "Unknown $jsonSchema keyword: colour" {
		t.Fatalf("unknown $jsonSchema keyword: %v", ce)
	}
	ce = cmdErr(t, db, bson.D{{Key: "create", Value: "j"}, {Key: "validator", Value: bson.D{{Key: "a", Value: 1}}}, {Key: "validationLevel", Value: "sometimes"}})
	if ce.Code != 2 {
		t.Fatalf("bad level: %v", ce)
	}
}

func bsonRawToD(t *testing.T, raw bson.Raw) bson.D {
	t.Helper()
	var d bson.D
	if err := bson.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	return d
}

func TestSchemaValidationWithJSONSchema(t *testing.T) {
	db := newDB(t)
	schema := bson.D{
		{Key: "bsonType", Value: "object"},
		{Key: "required", Value: bson.A{"name"}},
		{Key: "properties", Value: bson.D{
			{Key: "name", Value: bson.D{{Key: "bsonType", Value: "string"}, {Key: "maxLength", Value: 5}}},
			{Key: "age", Value: bson.D{{Key: "bsonType", Value: "int"}, {Key: "minimum", Value: 0}}},
			{Key: "role", Value: bson.D{{Key: "enum", Value: bson.A{"admin", "user"}}}},
		}},
	}
	c := validated(t, db, bson.D{{Key: "$jsonSchema", Value: schema}})
	ctx := ctxT(t)
	if _, err := c.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}, {Key: "name", Value: "ann"}, {Key: "age", Value: 30}, {Key: "role", Value: "user"}}); err != nil {
		t.Fatal(err)
	}
	_, err := c.InsertOne(ctx, bson.D{{Key: "_id", Value: 2}, {Key: "age", Value: -1}})
	we := writeErrorOf(t, err)
	want := `{"failingDocumentId":2,"details":{"operatorName":"$jsonSchema","schemaRulesNotSatisfied":[` +
		`{"operatorName":"required","specifiedAs":{"required":["name"]},"missingProperties":["name"]},` +
		`{"operatorName":"properties","propertiesNotSatisfied":[{"propertyName":"age","details":[{"operatorName":"minimum","specifiedAs":{"minimum":0},"reason":"comparison failed","consideredValue":-1}]}]}]}}`
	if got := bsonString(bsonRawToD(t, we.Details)); we.Code != 121 || got != want {
		t.Fatalf("errInfo\n got %s\nwant %s", got, want)
	}
	for _, bad := range []bson.D{
		{{Key: "name", Value: 7}},
		{{Key: "name", Value: "toolongname"}},
		{{Key: "name", Value: "bo"}, {Key: "role", Value: "root"}},
	} {
		if _, err := c.InsertOne(ctx, bad); err == nil {
			t.Fatalf("%v accepted", bad)
		}
	}
}

// The structural $jsonSchema keywords are evaluated and explained as
// mongod's errInfo does.
func TestSchemaStructuralKeywords(t *testing.T) {
	db := newDB(t)
	ctx := ctxT(t)
	var schema bson.D
	if err := bson.UnmarshalExtJSON([]byte(`{"bsonType": "object",
		"patternProperties": {"^n_": {"bsonType": "int"}},
		"dependencies": {"card": ["billing"]},
		"properties": {"tags": {"items": [{"bsonType": "string"}], "additionalItems": false}}}`), false, &schema); err != nil {
		t.Fatal(err)
	}
	runCmd(t, db, bson.D{{Key: "create", Value: "s"}, {Key: "validator", Value: bson.D{{Key: "$jsonSchema", Value: schema}}}})
	c := db.Collection("s")
	if _, err := c.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}, {Key: "n_a", Value: 1}, {Key: "card", Value: 1}, {Key: "billing", Value: "x"}, {Key: "tags", Value: bson.A{"a"}}}); err != nil {
		t.Fatalf("valid document: %v", err)
	}
	_, err := c.InsertOne(ctx, bson.D{{Key: "_id", Value: 2}, {Key: "n_a", Value: "one"}, {Key: "card", Value: 1}, {Key: "tags", Value: bson.A{"a", "b"}}})
	we := writeErrorOf(t, err)
	if we.Code != 121 {
		t.Fatalf("invalid document: %+v", we)
	}
	want := `{"failingDocumentId":2,"details":{"operatorName":"$jsonSchema","schemaRulesNotSatisfied":[` +
		`{"operatorName":"properties","propertiesNotSatisfied":[{"propertyName":"tags","details":[{"operatorName":"additionalItems","specifiedAs":{"additionalItems":false},"reason":"found additional items","additionalItems":["b"]}]}]},` +
		`{"operatorName":"patternProperties","details":[{"propertyName":"n_a","regexMatched":"^n_","details":[{"operatorName":"bsonType","specifiedAs":{"bsonType":"int"},"reason":"type did not match","consideredValue":"one","consideredType":"string"}]}]},` +
		`{"operatorName":"dependencies","failingDependencies":[{"conditionalProperty":"card","missingProperties":["billing"]}]}]}}`
	if got := bsonString(bsonRawToD(t, we.Details)); got != want {
		t.Fatalf("errInfo\n got %s\nwant %s", got, want)
	}
}
