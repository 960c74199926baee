package bsonutil

import (
	"math"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

func TestCompareAcrossTypes(t *testing.T) {
	ordered := []any{
		bson.MinKey{}, nil, math.NaN(), math.Inf(-1), int64(math.MinInt64), int32(-1), 0.5, int64(1) << 62,
		"", "a", "b", bson.D{}, bson.D{{Key: "a", Value: 1}}, bson.A{}, bson.A{1},
		bson.Binary{Data: []byte{1}}, bson.ObjectID{}, false, true,
		bson.DateTime(-1), bson.DateTime(0), bson.Timestamp{T: 1}, bson.Regex{Pattern: "a"}, bson.MaxKey{},
	}
	for i := range ordered {
		for j := range ordered {
			want := 0
			if i < j {
				want = -1
			} else if i > j {
				want = 1
			}
			if got := Compare(ordered[i], ordered[j]); got != want {
				t.Errorf("Compare(%v, %v) = %d, want %d", ordered[i], ordered[j], got, want)
			}
		}
	}
}

func TestNumbersCompareByValue(t *testing.T) {
	dec, _ := bson.ParseDecimal128("1.0")
	for _, v := range []any{int32(1), int64(1), 1.0, dec} {
		if Compare(v, int32(1)) != 0 {
			t.Errorf("%T 1 != int32 1", v)
		}
	}
	if Compare(int64(1)<<62, float64(int64(1)<<62)+2048) != -1 {
		t.Error("large int64 against a larger double")
	}
	if Compare(int64(0), 0x1p63) != -1 || Compare(int64(math.MaxInt64), 0x1p63) != -1 {
		t.Error("every int64 is below 2^63")
	}
	if Compare(int64(math.MinInt64), -0x1p63) != 0 || Compare(int64(math.MinInt64), -0x1p63*1.0000001) != 1 {
		t.Error("MinInt64 against -2^63 and below")
	}
	if Compare(math.NaN(), math.NaN()) != 0 || Compare(math.NaN(), math.Inf(-1)) != -1 {
		t.Error("NaN sorts below all numbers and equals itself")
	}
}

func TestFormatLikeServer(t *testing.T) {
	got := Format(bson.D{{Key: "key", Value: bson.D{{Key: "w", Value: int32(1)}}}, {Key: "expireAfterSeconds", Value: int32(-1)}, {Key: "name", Value: "w_1"}, {Key: "d", Value: 1.0}, {Key: "a", Value: bson.A{}}})
	want := `{ key: { w: 1 }, expireAfterSeconds: -1, name: "w_1", d: 1.0, a: [] }`
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

// TestTrueValue: mongod's truthiness, one row per BSON type, so that
// every caller (index options, partial filters, $exists, expressions)
// agrees on strings and the rest.
func TestTrueValue(t *testing.T) {
	nan, _ := bson.ParseDecimal128("NaN")
	zero, _ := bson.ParseDecimal128("0.0")
	for _, row := range []struct {
		v    any
		want bool
	}{
		{nil, false}, {bson.Null{}, false}, {bson.Undefined{}, false}, {false, false}, {true, true},
		{int32(0), false}, {int64(0), false}, {0.0, false}, {zero, false},
		{int32(-1), true}, {int64(2), true}, {0.5, true}, {math.NaN(), true}, {nan, true},
		{"", true}, {"false", true}, {bson.A{}, true}, {bson.D{}, true}, {bson.MinKey{}, true},
		{bson.ObjectID{}, true}, {bson.Binary{}, true}, {bson.Regex{}, true},
	} {
		if got := TrueValue(row.v); got != row.want {
			t.Errorf("TrueValue(%#v) = %v, want %v", row.v, got, row.want)
		}
	}
}
