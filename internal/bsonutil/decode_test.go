package bsonutil

import (
	"fmt"
	"reflect"
	"strings"
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

// TestDecodeSharedOwnsItsMemory: what DecodeShared returns, below and
// above SharedMax, is what bson.Unmarshal returns and shares nothing with
// the bytes it was decoded from, which a store reuses.
func TestDecodeSharedOwnsItsMemory(t *testing.T) {
	for _, pad := range []int{10, SharedMax} {
		src := bson.D{
			{Key: "token", Value: strings.Repeat("t", pad)},
			{Key: "user", Value: bson.D{{Key: "name", Value: "ann"}, {Key: "tags", Value: bson.A{"a", bson.D{{Key: "k", Value: "v"}}}}}},
			{Key: "bin", Value: bson.Binary{Subtype: 0, Data: []byte("bytes")}},
			{Key: "at", Value: bson.DateTime(1234)},
		}
		raw, err := bson.Marshal(src)
		if err != nil {
			t.Fatal(err)
		}
		var want bson.D
		if err := bson.Unmarshal(raw, &want); err != nil {
			t.Fatal(err)
		}
		got, err := DecodeShared(raw, 2)
		if err != nil {
			t.Fatal(err)
		}
		for i := range raw {
			raw[i] = 'X'
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%d-byte token: got %v, want %v", pad, got, want)
		}
		if cap(got) < len(got)+2 {
			t.Fatalf("%d-byte token: room for %d more fields, want 2", pad, cap(got)-len(got))
		}
		user := got[1].Value.(bson.D)
		if cap(user) != len(user) {
			t.Fatalf("%d-byte token: a nested document has spare capacity %d: an append would overwrite its neighbour", pad, cap(user)-len(user))
		}
	}
}
