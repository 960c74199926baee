// Package bsonutil holds the small facts about BSON values that every other
// layer shares: MongoDB's cross-type comparison order, numeric equality across
// int32/int64/double/decimal, and type names as MongoDB spells them.
//
// Values are those produced by decoding into bson.D with the official driver:
// nested documents are bson.D and arrays bson.A. The package's own decoder
// gives the same values faster; a small request's are cut from one copy of
// its bytes and boxed from slabs a census of the request sizes (decode.go,
// slab.go, box.go).
package bsonutil

import (
	"bytes"
	"math"
	"math/big"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Canonical type ranks: values of different ranks compare by rank; values
// of one rank compare by value. Numbers share one rank, as do string and
// symbol, so 1 == 1.0 == NumberLong(1).
const (
	RankMinKey    = -1
	RankUndefined = 0
	RankNull      = 5
	RankNumber    = 10
	RankString    = 15
	RankObject    = 20
	RankArray     = 25
	RankBinary    = 30
	RankObjectID  = 35
	RankBool      = 40
	RankDate      = 45
	RankTimestamp = 47
	RankRegex     = 50
	RankDBPointer = 55
	RankCode      = 60
	RankCodeScope = 65
	RankMaxKey    = 127
)

// Rank returns the canonical comparison rank of v.
func Rank(v any) int {
	switch v.(type) {
	case bson.MinKey:
		return RankMinKey
	case bson.Undefined:
		return RankUndefined
	case nil, bson.Null:
		return RankNull
	case int32, int64, float64, bson.Decimal128, int:
		return RankNumber
	case string, bson.Symbol:
		return RankString
	case bson.D, bson.M, bson.Raw:
		return RankObject
	case bson.A, []any:
		return RankArray
	case bson.Binary, []byte:
		return RankBinary
	case bson.ObjectID:
		return RankObjectID
	case bool:
		return RankBool
	case bson.DateTime:
		return RankDate
	case bson.Timestamp:
		return RankTimestamp
	case bson.Regex:
		return RankRegex
	case bson.DBPointer:
		return RankDBPointer
	case bson.JavaScript:
		return RankCode
	case bson.CodeWithScope:
		return RankCodeScope
	case bson.MaxKey:
		return RankMaxKey
	}
	return RankObject
}

// Compare orders a and b as MongoDB does with the simple collation: first by
// canonical type rank, then by value. It returns -1, 0 or +1.
func Compare(a, b any) int {
	ra, rb := Rank(a), Rank(b)
	if ra != rb {
		return cmpInt(ra, rb)
	}
	switch ra {
	case RankMinKey, RankUndefined, RankNull, RankMaxKey:
		return 0
	case RankNumber:
		return CompareNumbers(a, b)
	case RankString:
		return strings.Compare(stringOf(a), stringOf(b))
	case RankObject:
		return compareDocs(ToD(a), ToD(b))
	case RankArray:
		return compareArrays(ToA(a), ToA(b))
	case RankBinary:
		return compareBinary(binOf(a), binOf(b))
	case RankObjectID:
		x, y := a.(bson.ObjectID), b.(bson.ObjectID)
		return bytes.Compare(x[:], y[:])
	case RankBool:
		return cmpBool(a.(bool), b.(bool))
	case RankDate:
		return cmpInt64(int64(a.(bson.DateTime)), int64(b.(bson.DateTime)))
	case RankTimestamp:
		x, y := a.(bson.Timestamp), b.(bson.Timestamp)
		if x.T != y.T {
			return cmpUint(x.T, y.T)
		}
		return cmpUint(x.I, y.I)
	case RankRegex:
		x, y := a.(bson.Regex), b.(bson.Regex)
		if c := strings.Compare(x.Pattern, y.Pattern); c != 0 {
			return c
		}
		return strings.Compare(x.Options, y.Options)
	case RankDBPointer:
		x, y := a.(bson.DBPointer), b.(bson.DBPointer)
		if c := strings.Compare(x.DB, y.DB); c != 0 {
			return c
		}
		return bytes.Compare(x.Pointer[:], y.Pointer[:])
	case RankCode:
		return strings.Compare(string(a.(bson.JavaScript)), string(b.(bson.JavaScript)))
	case RankCodeScope:
		x, y := a.(bson.CodeWithScope), b.(bson.CodeWithScope)
		return strings.Compare(string(x.Code), string(y.Code))
	}
	return 0
}

// Equal reports whether a and b compare equal (so 1 and 1.0 are equal).
func Equal(a, b any) bool { return Compare(a, b) == 0 }

func compareDocs(a, b bson.D) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		if c := cmpInt(Rank(a[i].Value), Rank(b[i].Value)); c != 0 {
			return c
		}
		if c := strings.Compare(a[i].Key, b[i].Key); c != 0 {
			return c
		}
		if c := Compare(a[i].Value, b[i].Value); c != 0 {
			return c
		}
	}
	return cmpInt(len(a), len(b))
}

func compareArrays(a, b bson.A) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		if c := cmpInt(Rank(a[i]), Rank(b[i])); c != 0 {
			return c
		}
		if c := Compare(a[i], b[i]); c != 0 {
			return c
		}
	}
	return cmpInt(len(a), len(b))
}

func compareBinary(a, b bson.Binary) int {
	if len(a.Data) != len(b.Data) {
		return cmpInt(len(a.Data), len(b.Data))
	}
	if a.Subtype != b.Subtype {
		return cmpInt(int(a.Subtype), int(b.Subtype))
	}
	return bytes.Compare(a.Data, b.Data)
}

// CompareNumbers compares two numeric values by value. NaN sorts below every
// other number and equals itself, as in MongoDB.
func CompareNumbers(a, b any) int {
	ia, aInt := intOf(a)
	ib, bInt := intOf(b)
	if aInt && bInt {
		return cmpInt64(ia, ib)
	}
	if da, ok := a.(bson.Decimal128); ok {
		return compareBig(decimalBig(da), numberBig(b))
	}
	if db, ok := b.(bson.Decimal128); ok {
		return compareBig(numberBig(a), decimalBig(db))
	}
	fa, fb := ToFloat(a), ToFloat(b)
	switch {
	case math.IsNaN(fa) && math.IsNaN(fb):
		return 0
	case math.IsNaN(fa):
		return -1
	case math.IsNaN(fb):
		return 1
	}
	if aInt {
		return compareIntFloat(ia, fb)
	}
	if bInt {
		return -compareIntFloat(ib, fa)
	}
	return cmpFloat(fa, fb)
}

// compareIntFloat compares an int64 with a float64 without the precision
// loss of converting large int64 values to float64.
func compareIntFloat(i int64, f float64) int {
	// Every int64 lies in [-2^63, 2^63); doubles outside that range are
	// beyond all of them (and -2^63 itself converts exactly).
	if f >= 0x1p63 {
		return -1
	}
	if f < -0x1p63 {
		return 1
	}
	t := math.Trunc(f)
	ti := int64(t)
	if i != ti {
		return cmpInt64(i, ti)
	}
	return cmpFloat(0, f-t)
}

// nanBig stands for NaN in big-number comparisons: below every number.
type bigNum struct {
	nan bool
	f   *big.Float
}

func compareBig(a, b bigNum) int {
	switch {
	case a.nan && b.nan:
		return 0
	case a.nan:
		return -1
	case b.nan:
		return 1
	}
	return a.f.Cmp(b.f)
}

func numberBig(v any) bigNum {
	if d, ok := v.(bson.Decimal128); ok {
		return decimalBig(d)
	}
	if i, ok := intOf(v); ok {
		return bigNum{f: new(big.Float).SetInt64(i)}
	}
	f := ToFloat(v)
	if math.IsNaN(f) {
		return bigNum{nan: true}
	}
	if math.IsInf(f, 0) {
		return bigNum{f: new(big.Float).SetInf(f < 0)}
	}
	return bigNum{f: new(big.Float).SetFloat64(f)}
}

func decimalBig(d bson.Decimal128) bigNum {
	s := d.String()
	switch s {
	case "NaN", "-NaN":
		return bigNum{nan: true}
	case "Infinity":
		return bigNum{f: new(big.Float).SetInf(false)}
	case "-Infinity":
		return bigNum{f: new(big.Float).SetInf(true)}
	}
	f, _, err := big.ParseFloat(s, 10, 200, big.ToNearestEven)
	if err != nil {
		return bigNum{nan: true}
	}
	return bigNum{f: f}
}

func intOf(v any) (int64, bool) {
	switch n := v.(type) {
	case int32:
		return int64(n), true
	case int64:
		return n, true
	case int:
		return int64(n), true
	}
	return 0, false
}

// ToFloat converts any numeric value to float64 (NaN for non-numbers).
func ToFloat(v any) float64 {
	switch n := v.(type) {
	case int32:
		return float64(n)
	case int64:
		return float64(n)
	case int:
		return float64(n)
	case float64:
		return n
	case bson.Decimal128:
		b := decimalBig(n)
		if b.nan {
			return math.NaN()
		}
		f, _ := b.f.Float64()
		return f
	}
	return math.NaN()
}

// IsNumber reports whether v is a BSON number.
func IsNumber(v any) bool { return Rank(v) == RankNumber }

// ToD returns v as a bson.D, converting bson.M and bson.Raw.
func ToD(v any) bson.D {
	switch d := v.(type) {
	case bson.D:
		return d
	case bson.M:
		out := make(bson.D, 0, len(d))
		for k, x := range d {
			out = append(out, bson.E{Key: k, Value: x})
		}
		return out
	case bson.Raw:
		var out bson.D
		_ = bson.Unmarshal(d, &out)
		return out
	}
	return nil
}

// ToA returns v as a bson.A.
func ToA(v any) bson.A {
	switch a := v.(type) {
	case bson.A:
		return a
	case []any:
		return bson.A(a)
	}
	return nil
}

func stringOf(v any) string {
	switch s := v.(type) {
	case string:
		return s
	case bson.Symbol:
		return string(s)
	}
	return ""
}

func binOf(v any) bson.Binary {
	switch b := v.(type) {
	case bson.Binary:
		return b
	case []byte:
		return bson.Binary{Data: b}
	}
	return bson.Binary{}
}

func cmpInt(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func cmpUint(a, b uint32) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case !a:
		return -1
	}
	return 1
}

// TrueValue is MongoDB's truthiness of a value (BSONElement::trueValue,
// and the aggregation language's): false for false, null, undefined, an
// absent value (nil) and numeric zero of every type; true for everything
// else, strings, empty arrays and NaN included.
func TrueValue(v any) bool {
	switch x := v.(type) {
	case bool:
		return x
	case nil, bson.Null, bson.Undefined:
		return false
	case int32, int64, int, float64, bson.Decimal128:
		return ToFloat(x) != 0 // NaN is true
	}
	return true
}
