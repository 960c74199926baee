package expr

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// This file holds the operators that bind variables: $let, $map, $filter
// and $reduce.

func addVarOps(m map[string]compileFn) {
	m["$let"] = compileLet
	m["$literal"] = literalOp
	m["$const"] = literalOp
}

func compileLet(_ string, arg any) (node, error) {
	if !isDocument(arg) {
		return nil, mongoerr.New(mongoerr.Location16874, "$let only supports an object as its argument")
	}
	var varsVal, inVal any
	var haveVars, haveIn bool
	for _, e := range asDocument(arg) {
		switch e.Key {
		case "vars":
			varsVal, haveVars = e.Value, true
		case "in":
			inVal, haveIn = e.Value, true
		default:
			return nil, mongoerr.Newf(mongoerr.Location16875, "Unrecognized parameter to $let: %s", e.Key)
		}
	}
	if !haveVars {
		return nil, mongoerr.New(mongoerr.Location16876, "Missing 'vars' parameter to $let")
	}
	if !haveIn {
		return nil, mongoerr.New(mongoerr.Location16877, "Missing 'in' parameter to $let")
	}
	return letNode(varsVal, inVal)
}

func letNode(varsVal, inVal any) (node, error) {
	names, vals, err := compileLetVars(varsVal)
	if err != nil {
		return nil, err
	}
	in, err := compile(inVal)
	if err != nil {
		return nil, err
	}
	return fn(func(c *ctx) (any, error) {
		// Every var is evaluated in the outer scope, so vars cannot refer
		// to each other, as in MongoDB.
		inner := c
		for i, n := range vals {
			v, err := n.eval(c)
			if err != nil {
				return nil, err
			}
			inner = inner.bind(names[i], v)
		}
		return in.eval(inner)
	}), nil
}

func compileLetVars(varsVal any) ([]string, []node, error) {
	if !isDocument(varsVal) {
		return nil, nil, mongoerr.New(mongoerr.Location10065, "invalid parameter: expected an object (vars)")
	}
	vars := asDocument(varsVal)
	names := make([]string, len(vars))
	vals := make([]node, len(vars))
	for i, e := range vars {
		if err := validateVarName(e.Key, true); err != nil {
			return nil, nil, err
		}
		n, err := compile(e.Value)
		if err != nil {
			return nil, nil, err
		}
		names[i], vals[i] = e.Key, n
	}
	return names, vals, nil
}

// loopSpec is the parsed argument of $map or $filter.
type loopSpec struct {
	input, body, limit node
	as                 string
}

// parseLoop parses {input, as, <bodyName>} for $map and $filter; codes
// are the errors for: not an object, unknown field, no input, no body.
func parseLoop(name string, arg any, bodyName string, codes [4]mongoerr.Code) (loopSpec, error) {
	spec := loopSpec{as: "this"}
	if !isDocument(arg) {
		return spec, mongoerr.Newf(codes[0], "%s only supports an object as its argument", name)
	}
	var body *bson.E
	for _, e := range asDocument(arg) {
		if e.Key == bodyName {
			body = &e
			continue
		}
		if err := spec.option(name, e, codes[1]); err != nil {
			return spec, err
		}
	}
	if spec.input == nil {
		return spec, mongoerr.Newf(codes[2], "Missing 'input' parameter to %s", name)
	}
	if body == nil {
		return spec, mongoerr.Newf(codes[3], "Missing '%s' parameter to %s", bodyName, name)
	}
	var err error
	spec.body, err = compile(body.Value)
	return spec, err
}

// option reads one field of a loop's argument other than its body.
func (spec *loopSpec) option(name string, e bson.E, unknown mongoerr.Code) error {
	var err error
	switch {
	case e.Key == "input":
		spec.input, err = compile(e.Value)
	case e.Key == "as":
		spec.as, _ = e.Value.(string)
		err = validateVarName(spec.as, true)
	case e.Key == "limit" && name == "$filter":
		spec.limit, err = compile(e.Value)
	default:
		err = mongoerr.Newf(unknown, "Unrecognized parameter to %s: %s", name, e.Key)
	}
	return err
}

// loopInput evaluates a loop's input: null for nullish, error for a
// non-array.
func loopInput(c *ctx, name string, input node, code mongoerr.Code) (bson.A, bool, error) {
	v, err := input.eval(c)
	if err != nil || nullish(v) {
		return nil, false, err
	}
	a, ok := asArray(v)
	if !ok {
		return nil, false, mongoerr.Newf(code, "input to %s must be an array not %s", name, typeName(v))
	}
	return a, true, nil
}

func compileMap(name string, arg any) (node, error) {
	spec, err := parseLoop(name, arg, "in", [4]mongoerr.Code{mongoerr.Location16878, mongoerr.Location16879, mongoerr.Location16880, mongoerr.Location16882})
	if err != nil {
		return nil, err
	}
	return fn(func(c *ctx) (any, error) {
		a, ok, err := loopInput(c, name, spec.input, mongoerr.Location16883)
		if err != nil || !ok {
			return nil, err
		}
		out := make(bson.A, len(a))
		size := 5
		for i, x := range a {
			if err := c.step(); err != nil {
				return nil, err
			}
			v, err := spec.body.eval(c.bind(spec.as, x))
			if err != nil {
				return nil, err
			}
			if IsMissing(v) {
				v = nil
			}
			out[i] = v
			// A body that builds a large value each time must stop at
			// the largest array, not after building all of them.
			if size += 8 + valueBytes(v); size > maxArrayBytes {
				return nil, errArrayTooLarge(size)
			}
		}
		return out, nil
	}), nil
}

// errArrayTooLarge is mongod's error for an array past the largest
// document, as checkArraySize reports it.
func errArrayTooLarge(size int) error {
	return mongoerr.Newf(mongoerr.BSONObjectTooLarge,
		"BSONObj size: %d (0x%X) is invalid. Size must be between 0 and 16793600(16MB)", size, size)
}

func compileFilter(name string, arg any) (node, error) {
	spec, err := parseLoop(name, arg, "cond", [4]mongoerr.Code{mongoerr.Location28646, mongoerr.Location28647, mongoerr.Location28648, mongoerr.Location28650})
	if err != nil {
		return nil, err
	}
	return fn(func(c *ctx) (any, error) {
		a, ok, err := loopInput(c, name, spec.input, mongoerr.Location28651)
		if err != nil || !ok {
			return nil, err
		}
		limit, err := filterLimit(c, spec.limit, len(a))
		if err != nil {
			return nil, err
		}
		return filterArray(c, spec, a, limit)
	}), nil
}

func filterArray(c *ctx, spec loopSpec, a bson.A, limit int) (any, error) {
	out := bson.A{}
	for _, x := range a {
		if len(out) >= limit {
			break
		}
		if err := c.step(); err != nil {
			return nil, err
		}
		v, err := spec.body.eval(c.bind(spec.as, x))
		if err != nil {
			return nil, err
		}
		if Truthy(v) {
			out = append(out, x)
		}
	}
	return out, nil
}

// filterLimit evaluates $filter's optional limit (MongoDB 5.2+).
func filterLimit(c *ctx, limit node, n int) (int, error) {
	if limit == nil {
		return n, nil
	}
	v, err := limit.eval(c)
	if err != nil || nullish(v) {
		return n, err
	}
	if !isNumber(v) || !isIntegral32(v) {
		return 0, mongoerr.Newf(mongoerr.Location327391, "$filter: limit must be represented as a 32-bit integral value: %s",
			formatValue(v))
	}
	if l := toInt64(v); l < 1 {
		return 0, mongoerr.Newf(mongoerr.Location327392, "$filter: limit must be greater than 0: %d", l)
	} else if int(l) < n {
		return int(l), nil
	}
	return n, nil
}

func compileReduce(_ string, arg any) (node, error) {
	if !isDocument(arg) {
		return nil, mongoerr.Newf(mongoerr.Location40075, "$reduce requires an object as an argument, found: %s", typeName(arg))
	}
	named, err := namedArgs(arg, []string{"input", "initialValue", "in"}, func(f string) error {
		return mongoerr.Newf(mongoerr.Location40076, "$reduce found an unknown argument: %s", f)
	})
	if err != nil {
		return nil, err
	}
	for i, k := range []string{"input", "initialValue", "in"} {
		if named[k] == nil {
			return nil, mongoerr.Newf([]mongoerr.Code{mongoerr.Location40077, mongoerr.Location40078, mongoerr.Location40079}[i], "$reduce requires '%s' to be specified", k)
		}
	}
	return reduceNode(named["input"], named["initialValue"], named["in"]), nil
}

func reduceNode(input, initial, in node) node {
	return fn(func(c *ctx) (any, error) {
		v, err := input.eval(c)
		if err != nil || nullish(v) {
			return nil, err
		}
		a, ok := asArray(v)
		if !ok {
			return nil, mongoerr.Newf(mongoerr.Location40080, "$reduce requires that 'input' be an array, found: %s", formatValue(v))
		}
		acc, err := initial.eval(c)
		for _, x := range a {
			if err == nil {
				err = c.step()
			}
			if err != nil {
				break
			}
			acc, err = in.eval(c.bind("this", x).bind("value", acc))
		}
		return acc, err
	})
}
