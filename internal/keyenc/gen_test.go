package keyenc

import (
	"math"
	"math/big"
	"math/rand/v2"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// chooser supplies the random choices of the value generator, so that the
// property tests (seeded PRNG) and the fuzz targets (fuzzer bytes) share it.
type chooser interface {
	intn(n int) int
	u64() uint64
}

type rngChooser struct{ r *rand.Rand }

func (c rngChooser) intn(n int) int { return c.r.IntN(n) }
func (c rngChooser) u64() uint64    { return c.r.Uint64() }

func newRNG(seed uint64) chooser {
	return rngChooser{rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

// byteChooser reads choices from fuzzer input; once exhausted it returns
// zeros, which always select the simplest option.
type byteChooser struct{ b []byte }

func (c *byteChooser) byte() byte {
	if len(c.b) == 0 {
		return 0
	}
	x := c.b[0]
	c.b = c.b[1:]
	return x
}

func (c *byteChooser) intn(n int) int {
	if n <= 256 {
		return int(c.byte()) % n
	}
	return int(c.u64() % uint64(n))
}

func (c *byteChooser) u64() uint64 {
	var u uint64
	for range 8 {
		u = u<<8 | uint64(c.byte())
	}
	return u
}

// genValue returns a random value of any BSON type. Small pools of strings,
// keys and numbers make equal and prefix-related values common, which is
// where order bugs hide.
func genValue(c chooser, depth int) any {
	kinds := 21
	if depth <= 0 {
		kinds = 19 // no documents or arrays
	}
	switch c.intn(kinds) {
	case 0, 1, 2, 3, 4:
		return genNumber(c)
	case 5:
		return genString(c)
	case 6:
		return bson.Symbol(genString(c))
	case 7:
		return genBinary(c)
	case 8:
		return genOID(c)
	case 9:
		return c.intn(2) == 1
	case 10:
		return bson.DateTime(genInt64(c))
	case 11:
		return bson.Timestamp{T: uint32(c.intn(3)), I: uint32(c.u64())}
	case 12:
		return bson.Regex{Pattern: genString(c), Options: genString(c)}
	case 13:
		return bson.DBPointer{DB: genString(c), Pointer: genOID(c)}
	case 14:
		return bson.JavaScript(genString(c))
	case 15:
		return bson.CodeWithScope{Code: bson.JavaScript(genString(c)), Scope: bson.D{{Key: "x", Value: int32(c.intn(3))}}}
	case 16:
		return []any{bson.MinKey{}, bson.MaxKey{}, bson.Undefined{}}[c.intn(3)]
	case 17:
		return []any{nil, bson.Null{}}[c.intn(2)]
	case 18:
		return genNumber(c)
	case 19:
		return genDoc(c, depth-1)
	}
	return genArray(c, depth-1)
}

func genDoc(c chooser, depth int) bson.D {
	d := bson.D{}
	for range c.intn(4) {
		d = append(d, bson.E{Key: []string{"", "a", "b", "a\x00", "ab"}[c.intn(5)], Value: genValue(c, depth)})
	}
	return d
}

func genArray(c chooser, depth int) bson.A {
	a := bson.A{}
	for range c.intn(4) {
		a = append(a, genValue(c, depth))
	}
	return a
}

func genString(c chooser) string {
	if c.intn(4) == 0 {
		b := make([]byte, c.intn(6))
		for i := range b {
			b[i] = byte(c.u64())
		}
		return string(b)
	}
	return []string{"", "a", "b", "ab", "a\x00", "a\x00b", "\x00", "\xff", "a\xff", "ba"}[c.intn(10)]
}

func genBinary(c chooser) bson.Binary {
	data := make([]byte, c.intn(4))
	for i := range data {
		data[i] = byte(c.intn(3)) * 0x7F
	}
	return bson.Binary{Subtype: byte(c.intn(3)), Data: data}
}

func genOID(c chooser) bson.ObjectID {
	var oid bson.ObjectID
	oid[c.intn(12)] = byte(c.intn(3))
	return oid
}

func genInt64(c chooser) int64 {
	u := c.u64()
	return int64(u) >> c.intn(64) // spread magnitudes over all bit lengths
}

// genNumber returns int32, int64, float64 or Decimal128 values, often equal
// to one another across types.
func genNumber(c chooser) any {
	switch c.intn(9) {
	case 0:
		return int32(genInt64(c))
	case 1:
		return genInt64(c)
	case 2:
		return safeFloat(math.Float64frombits(c.u64()))
	case 3:
		return safeFloat(float64(genInt64(c)) * []float64{1, 0.5, 1e-3, 1e300, -1}[c.intn(5)])
	case 4:
		return genDecimal(c)
	case 5:
		return trickyNumbers[c.intn(len(trickyNumbers))]
	case 6:
		return asDecimalOf(trickyNumbers[c.intn(len(trickyNumbers))])
	}
	// Small values in any numeric type: many cross-type ties.
	n := c.intn(7) - 3
	return []any{int32(n), int64(n), float64(n), float64(n) + 0.5, mustDecimal(strconv.Itoa(n) + ".0")}[c.intn(5)]
}

// safeFloat keeps floats out of [2^63, 9.3e18] in magnitude, where
// bsonutil.compareIntFloat converts the float to int64 with overflow and so
// orders it wrongly against integers (e.g. Compare(int64(0), 2^63) == 1).
// TestNumbersExactOrder covers that range against an exact oracle instead.
func safeFloat(f float64) any {
	if a := math.Abs(f); a >= 0x1p63 && a <= 9.3e18 {
		return math.Copysign(0x1p62, f)
	}
	return f
}

func genDecimal(c chooser) bson.Decimal128 {
	digits := make([]byte, 1+c.intn(34))
	for i := range digits {
		digits[i] = '0' + byte(c.intn(10))
	}
	exp := c.intn(60) - 30
	if c.intn(8) == 0 {
		exp = c.intn(maxDecimalExp-minDecimalExp+1) + minDecimalExp
	}
	coef, _ := new(big.Int).SetString(string(digits), 10)
	if c.intn(2) == 0 {
		coef.Neg(coef)
	}
	d, ok := bson.ParseDecimal128FromBigInt(coef, exp)
	if !ok {
		return mustDecimal("7")
	}
	return d
}

var trickyNumbers = []any{
	int64(0), math.Copysign(0, -1), int64(1), int64(-1), 1.5, 0.1, -0.1, 0.2, 0.3,
	int64(math.MaxInt64), int64(math.MinInt64), int64(math.MinInt64 + 1), int64(math.MaxInt64 - 1),
	int32(math.MaxInt32), int32(math.MinInt32),
	int64(1 << 53), int64(1<<53 + 1), float64(1 << 53), math.Nextafter(1<<53, math.Inf(1)),
	int64(1 << 62), int64(1<<62 + 1), int64(1<<62 - 1), float64(1 << 62),
	math.Nextafter(1<<62, math.Inf(1)), math.Nextafter(1<<62, 0),
	-float64(1 << 63), math.Nextafter(-(1 << 62), 0),
	math.MaxFloat64, -math.MaxFloat64, math.SmallestNonzeroFloat64, -math.SmallestNonzeroFloat64,
	0x1p-1022, math.Nextafter(0x1p-1022, 0), 1e-300, 1e300,
	math.Inf(1), math.Inf(-1), math.NaN(),
	mustDecimal("NaN"), mustDecimal("-NaN"), mustDecimal("Infinity"), mustDecimal("-Infinity"),
	mustDecimal("-0"), mustDecimal("0E+100"), mustDecimal("1E+6111"), mustDecimal("-1E+6111"),
	mustDecimal("1E-6176"), mustDecimal("9999999999999999999999999999999999E+6111"),
	mustDecimal("9223372036854775807"), mustDecimal("9223372036854775808"), mustDecimal("-9223372036854775808"),
	mustDecimal("0.1000000000000000055511151231257827"), mustDecimal("0.1000000000000000055511151231257828"),
	mustDecimal("4611686018427387904.5"), mustDecimal("0.30000000000000004"),
	// Neighbours closer than 2^-100: their order must come from the binary
	// fraction, not from the decimal tiebreak bytes (whose exponent-first
	// order would put the first of the last two above the second).
	mustDecimal("9.999999999999999999999999999999999"), mustDecimal("10.00000000000000000000000000000001"),
	mustDecimal("10.00000000000000000000000000000011"), mustDecimal("10.0000000000000000000000000000001"),
}

// asDecimalOf returns the decimal spelling of a number where one exists.
func asDecimalOf(v any) any {
	switch x := v.(type) {
	case int64:
		return mustDecimal(strconv.FormatInt(x, 10))
	case int32:
		return mustDecimal(strconv.FormatInt(int64(x), 10))
	case float64:
		if d, err := bson.ParseDecimal128(strconv.FormatFloat(x, 'g', -1, 64)); err == nil {
			return d
		}
	}
	return v
}

func mustDecimal(s string) bson.Decimal128 {
	d, err := bson.ParseDecimal128(s)
	if err != nil {
		panic(err)
	}
	return d
}
