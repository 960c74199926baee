package expr

import (
	"math"
	"math/bits"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// sum adds numbers the way $add and $sum do: the result has the widest
// operand type, integers stay exact until they overflow (then the sum
// becomes a double), and decimals are summed exactly.
type sum struct {
	kind     numKind
	i        int64
	overflow bool
	doubles  bool    // a double was added, so the non-decimal part is inexact
	f, comp  float64 // Neumaier-compensated sum of every non-decimal operand
	dec      *decimal
}

func (s *sum) add(v any) {
	if k := kindOf(v); k > s.kind {
		s.kind = k
	}
	switch n := v.(type) {
	case bson.Decimal128:
		d := decFromBSON(n)
		if s.dec != nil {
			d = decAdd(*s.dec, d)
		}
		s.dec = &d
	case float64:
		s.doubles = true
		s.addFloat(n)
	default:
		i := toInt64(v)
		s.addFloat(float64(i))
		s.addInt(i)
	}
}

func (s *sum) addInt(i int64) {
	r := s.i + i
	if (i > 0 && r < s.i) || (i < 0 && r > s.i) {
		s.overflow = true
	}
	s.i = r
}

func (s *sum) addFloat(x float64) {
	t := s.f + x
	if math.Abs(s.f) >= math.Abs(x) {
		s.comp += (s.f - t) + x
	} else {
		s.comp += (x - t) + s.f
	}
	s.f = t
}

func (s *sum) float() float64 { return s.f + s.comp }

// result returns the sum with MongoDB's result type.
func (s *sum) result() any {
	switch {
	case s.kind == kindDecimal:
		return s.decimal().bson()
	case s.kind == kindDouble || s.overflow:
		return s.float()
	case s.kind == kindLong:
		return s.i
	}
	return intOrLong(s.i)
}

// decimal returns the whole sum as a decimal.
func (s *sum) decimal() decimal {
	var d decimal
	if !s.overflow && !s.doubles {
		d = toDecimal(s.i)
	} else {
		d = decFromFloat(s.float(), 15)
	}
	if s.dec != nil {
		d = decAdd(*s.dec, d)
	}
	return d
}

// mulInt64 multiplies with overflow detection.
func mulInt64(a, b int64) (int64, bool) {
	if a == 0 || b == 0 {
		return 0, true
	}
	hi, lo := bits.Mul64(uint64(absInt64(a)), uint64(absInt64(b)))
	neg := (a < 0) != (b < 0)
	if hi != 0 || (lo > math.MaxInt64 && !(neg && lo == 1<<63)) {
		return 0, false
	}
	if neg {
		return -int64(lo), true
	}
	return int64(lo), true
}

func absInt64(a int64) int64 {
	if a < 0 {
		return -a
	}
	return a
}

// subInt64 subtracts with overflow detection.
func subInt64(a, b int64) (int64, bool) {
	r := a - b
	if (b > 0 && r > a) || (b < 0 && r < a) {
		return 0, false
	}
	return r, true
}
