package update

import (
	"math/big"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// decimalCalc adds or multiplies two decimals exactly on their coefficient
// and exponent, then rounds half-even to the 34 digits a Decimal128 holds.
func decimalCalc(op arith, a, b bson.Decimal128) (any, bool) {
	if special, ok := decimalSpecial(op, a, b); ok {
		return special, true
	}
	ca, ea, errA := a.BigInt()
	cb, eb, errB := b.BigInt()
	if errA != nil || errB != nil {
		return mustDecimal("NaN"), true
	}
	var c *big.Int
	var e int
	if op == opAdd {
		c, e = addCoefficients(ca, ea, cb, eb)
	} else {
		c, e = new(big.Int).Mul(ca, cb), ea+eb
	}
	return roundDecimal(c, e), true
}

// decimalSpecial handles NaN and infinities through float arithmetic, whose
// IEEE rules for them are the same.
func decimalSpecial(op arith, a, b bson.Decimal128) (bson.Decimal128, bool) {
	if !a.IsNaN() && !b.IsNaN() && a.IsInf() == 0 && b.IsInf() == 0 {
		return bson.Decimal128{}, false
	}
	r := floatCalc(op, decimalFloat(a), decimalFloat(b))
	return floatToDecimal(r), true
}

func decimalFloat(d bson.Decimal128) float64 {
	f, _ := new(big.Float).SetString(d.String())
	if f == nil {
		switch {
		case d.IsNaN():
			return nan()
		case d.IsInf() > 0:
			return inf(1)
		case d.IsInf() < 0:
			return inf(-1)
		}
		return 0
	}
	v, _ := f.Float64()
	return v
}

func addCoefficients(ca *big.Int, ea int, cb *big.Int, eb int) (*big.Int, int) {
	e := min(ea, eb)
	x := new(big.Int).Mul(ca, pow10(ea-e))
	y := new(big.Int).Mul(cb, pow10(eb-e))
	return x.Add(x, y), e
}

func pow10(n int) *big.Int {
	return new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(n)), nil)
}

// roundDecimal drops digits past 34, rounding half to even.
func roundDecimal(c *big.Int, e int) bson.Decimal128 {
	digits := len(new(big.Int).Abs(c).String())
	if drop := digits - 34; drop > 0 {
		c, e = roundHalfEven(c, drop), e+drop
	}
	d, ok := bson.ParseDecimal128FromBigInt(c, e)
	if !ok {
		return overflowDecimal(c)
	}
	return d
}

func roundHalfEven(c *big.Int, drop int) *big.Int {
	div := pow10(drop)
	q, r := new(big.Int).QuoRem(c, div, new(big.Int))
	twice := new(big.Int).Mul(new(big.Int).Abs(r), big.NewInt(2))
	cmp := twice.Cmp(div)
	if cmp > 0 || (cmp == 0 && q.Bit(0) == 1) {
		q.Add(q, big.NewInt(int64(c.Sign())))
	}
	return q
}

func overflowDecimal(c *big.Int) bson.Decimal128 {
	if c.Sign() < 0 {
		return mustDecimal("-Infinity")
	}
	return mustDecimal("Infinity")
}

func mustDecimal(s string) bson.Decimal128 {
	d, _ := bson.ParseDecimal128(s)
	return d
}
