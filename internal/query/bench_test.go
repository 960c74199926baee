package query

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// sessionDoc is a document of the kind Mayfly's TTL collections hold.
func sessionDoc() bson.D {
	return bson.D{
		{Key: "_id", Value: bson.ObjectID{1, 2, 3}},
		{Key: "token", Value: "3f2a9c1e8b7d4f60a5c2e1d0b9a87654"},
		{Key: "userID", Value: int64(424242)},
		{Key: "accessTime", Value: bson.DateTime(1_760_000_000_000)},
	}
}

func benchMatch(b *testing.B, filter bson.D, want bool) {
	f, err := NewFilter(filter)
	if err != nil {
		b.Fatal(err)
	}
	d := sessionDoc()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if f.Match(d) != want {
			b.Fatal("unexpected result")
		}
	}
}

func BenchmarkMatchEquality(b *testing.B) {
	benchMatch(b, bson.D{{Key: "token", Value: "3f2a9c1e8b7d4f60a5c2e1d0b9a87654"}}, true)
}

func BenchmarkMatchEqualityMiss(b *testing.B) {
	benchMatch(b, bson.D{{Key: "token", Value: "00000000000000000000000000000000"}}, false)
}

func BenchmarkMatchTwoFields(b *testing.B) {
	benchMatch(b, bson.D{
		{Key: "token", Value: "3f2a9c1e8b7d4f60a5c2e1d0b9a87654"},
		{Key: "userID", Value: int32(424242)},
	}, true)
}

func BenchmarkMatchRange(b *testing.B) {
	benchMatch(b, bson.D{{Key: "accessTime", Value: bson.D{
		{Key: "$gte", Value: bson.DateTime(1_700_000_000_000)},
		{Key: "$lt", Value: bson.DateTime(1_800_000_000_000)},
	}}}, true)
}

func BenchmarkMatchInArray(b *testing.B) {
	f, err := NewFilter(bson.D{{Key: "tags", Value: bson.D{{Key: "$in", Value: bson.A{"x", "y", "z"}}}}})
	if err != nil {
		b.Fatal(err)
	}
	d := append(sessionDoc(), bson.E{Key: "tags", Value: bson.A{"a", "b", "c", "z"}})
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if !f.Match(d) {
			b.Fatal("no match")
		}
	}
}

func BenchmarkNewFilter(b *testing.B) {
	filter := bson.D{{Key: "token", Value: "3f2a9c1e8b7d4f60a5c2e1d0b9a87654"}}
	b.ReportAllocs()
	for range b.N {
		if _, err := NewFilter(filter); err != nil {
			b.Fatal(err)
		}
	}
}
