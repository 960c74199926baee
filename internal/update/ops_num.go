package update

import (
	"math"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// arithMod is $inc and $mul.
type arithMod struct {
	op  arith
	val any
}

func parseArith(op arith, field string, v any) (modifier, error) {
	if !bsonutil.IsNumber(v) {
		verb := map[arith]string{opAdd: "increment", opMul: "multiply"}[op]
		return nil, errf(mongoerr.TypeMismatch, "Cannot %s with non-numeric argument: {%s}",
			verb, formatElem(field, v))
	}
	return arithMod{op: op, val: normalizeInt(v)}, nil
}

func (m arithMod) name() string {
	if m.op == opAdd {
		return "$inc"
	}
	return "$mul"
}

func (m arithMod) modify(a *applier, st *state) (any, bool, error) {
	if !bsonutil.IsNumber(st.elem) {
		return nil, false, errf(mongoerr.TypeMismatch,
			"Cannot apply %s to a value of non-numeric type. {%s} has the field '%s' of non-numeric type %s",
			m.name(), a.idString(), st.name(), typeName(st.elem))
	}
	v, ok := calc(m.op, st.elem, m.val)
	if !ok {
		return nil, false, errf(mongoerr.BadValue,
			"Failed to apply %s operations to current value (%s) for document {%s}",
			m.name(), safeNumString(st.elem), a.idString())
	}
	return v, !identicalNumber(v, normalizeInt(st.elem)), nil
}

// create: $inc stores its argument; $mul stores a zero of the type that
// multiplying the argument would give.
func (m arithMod) create(*applier) (any, bool, error) {
	if m.op == opAdd {
		return m.val, true, nil
	}
	v, _ := calc(opMul, m.val, int32(0))
	return v, true, nil
}

// identicalNumber is SafeNum::isIdentical: same type and same value, so a
// NaN result is always a change.
func identicalNumber(a, b any) bool {
	if f, ok := a.(float64); ok {
		g, ok := b.(float64)
		return ok && f == g
	}
	return identical(a, b)
}

// safeNumString is SafeNum::debugString, which messages quote.
func safeNumString(v any) string {
	switch x := v.(type) {
	case int32:
		return "(NumberInt)" + formatValue(x)
	case int64, int:
		return "(NumberLong)" + formatValue(x)
	case float64:
		return "(NumberDouble)" + formatValue(x)
	case bson.Decimal128:
		return "(NumberDecimal)" + x.String()
	}
	return "(EOO)"
}

// idString is the document's _id as MongoDB quotes it in messages.
func (a *applier) idString() string {
	if i := a.root.index("_id"); i >= 0 {
		return formatElem("_id", a.root.d[i].Value)
	}
	return ""
}

// compareMod is $min and $max, ordered by MongoDB's cross-type comparison.
type compareMod struct {
	max bool
	val any
	cmp func(a, b any) int
}

func (m compareMod) modify(_ *applier, st *state) (any, bool, error) {
	c := m.cmp(st.elem, m.val)
	if c == 0 || (m.max && c > 0) || (!m.max && c < 0) {
		return nil, false, nil
	}
	return m.val, true, nil
}

func (m compareMod) create(*applier) (any, bool, error) { return m.val, true, nil }

// bitMod is $bit: and/or/xor with int32/int64 operands, in the order given.
type bitMod struct{ ops []bitOp }

type bitOp struct {
	kind    string
	operand any
}

const bitFormat = "{$bit: {field: {and/or/xor: #}}"

func parseBit(v any) (modifier, error) {
	if kindOf(v) != kindDoc {
		return nil, errf(mongoerr.BadValue, "The $bit modifier is not compatible with a %s. "+
			"You must pass in an embedded document: "+bitFormat, typeName(v))
	}
	var m bitMod
	for _, e := range docOf(v) {
		op, err := parseBitOp(e)
		if err != nil {
			return nil, err
		}
		m.ops = append(m.ops, op)
	}
	if len(m.ops) == 0 {
		return nil, errf(mongoerr.BadValue,
			"You must pass in at least one bitwise operation. The format is: "+bitFormat)
	}
	return m, nil
}

func parseBitOp(e bson.E) (bitOp, error) {
	if e.Key != "and" && e.Key != "or" && e.Key != "xor" {
		return bitOp{}, errf(mongoerr.BadValue, "The $bit modifier only supports 'and', 'or', "+
			"and 'xor', not '%s' which is an unknown operator: {%s}", e.Key, formatElem(e.Key, e.Value))
	}
	if !isIntegral(e.Value) {
		return bitOp{}, errf(mongoerr.BadValue, "The $bit modifier field must be an Integer(32/64 bit); "+
			"a '%s' is not supported here: {%s}", typeName(e.Value), formatElem(e.Key, e.Value))
	}
	return bitOp{kind: e.Key, operand: normalizeInt(e.Value)}, nil
}

func isIntegral(v any) bool {
	switch v.(type) {
	case int32, int64, int:
		return true
	}
	return false
}

func (m bitMod) modify(a *applier, st *state) (any, bool, error) {
	if !isIntegral(st.elem) {
		return nil, false, errf(mongoerr.BadValue, "Cannot apply $bit to a value of non-integral "+
			"type.%s has the field %s of non-integer type %s", a.idString(), st.name(), typeName(st.elem))
	}
	old := normalizeInt(st.elem)
	v := m.run(old)
	return v, !identical(v, old), nil
}

func (m bitMod) create(*applier) (any, bool, error) { return m.run(int32(0)), true, nil }

// run applies the operations; int32 with int32 stays int32, anything else
// widens to int64.
func (m bitMod) run(v any) any {
	for _, op := range m.ops {
		v = bitCalc(op.kind, v, op.operand)
	}
	return v
}

func bitCalc(kind string, a, b any) any {
	x, y := toInt64(a), toInt64(b)
	var r int64
	switch kind {
	case "and":
		r = x & y
	case "or":
		r = x | y
	default:
		r = x ^ y
	}
	_, a32 := a.(int32)
	_, b32 := b.(int32)
	if a32 && b32 && r >= math.MinInt32 && r <= math.MaxInt32 {
		return int32(r)
	}
	return r
}
