package bsonutil

import (
	"fmt"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

func TestLookupScalarAgreesWithDecodeD(t *testing.T) {
	raw, err := bson.Marshal(bson.D{
		{Key: "s", Value: "x"}, {Key: "i", Value: int32(3)}, {Key: "l", Value: int64(4)},
		{Key: "d", Value: bson.NewDateTimeFromTime(time.Unix(5, 0))}, {Key: "n", Value: nil},
		{Key: "o", Value: bson.NewObjectID()}, {Key: "a", Value: bson.A{1}}, {Key: "e", Value: bson.D{{Key: "k", Value: 1}}},
		{Key: "s", Value: "second"},
	})
	if err != nil {
		t.Fatal(err)
	}
	full, err := DecodeD(raw, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range full[:6] {
		v, found, ok, err := LookupScalar(raw, e.Key)
		if err != nil || !found || !ok || Compare(v, e.Value) != 0 || fmt.Sprintf("%T", v) != fmt.Sprintf("%T", e.Value) {
			t.Errorf("%s: %v (%T) found %v ok %v err %v, want %v (%T)", e.Key, v, v, found, ok, err, e.Value, e.Value)
		}
	}
	for _, name := range []string{"a", "e"} {
		if _, found, ok, _ := LookupScalar(raw, name); !found || ok {
			t.Errorf("%s: arrays and documents are left to DecodeD (found %v ok %v)", name, found, ok)
		}
	}
	if _, found, ok, _ := LookupScalar(raw, "missing"); found || !ok {
		t.Errorf("missing: found %v ok %v", found, ok)
	}
	if v, _, _, _ := LookupScalar(raw, "s"); v != "x" {
		t.Errorf("a repeated name gives the first value, got %v", v)
	}
}
