package expr

import (
	"math"
	"math/big"
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// decimal is an exact decimal number coef × 10^exp, used for Decimal128
// arithmetic. The driver's Decimal128 only stores bits, so Mayfly does the
// arithmetic here and rounds to Decimal128's 34 digits at the end.
type decimal struct {
	coef *big.Int
	exp  int
	nan  bool
	inf  int // +1 or -1 for infinities
}

const decDigits = 34

var bigTen = big.NewInt(10)

func (d decimal) special() bool { return d.nan || d.inf != 0 }

func decFromBSON(x bson.Decimal128) decimal {
	if x.IsNaN() {
		return decimal{nan: true}
	}
	if s := x.IsInf(); s != 0 {
		return decimal{inf: s}
	}
	bi, exp, err := x.BigInt()
	if err != nil {
		return decimal{nan: true}
	}
	return decimal{coef: bi, exp: exp}
}

// decFromFloat converts f rounded to the given number of significant
// digits, as MongoDB's Decimal128(double) constructor does (15 digits for
// conversions, 34 for rounding operators).
func decFromFloat(f float64, digits int) decimal {
	switch {
	case math.IsNaN(f):
		return decimal{nan: true}
	case math.IsInf(f, 0):
		return decimal{inf: int(math.Copysign(1, f))}
	}
	s := strconv.FormatFloat(f, 'e', digits-1, 64)
	mant, e, _ := strings.Cut(s, "e")
	exp, _ := strconv.Atoi(e)
	coef, _ := new(big.Int).SetString(strings.Replace(mant, ".", "", 1), 10)
	return decimal{coef: coef, exp: exp - (digits - 1)}
}

// toDecimal converts any number to a decimal.
func toDecimal(v any) decimal {
	switch n := v.(type) {
	case bson.Decimal128:
		return decFromBSON(n)
	case float64:
		return decFromFloat(n, 15)
	}
	return decimal{coef: big.NewInt(toInt64(v))}
}

// bson rounds d to 34 significant digits and encodes it.
func (d decimal) bson() bson.Decimal128 {
	switch {
	case d.nan:
		r, _ := bson.ParseDecimal128("NaN")
		return r
	case d.inf > 0:
		r, _ := bson.ParseDecimal128("Infinity")
		return r
	case d.inf < 0:
		r, _ := bson.ParseDecimal128("-Infinity")
		return r
	}
	d = d.roundDigits(decDigits)
	if r, ok := bson.ParseDecimal128FromBigInt(d.coef, d.exp); ok {
		return r
	}
	r, _ := bson.ParseDecimal128(d.String())
	return r
}

// String renders d in plain scientific form, for parsing and debugging.
func (d decimal) String() string {
	if d.special() {
		return d.bson().String()
	}
	return d.coef.String() + "E" + strconv.Itoa(d.exp)
}

// float converts d to float64.
func (d decimal) float() float64 {
	switch {
	case d.nan:
		return math.NaN()
	case d.inf != 0:
		return math.Inf(d.inf)
	}
	f, _ := strconv.ParseFloat(d.String(), 64)
	return f
}

func numDigits(x *big.Int) int {
	if x.Sign() == 0 {
		return 1
	}
	return len(new(big.Int).Abs(x).String())
}

func pow10(n int) *big.Int { return new(big.Int).Exp(bigTen, big.NewInt(int64(n)), nil) }

// roundDigits rounds d half-even to at most n significant digits.
func (d decimal) roundDigits(n int) decimal {
	extra := numDigits(d.coef) - n
	if extra <= 0 {
		return d
	}
	return d.quantize(d.exp+extra, roundHalfEven)
}

// roundMode selects how quantize drops digits.
type roundMode int

const (
	roundHalfEven roundMode = iota
	roundTowardZero
	roundCeiling
	roundFloor
)

// quantize rescales d to exponent exp, rounding as mode says.
func (d decimal) quantize(exp int, mode roundMode) decimal {
	if d.special() {
		return d
	}
	if d.exp >= exp {
		c := new(big.Int).Mul(d.coef, pow10(d.exp-exp))
		return decimal{coef: c, exp: exp}
	}
	q, r := new(big.Int).QuoRem(d.coef, pow10(exp-d.exp), new(big.Int))
	if r.Sign() != 0 && roundAway(q, r, pow10(exp-d.exp), d.coef.Sign(), mode) {
		q.Add(q, big.NewInt(int64(d.coef.Sign())))
	}
	return decimal{coef: q, exp: exp}
}

// roundAway decides whether a truncated quotient q with remainder r (of
// divisor div) moves one unit away from zero.
func roundAway(q, r, div *big.Int, sign int, mode roundMode) bool {
	switch mode {
	case roundTowardZero:
		return false
	case roundCeiling:
		return sign > 0
	case roundFloor:
		return sign < 0
	}
	twice := new(big.Int).Mul(new(big.Int).Abs(r), big.NewInt(2))
	c := twice.Cmp(div)
	return c > 0 || (c == 0 && q.Bit(0) == 1)
}

func decAdd(a, b decimal) decimal {
	if a.special() || b.special() {
		return decFromFloat(a.float()+b.float(), decDigits)
	}
	if a.exp < b.exp {
		a, b = b, a
	}
	c := new(big.Int).Mul(a.coef, pow10(a.exp-b.exp))
	return decimal{coef: c.Add(c, b.coef), exp: b.exp}
}

func decNeg(a decimal) decimal {
	if a.special() {
		a.inf = -a.inf
		return a
	}
	return decimal{coef: new(big.Int).Neg(a.coef), exp: a.exp}
}

func decMul(a, b decimal) decimal {
	if a.special() || b.special() {
		return decFromFloat(a.float()*b.float(), decDigits)
	}
	return decimal{coef: new(big.Int).Mul(a.coef, b.coef), exp: a.exp + b.exp}
}

// decDiv divides with 34 significant digits of precision, keeping the
// smallest exponent that represents an exact quotient (IEEE's ideal
// exponent), so 10/4 is 2.5 rather than 2.500000....
func decDiv(a, b decimal) decimal {
	if a.special() || b.special() {
		return decFromFloat(a.float()/b.float(), decDigits)
	}
	shift := decDigits + numDigits(b.coef) - numDigits(a.coef) + 1
	if shift < 0 {
		shift = 0
	}
	num := new(big.Int).Mul(a.coef, pow10(shift))
	q, r := new(big.Int).QuoRem(num, b.coef, new(big.Int))
	out := decimal{coef: q, exp: a.exp - b.exp - shift}
	if r.Sign() == 0 {
		return out.trimZeros(a.exp - b.exp)
	}
	return out.roundDigits(decDigits)
}

// trimZeros removes trailing zeros of the coefficient while the exponent
// stays at or below ideal.
func (d decimal) trimZeros(ideal int) decimal {
	c := new(big.Int).Set(d.coef)
	r := new(big.Int)
	for d.exp < ideal && c.Sign() != 0 {
		q, rem := new(big.Int).QuoRem(c, bigTen, r)
		if rem.Sign() != 0 {
			break
		}
		c = q
		d.exp++
	}
	if c.Sign() == 0 && d.exp < ideal {
		d.exp = ideal
	}
	d.coef = c
	return d
}

func (d decimal) isZero() bool { return !d.special() && d.coef.Sign() == 0 }

// decFromFloatResult converts the float result of an operation MongoDB
// computes in decimal but Mayfly approximates in binary (sqrt, exp, ln...).
func decFromFloatResult(f float64) bson.Decimal128 {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return decFromFloat(f, decDigits).bson()
	}
	r, err := bson.ParseDecimal128(strconv.FormatFloat(f, 'g', -1, 64))
	if err != nil {
		return decFromFloat(f, decDigits).bson()
	}
	return r
}
