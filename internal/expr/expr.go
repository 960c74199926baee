// Package expr compiles and evaluates MongoDB aggregation expressions: the
// language of $project, $addFields, $group keys, $expr and friends.
//
// An expression is compiled once (Compile) into a tree of nodes and then
// evaluated per document (Eval). Compilation reports the errors MongoDB
// reports at parse time (unknown operators, wrong arity, malformed
// arguments); evaluation reports the ones MongoDB reports while running
// (type mismatches, division by zero, ...). Errors are *mongoerr.Error
// values carrying MongoDB's code and message.
//
// Values are those of the official Go driver: bson.D documents, bson.A
// arrays, int32/int64/float64/bson.Decimal128 numbers, nil for null. An
// absent field evaluates to Missing, which callers must drop rather than
// store (MongoDB never stores a missing value).
package expr

import (
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
)

// Expr is a compiled aggregation expression. It is immutable and safe for
// concurrent use.
type Expr struct {
	root node
}

// missing is the type of Missing: a value that is not there at all, as
// opposed to null.
type missing struct{}

// Missing is what Eval returns for an absent field path or $$REMOVE.
var Missing any = missing{}

// IsMissing reports whether v is Missing.
func IsMissing(v any) bool {
	_, ok := v.(missing)
	return ok
}

// node is one compiled expression.
type node interface {
	eval(c *ctx) (any, error)
}

// fn adapts a closure to node; most operators compile to one.
type fn func(c *ctx) (any, error)

func (f fn) eval(c *ctx) (any, error) { return f(c) }

// constNode is a literal.
type constNode struct{ v any }

func (n constNode) eval(*ctx) (any, error) { return n.v, nil }

// Compile parses v, which may be a literal, a "$field.path", a "$$var.path",
// an operator document {$op: args}, or a document or array of expressions.
func Compile(v any) (*Expr, error) {
	n, err := compile(v)
	if err != nil {
		return nil, err
	}
	return &Expr{root: n}, nil
}

// Eval evaluates e against doc, which is both $$ROOT and $$CURRENT. vars
// holds user variables (from let or $lookup); a "NOW" entry holding a
// bson.DateTime or time.Time pins $$NOW, otherwise the wall clock is read.
func (e *Expr) Eval(doc bson.D, vars map[string]any) (any, error) {
	c := &ctx{root: doc, user: vars}
	c.guard = GuardOf(vars)
	c.coll = CollatorOf(vars)
	return e.root.eval(c)
}

// Truthy reports MongoDB's truthiness of v: false, null, missing,
// undefined and numeric zero are false; everything else (including "" and
// empty arrays and NaN) is true.
func Truthy(v any) bool {
	if _, ok := v.(missing); ok {
		return false
	}
	return bsonutil.TrueValue(v)
}

// ctx is the evaluation state of one Eval call.
type ctx struct {
	root  bson.D
	user  map[string]any
	local *frame
	now   any
	guard *Guard   // nil: unbounded in time
	coll  Collator // nil: strings compare in binary order
}

// frame is one variable bound by $let, $map, $filter or $reduce. Frames
// form a linked list so that inner bindings shadow outer ones.
type frame struct {
	name string
	val  any
	up   *frame
}

// bind returns a copy of c with name bound to val.
func (c *ctx) bind(name string, val any) *ctx {
	d := *c
	d.local = &frame{name: name, val: val, up: c.local}
	return &d
}

// nowValue returns $$NOW, fixed for the whole evaluation.
func (c *ctx) nowValue() any {
	if c.now != nil {
		return c.now
	}
	switch t := c.user["NOW"].(type) {
	case bson.DateTime:
		c.now = t
	case time.Time:
		c.now = bson.NewDateTimeFromTime(t)
	default:
		c.now = bson.NewDateTimeFromTime(time.Now())
	}
	return c.now
}
