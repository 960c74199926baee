package expr

import (
	"math/rand/v2"
	"slices"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// This file holds the less common array, object and random operators: $zip,
// $sortArray, $rand, $setField and $unsetField.

func addMoreOps(m map[string]compileFn) {
	m["$zip"] = compileZip
	m["$sortArray"] = compileSortArray
	m["$rand"] = compileRand
	m["$setField"] = setFieldOp(false)
	m["$unsetField"] = setFieldOp(true)
}

type zipSpec struct {
	inputs, defaults []node
	longest          bool
}

func compileZip(_ string, arg any) (node, error) {
	if !isDocument(arg) {
		return nil, mongoerr.Newf(mongoerr.Location34460, "$zip only supports an object as an argument, found %s", typeName(arg))
	}
	z := &zipSpec{}
	for _, e := range asDocument(arg) {
		if err := z.option(e); err != nil {
			return nil, err
		}
	}
	switch {
	case len(z.inputs) == 0:
		return nil, mongoerr.New(mongoerr.Location34465, "$zip requires at least one input array")
	case !z.longest && len(z.defaults) > 0:
		return nil, mongoerr.New(mongoerr.Location34466, "cannot specify defaults unless useLongestLength is true")
	case len(z.defaults) > 0 && len(z.defaults) != len(z.inputs):
		return nil, mongoerr.New(mongoerr.Location34467, "defaults and inputs must have the same length")
	}
	return fn(z.eval), nil
}

func (z *zipSpec) option(e bson.E) error {
	var err error
	switch e.Key {
	case "inputs", "defaults":
		a, ok := asArray(e.Value)
		if !ok {
			return mongoerr.Newf([]mongoerr.Code{mongoerr.Location34461, mongoerr.Location34462}[btoi(e.Key == "defaults")],
				"%s must be an array of expressions, found %s", e.Key, typeName(e.Value))
		}
		nodes, err := compileAll(a)
		if e.Key == "inputs" {
			z.inputs = nodes
		} else {
			z.defaults = nodes
		}
		return err
	case "useLongestLength":
		b, ok := e.Value.(bool)
		if !ok {
			return mongoerr.Newf(mongoerr.Location34463, "useLongestLength must be a bool, found %s", typeName(e.Value))
		}
		z.longest = b
	default:
		err = mongoerr.Newf(mongoerr.Location34464, "$zip found an unknown argument: %s", e.Key)
	}
	return err
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (z *zipSpec) eval(c *ctx) (any, error) {
	arrays := make([]bson.A, len(z.inputs))
	minLen, maxLen := -1, 0
	for i, n := range z.inputs {
		v, err := n.eval(c)
		if err != nil || nullish(v) {
			return nil, err
		}
		a, ok := asArray(v)
		if !ok {
			return nil, mongoerr.Newf(mongoerr.Location34468, "$zip found a non-array expression in input: %s", formatValue(v))
		}
		arrays[i] = a
		if minLen < 0 || len(a) < minLen {
			minLen = len(a)
		}
		maxLen = max(maxLen, len(a))
	}
	defaults, err := evalAll(c, z.defaults)
	if err != nil {
		return nil, err
	}
	n := minLen
	if z.longest {
		n = maxLen
	}
	return zipRows(c.meter(), arrays, defaults, n)
}

func zipRows(m meter, arrays []bson.A, defaults []any, n int) (bson.A, error) {
	out := make(bson.A, n)
	for row := range n {
		if err := m.step(); err != nil {
			return nil, err
		}
		r := make(bson.A, len(arrays))
		for col, a := range arrays {
			switch {
			case row < len(a):
				r[col] = a[row]
			case len(defaults) > 0:
				r[col] = defaults[col]
			}
		}
		out[row] = r
	}
	return out, nil
}

func compileSortArray(_ string, arg any) (node, error) {
	if !isDocument(arg) {
		return nil, mongoerr.Newf(mongoerr.Location2942500, "$sortArray requires an object as an argument, found: %s", typeName(arg))
	}
	var input node
	var sortBy any
	for _, e := range asDocument(arg) {
		switch e.Key {
		case "input":
			n, err := compile(e.Value)
			if err != nil {
				return nil, err
			}
			input = n
		case "sortBy":
			sortBy = e.Value
		default:
			return nil, mongoerr.Newf(mongoerr.Location2942501, "$sortArray found an unknown argument: %s", e.Key)
		}
	}
	cmp, err := sortArrayComparator(input, sortBy)
	if err != nil {
		return nil, err
	}
	return sortArrayNode(input, cmp), nil
}

// sortArrayComparator validates sortBy: 1/-1 sorts whole values, a
// document {path: 1/-1, ...} sorts documents by fields.
func sortArrayComparator(input node, sortBy any) (func(a, b any) int, error) {
	switch {
	case input == nil:
		return nil, mongoerr.New(mongoerr.Location2942502, "$sortArray requires 'input' to be specified")
	case sortBy == nil:
		return nil, mongoerr.New(mongoerr.Location2942503, "$sortArray requires 'sortBy' to be specified")
	case isNumber(sortBy) && (toFloat(sortBy) == 1 || toFloat(sortBy) == -1):
		dir := int(toFloat(sortBy))
		return func(a, b any) int { return dir * compareValues(a, b) }, nil
	case isDocument(sortBy) && len(asDocument(sortBy)) > 0:
		return fieldComparator(asDocument(sortBy))
	}
	return nil, mongoerr.New(mongoerr.Location2942505, "$sortArray sortBy must be either a sort specification or a number")
}

func fieldComparator(spec bson.D) (func(a, b any) int, error) {
	type key struct {
		path []string
		dir  int
	}
	keys := make([]key, len(spec))
	for i, e := range spec {
		path, err := splitPath(e.Key)
		if err != nil {
			return nil, err
		}
		if !isNumber(e.Value) || (toFloat(e.Value) != 1 && toFloat(e.Value) != -1) {
			return nil, mongoerr.New(mongoerr.Location15975, "$sort key ordering must be 1 (for ascending) or -1 (for descending)")
		}
		keys[i] = key{path: path, dir: int(toFloat(e.Value))}
	}
	return func(a, b any) int {
		for _, k := range keys {
			if c := compareValues(walkValue(a, k.path), walkValue(b, k.path)); c != 0 {
				return c * k.dir
			}
		}
		return 0
	}, nil
}

func sortArrayNode(input node, cmp func(a, b any) int) node {
	return fn(func(c *ctx) (any, error) {
		v, err := input.eval(c)
		if err != nil || nullish(v) {
			return nil, err
		}
		a, ok := asArray(v)
		if !ok {
			return nil, mongoerr.Newf(mongoerr.Location2942504, "The input argument to $sortArray must be an array, but was of type: %s",
				typeName(v))
		}
		cmp, stopped := c.meter().order(cmp)
		var out bson.A
		if c.coll != nil {
			out = sortCollated(a, cmp, c.coll)
		} else {
			out = append(bson.A{}, a...)
			slices.SortStableFunc(out, cmp)
		}
		if err := stopped(); err != nil {
			return nil, err
		}
		return out, nil
	})
}

// sortCollated sorts a by its keyed values under coll, returning the
// original elements.
func sortCollated(a bson.A, cmp func(a, b any) int, coll Collator) bson.A {
	idx := make([]int, len(a))
	keyed := make([]any, len(a))
	for i, x := range a {
		idx[i], keyed[i] = i, coll.Value(x)
	}
	slices.SortStableFunc(idx, func(i, j int) int { return cmp(keyed[i], keyed[j]) })
	out := make(bson.A, len(a))
	for i, j := range idx {
		out[i] = a[j]
	}
	return out
}

func compileRand(_ string, arg any) (node, error) {
	if d := asDocument(arg); !isDocument(arg) || len(d) != 0 {
		return nil, mongoerr.New(mongoerr.Location3040501, "$rand does not currently accept arguments")
	}
	return fn(func(*ctx) (any, error) { return rand.Float64(), nil }), nil
}

// setFieldOp builds $setField, and $unsetField (remove) which is
// $setField with value $$REMOVE.
func setFieldOp(remove bool) compileFn {
	return func(name string, arg any) (node, error) {
		if !isDocument(arg) {
			return nil, mongoerr.Newf(mongoerr.Location4161100, "%s only supports an object as its argument", name)
		}
		known := []string{"field", "input", "value"}
		if remove {
			known = known[:2]
		}
		named, err := namedArgs(arg, known, func(f string) error {
			return mongoerr.Newf(mongoerr.Location4161101, "%s found an unknown argument: %s", name, f)
		})
		if err != nil {
			return nil, err
		}
		field, err := constantFieldName(name, asDocument(arg), named)
		if err != nil {
			return nil, err
		}
		if remove {
			named["value"] = constNode{Missing}
		}
		return setFieldNode(name, field, named)
	}
}

// constantFieldName checks that 'field' is a constant string.
func constantFieldName(name string, arg bson.D, named map[string]node) (string, error) {
	raw, ok := bsonutil.Field(arg, "field")
	if !ok {
		return "", mongoerr.Newf(mongoerr.Location4161102, "%s requires 'field' to be specified", name)
	}
	if s, isStr := raw.(string); isStr && len(s) > 0 && s[0] == '$' {
		return "", mongoerr.Newf(mongoerr.Location4161108,
			"A field path reference which is not allowed in this context. Did you mean {$literal: '%s'}?", s)
	}
	c, isConst := named["field"].(constNode)
	s, isStr := c.v.(string)
	if !isConst || !isStr {
		return "", mongoerr.Newf(mongoerr.Location4161106, "%s requires 'field' to evaluate to type String, but got %s",
			name, typeName(c.v))
	}
	return s, nil
}

func setFieldNode(name, field string, named map[string]node) (node, error) {
	if named["input"] == nil {
		return nil, mongoerr.Newf(mongoerr.Location4161104, "%s requires 'input' to be specified", name)
	}
	if named["value"] == nil {
		return nil, mongoerr.Newf(mongoerr.Location4161103, "%s requires 'value' to be specified", name)
	}
	return fn(func(c *ctx) (any, error) {
		in, err := named["input"].eval(c)
		if err != nil || nullish(in) {
			return nil, err
		}
		if !isDocument(in) {
			return nil, mongoerr.Newf(mongoerr.Location4161105, "%s requires 'input' to evaluate to type Object", name)
		}
		v, err := named["value"].eval(c)
		if err != nil {
			return nil, err
		}
		return withField(asDocument(in), field, v), nil
	}), nil
}

// withField returns a copy of d with field set to v, or removed when v is
// missing.
func withField(d bson.D, field string, v any) bson.D {
	out := make(bson.D, 0, len(d)+1)
	for _, e := range d {
		if e.Key != field {
			out = append(out, e)
		}
	}
	if IsMissing(v) {
		return out
	}
	if _, ok := bsonutil.Field(d, field); ok {
		return MergeInto(append(bson.D{}, d...), bson.D{{Key: field, Value: v}})
	}
	return append(out, bson.E{Key: field, Value: v})
}
