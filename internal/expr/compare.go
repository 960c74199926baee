package expr

import (
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

func addCompareOps(m map[string]compileFn) {
	m["$eq"] = fixed(2, cmpOp(func(c int) bool { return c == 0 }))
	m["$ne"] = fixed(2, cmpOp(func(c int) bool { return c != 0 }))
	m["$gt"] = fixed(2, cmpOp(func(c int) bool { return c > 0 }))
	m["$gte"] = fixed(2, cmpOp(func(c int) bool { return c >= 0 }))
	m["$lt"] = fixed(2, cmpOp(func(c int) bool { return c < 0 }))
	m["$lte"] = fixed(2, cmpOp(func(c int) bool { return c <= 0 }))
	m["$cmp"] = fixed(2, func(_ string, v []any) (any, error) { return int32(compareValues(v[0], v[1])), nil })
	m["$and"] = logical(false)
	m["$or"] = logical(true)
	m["$not"] = fixed(1, func(_ string, v []any) (any, error) { return !Truthy(v[0]), nil })
}

// cmpOp compares with MongoDB's total order across types, so
// {$gt: ["a", 1]} is true (strings sort after numbers).
func cmpOp(test func(int) bool) evalFn {
	return func(_ string, v []any) (any, error) { return test(compareValues(v[0], v[1])), nil }
}

// logical builds $and (stopAt false) and $or (stopAt true): arguments are
// evaluated in order and evaluation stops at the first decisive one, so
// later arguments may be erroneous without failing.
func logical(stopAt bool) compileFn {
	return func(_ string, arg any) (node, error) {
		nodes, err := parseArgs(arg)
		if err != nil {
			return nil, err
		}
		return fn(func(c *ctx) (any, error) {
			for _, n := range nodes {
				v, err := n.eval(c)
				if err != nil {
					return nil, err
				}
				if Truthy(v) == stopAt {
					return stopAt, nil
				}
			}
			return !stopAt, nil
		}), nil
	}
}

func addCondOps(m map[string]compileFn) {
	m["$cond"] = compileCond
	m["$ifNull"] = compileIfNull
	m["$switch"] = compileSwitch
}

// compileCond accepts [if, then, else] or {if, then, else}.
func compileCond(name string, arg any) (node, error) {
	var nodes []node
	var err error
	if isDocument(arg) {
		nodes, err = condFields(arg)
	} else {
		nodes, err = parseArgs(arg)
		if err == nil && len(nodes) != 3 {
			err = arityError(name, 3, len(nodes))
		}
	}
	if err != nil {
		return nil, err
	}
	return fn(func(c *ctx) (any, error) {
		v, err := nodes[0].eval(c)
		if err != nil {
			return nil, err
		}
		if Truthy(v) {
			return nodes[1].eval(c)
		}
		return nodes[2].eval(c)
	}), nil
}

func condFields(arg any) ([]node, error) {
	named, err := namedArgs(arg, []string{"if", "then", "else"}, func(f string) error {
		return mongoerr.Newf(mongoerr.Location17083, "Unrecognized parameter to $cond: %s", f)
	})
	if err != nil {
		return nil, err
	}
	for i, k := range []string{"if", "then", "else"} {
		if named[k] == nil {
			return nil, mongoerr.Newf([]mongoerr.Code{mongoerr.Location17080, mongoerr.Location17081, mongoerr.Location17082}[i], "Missing '%s' parameter to $cond", k)
		}
	}
	return []node{named["if"], named["then"], named["else"]}, nil
}

// compileIfNull returns the first argument that is not null or missing,
// else the value of the last argument (MongoDB 5.0+ accepts more than two).
func compileIfNull(_ string, arg any) (node, error) {
	nodes, err := parseArgs(arg)
	if err != nil {
		return nil, err
	}
	if len(nodes) < 2 {
		return nil, mongoerr.Newf(mongoerr.Location1257300, "$ifNull needs at least two arguments, had: %d", len(nodes))
	}
	return fn(func(c *ctx) (any, error) {
		for _, n := range nodes[:len(nodes)-1] {
			v, err := n.eval(c)
			if err != nil || !nullish(v) {
				return v, err
			}
		}
		return nodes[len(nodes)-1].eval(c)
	}), nil
}

type switchBranch struct{ cond, then node }

func compileSwitch(_ string, arg any) (node, error) {
	if !isDocument(arg) {
		return nil, mongoerr.Newf(mongoerr.Location40060, "$switch requires an object as an argument, found: %s", typeName(arg))
	}
	var branches []switchBranch
	var def node
	for _, e := range asDocument(arg) {
		var err error
		switch e.Key {
		case "branches":
			branches, err = switchBranches(e.Value)
		case "default":
			def, err = compile(e.Value)
		default:
			err = mongoerr.Newf(mongoerr.Location40067, "$switch found an unknown argument: %s", e.Key)
		}
		if err != nil {
			return nil, err
		}
	}
	if len(branches) == 0 {
		return nil, mongoerr.New(mongoerr.Location40068, "$switch requires at least one branch.")
	}
	return switchNode(branches, def), nil
}

func switchBranches(v any) ([]switchBranch, error) {
	arr, ok := asArray(v)
	if !ok {
		return nil, mongoerr.Newf(mongoerr.Location40061, "$switch expected an array for 'branches', found: %s", typeName(v))
	}
	out := make([]switchBranch, 0, len(arr))
	for _, b := range arr {
		br, err := switchBranchOf(b)
		if err != nil {
			return nil, err
		}
		out = append(out, br)
	}
	return out, nil
}

func switchBranchOf(b any) (switchBranch, error) {
	if !isDocument(b) {
		return switchBranch{}, mongoerr.Newf(mongoerr.Location40062,
			"$switch expected each branch to be an object, found: %s", typeName(b))
	}
	named, err := namedArgs(b, []string{"case", "then"}, func(f string) error {
		return mongoerr.Newf(mongoerr.Location40063, "$switch found an unknown argument to a branch: %s", f)
	})
	switch {
	case err != nil:
		return switchBranch{}, err
	case named["case"] == nil:
		return switchBranch{}, mongoerr.New(mongoerr.Location40064, "$switch requires each branch have a 'case' expression")
	case named["then"] == nil:
		return switchBranch{}, mongoerr.New(mongoerr.Location40065, "$switch requires each branch have a 'then' expression.")
	}
	return switchBranch{cond: named["case"], then: named["then"]}, nil
}

func switchNode(branches []switchBranch, def node) node {
	return fn(func(c *ctx) (any, error) {
		for _, b := range branches {
			v, err := b.cond.eval(c)
			if err != nil {
				return nil, err
			}
			if Truthy(v) {
				return b.then.eval(c)
			}
		}
		if def == nil {
			return nil, mongoerr.New(mongoerr.Location40066,
				"$switch could not find a matching branch for an input, and no default was specified.")
		}
		return def.eval(c)
	})
}
