package keyenc

import (
	"math"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

func TestDecodeDateAgreesWithDecodeValue(t *testing.T) {
	for _, ms := range []int64{math.MinInt64, -1, 0, 1, 1_700_000_000_000, math.MaxInt64} {
		d := bson.DateTime(ms)
		if got, ok := DecodeDate(AppendValue(nil, d), false); !ok || got != d {
			t.Fatalf("ascending %d: %d %v", ms, got, ok)
		}
		if got, ok := DecodeDate(AppendValueDesc(nil, d), true); !ok || got != d {
			t.Fatalf("descending %d: %d %v", ms, got, ok)
		}
		if _, ok := DecodeDate(AppendValueDesc(nil, d), false); ok {
			t.Fatalf("a descending key %d decodes as ascending", ms)
		}
	}
	for _, v := range []any{bson.Timestamp{T: 1}, int64(5), "2024", nil} {
		if _, ok := DecodeDate(AppendValue(nil, v), false); ok {
			t.Fatalf("%v decodes as a date", v)
		}
	}
	if _, ok := DecodeDate(AppendValue(nil, bson.DateTime(0))[:8], false); ok {
		t.Fatal("a cut date decodes")
	}
}

// TestSkipValueAllocatesNothing holds SkipValue to no allocation for
// every type it skips without the decoder (its round trips with every
// type are in checkRoundTrip).
func TestSkipValueAllocatesNothing(t *testing.T) {
	values := []any{bson.MinKey{}, bson.Undefined{}, nil, math.NaN(), math.Inf(-1), int64(0), math.Inf(1),
		int64(-12345), 2.5, bson.NewDecimal128(1, 2), "token\x00x", bson.JavaScript("f()"),
		bson.CodeWithScope{Code: "g()"}, bson.NewObjectID(), bson.DateTime(1_700_000_000_000),
		bson.Timestamp{T: 1, I: 2}, false, true, bson.MaxKey{}}
	for _, v := range values {
		for _, desc := range []bool{false, true} {
			e := AppendValue(nil, v)
			if desc {
				e = AppendValueDesc(nil, v)
			}
			if n := testing.AllocsPerRun(100, func() { _, _ = SkipValue(e, desc) }); n != 0 {
				t.Errorf("%#v (desc %v): %v allocations", v, desc, n)
			}
		}
	}
}
