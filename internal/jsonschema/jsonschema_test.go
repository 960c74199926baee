package jsonschema

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

func TestKeywords(t *testing.T) {
	s, err := Compile(bson.D{
		{Key: "type", Value: "object"},
		{Key: "additionalProperties", Value: false},
		{Key: "properties", Value: bson.D{
			{Key: "n", Value: bson.D{{Key: "bsonType", Value: "number"}, {Key: "maximum", Value: 10}, {Key: "exclusiveMaximum", Value: true}}},
			{Key: "tags", Value: bson.D{{Key: "bsonType", Value: "array"}, {Key: "maxItems", Value: 2}, {Key: "items", Value: bson.D{{Key: "bsonType", Value: "string"}, {Key: "pattern", Value: "^[a-z]+$"}}}}},
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		doc  bson.D
		want bool
	}{
		{bson.D{{Key: "n", Value: 9.5}, {Key: "tags", Value: bson.A{"a", "b"}}}, true},
		// additionalProperties: false leaves no exception for _id, as in mongod.
		{bson.D{{Key: "_id", Value: 1}, {Key: "n", Value: 9.5}}, false},
		{bson.D{{Key: "n", Value: int64(10)}}, false},
		{bson.D{{Key: "n", Value: "9"}}, false},
		{bson.D{{Key: "tags", Value: bson.A{"a", "b", "c"}}}, false},
		{bson.D{{Key: "tags", Value: bson.A{"A"}}}, false},
		{bson.D{{Key: "other", Value: 1}}, false},
	} {
		if got := s.Match(tc.doc); got != tc.want {
			t.Errorf("%v: %v, want %v (%v)", tc.doc, got, tc.want, s.Failures(tc.doc))
		}
	}
	if _, err := Compile(bson.D{{Key: "type", Value: "integer"}}); err == nil {
		t.Fatal("type integer is not MongoDB's")
	}
}

func TestLogicalKeywords(t *testing.T) {
	str := bson.D{{Key: "bsonType", Value: "string"}}
	num := bson.D{{Key: "bsonType", Value: "number"}}
	s, err := Compile(bson.D{{Key: "properties", Value: bson.D{
		{Key: "any", Value: bson.D{{Key: "anyOf", Value: bson.A{str, num}}}},
		{Key: "one", Value: bson.D{{Key: "oneOf", Value: bson.A{num, bson.D{{Key: "minimum", Value: 5}}}}}},
		{Key: "not", Value: bson.D{{Key: "not", Value: str}}},
		{Key: "all", Value: bson.D{{Key: "allOf", Value: bson.A{num, bson.D{{Key: "multipleOf", Value: 3}}}}}},
		{Key: "set", Value: bson.D{{Key: "uniqueItems", Value: true}}},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		doc  bson.D
		want bool
	}{
		{bson.D{{Key: "any", Value: "x"}, {Key: "all", Value: 9}, {Key: "set", Value: bson.A{1, 2}}}, true},
		{bson.D{{Key: "any", Value: true}}, false},
		{bson.D{{Key: "one", Value: 7}}, false}, // a number and >= 5: two match
		{bson.D{{Key: "one", Value: 2}}, true},
		{bson.D{{Key: "not", Value: "s"}}, false},
		{bson.D{{Key: "all", Value: 10}}, false},
		{bson.D{{Key: "set", Value: bson.A{1, 1}}}, false},
	} {
		if got := s.Match(tc.doc); got != tc.want {
			t.Errorf("%v: %v, want %v (%v)", tc.doc, got, tc.want, s.Failures(tc.doc))
		}
	}
}
