package query

import (
	"math"
	"slices"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
)

// fieldOp is a predicate on the values at a path. atPath is MongoDB's
// PathMatchExpression::matches (the document view); single is its
// matchesSingleElement (one value, used directly by $elemMatch's value
// form). v may be absent{}.
type fieldOp interface {
	atPath(doc bson.D, path []string, c *matchCtx) bool
	single(v any, c *matchCtx) bool
}

// leafAt matches a leaf predicate against every value the path yields and
// records the array offset of the first that matches. expandLeaf is false
// for the array operators, which look at arrays whole.
func leafAt(doc bson.D, path []string, expandLeaf bool, c *matchCtx, op fieldOp) bool {
	v, rest := descend(doc, path)
	arr, isArr := asArray(v)
	if !isArr {
		// The common case needs no walk (and no closure allocation).
		return op.single(v, c)
	}
	return walkArray(arr, rest, expandLeaf, func(v any, off int) bool {
		if off < 0 {
			return op.single(v, c)
		}
		c.mute()
		ok := op.single(v, c)
		c.unmute()
		if ok {
			c.record(off)
		}
		return ok
	})
}

// andOp holds several operators on one path ({a: {$gt: 1, $lt: 5}}), the
// body of $not, and $all.
type andOp []fieldOp

func (o andOp) atPath(doc bson.D, path []string, c *matchCtx) bool {
	for _, op := range o {
		if !op.atPath(doc, path, c) {
			return false
		}
	}
	return true
}

func (o andOp) single(v any, c *matchCtx) bool {
	for _, op := range o {
		if !op.single(v, c) {
			return false
		}
	}
	return true
}

// notOp negates a whole path predicate, so {a: {$ne: 1}} on {a: [1, 2]}
// is false: it is not ({a: 1}), not "some element differs from 1".
type notOp struct{ op fieldOp }

func (o notOp) atPath(doc bson.D, path []string, c *matchCtx) bool {
	c.mute()
	defer c.unmute()
	return !o.op.atPath(doc, path, c)
}

func (o notOp) single(v any, c *matchCtx) bool {
	c.mute()
	defer c.unmute()
	return !o.op.single(v, c)
}

// falseOp never matches: {$all: []}.
type falseOp struct{}

func (falseOp) atPath(bson.D, []string, *matchCtx) bool { return false }
func (falseOp) single(any, *matchCtx) bool              { return false }

// cmpKind is one of MongoDB's comparison match types.
type cmpKind int

const (
	cmpEQ cmpKind = iota
	cmpLT
	cmpLTE
	cmpGT
	cmpGTE
)

// cmpOp is $eq, $lt, $lte, $gt, $gte and plain equality.
type cmpOp struct {
	kind cmpKind
	// rhs is the operand, in an array so that the filter's Predicate can
	// have it as Values without a slice of its own.
	rhs [1]any
}

func (o *cmpOp) atPath(doc bson.D, path []string, c *matchCtx) bool {
	return leafAt(doc, path, true, c, o)
}

func (o *cmpOp) single(v any, _ *matchCtx) bool { return compareMatch(o.kind, v, o.rhs[0]) }

// compareMatch is ComparisonMatchExpressionBase::matchesSingleElement:
// values of different canonical types never compare, except that a missing
// field equals null, and MinKey/MaxKey bound everything; NaN equals only
// NaN and is neither less nor greater than anything.
func compareMatch(kind cmpKind, v, rhs any) bool {
	if isAbsent(v) || bsonutil.Rank(v) != bsonutil.Rank(rhs) {
		return crossTypeMatch(kind, v, rhs)
	}
	if bsonutil.IsNumber(v) {
		vNaN, rNaN := math.IsNaN(bsonutil.ToFloat(v)), math.IsNaN(bsonutil.ToFloat(rhs))
		if vNaN || rNaN {
			return vNaN && rNaN && kind != cmpLT && kind != cmpGT
		}
	}
	return cmpResult(kind, bsonutil.Compare(v, rhs))
}

func cmpResult(kind cmpKind, x int) bool {
	switch kind {
	case cmpLT:
		return x < 0
	case cmpLTE:
		return x <= 0
	case cmpGT:
		return x > 0
	case cmpGTE:
		return x >= 0
	}
	return x == 0
}

// crossTypeMatch handles values of different canonical types. Following
// MongoDB 8.0, null matches a missing field but not an undefined value.
func crossTypeMatch(kind cmpKind, v, rhs any) bool {
	if isAbsent(v) && bsonutil.Rank(rhs) == bsonutil.RankNull {
		return kind == cmpEQ || kind == cmpLTE || kind == cmpGTE
	}
	switch rhs.(type) {
	case bson.MaxKey:
		return kind == cmpLT || kind == cmpLTE
	case bson.MinKey:
		return kind == cmpGT || kind == cmpGTE
	}
	return false
}

// inOp is $in: equality with any listed value, or a match of any listed
// regex. A null in the list also matches a missing field. The values are
// kept sorted so that long lists cost a binary search, as MongoDB's do.
type inOp struct {
	eqs     []any // sorted by bsonutil.Compare
	hasNull bool
	regexes []*regexOp
}

func (o *inOp) atPath(doc bson.D, path []string, c *matchCtx) bool {
	return leafAt(doc, path, true, c, o)
}

// single is equality by bsonutil.Compare, which agrees with compareMatch
// for equality: different types never compare equal, NaN equals NaN.
func (o *inOp) single(v any, c *matchCtx) bool {
	if isAbsent(v) {
		return o.hasNull
	}
	if _, found := slices.BinarySearchFunc(o.eqs, v, bsonutil.Compare); found {
		return true
	}
	for _, re := range o.regexes {
		if re.single(v, c) {
			return true
		}
	}
	return false
}

// existsOp is {$exists: true}; false is parsed as its negation.
type existsOp struct{}

func (o existsOp) atPath(doc bson.D, path []string, c *matchCtx) bool {
	return leafAt(doc, path, true, c, o)
}

func (existsOp) single(v any, _ *matchCtx) bool { return !isAbsent(v) }

// typeOp is $type: the value's BSON type is in the set ("number" stands
// for all four numeric types).
type typeOp struct {
	codes  []int
	number bool
}

func (o *typeOp) atPath(doc bson.D, path []string, c *matchCtx) bool {
	return leafAt(doc, path, true, c, o)
}

func (o *typeOp) single(v any, _ *matchCtx) bool {
	if isAbsent(v) {
		return false
	}
	if o.number && bsonutil.IsNumber(v) {
		return true
	}
	code := bsonutil.TypeNumber(v)
	for _, want := range o.codes {
		if want == code {
			return true
		}
	}
	return false
}

// modOp is $mod. Doubles and decimals are truncated toward zero; NaN,
// infinities and values beyond int64 never match, as in MongoDB 7+.
type modOp struct{ divisor, remainder int64 }

func (o *modOp) atPath(doc bson.D, path []string, c *matchCtx) bool {
	return leafAt(doc, path, true, c, o)
}

func (o *modOp) single(v any, _ *matchCtx) bool {
	n, _, ok := numberToInt64(v)
	// Go's % neither panics nor overflows for MinInt64 % -1 (it yields 0),
	// which is what MongoDB's overflow-safe modulo returns.
	return ok && n%o.divisor == o.remainder
}

// sizeOp is $size: an array with exactly n elements.
type sizeOp struct{ n int64 }

func (o *sizeOp) atPath(doc bson.D, path []string, c *matchCtx) bool {
	return leafAt(doc, path, false, c, o)
}

func (o *sizeOp) single(v any, _ *matchCtx) bool {
	a, ok := asArray(v)
	return ok && int64(len(a)) == o.n
}

// elemMatchObjOp is $elemMatch with a query: some element that is a
// document (or an array, seen as {"0": ..., "1": ...}) matches it.
type elemMatchObjOp struct{ sub node }

func (o *elemMatchObjOp) atPath(doc bson.D, path []string, c *matchCtx) bool {
	return leafAt(doc, path, false, c, o)
}

func (o *elemMatchObjOp) single(v any, c *matchCtx) bool {
	arr, ok := asArray(v)
	if !ok {
		return false
	}
	for i, e := range arr {
		d, isDoc := asDoc(e)
		if !isDoc {
			inner, isArr := asArray(e)
			if !isArr {
				continue
			}
			d = arrayAsDoc(inner)
		}
		if o.matchesElem(d, c) {
			c.record(i)
			return true
		}
	}
	return false
}

func (o *elemMatchObjOp) matchesElem(d bson.D, c *matchCtx) bool {
	c.mute()
	defer c.unmute()
	return o.sub.matches(d, c)
}

// elemMatchValOp is $elemMatch with operators: some element satisfies all
// of them, each applied to the element alone (no further array expansion).
type elemMatchValOp struct{ ops andOp }

func (o *elemMatchValOp) atPath(doc bson.D, path []string, c *matchCtx) bool {
	return leafAt(doc, path, false, c, o)
}

func (o *elemMatchValOp) single(v any, c *matchCtx) bool {
	arr, ok := asArray(v)
	if !ok {
		return false
	}
	for i, e := range arr {
		c.mute()
		ok := o.ops.single(e, c)
		c.unmute()
		if ok {
			c.record(i)
			return true
		}
	}
	return false
}
