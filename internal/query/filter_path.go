package query

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
)

// visitFn receives each value a path yields. offset is the index of the
// element in the outermost array traversed implicitly to reach it, -1 when
// no array was traversed implicitly. Returning true stops the walk.
type visitFn func(v any, offset int) bool

// walkPath yields the values MongoDB's matcher sees at path in doc, in its
// order (mongo/db/matcher/path.cpp):
//
//   - the path is followed through documents up to the first array;
//   - a path that is missing, or runs into a scalar, yields absent{};
//   - an array ending the path yields each element, then the array itself,
//     unless expandLeaf is false ($size, $elemMatch), when it yields only
//     the array;
//   - an array with path left applies the rest to each element: documents
//     are walked (offset = element index); an element whose index equals
//     the next, numeric component is also visited explicitly (offset kept
//     from below); nested arrays are only entered through such an index.
//
// It returns true when fn stopped the walk.
func walkPath(doc bson.D, path []string, expandLeaf bool, fn visitFn) bool {
	v, rest := descend(doc, path)
	arr, ok := asArray(v)
	if !ok {
		return fn(v, -1)
	}
	return walkArray(arr, rest, expandLeaf, fn)
}

// descend follows path through documents and stops at the first array,
// returning it with the components left after it.
func descend(doc bson.D, path []string) (any, []string) {
	cur := doc
	for i, part := range path {
		v, ok := bsonutil.Lookup(cur, part)
		if !ok {
			return absent{}, nil
		}
		if _, isArr := asArray(v); isArr || i == len(path)-1 {
			return v, path[i+1:]
		}
		d, isDoc := asDoc(v)
		if !isDoc {
			return absent{}, nil
		}
		cur = d
	}
	return cur, nil
}

func walkArray(arr bson.A, rest []string, expandLeaf bool, fn visitFn) bool {
	if len(rest) == 0 {
		return walkLeafArray(arr, expandLeaf, fn)
	}
	idx, numeric := isArrayIndex(rest[0])
	for i, e := range arr {
		if d, ok := asDoc(e); ok {
			implicit := func(v any, _ int) bool { return fn(v, i) }
			if walkPath(d, rest, expandLeaf, implicit) {
				return true
			}
		}
		if numeric && idx == i && walkIndexed(e, rest[1:], expandLeaf, fn) {
			return true
		}
	}
	return false
}

func walkLeafArray(arr bson.A, expandLeaf bool, fn visitFn) bool {
	if expandLeaf {
		for i, e := range arr {
			if fn(e, i) {
				return true
			}
		}
	}
	return fn(arr, -1)
}

// walkIndexed continues a walk below an element selected by an explicit
// array index; no offset is recorded for the index itself.
func walkIndexed(e any, rest []string, expandLeaf bool, fn visitFn) bool {
	if len(rest) == 0 {
		return fn(e, -1)
	}
	if d, ok := asDoc(e); ok {
		return walkPath(d, rest, expandLeaf, fn)
	}
	if a, ok := asArray(e); ok {
		return walkArray(a, rest, expandLeaf, fn)
	}
	return false
}
