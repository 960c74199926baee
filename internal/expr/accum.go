package expr

import (
	"math"
	"slices"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// Accumulator folds a stream of values into one, as $group's accumulators
// do; the same folds back the array forms of $sum, $avg, $min, $max,
// $stdDevPop and $stdDevSamp in expressions.
type Accumulator interface {
	// Add folds in one evaluated value (possibly Missing).
	Add(v any) error
	// Result returns the folded value; it may be called more than once.
	Result() any
}

// NewAccumulator returns a fresh accumulator for a $group operator
// ($sum, $avg, $min, $max, $first, $last, $push, $addToSet,
// $mergeObjects, $stdDevPop, $stdDevSamp), or false if op is not one.
func NewAccumulator(op string) (Accumulator, bool) {
	switch op {
	case "$sum":
		return &sumAcc{}, true
	case "$avg":
		return &avgAcc{}, true
	case "$min":
		return &minMaxAcc{sign: -1}, true
	case "$max":
		return &minMaxAcc{sign: 1}, true
	case "$first":
		return &firstAcc{}, true
	case "$last":
		return &lastAcc{}, true
	case "$push":
		return &pushAcc{out: bson.A{}}, true
	case "$addToSet":
		return &addToSetAcc{out: bson.A{}}, true
	case "$mergeObjects":
		return &mergeAcc{out: bson.D{}}, true
	case "$stdDevPop":
		return &stdDevAcc{}, true
	case "$stdDevSamp":
		return &stdDevAcc{sample: true}, true
	}
	return nil, false
}

// AccumulatorNames lists every operator NewAccumulator accepts, sorted:
// tests that hold a table over the whole class (how the router splits
// each one) compare against it.
func AccumulatorNames() []string {
	return []string{"$addToSet", "$avg", "$first", "$last", "$max", "$mergeObjects",
		"$min", "$push", "$stdDevPop", "$stdDevSamp", "$sum"}
}

// sumAcc ignores non-numbers, as $sum does; an empty sum is 0.
type sumAcc struct{ s sum }

func (a *sumAcc) Add(v any) error {
	if isNumber(v) {
		a.s.add(v)
	}
	return nil
}

func (a *sumAcc) Result() any { return a.s.result() }

// avgAcc averages the numbers seen; with none it is null.
type avgAcc struct {
	s sum
	n int64
}

func (a *avgAcc) Add(v any) error {
	if isNumber(v) {
		a.s.add(v)
		a.n++
	}
	return nil
}

func (a *avgAcc) Result() any {
	if a.n == 0 {
		return nil
	}
	if a.s.kind == kindDecimal {
		return decDiv(a.s.decimal(), toDecimal(a.n)).bson()
	}
	if a.s.kind <= kindLong && !a.s.overflow {
		return float64(a.s.i) / float64(a.n)
	}
	return a.s.float() / float64(a.n)
}

// minMaxAcc keeps the smallest (sign -1) or largest (sign 1) non-null
// value in MongoDB's cross-type order.
type minMaxAcc struct {
	sign int
	v    any
	set  bool
}

func (a *minMaxAcc) Add(v any) error {
	if nullish(v) {
		return nil
	}
	if !a.set || compareValues(v, a.v)*a.sign > 0 {
		a.v, a.set = v, true
	}
	return nil
}

func (a *minMaxAcc) Result() any {
	if !a.set {
		return nil
	}
	return a.v
}

type firstAcc struct {
	v   any
	set bool
}

func (a *firstAcc) Add(v any) error {
	if !a.set {
		a.v, a.set = nullIfMissing(v), true
	}
	return nil
}

func (a *firstAcc) Result() any { return a.v }

type lastAcc struct{ v any }

func (a *lastAcc) Add(v any) error {
	a.v = nullIfMissing(v)
	return nil
}

func (a *lastAcc) Result() any { return a.v }

func nullIfMissing(v any) any {
	if IsMissing(v) {
		return nil
	}
	return v
}

// pushAcc collects values; missing ones are skipped.
type pushAcc struct{ out bson.A }

func (a *pushAcc) Add(v any) error {
	if !IsMissing(v) {
		a.out = append(a.out, v)
	}
	return nil
}

func (a *pushAcc) Result() any { return a.out }

// addToSetAcc collects distinct values in first-seen order.
type addToSetAcc struct {
	out    bson.A
	sorted bson.A
}

func (a *addToSetAcc) Add(v any) error {
	if IsMissing(v) {
		return nil
	}
	if pos, found := slices.BinarySearchFunc(a.sorted, v, compareValues); !found {
		a.out = append(a.out, v)
		a.sorted = slices.Insert(a.sorted, pos, v)
	}
	return nil
}

func (a *addToSetAcc) Result() any { return a.out }

type mergeAcc struct{ out bson.D }

func (a *mergeAcc) Add(v any) error {
	if nullish(v) {
		return nil
	}
	if !isDocument(v) {
		return mongoerr.Newf(mongoerr.Location40400, "$mergeObjects requires object inputs, but input %s is of type %s",
			formatValue(v), typeName(v))
	}
	a.out = MergeInto(a.out, asDocument(v))
	return nil
}

func (a *mergeAcc) Result() any { return append(bson.D{}, a.out...) }

// stdDevAcc uses Welford's algorithm over the numeric values.
type stdDevAcc struct {
	sample   bool
	n        float64
	mean, m2 float64
}

func (a *stdDevAcc) Add(v any) error {
	if !isNumber(v) {
		return nil
	}
	x := toFloat(v)
	a.n++
	d := x - a.mean
	a.mean += d / a.n
	a.m2 += d * (x - a.mean)
	return nil
}

func (a *stdDevAcc) Result() any {
	switch {
	case a.sample && a.n < 2, a.n == 0:
		return nil
	case a.sample:
		return math.Sqrt(a.m2 / (a.n - 1))
	}
	return math.Sqrt(a.m2 / a.n)
}

// addAccumulatorOps registers the expression forms: one array argument is
// folded element by element, several arguments are folded in turn.
func addAccumulatorOps(m map[string]compileFn) {
	for _, op := range []string{"$sum", "$avg", "$min", "$max", "$stdDevPop", "$stdDevSamp"} {
		m[op] = variadicLoop(accumulate)
	}
}

func accumulate(m meter, name string, vals []any) (any, error) {
	acc, _ := NewAccumulator(name)
	if len(vals) == 1 {
		if a, ok := asArray(vals[0]); ok {
			vals = a
		}
	}
	for _, v := range vals {
		if err := m.step(); err != nil {
			return nil, err
		}
		if err := acc.Add(v); err != nil {
			return nil, err
		}
	}
	return acc.Result(), nil
}
