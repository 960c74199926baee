package update

import (
	"math"
	"math/big"
	"slices"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// pushMod is $push, with or without $each/$position/$sort/$slice.
type pushMod struct {
	values   bson.A
	position *int64
	slice    *int64
	sort     *pushSort
}

func parsePush(v any, cmp func(a, b any) int) (modifier, error) {
	if kindOf(v) != kindDoc {
		return pushMod{values: bson.A{v}}, nil
	}
	d := docOf(v)
	if _, ok := bsonutil.Lookup(d, "$each"); !ok {
		return pushMod{values: bson.A{v}}, nil
	}
	clauses, err := pushClauses(d)
	if err != nil {
		return nil, err
	}
	return parsePushClauses(clauses, cmp)
}

func pushClauses(d bson.D) (map[string]any, error) {
	clauses := make(map[string]any, len(d))
	for _, e := range d {
		switch e.Key {
		case "$each", "$slice", "$sort", "$position":
		default:
			return nil, errf(mongoerr.BadValue, "Unrecognized clause in $push: %s", e.Key)
		}
		if _, dup := clauses[e.Key]; dup {
			return nil, errf(mongoerr.BadValue, "Only one %s is supported.", e.Key)
		}
		clauses[e.Key] = e.Value
	}
	return clauses, nil
}

func parsePushClauses(c map[string]any, cmp func(a, b any) int) (modifier, error) {
	each := c["$each"]
	if kindOf(each) != kindArr {
		return nil, errf(mongoerr.BadValue,
			"The argument to $each in $push must be an array but it was of type: %s", typeName(each))
	}
	m := pushMod{values: arrOf(each)}
	var err error
	if v, ok := c["$slice"]; ok {
		m.slice, err = pushInteger(v, "The value for $slice must be an integer value but was given type: %s")
	}
	if v, ok := c["$sort"]; ok && err == nil {
		m.sort, err = parsePushSort(v)
		if m.sort != nil {
			m.sort.cmp = cmp
		}
	}
	if v, ok := c["$position"]; ok && err == nil {
		m.position, err = pushInteger(v, "The value for $position must be an integer value, not of type: %s")
	}
	return m, err
}

func pushInteger(v any, format string) (*int64, error) {
	n, ok := integerValue(v)
	if !ok {
		return nil, errf(mongoerr.BadValue, format, typeName(v))
	}
	return &n, nil
}

// integerValue accepts what MongoDB's parseIntegerElementToLong accepts:
// integers, and doubles or decimals holding an integral int64 value.
func integerValue(v any) (int64, bool) {
	switch x := v.(type) {
	case int32, int64, int:
		return toInt64(x), true
	case float64:
		if math.IsNaN(x) || x >= 0x1p63 || x < -0x1p63 || x != math.Trunc(x) {
			return 0, false
		}
		return int64(x), true
	case bson.Decimal128:
		return decimalInteger(x)
	}
	return 0, false
}

func decimalInteger(d bson.Decimal128) (int64, bool) {
	c, e, err := d.BigInt()
	switch {
	case err != nil:
		return 0, false
	case c.Sign() == 0:
		return 0, true
	case e > 18:
		return 0, false
	case e >= 0:
		c.Mul(c, pow10(e))
	default:
		var r big.Int
		if c.QuoRem(c, pow10(-e), &r); r.Sign() != 0 {
			return 0, false
		}
	}
	return c.Int64(), c.IsInt64()
}

func (m pushMod) modify(a *applier, st *state) (any, bool, error) {
	arr, ok := st.elem.(*marr)
	if !ok {
		id := "no id"
		if s := a.idString(); s != "" {
			id = s
		}
		return nil, false, errf(mongoerr.BadValue,
			"The field '%s' must be an array but is of type %s in document {%s}",
			joinPath(st.taken), typeName(st.elem), id)
	}
	out, changed := m.push(slices.Clone(arr.a))
	return &marr{a: out}, changed, nil
}

func (m pushMod) create(*applier) (any, bool, error) {
	out, _ := m.push(bson.A{})
	return &marr{a: out}, true, nil
}

// push inserts, sorts and slices as MongoDB's PushNode::performPush does;
// a sort always counts as a change.
func (m pushMod) push(a bson.A) (bson.A, bool) {
	changed := len(m.values) > 0
	a = slices.Insert(a, m.insertAt(len(a)), m.values...)
	if m.sort != nil {
		m.sort.apply(a)
		changed = true
	}
	if m.slice != nil {
		keep := int(min(absInt64(*m.slice), int64(len(a))))
		if keep < len(a) {
			changed = true
			if *m.slice >= 0 {
				a = a[:keep]
			} else {
				a = a[len(a)-keep:]
			}
		}
	}
	return a, changed
}

func (m pushMod) insertAt(n int) int {
	if m.position == nil {
		return n
	}
	p := *m.position
	switch {
	case p >= 0:
		return int(min(p, int64(n)))
	case absInt64(p) < int64(n):
		return n - int(absInt64(p))
	}
	return 0
}

// absInt64 is |v|, with MinInt64 mapped to MaxInt64 as MongoDB does.
func absInt64(v int64) int64 {
	if v == math.MinInt64 {
		return math.MaxInt64
	}
	if v < 0 {
		return -v
	}
	return v
}
