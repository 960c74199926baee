package jsonschema

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

func mustCompile(t *testing.T, ext string) *Schema {
	t.Helper()
	var d bson.D
	if err := bson.UnmarshalExtJSON([]byte(ext), false, &d); err != nil {
		t.Fatal(err)
	}
	s, err := Compile(d)
	if err != nil {
		t.Fatalf("%s: %v", ext, err)
	}
	return s
}

func docOf(t *testing.T, ext string) bson.D {
	t.Helper()
	var d bson.D
	if err := bson.UnmarshalExtJSON([]byte(ext), false, &d); err != nil {
		t.Fatal(err)
	}
	return d
}

// explain renders the failures as relaxed extended JSON, to compare with
// the shape mongod gives.
func explain(t *testing.T, s *Schema, doc string) string {
	t.Helper()
	out, err := bson.MarshalExtJSON(bson.D{{Key: "f", Value: s.Failures(docOf(t, doc))}}, false, false)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

func TestStructuralKeywords(t *testing.T) {
	cases := []struct {
		name, schema, doc, want string
	}{
		{"patternProperties",
			`{"patternProperties": {"^n_": {"bsonType": "int"}}}`,
			`{"n_a": 1, "n_b": "x"}`,
			`{"f":[{"operatorName":"patternProperties","details":[{"propertyName":"n_b","regexMatched":"^n_","details":[{"operatorName":"bsonType","specifiedAs":{"bsonType":"int"},"reason":"type did not match","consideredValue":"x","consideredType":"string"}]}]}]}`},
		{"additionalProperties false counts patterns",
			`{"properties": {"_id": {}}, "patternProperties": {"^n_": {}}, "additionalProperties": false}`,
			`{"_id": 1, "n_a": 1, "other": 2}`,
			`{"f":[{"operatorName":"additionalProperties","specifiedAs":{"additionalProperties":false},"additionalProperties":["other"]}]}`},
		{"additionalProperties schema",
			`{"properties": {"_id": {}}, "additionalProperties": {"bsonType": "string"}}`,
			`{"_id": 1, "a": "ok", "b": 2}`,
			`{"f":[{"operatorName":"additionalProperties","reason":"at least one additional property did not match the subschema","failingProperty":"b","details":[{"operatorName":"bsonType","specifiedAs":{"bsonType":"string"},"reason":"type did not match","consideredValue":2,"consideredType":"int"}]}]}`},
		{"property dependency",
			`{"dependencies": {"card": ["billing"]}}`,
			`{"card": 1}`,
			`{"f":[{"operatorName":"dependencies","failingDependencies":[{"conditionalProperty":"card","missingProperties":["billing"]}]}]}`},
		{"schema dependency",
			`{"dependencies": {"card": {"required": ["billing"]}}}`,
			`{"card": 1}`,
			`{"f":[{"operatorName":"dependencies","failingDependencies":[{"conditionalProperty":"card","details":[{"operatorName":"required","specifiedAs":{"required":["billing"]},"missingProperties":["billing"]}]}]}]}`},
		{"items as an array",
			`{"properties": {"p": {"items": [{"bsonType": "string"}, {"bsonType": "int"}]}}}`,
			`{"p": ["a", "b", 3]}`,
			`{"f":[{"operatorName":"properties","propertiesNotSatisfied":[{"propertyName":"p","details":[{"operatorName":"items","details":[{"itemIndex":1,"details":[{"operatorName":"bsonType","specifiedAs":{"bsonType":"int"},"reason":"type did not match","consideredValue":"b","consideredType":"string"}]}]}]}]}]}`},
		{"additionalItems false",
			`{"properties": {"p": {"items": [{}], "additionalItems": false}}}`,
			`{"p": [1, 2, 3]}`,
			`{"f":[{"operatorName":"properties","propertiesNotSatisfied":[{"propertyName":"p","details":[{"operatorName":"additionalItems","specifiedAs":{"additionalItems":false},"reason":"found additional items","additionalItems":[2,3]}]}]}]}`},
		{"additionalItems schema",
			`{"properties": {"p": {"items": [{}], "additionalItems": {"bsonType": "int"}}}}`,
			`{"p": [1, 2, "x"]}`,
			`{"f":[{"operatorName":"properties","propertiesNotSatisfied":[{"propertyName":"p","details":[{"operatorName":"additionalItems","reason":"At least one additional item did not match the sub-schema","itemIndex":2,"details":[{"operatorName":"bsonType","specifiedAs":{"bsonType":"int"},"reason":"type did not match","consideredValue":"x","consideredType":"string"}]}]}]}]}`},
		{"encrypt",
			`{"properties": {"ssn": {"encrypt": {"bsonType": "string"}}}}`,
			`{"ssn": "123"}`,
			`{"f":[{"operatorName":"properties","propertiesNotSatisfied":[{"propertyName":"ssn","details":[{"operatorName":"encrypt","reason":"value was not encrypted"}]}]}]}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := mustCompile(t, tc.schema)
			if got := explain(t, s, tc.doc); got != tc.want {
				t.Fatalf("failures\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}

func TestStructuralKeywordsMatch(t *testing.T) {
	s := mustCompile(t, `{"patternProperties": {"^n_": {"bsonType": "int"}}, "dependencies": {"a": ["b"]},
		"properties": {"p": {"items": [{"bsonType": "int"}], "additionalItems": false}, "e": {"encrypt": {"bsonType": "string"}}}}`)
	encrypted := func(typ byte) bson.D {
		data := append(append([]byte{1}, make([]byte, 16)...), typ, 0xAA)
		return bson.D{{Key: "e", Value: bson.Binary{Subtype: binDataEncrypted, Data: data}}}
	}
	for _, tc := range []struct {
		doc  bson.D
		want bool
	}{
		{docOf(t, `{"n_x": 1, "a": 1, "b": 2, "p": [5]}`), true},
		{docOf(t, `{"n_x": 1.5}`), false},
		{docOf(t, `{"a": 1}`), false},
		{docOf(t, `{"p": [5, 6]}`), false},
		{docOf(t, `{"p": []}`), true},
		{encrypted(2), true},
		{encrypted(16), false},
	} {
		if got := s.Match(tc.doc); got != tc.want {
			t.Errorf("%v: %v, want %v (%v)", tc.doc, got, tc.want, s.Failures(tc.doc))
		}
	}
}
