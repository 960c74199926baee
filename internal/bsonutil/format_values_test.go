package bsonutil

import (
	"math"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

func TestValueString(t *testing.T) {
	oid, _ := bson.ObjectIDFromHex("0102030405060708090a0b0c")
	uuid := bson.Binary{Subtype: 4, Data: []byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}}
	dec, _ := bson.ParseDecimal128("1.50")
	for _, c := range []struct {
		v    any
		want string
	}{
		{int32(5), "5"}, {int64(-5), "-5"}, {1.0, "1.0"}, {1.5, "1.5"}, {1e20, "1e+20.0"},
		{0.1, "0.1"}, {math.NaN(), "nan.0"}, {math.Inf(-1), "-inf.0"}, {dec, "1.50"},
		{"x", `"x"`}, {nil, "null"}, {true, "true"}, {oid, "ObjectId('0102030405060708090a0b0c')"},
		{bson.DateTime(1500), "new Date(1500)"}, {bson.Timestamp{T: 3, I: 4}, "Timestamp(3, 4)"},
		{bson.Regex{Pattern: "a.b", Options: "i"}, "/a.b/i"}, {bson.MinKey{}, "MinKey"},
		{uuid, `UUID("00010203-0405-0607-0809-0a0b0c0d0e0f")`},
		{bson.Binary{Subtype: 0, Data: []byte{0xab, 1}}, "BinData(0, AB01)"},
		{bson.D{}, "{}"}, {bson.A{}, "[]"},
		{bson.D{{Key: "a", Value: bson.A{int32(1), bson.D{{Key: "b", Value: "c"}}}}}, `{ a: [ 1, { b: "c" } ] }`},
	} {
		if got := Format(c.v); got != c.want {
			t.Errorf("Format(%v) = %s, want %s", c.v, got, c.want)
		}
	}
}
