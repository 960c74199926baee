package expr

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

func addObjectOps(m map[string]compileFn) {
	m["$mergeObjects"] = variadicLoop(evalMergeObjects)
	m["$objectToArray"] = fixedLoop(1, evalObjectToArray)
	m["$arrayToObject"] = fixedLoop(1, evalArrayToObject)
	m["$getField"] = compileGetField
}

func evalMergeObjects(m meter, _ string, vals []any) (any, error) {
	out := bson.D{}
	for i, v := range vals {
		if nullish(v) {
			continue
		}
		if !isDocument(v) {
			return nil, mongoerr.Newf(mongoerr.Location40400, "$mergeObjects requires object inputs, but input %d is of type %s",
				i+1, typeName(v))
		}
		var err error
		if out, err = mergeMetered(m, out, asDocument(v)); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// MergeInto sets every field of src on dst: existing fields keep their
// position and take the new value, new fields are appended. It is
// $mergeObjects' rule, shared with the $mergeObjects accumulator. Merging
// more than a few fields finds them through a map, so that merging n
// fields into m costs n + m, not n times m.
func MergeInto(dst, src bson.D) bson.D {
	if len(src) <= mergeScanMax {
		return mergeByScan(dst, src)
	}
	at := make(map[string]int, len(dst)+len(src))
	for i := len(dst) - 1; i >= 0; i-- {
		at[dst[i].Key] = i // the first of duplicate names, as a scan finds
	}
	for _, e := range src {
		if i, ok := at[e.Key]; ok {
			dst[i].Value = e.Value
			continue
		}
		at[e.Key] = len(dst)
		dst = append(dst, e)
	}
	return dst
}

// mergeScanMax is the number of fields up to which scanning dst for each
// beats building a map of dst.
const mergeScanMax = 8

func mergeByScan(dst, src bson.D) bson.D {
	for _, e := range src {
		found := false
		for i := range dst {
			if dst[i].Key == e.Key {
				dst[i].Value, found = e.Value, true
				break
			}
		}
		if !found {
			dst = append(dst, e)
		}
	}
	return dst
}

// mergeMetered is MergeInto counting each field of src on m, so that a
// long merge stops once its operation has ended.
func mergeMetered(m meter, dst, src bson.D) (bson.D, error) {
	for range src {
		if err := m.step(); err != nil {
			return nil, err
		}
	}
	// One merge of all of src: MergeInto is linear in its fields, a merge
	// per field would be quadratic.
	return MergeInto(dst, src), nil
}

func evalObjectToArray(m meter, _ string, vals []any) (any, error) {
	v := vals[0]
	if nullish(v) {
		return nil, nil
	}
	if !isDocument(v) {
		return nil, mongoerr.Newf(mongoerr.Location40390, "$objectToArray requires a document input, found: %s", typeName(v))
	}
	out := bson.A{}
	for _, e := range asDocument(v) {
		if err := m.step(); err != nil {
			return nil, err
		}
		out = append(out, bson.D{{Key: "k", Value: e.Key}, {Key: "v", Value: e.Value}})
	}
	return out, nil
}

func evalArrayToObject(m meter, _ string, vals []any) (any, error) {
	v := vals[0]
	if nullish(v) {
		return nil, nil
	}
	a, ok := asArray(v)
	if !ok {
		return nil, mongoerr.Newf(mongoerr.Location40386, "$arrayToObject requires an array input, found: %s", typeName(v))
	}
	if len(a) == 0 {
		return bson.D{}, nil
	}
	pairForm := false
	switch {
	case isArrayValue(a[0]):
		pairForm = true
	case !isDocument(a[0]):
		return nil, mongoerr.Newf(mongoerr.Location40398, "Unrecognised input type format for $arrayToObject: %s", typeName(a[0]))
	}
	entries := make(bson.D, 0, len(a))
	for _, e := range a {
		k, val, err := arrayToObjectEntry(e, pairForm)
		if err == nil {
			err = m.step()
		}
		if err != nil {
			return nil, err
		}
		entries = append(entries, bson.E{Key: k, Value: val})
	}
	return MergeInto(bson.D{}, entries), nil
}

func isArrayValue(v any) bool { _, ok := asArray(v); return ok }

// arrayToObjectEntry reads one [k, v] or {k, v} element; the first element
// fixes which form the whole array must use.
func arrayToObjectEntry(e any, pairForm bool) (string, any, error) {
	if pairForm {
		pair, ok := asArray(e)
		if !ok {
			return "", nil, mongoerr.Newf(mongoerr.Location40396, "$arrayToObject requires a consistent input format. Elements must"+
				"all be arrays or all be objects. Array was detected, now found: %s", typeName(e))
		}
		if len(pair) != 2 {
			return "", nil, mongoerr.Newf(mongoerr.Location40397,
				"$arrayToObject requires an array of size 2 arrays,found array of size: %d", len(pair))
		}
		k, ok := pair[0].(string)
		if !ok {
			return "", nil, mongoerr.Newf(mongoerr.Location40395, "$arrayToObject requires an array of key-value pairs, where "+
				"the key must be of type string. Found key type: %s", typeName(pair[0]))
		}
		return k, pair[1], nil
	}
	return kvEntry(e)
}

func kvEntry(e any) (string, any, error) {
	if !isDocument(e) {
		return "", nil, mongoerr.Newf(mongoerr.Location40391, "$arrayToObject requires a consistent input format. Elements must"+
			"all be arrays or all be objects. Object was detected, now found: %s", typeName(e))
	}
	d := asDocument(e)
	if len(d) != 2 {
		return "", nil, mongoerr.Newf(mongoerr.Location40392,
			"$arrayToObject requires an object keys of 'k' and 'v'. Found incorrect number of keys:%d", len(d))
	}
	k, hasK := bsonutil.Field(d, "k")
	v, hasV := bsonutil.Field(d, "v")
	if !hasK || !hasV {
		return "", nil, mongoerr.Newf(mongoerr.Location40393,
			"$arrayToObject requires an object with keys 'k' and 'v'. Missing either or both keys from: %s",
			formatValue(d))
	}
	ks, ok := k.(string)
	if !ok {
		return "", nil, mongoerr.Newf(mongoerr.Location40394, "$arrayToObject requires an object with keys 'k' and 'v', where "+
			"the value of 'k' must be of type string. Found type: %s", typeName(k))
	}
	return ks, v, nil
}

// compileGetField accepts {field, input} or a bare field expression
// (meaning input: $$CURRENT).
func compileGetField(_ string, arg any) (node, error) {
	d := asDocument(arg)
	if !isDocument(arg) || (len(d) == 1 && len(d[0].Key) > 0 && d[0].Key[0] == '$') {
		field, err := compile(arg)
		if err != nil {
			return nil, err
		}
		return getFieldNode(field, nil), nil
	}
	named, err := namedArgs(arg, []string{"field", "input"}, func(f string) error {
		return mongoerr.Newf(mongoerr.Location3041701, "$getField found an unknown argument: %s", f)
	})
	switch {
	case err != nil:
		return nil, err
	case named["field"] == nil:
		return nil, mongoerr.New(mongoerr.Location3041702, "$getField requires 'field' to be specified")
	case named["input"] == nil:
		return nil, mongoerr.New(mongoerr.Location3041703, "$getField requires 'input' to be specified")
	}
	return getFieldNode(named["field"], named["input"]), nil
}

func getFieldNode(field, input node) node {
	return fn(func(c *ctx) (any, error) {
		f, err := field.eval(c)
		if err != nil {
			return nil, err
		}
		name, ok := f.(string)
		if !ok {
			return nil, mongoerr.Newf(mongoerr.Location3041704, "$getField requires 'field' to evaluate to type String, but got %s",
				typeName(f))
		}
		in, err := evalOr(c, input, c.root)
		if err != nil {
			return nil, err
		}
		return getField(in, name), nil
	})
}

// getField reads a field by its literal name (dots and dollars are not
// path syntax here); a null input gives null, any other non-document gives
// missing.
func getField(in any, name string) any {
	if !isDocument(in) {
		if IsMissing(in) || !nullish(in) {
			return Missing
		}
		return nil
	}
	if v, ok := bsonutil.Field(asDocument(in), name); ok {
		return v
	}
	return Missing
}
