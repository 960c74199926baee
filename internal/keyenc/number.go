package keyenc

import (
	"encoding/binary"
	"math"
	"math/big"
	"math/bits"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Numbers of every BSON type share one encoding that orders by exact value:
//
//	tag (NaN, -Inf, neg, zero, pos, +Inf)
//	then, for neg and pos only, the magnitude 1.f × 2^exp as
//	  exp + expBias      2 bytes, big-endian
//	  f in 7-bit groups  one byte per group: group<<1 | more
//	  [16 bytes]         only for magnitudes truncated after maxGroups groups
//
// A negative number's magnitude bytes are inverted, so larger magnitudes
// sort lower. The group byte keeps its 7 data bits above the "more" bit, so
// two fractions compare by their bits first, and where one stops (more=0)
// and the other continues with the same bits, the one that stops — the
// smaller value — sorts first. Trailing zero groups are never written, so
// equal values (1, NumberLong(1), 1.0, NumberDecimal("1.00")) encode equally.
const (
	expBias = 1 << 15
	// maxGroups × 7 = 126 fraction bits. int64 and float64 need at most 63.
	// Two distinct Decimal128 values (coefficients below 2^113) differ by
	// more than 2^-113 relative, so they cannot agree on 126 bits: a
	// truncated decimal never ties with a different value.
	maxGroups = 18
	fracBits  = maxGroups * 7

	minDecimalExp = -6176
	maxDecimalExp = 6111
)

// mag is a finite, non-zero magnitude 1.f × 2^exp with f left-aligned in
// hi:lo. When inexact, the true magnitude is larger than the fracBits-bit
// truncation held here and dec holds the exact value (normalized, positive)
// so it can be decoded.
type mag struct {
	exp     int
	hi, lo  uint64
	inexact bool
	dec     bson.Decimal128
}

func appendInt(dst []byte, n int64) []byte {
	switch {
	case n == 0:
		return append(dst, tagZero)
	case n < 0:
		// -n wraps for MinInt64, but its uint64 is 2^63, the right magnitude.
		return appendNumber(dst, true, intMag(uint64(-n)))
	}
	return appendNumber(dst, false, intMag(uint64(n)))
}

func intMag(u uint64) mag {
	lz := bits.LeadingZeros64(u)
	// The shift drops the leading 1; Go defines u<<64 as 0 for u == 1.
	return mag{exp: 63 - lz, hi: u << (lz + 1)}
}

func appendFloat(dst []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(dst, tagNaN)
	case math.IsInf(f, 1):
		return append(dst, tagPosInf)
	case math.IsInf(f, -1):
		return append(dst, tagNegInf)
	case f == 0:
		// Covers -0.0, which equals 0.
		return append(dst, tagZero)
	}
	b := math.Float64bits(f)
	return appendNumber(dst, b>>63 == 1, floatMag(b))
}

func floatMag(b uint64) mag {
	e := int(b >> 52 & 0x7FF)
	frac := b & (1<<52 - 1)
	if e == 0 {
		// Subnormal: frac × 2^-1074 with no implicit leading 1.
		lz := bits.LeadingZeros64(frac)
		return mag{exp: 63 - lz - 1074, hi: frac << (lz + 1)}
	}
	return mag{exp: e - 1023, hi: frac << 12}
}

func appendDecimal(dst []byte, d bson.Decimal128) []byte {
	if d.IsNaN() {
		return append(dst, tagNaN)
	}
	switch d.IsInf() {
	case 1:
		return append(dst, tagPosInf)
	case -1:
		return append(dst, tagNegInf)
	}
	coef, exp, err := d.BigInt()
	if err != nil || coef.Sign() == 0 {
		// BigInt only fails for NaN and Inf, handled above.
		return append(dst, tagZero)
	}
	neg := coef.Sign() < 0
	coef.Abs(coef)
	return appendNumber(dst, neg, decimalMag(coef, exp))
}

// decimalMag converts coef × 10^exp (coef > 0) to binary exactly: it takes
// the first 127 significant bits of the quotient and notes whether anything
// non-zero was left over.
func decimalMag(coef *big.Int, exp int) mag {
	num, den := new(big.Int).Set(coef), big.NewInt(1)
	if exp >= 0 {
		num.Mul(num, pow10(exp))
	} else {
		den = pow10(-exp)
	}
	// Scale so the quotient has at least 127 bits.
	s := max(0, fracBits+2+den.BitLen()-num.BitLen())
	q, r := new(big.Int).QuoRem(num.Lsh(num, uint(s)), den, new(big.Int))
	n := q.BitLen()
	m := mag{exp: n - 1 - s, inexact: r.Sign() != 0}
	if shift := n - (fracBits + 1); shift > 0 {
		m.inexact = m.inexact || q.TrailingZeroBits() < uint(shift)
		q.Rsh(q, uint(shift))
	} else {
		q.Lsh(q, uint(-shift))
	}
	q.SetBit(q, fracBits, 0) // the implicit leading 1
	q.Lsh(q, 128-fracBits)   // left-align in 128 bits
	var buf [16]byte
	q.FillBytes(buf[:])
	m.hi, m.lo = binary.BigEndian.Uint64(buf[:8]), binary.BigEndian.Uint64(buf[8:])
	if m.inexact {
		m.dec = normalizedDecimal(coef, exp)
	}
	return m
}

// normalizedDecimal returns the one Decimal128 form of coef × 10^exp with
// the largest exponent, so equal values carry equal tiebreak bytes.
func normalizedDecimal(coef *big.Int, exp int) bson.Decimal128 {
	c, e := stripZeros(coef, exp)
	return decimalBits(c, e)
}

// stripZeros moves trailing decimal zeros of coef into the exponent, up to
// the largest Decimal128 exponent.
func stripZeros(coef *big.Int, exp int) (*big.Int, int) {
	c := new(big.Int).Set(coef)
	q, r, ten := new(big.Int), new(big.Int), big.NewInt(10)
	for exp < maxDecimalExp && c.Sign() != 0 {
		q.QuoRem(c, ten, r)
		if r.Sign() != 0 {
			break
		}
		c, q = q, c
		exp++
	}
	return c, exp
}

// decimalBits builds a positive Decimal128 from a coefficient below 2^113
// and an exponent in range.
func decimalBits(c *big.Int, exp int) bson.Decimal128 {
	var buf [16]byte
	c.FillBytes(buf[:])
	h := binary.BigEndian.Uint64(buf[:8]) | uint64(exp-minDecimalExp)<<49
	return bson.NewDecimal128(h, binary.BigEndian.Uint64(buf[8:]))
}

func pow10(n int) *big.Int {
	return new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(n)), nil)
}

func appendNumber(dst []byte, neg bool, m mag) []byte {
	if !neg {
		return appendMag(append(dst, tagPos), m)
	}
	start := len(dst) + 1
	dst = appendMag(append(dst, tagNeg), m)
	invert(dst[start:])
	return dst
}

func appendMag(dst []byte, m mag) []byte {
	e := uint16(m.exp + expBias)
	dst = append(dst, byte(e>>8), byte(e))
	hi, lo := m.hi, m.lo
	for range maxGroups {
		g := byte(hi >> 57)
		hi, lo = hi<<7|lo>>57, lo<<7
		if !m.inexact && hi|lo == 0 {
			return append(dst, g<<1)
		}
		dst = append(dst, g<<1|1)
	}
	// Only inexact magnitudes get here; exact ones fit in fracBits bits.
	h, l := m.dec.GetBytes()
	return binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(dst, h), l)
}
