package bsonutil

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestMarshalMatchesTheDriver compares Marshal with bson.Marshal byte for
// byte on random documents of every type Marshal appends itself, nested
// up to three levels, and on values it leaves to the driver.
func TestMarshalMatchesTheDriver(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 7))
	for i := range 2000 {
		doc := randomDoc(rng, 3)
		if i%50 == 0 { // values only the driver encodes, nested somewhere
			doc = append(doc, bson.E{Key: "slow", Value: bson.A{int(i), bson.M{"x": 1}, bson.Binary{Subtype: 2, Data: []byte{1}},
				bson.Regex{Pattern: "a", Options: "i"}, bson.JavaScript("f")}})
		}
		assertSameBytes(t, doc)
	}
	assertSameBytes(t, bson.D{})
}

func TestMarshalRejectsWhatTheDriverRejects(t *testing.T) {
	for _, doc := range []bson.D{
		nil,
		{{Key: "a\x00b", Value: 1}},
		{{Key: "a", Value: bson.D{{Key: "\x00", Value: "x"}}}},
		{{Key: "a", Value: make(chan int)}},
		{{Key: "raw", Value: bson.Raw{6, 0, 0, 0, 0}}},
	} {
		want, wantErr := bson.Marshal(doc)
		got, err := Marshal(doc)
		if (err == nil) != (wantErr == nil) || !bytes.Equal(got, want) {
			t.Errorf("%v: Marshal = %x, %v; bson.Marshal = %x, %v", doc, got, err, want, wantErr)
		}
	}
}

func TestMarshalRoundTripsDecodeD(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 9))
	for range 500 {
		raw, err := bson.Marshal(randomDoc(rng, 3))
		if err != nil {
			t.Fatal(err)
		}
		d, err := DecodeD(raw, 0)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Marshal(d)
		if err != nil || !bytes.Equal(got, raw) {
			t.Fatalf("round trip of %x gave %x, %v", raw, got, err)
		}
	}
}

func assertSameBytes(t *testing.T, doc bson.D) {
	t.Helper()
	want, err := bson.Marshal(doc)
	if err != nil {
		t.Fatalf("bson.Marshal(%v): %v", doc, err)
	}
	got, err := Marshal(doc)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("Marshal(%v) = %x, %v; want %x", doc, got, err, want)
	}
}

func randomDoc(rng *rand.Rand, depth int) bson.D {
	doc := bson.D{}
	for i := range rng.IntN(6) {
		doc = append(doc, bson.E{Key: randomKey(rng, i), Value: randomValue(rng, depth)})
	}
	return doc
}

func randomKey(rng *rand.Rand, i int) string {
	keys := []string{"", "_id", "token", "accessTime", "a.b", "$set", "ünï", "k" + string(rune('a'+i))}
	return keys[rng.IntN(len(keys))]
}

func randomValue(rng *rand.Rand, depth int) any {
	n := 18
	if depth == 0 {
		n = 14 // no nesting
	}
	switch rng.IntN(n) {
	case 0:
		return []string{"", "x", "a\x00b", "héllo", string([]byte{0xff, 0xfe})}[rng.IntN(5)]
	case 1:
		return int32(rng.Uint32())
	case 2:
		return int64(rng.Uint64())
	case 3:
		return []float64{0, math.Copysign(0, -1), 1.5, math.Inf(1), math.NaN(), math.MaxFloat64}[rng.IntN(6)]
	case 4:
		return rng.IntN(2) == 0
	case 5:
		return []any{nil, bson.D(nil), bson.A(nil)}[rng.IntN(3)]
	case 6:
		return bson.NewDateTimeFromTime(time.UnixMilli(rng.Int64N(1 << 42)))
	case 7:
		return bson.NewObjectID()
	case 8:
		return bson.Binary{Subtype: []byte{0, 4, 0x80}[rng.IntN(3)], Data: []byte("abc")[:rng.IntN(4)]}
	case 9:
		return bson.Timestamp{T: rng.Uint32(), I: rng.Uint32()}
	case 10:
		return bson.NewDecimal128(rng.Uint64(), rng.Uint64())
	case 11:
		return bson.Undefined{}
	case 12:
		return bson.MinKey{}
	case 13:
		return bson.MaxKey{}
	case 14:
		return randomDoc(rng, depth-1)
	case 15:
		raw, _ := bson.Marshal(randomDoc(rng, depth-1))
		return bson.Raw(raw)
	case 16: // a change stream's batch
		var raws []bson.Raw
		for range rng.IntN(4) {
			raw, _ := bson.Marshal(randomDoc(rng, depth-1))
			raws = append(raws, raw)
		}
		return raws
	}
	a := bson.A{}
	for range rng.IntN(4) {
		a = append(a, randomValue(rng, depth-1))
	}
	return a
}

// BenchmarkMarshal encodes a session document (as the session workload
// stores it) with Marshal and with the driver's bson.Marshal.
func BenchmarkMarshal(b *testing.B) {
	doc := bson.D{{Key: "_id", Value: bson.NewObjectID()}, {Key: "token", Value: "0123456789abcdef0123456789abcdef"},
		{Key: "userID", Value: int64(42)}, {Key: "accessTime", Value: bson.NewDateTimeFromTime(time.Now())}}
	for name, marshal := range map[string]func(bson.D) ([]byte, error){"bsonutil": Marshal, "driver": func(d bson.D) ([]byte, error) { return bson.Marshal(d) }} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := marshal(doc); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
