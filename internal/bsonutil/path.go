package bsonutil

import (
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// LookupPath follows a dotted path through documents and, where a path
// component is a non-negative decimal integer, through array indexes
// ("a.0.b"). It never expands arrays: a non-numeric component applied to an
// array, or any component applied to a scalar, means "not found".
func LookupPath(doc bson.D, path string) (any, bool) {
	var cur any = doc
	for _, part := range strings.Split(path, ".") {
		next, ok := child(cur, part)
		if !ok {
			return nil, false
		}
		cur = next
	}
	return cur, true
}

// child returns the field or array element named part of v.
func child(v any, part string) (any, bool) {
	if d, ok := asDoc(v); ok {
		return Lookup(d, part)
	}
	if a, ok := asArray(v); ok {
		i, ok := arrayIndex(part)
		if !ok || i >= len(a) {
			return nil, false
		}
		return a[i], true
	}
	return nil, false
}

// PathValues returns the values found at a dotted path with MongoDB's
// multikey array expansion, as its index key generator walks the path:
//
//   - documents are descended into field by field;
//   - the first array met before the end of the path is expanded: the rest of
//     the path is applied to each element that is a document (elements that
//     are not documents contribute nothing), so "a.b" on
//     {a: [{b: 1}, {b: [2, 3]}]} gives 1 and [2, 3];
//   - a numeric component that indexes that array ("a.0.b") selects the one
//     element instead, as long as no element document has a field of that
//     name (MongoDB rejects such documents as ambiguous);
//   - an array at the end of the path is returned whole, not expanded, so
//     "a" on {a: [1, 2]} gives [1, 2] — expanding it (and turning an empty
//     one into undefined) is the index layer's business, see IndexKeys;
//   - a path that does not exist contributes nothing, so a document without
//     the path gives an empty result; a null value is returned as nil.
//
// Values are returned in document order and are not deduplicated.
func PathValues(doc bson.D, path string) []any {
	var out []any
	walkKeys(doc, strings.Split(path, "."), func(v any, k keyKind) {
		if k == keyValue || k == keyLeafArray {
			out = append(out, v)
		}
	})
	return out
}

// IndexKeys returns the keys MongoDB's B-tree key generator produces for a
// single-field index on path (before deduplication):
//
//   - arrays at the end of the path are expanded into their elements, and an
//     empty one yields bson.Undefined{} (it sorts below null);
//   - a document lacking the path yields one null (nil) key, and so does each
//     element of an expanded array that lacks the rest of the path or is not
//     a document, and an empty array met before the end of the path;
//   - nested arrays are not expanded further: they are keys themselves.
//
// The result is never empty. missing reports that the path was absent
// without any array on the way: the one case a sparse index skips.
func IndexKeys(doc bson.D, path string) (keys []any, missing bool) {
	if keys, missing, ok := topLevelKey(doc, path); ok {
		return keys, missing
	}
	return walkedKeys(doc, path)
}

// walkedKeys is IndexKeys by the general walk. It is a function of its
// own because the walk's closure moves its results to the heap.
func walkedKeys(doc bson.D, path string) (keys []any, missing bool) {
	walkKeys(doc, splitPath(path), func(v any, k keyKind) {
		switch k {
		case keyValue:
			keys = append(keys, v)
		case keyMissing:
			missing = true
		case keyMissingInArray:
			keys = append(keys, nil)
		case keyLeafArray:
			keys = appendExpanded(keys, v)
		}
	})
	if len(keys) == 0 {
		keys = []any{nil}
	}
	return keys, missing
}

// topLevelKey is IndexKeys for the common case of every write's index
// maintenance, a field at the top level that is absent or not an array,
// without the general walk's slice and closure; ok is false otherwise.
func topLevelKey(doc bson.D, path string) (keys []any, missing, ok bool) {
	key, missing, ok := TopLevelIndexKey(doc, path)
	if !ok {
		return nil, false, false
	}
	return []any{key}, missing, true
}

// TopLevelIndexKey is the one key IndexKeys gives for a field at the top
// level that is absent (nil, and missing) or not an array, with no slice
// to hold it; ok is false for a dotted path or an array, whose keys only
// IndexKeys gives.
func TopLevelIndexKey(doc bson.D, path string) (key any, missing, ok bool) {
	if strings.Contains(path, ".") {
		return nil, false, false
	}
	v, found := Lookup(doc, path)
	if !found {
		return nil, true, true
	}
	if _, isArr := asArray(v); isArr {
		return nil, false, false
	}
	return v, false, true
}

// splitPath splits a dotted path; a plain field name, the common case on
// every write's index maintenance, costs no allocation beyond its slice.
func splitPath(path string) []string {
	if !strings.Contains(path, ".") {
		return []string{path}
	}
	return strings.Split(path, ".")
}

func appendExpanded(keys []any, v any) []any {
	a, _ := asArray(v)
	if len(a) == 0 {
		return append(keys, bson.Undefined{})
	}
	return append(keys, a...)
}

// keyKind tells walkKeys callbacks what they are given.
type keyKind int

const (
	keyValue          keyKind = iota // a value, kept as is
	keyLeafArray                     // an array ending the path, expandable
	keyMissing                       // the path is absent from the document
	keyMissingInArray                // absent inside an expanded array
)

// walkKeys implements the key generator's walk for one path.
func walkKeys(doc bson.D, parts []string, emit func(v any, k keyKind)) {
	v, rest, found := descendToArray(doc, parts)
	if !found {
		emit(nil, keyMissing)
		return
	}
	arr, isArr := asArray(v)
	if !isArr {
		emit(v, keyValue)
		return
	}
	expandArray(arr, rest, emit)
}

// expandArray emits the keys of an array met with rest of the path left.
func expandArray(arr bson.A, rest []string, emit func(v any, k keyKind)) {
	if len(rest) == 0 {
		emit(arr, keyLeafArray)
		return
	}
	if len(arr) == 0 {
		emit(nil, keyMissingInArray)
		return
	}
	if pos, ok := positional(arr, rest); ok {
		emitPositional(pos, rest[1:], emit)
		return
	}
	for _, e := range arr {
		d, ok := asDoc(e)
		if !ok {
			emit(nil, keyMissingInArray)
			continue
		}
		walkSub(d, rest, emit)
	}
}

// walkSub walks the rest of a path inside one element of an expanded array,
// where an absent path counts as a null key.
func walkSub(d bson.D, rest []string, emit func(v any, k keyKind)) {
	walkKeys(d, rest, func(v any, k keyKind) {
		if k == keyMissing {
			k = keyMissingInArray
		}
		emit(v, k)
	})
}

// positional reports whether the first component of rest selects an element
// of arr by index, which MongoDB does only when no element document has a
// field of that name.
func positional(arr bson.A, rest []string) (any, bool) {
	i, ok := arrayIndex(rest[0])
	if !ok || i >= len(arr) {
		return nil, false
	}
	for _, e := range arr {
		if d, ok := asDoc(e); ok {
			if _, has := Lookup(d, rest[0]); has {
				return nil, false
			}
		}
	}
	return arr[i], true
}

// emitPositional emits the keys below an array element selected by index.
// A non-empty array selected this way is a key itself, not expanded.
func emitPositional(elem any, rest []string, emit func(v any, k keyKind)) {
	a, isArr := asArray(elem)
	switch {
	case len(rest) == 0 && isArr && len(a) == 0:
		emit(elem, keyLeafArray)
	case len(rest) == 0:
		emit(elem, keyValue)
	case isArr:
		expandArray(a, rest, emit)
	default:
		if d, ok := asDoc(elem); ok {
			walkSub(d, rest, emit)
			return
		}
		emit(nil, keyMissingInArray)
	}
}

// descendToArray follows parts through documents and stops at the first
// array, returning it with the components left after it. found is false
// when the path ends early at a missing field or a scalar.
func descendToArray(doc bson.D, parts []string) (v any, rest []string, found bool) {
	cur := doc
	for i, part := range parts {
		val, ok := Lookup(cur, part)
		if !ok {
			return nil, nil, false
		}
		if _, isArr := asArray(val); isArr {
			return val, parts[i+1:], true
		}
		if i == len(parts)-1 {
			return val, nil, true
		}
		d, isDoc := asDoc(val)
		if !isDoc {
			return nil, nil, false
		}
		cur = d
	}
	return cur, nil, true
}

// arrayIndex parses a path component naming an array element: decimal
// digits without leading zeros, as array field names are spelled.
func arrayIndex(part string) (int, bool) {
	if part == "" || (part[0] == '0' && len(part) > 1) {
		return 0, false
	}
	for i := 0; i < len(part); i++ {
		if part[i] < '0' || part[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.Atoi(part)
	return n, err == nil
}

func asDoc(v any) (bson.D, bool) {
	switch d := v.(type) {
	case bson.D:
		return d, true
	case bson.M, bson.Raw:
		return ToD(d), true
	}
	return nil, false
}

func asArray(v any) (bson.A, bool) {
	switch a := v.(type) {
	case bson.A:
		return a, true
	case []any:
		return bson.A(a), true
	}
	return nil, false
}

// Field returns the value of d's first field named key (no dotted path:
// see LookupPath), and whether there is one.
func Field(d bson.D, key string) (any, bool) {
	for _, e := range d {
		if e.Key == key {
			return e.Value, true
		}
	}
	return nil, false
}
