package keyenc

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

func BenchmarkAppendValue(b *testing.B) {
	for _, bc := range []struct {
		name string
		v    any
	}{
		{"ObjectID", bson.NewObjectID()},
		{"string", "user-1234567@example.com"},
		{"date", bson.DateTime(1700000000000)},
		{"int", int32(123456)},
		{"double", 3.25},
		{"decimal", mustDecimal("0.1")},
		{"doc", bson.D{{Key: "a", Value: int32(1)}, {Key: "b", Value: "x"}}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			buf := make([]byte, 0, 64)
			b.ReportAllocs()
			for b.Loop() {
				buf = AppendValue(buf[:0], bc.v)
			}
		})
	}
	b.Run("AppendDate", func(b *testing.B) {
		buf := make([]byte, 0, 64)
		b.ReportAllocs()
		for b.Loop() {
			buf = AppendDate(buf[:0], 1700000000000)
		}
	})
}

func BenchmarkDecodeValue(b *testing.B) {
	enc := AppendValue(nil, bson.D{{Key: "a", Value: int32(1)}, {Key: "b", Value: "x"}})
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := DecodeValue(enc); err != nil {
			b.Fatal(err)
		}
	}
}
