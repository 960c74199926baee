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
		{bson.D{{Key: "_id", Value: 1}, {Key: "n", Value: 9.5}, {Key: "tags", Value: bson.A{"a", "b"}}}, true},
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
