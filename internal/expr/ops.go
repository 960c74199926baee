package expr

import (
	"maps"
	"slices"

	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// compileFn compiles the argument of operator name.
type compileFn func(name string, arg any) (node, error)

// evalFn computes an operator from its already evaluated arguments.
type evalFn func(name string, vals []any) (any, error)

// loopFn is an evalFn whose work grows with its input: it counts each
// step of its loops on m, so the end of the operation stops it midway.
type loopFn func(m meter, name string, vals []any) (any, error)

// ignoresMeter adapts an operator whose work does not grow with its input.
func ignoresMeter(f evalFn) loopFn {
	return func(_ meter, name string, vals []any) (any, error) { return f(name, vals) }
}

// operators is the immutable operator table, filled once at start-up. It
// cannot be a plain initialised variable because operators compile their
// arguments recursively through it.
var operators map[string]compileFn

func init() { operators = buildOperators() }

func buildOperators() map[string]compileFn {
	m := map[string]compileFn{}
	for _, add := range []func(map[string]compileFn){
		addArithOps, addCompareOps, addCondOps, addStringOps, addArrayOps,
		addObjectOps, addTypeOps, addDateOps, addDatePartsOps, addSetOps, addVarOps, addAccumulatorOps, addMoreOps,
	} {
		add(m)
	}
	return m
}

// OperatorNames lists every expression operator, sorted: tests hold
// tables over the whole class against it.
func OperatorNames() []string { return slices.Sorted(maps.Keys(operators)) }

// parseArgs compiles an operator's argument list: an array is the list, any
// other value is a single argument.
func parseArgs(arg any) ([]node, error) {
	if a, ok := asArray(arg); ok {
		return compileAll(a)
	}
	n, err := compile(arg)
	if err != nil {
		return nil, err
	}
	return []node{n}, nil
}

// evalAll evaluates nodes in order.
func evalAll(c *ctx, nodes []node) ([]any, error) {
	vals := make([]any, len(nodes))
	for i, n := range nodes {
		v, err := n.eval(c)
		if err != nil {
			return nil, err
		}
		vals[i] = v
	}
	return vals, nil
}

// strictLoop makes a node that evaluates all arguments, then applies f.
func strictLoop(name string, nodes []node, f loopFn) node {
	return fn(func(c *ctx) (any, error) {
		m := c.meter()
		vals, err := evalAll(c, nodes)
		if err != nil {
			return nil, err
		}
		if c.coll != nil {
			return evalCollated(c.coll, name, vals, func(name string, vals []any) (any, error) { return f(m, name, vals) })
		}
		return f(m, name, vals)
	})
}

// fixed is an operator taking exactly n arguments.
func fixed(n int, f evalFn) compileFn { return fixedLoop(n, ignoresMeter(f)) }

// fixedLoop is fixed for an operator whose work grows with its input.
func fixedLoop(n int, f loopFn) compileFn {
	return func(name string, arg any) (node, error) {
		nodes, err := parseArgs(arg)
		if err != nil {
			return nil, err
		}
		if len(nodes) != n {
			return nil, arityError(name, n, len(nodes))
		}
		return strictLoop(name, nodes, f), nil
	}
}

// ranged is an operator taking between lo and hi arguments.
func ranged(lo, hi int, f evalFn) compileFn { return rangedLoop(lo, hi, ignoresMeter(f)) }

// rangedLoop is ranged for an operator whose work grows with its input.
func rangedLoop(lo, hi int, f loopFn) compileFn {
	return func(name string, arg any) (node, error) {
		nodes, err := parseArgs(arg)
		if err != nil {
			return nil, err
		}
		if len(nodes) < lo || len(nodes) > hi {
			return nil, mongoerr.Newf(mongoerr.Location28667,
				"Expression %s takes at least %d arguments, and at most %d, but %d were passed in.",
				name, lo, hi, len(nodes))
		}
		return strictLoop(name, nodes, f), nil
	}
}

// variadic is an operator taking any number of arguments.
func variadic(f evalFn) compileFn { return variadicLoop(ignoresMeter(f)) }

// variadicLoop is variadic for an operator whose work grows with its input.
func variadicLoop(f loopFn) compileFn {
	return func(name string, arg any) (node, error) {
		nodes, err := parseArgs(arg)
		if err != nil {
			return nil, err
		}
		return strictLoop(name, nodes, f), nil
	}
}

func arityError(name string, want, got int) error {
	return mongoerr.Newf(mongoerr.Location16020, "Expression %s takes exactly %d arguments. %d were passed in.", name, want, got)
}

// namedArgs compiles an operator's {name: expr} argument document by
// name, rejecting names not in known with the error unknown builds.
func namedArgs(arg any, known []string, unknown func(field string) error) (map[string]node, error) {
	d := asDocument(arg)
	out := make(map[string]node, len(d))
	for _, e := range d {
		if !contains(known, e.Key) {
			return nil, unknown(e.Key)
		}
		n, err := compile(e.Value)
		if err != nil {
			return nil, err
		}
		out[e.Key] = n
	}
	return out, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// evalOr evaluates n, or returns def when n is absent.
func evalOr(c *ctx, n node, def any) (any, error) {
	if n == nil {
		return def, nil
	}
	return n.eval(c)
}

// literalOp implements $literal (and its old alias $const): the argument
// is returned unevaluated.
func literalOp(_ string, arg any) (node, error) {
	if i, ok := arg.(int); ok {
		return constNode{normalizeInt(i)}, nil
	}
	return constNode{arg}, nil
}
