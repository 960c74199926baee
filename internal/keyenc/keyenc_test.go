package keyenc

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/big"
	"testing"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"go.mongodb.org/mongo-driver/v2/bson"
)

func sign(n int) int {
	switch {
	case n < 0:
		return -1
	case n > 0:
		return 1
	}
	return 0
}

// checkPair reports a mismatch between the encodings' order and
// bsonutil.Compare, in both directions.
func checkPair(a, b any) error {
	want := bsonutil.Compare(a, b)
	ea, eb := AppendValue(nil, a), AppendValue(nil, b)
	if got := sign(bytes.Compare(ea, eb)); got != want {
		return fmt.Errorf("asc: Compare(%#v, %#v) = %d, bytes say %d\n  a=% x\n  b=% x", a, b, want, got, ea, eb)
	}
	da, db := AppendValueDesc(nil, a), AppendValueDesc(nil, b)
	if got := sign(bytes.Compare(da, db)); got != -want {
		return fmt.Errorf("desc: Compare(%#v, %#v) = %d, bytes say %d", a, b, want, got)
	}
	return nil
}

// checkRoundTrip decodes both forms of v and requires an equal value, no
// leftover bytes, and a re-encoding identical to the original.
func checkRoundTrip(v any) error {
	for _, desc := range []bool{false, true} {
		enc, dec := AppendValue, DecodeValue
		if desc {
			enc, dec = AppendValueDesc, DecodeValueDesc
		}
		e := enc([]byte("prefix"), v)[len("prefix"):]
		got, rest, err := dec(append(e, "suffix"...))
		switch {
		case err != nil:
			return fmt.Errorf("desc=%v decode %#v: %w", desc, v, err)
		case string(rest) != "suffix":
			return fmt.Errorf("desc=%v decode %#v: rest %q", desc, v, rest)
		case bsonutil.Compare(got, v) != 0:
			return fmt.Errorf("desc=%v decode %#v: got %#v", desc, v, got)
		case !bytes.Equal(enc(nil, got), e):
			return fmt.Errorf("desc=%v re-encoding %#v (decoded %#v) differs", desc, v, got)
		}
		if rest, err := SkipValue(append(e, "suffix"...), desc); err != nil || string(rest) != "suffix" {
			return fmt.Errorf("desc=%v skip %#v: rest %q, %v", desc, v, rest, err)
		}
	}
	return nil
}

func TestOrderMatchesCompare(t *testing.T) {
	for seed := range uint64(4) {
		c := newRNG(seed)
		for range 5000 {
			a, b := genValue(c, 3), genValue(c, 3)
			if err := checkPair(a, b); err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
		}
	}
}

func TestNumberOrderMatchesCompare(t *testing.T) {
	c := newRNG(42)
	for range 20000 {
		if err := checkPair(genNumber(c), genNumber(c)); err != nil {
			t.Fatal(err)
		}
	}
	for _, a := range trickyNumbers {
		for _, b := range trickyNumbers {
			for _, pair := range [][2]any{{a, b}, {asDecimalOf(a), b}, {a, asDecimalOf(b)}} {
				if err := checkPair(pair[0], pair[1]); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
}

func TestRoundTrip(t *testing.T) {
	c := newRNG(7)
	for range 5000 {
		if err := checkRoundTrip(genValue(c, 3)); err != nil {
			t.Fatal(err)
		}
	}
	for _, v := range trickyNumbers {
		if err := checkRoundTrip(v); err != nil {
			t.Fatal(err)
		}
	}
}

func TestCanonicalNumberTypes(t *testing.T) {
	for _, tc := range []struct {
		in   any
		want any
	}{
		{int32(5), int64(5)},
		{2.0, int64(2)},
		{mustDecimal("3.000"), int64(3)},
		{math.Copysign(0, -1), int64(0)},
		{0.5, 0.5},
		{1e300, 1e300},
		{float64(math.MaxInt64), 0x1p63}, // 2^63 does not fit int64
		{mustDecimal("0.1"), mustDecimal("0.1")},
		{mustDecimal("1000000000000000000000000000000"), mustDecimal("1E+30")},
	} {
		got, _, err := DecodeValue(AppendValue(nil, tc.in))
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprintf("%T %v", got, got) != fmt.Sprintf("%T %v", tc.want, tc.want) {
			t.Errorf("decode(%v) = %T %v, want %T %v", tc.in, got, got, tc.want, tc.want)
		}
	}
}

func TestCompoundKeys(t *testing.T) {
	c := newRNG(11)
	for range 3000 {
		n := 1 + c.intn(3)
		va, vb, desc := make([]any, n), make([]any, n), make([]bool, n)
		for i := range n {
			va[i], vb[i], desc[i] = genValue(c, 1), genValue(c, 1), c.intn(2) == 1
			if c.intn(3) == 0 {
				vb[i] = va[i] // equal leading components exercise the later ones
			}
		}
		want := 0
		for i := range n {
			if want = bsonutil.Compare(va[i], vb[i]); desc[i] {
				want = -want
			}
			if want != 0 {
				break
			}
		}
		ka, kb := AppendKey(nil, va, desc), AppendKey(nil, vb, desc)
		if got := sign(bytes.Compare(ka, kb)); got != want {
			t.Fatalf("keys %#v vs %#v (desc %v): want %d, got %d", va, vb, desc, want, got)
		}
	}
}

func TestTypeOrder(t *testing.T) {
	// One value per type, in MongoDB's documented cross-type order, with the
	// "largest" value of each type where that matters.
	values := []any{
		bson.MinKey{}, bson.Undefined{}, nil, math.NaN(), math.Inf(-1), int64(math.MinInt64), 0.0,
		math.MaxFloat64, math.Inf(1), "", "\xff\xff", bson.D{}, bson.D{{Key: "\xff", Value: bson.MaxKey{}}},
		bson.A{}, bson.A{bson.MaxKey{}}, bson.Binary{}, bson.Binary{Subtype: 0xFF, Data: bytes.Repeat([]byte{0xFF}, 9)},
		bson.ObjectID{}, bson.ObjectID{0xFF}, false, true, bson.DateTime(math.MinInt64), bson.DateTime(math.MaxInt64),
		bson.Timestamp{}, bson.Timestamp{T: math.MaxUint32}, bson.Regex{}, bson.Regex{Pattern: "\xff"},
		bson.DBPointer{}, bson.DBPointer{DB: "\xff"}, bson.JavaScript(""), bson.JavaScript("\xff"),
		bson.CodeWithScope{}, bson.CodeWithScope{Code: "\xff"}, bson.MaxKey{},
	}
	for i := 1; i < len(values); i++ {
		a, b := AppendValue(nil, values[i-1]), AppendValue(nil, values[i])
		if bytes.Compare(a, b) >= 0 {
			t.Errorf("%#v should sort below %#v", values[i-1], values[i])
		}
		if err := checkPair(values[i-1], values[i]); err != nil {
			t.Error(err)
		}
	}
}

func TestNumericTypesEncodeEqual(t *testing.T) {
	want := AppendValue(nil, int32(1))
	for _, v := range []any{int64(1), 1.0, 1, mustDecimal("1"), mustDecimal("1.0"), mustDecimal("0.001E+3")} {
		if got := AppendValue(nil, v); !bytes.Equal(got, want) {
			t.Errorf("%#v encodes % x, want % x", v, got, want)
		}
	}
	if !bytes.Equal(AppendValue(nil, math.Copysign(0, -1)), AppendValue(nil, 0.0)) {
		t.Error("-0.0 and 0.0 encode differently")
	}
	if !bytes.Equal(AppendValue(nil, math.NaN()), AppendValue(nil, mustDecimal("NaN"))) {
		t.Error("NaN and decimal NaN encode differently")
	}
	if !bytes.Equal(AppendValue(nil, bson.Symbol("x")), AppendValue(nil, "x")) {
		t.Error("symbol and string encode differently")
	}
}

// exactRat is an oracle independent of bsonutil: the exact rational value
// of a finite number.
func exactRat(v any) (*big.Rat, bool) {
	switch x := v.(type) {
	case int64:
		return new(big.Rat).SetInt64(x), true
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, false
		}
		return new(big.Rat).SetFloat64(x), true
	case bson.Decimal128:
		coef, exp, err := x.BigInt()
		if err != nil {
			return nil, false
		}
		r := new(big.Rat).SetInt(coef)
		p := new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(abs(exp))), nil))
		if exp < 0 {
			return r.Quo(r, p), true
		}
		return r.Mul(r, p), true
	}
	return nil, false
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// TestNumbersExactOrder checks numbers against exact rational arithmetic,
// including the float range [2^63, 9.3e18] that bsonutil misorders against
// integers, and int64 values beyond 2^53 against their float neighbours.
func TestNumbersExactOrder(t *testing.T) {
	var nums []any
	for _, base := range []float64{0x1p53, 0x1p62, 0x1p63, 9.2e18, 9.25e18, 9.3e18, 1e19} {
		for _, f := range []float64{base, math.Nextafter(base, 0), math.Nextafter(base, math.Inf(1))} {
			nums = append(nums, f, -f, asDecimalOf(f))
		}
	}
	for _, i := range []int64{1 << 53, 1<<53 + 1, 1 << 62, 1<<62 + 1, 1<<62 - 1, math.MaxInt64, math.MinInt64, math.MinInt64 + 1} {
		nums = append(nums, i, asDecimalOf(i))
	}
	for _, v := range trickyNumbers {
		if _, ok := exactRat(v); ok {
			nums = append(nums, v)
		}
	}
	for _, a := range nums {
		for _, b := range nums {
			ra, _ := exactRat(a)
			rb, _ := exactRat(b)
			want := ra.Cmp(rb)
			if got := sign(bytes.Compare(AppendValue(nil, a), AppendValue(nil, b))); got != want {
				t.Fatalf("%#v vs %#v: exact order %d, bytes say %d", a, b, want, got)
			}
		}
	}
}

func TestAppendDate(t *testing.T) {
	for _, ms := range []int64{0, 1, -1, math.MinInt64, math.MaxInt64, 1700000000000} {
		if got, want := AppendDate([]byte("p"), ms), AppendValue([]byte("p"), bson.DateTime(ms)); !bytes.Equal(got, want) {
			t.Errorf("AppendDate(%d) = % x, want % x", ms, got, want)
		}
	}
}

func TestPrefixEnd(t *testing.T) {
	for _, tc := range []struct{ in, want []byte }{
		{[]byte("abc"), []byte("abd")},
		{[]byte{1, 0xFF, 0xFF}, []byte{2}},
		{[]byte{0xFF, 0xFF}, nil},
		{nil, nil},
	} {
		in := append([]byte(nil), tc.in...)
		if got := PrefixEnd(in); !bytes.Equal(got, tc.want) || (got == nil) != (tc.want == nil) {
			t.Errorf("PrefixEnd(% x) = % x, want % x", tc.in, got, tc.want)
		}
		if !bytes.Equal(in, tc.in) {
			t.Errorf("PrefixEnd modified its input")
		}
	}
	// Every extension of a prefix sorts below PrefixEnd.
	p := AppendValue(nil, "ab")
	end := PrefixEnd(p)
	for _, v := range []any{bson.MaxKey{}, "zz", int64(1)} {
		if k := AppendValue(append([]byte(nil), p...), v); bytes.Compare(k, end) >= 0 {
			t.Errorf("key % x not below PrefixEnd % x", k, end)
		}
	}
}

func TestDecodeRejectsTruncated(t *testing.T) {
	c := newRNG(3)
	for range 500 {
		v := genValue(c, 2)
		e := AppendValue(nil, v)
		// Encodings are prefix-free, so no strict prefix is a whole value.
		for i := range e {
			if _, _, err := DecodeValue(e[:i]); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("prefix %d of % x (%#v): err %v", i, e, v, err)
			}
			if _, err := SkipValue(e[:i], false); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("skip prefix %d of % x (%#v): err %v", i, e, v, err)
			}
		}
	}
	if _, _, err := DecodeValue([]byte{0x77}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("unknown tag: err %v", err)
	}
}

func TestDecodeDepthLimit(t *testing.T) {
	deep := bytes.Repeat([]byte{tagArray}, maxDepth+1)
	if _, _, err := DecodeValue(deep); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("err %v", err)
	}
}

func TestMapAndRawEncodeAsDocument(t *testing.T) {
	d := bson.D{{Key: "a", Value: int32(1)}, {Key: "b", Value: "x"}}
	raw, err := bson.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	want := AppendValue(nil, d)
	if got := AppendValue(nil, bson.Raw(raw)); !bytes.Equal(got, want) {
		t.Errorf("bson.Raw: % x, want % x", got, want)
	}
	if got := AppendValue(nil, bson.M{"b": "x", "a": int32(1)}); !bytes.Equal(got, want) {
		t.Errorf("bson.M: % x, want % x", got, want)
	}
}
