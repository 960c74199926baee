package oplog

import (
	"fmt"
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// IsDiff reports whether an update entry's o is a "$v": 2 diff, and
// returns the diff.
func IsDiff(o bson.D) (bson.D, bool) {
	v, ok := bsonutil.Lookup(o, "$v")
	if !ok || !isTwo(v) {
		return nil, false
	}
	d, _ := bsonutil.Lookup(o, "diff")
	diff, ok := d.(bson.D)
	return diff, ok
}

func isTwo(v any) bool {
	switch n := v.(type) {
	case int32:
		return n == 2
	case int64:
		return n == 2
	case float64:
		return n == 2
	}
	return false
}

// ApplyDiff returns doc with a "$v": 2 diff applied (doc is not changed):
// "d" removes fields, "u" and "i" set them, "s<name>" applies a sub-diff
// to an embedded document or, with "a": true, to an array, whose "l"
// resizes it and "u<index>" / "s<index>" change its elements.
// The document's _id may not change (ImmutableField), as through any
// update.
func ApplyDiff(doc, diff bson.D) (bson.D, error) {
	out, err := applyDocDiff(doc, diff)
	if err != nil {
		return nil, err
	}
	was, had := bsonutil.Lookup(doc, "_id")
	now, has := bsonutil.Lookup(out, "_id")
	if had != has || had && bsonutil.Compare(was, now) != 0 {
		return nil, mongoerr.New(mongoerr.ImmutableField, "Performing an update on the path '_id' would modify the immutable field '_id'")
	}
	return out, nil
}

func applyDocDiff(doc, diff bson.D) (bson.D, error) {
	out := append(bson.D(nil), doc...)
	for _, e := range diff {
		var err error
		switch {
		case e.Key == "d":
			out, err = removeFields(out, e.Value)
		case e.Key == "u" || e.Key == "i":
			out, err = setFields(out, e.Value)
		case strings.HasPrefix(e.Key, "s") && len(e.Key) > 1:
			out, err = applySub(out, e.Key[1:], e.Value)
		default:
			err = badDiff("unknown field %q in a document diff", e.Key)
		}
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

func badDiff(format string, args ...any) error {
	return mongoerr.Newf(mongoerr.BadValue, "cannot apply the update's $v: 2 diff: "+format, args...)
}

func removeFields(doc bson.D, v any) (bson.D, error) {
	names, ok := v.(bson.D)
	if !ok {
		return nil, badDiff("'d' is %T, not a document", v)
	}
	for _, n := range names {
		for i := range doc {
			if doc[i].Key == n.Key {
				doc = append(doc[:i:i], doc[i+1:]...)
				break
			}
		}
	}
	return doc, nil
}

func setFields(doc bson.D, v any) (bson.D, error) {
	fields, ok := v.(bson.D)
	if !ok {
		return nil, badDiff("'u' is %T, not a document", v)
	}
	for _, f := range fields {
		doc = setField(doc, f.Key, f.Value)
	}
	return doc, nil
}

func setField(doc bson.D, key string, v any) bson.D {
	for i := range doc {
		if doc[i].Key == key {
			doc[i].Value = v
			return doc
		}
	}
	return append(doc, bson.E{Key: key, Value: v})
}

// applySub applies a sub-diff to the field name of doc.
func applySub(doc bson.D, name string, sub any) (bson.D, error) {
	diff, ok := sub.(bson.D)
	if !ok {
		return nil, badDiff("'s%s' is %T, not a document", name, sub)
	}
	cur, _ := bsonutil.Lookup(doc, name)
	next, err := applyTo(cur, diff, name)
	if err != nil {
		return nil, err
	}
	return setField(doc, name, next), nil
}

// applyTo applies diff to v, an embedded document or an array.
func applyTo(v any, diff bson.D, where string) (any, error) {
	if isArrayDiff(diff) {
		arr, ok := v.(bson.A)
		if !ok {
			return nil, badDiff("%s is %T, not the array its diff needs", where, v)
		}
		return applyArrayDiff(arr, diff, where)
	}
	d, ok := v.(bson.D)
	if !ok {
		return nil, badDiff("%s is %T, not the document its diff needs", where, v)
	}
	return applyDocDiff(d, diff)
}

func isArrayDiff(diff bson.D) bool {
	v, ok := bsonutil.Lookup(diff, "a")
	return ok && v == true
}

func applyArrayDiff(arr bson.A, diff bson.D, where string) (bson.A, error) {
	out := append(bson.A(nil), arr...)
	for _, e := range diff {
		switch {
		case e.Key == "a":
		case e.Key == "l":
			n, ok := asLength(e.Value)
			if !ok {
				return nil, badDiff("%s's new length is %v", where, e.Value)
			}
			out = resize(out, n)
		case len(e.Key) > 1 && (e.Key[0] == 'u' || e.Key[0] == 's'):
			i, err := strconv.Atoi(e.Key[1:])
			if err != nil || i < 0 {
				return nil, badDiff("unknown field %q in %s's array diff", e.Key, where)
			}
			if i >= len(out) {
				out = resize(out, i+1)
			}
			if e.Key[0] == 'u' {
				out[i] = e.Value
				continue
			}
			sub, ok := e.Value.(bson.D)
			if !ok {
				return nil, badDiff("%q of %s is %T, not a document", e.Key, where, e.Value)
			}
			next, err := applyTo(out[i], sub, fmt.Sprintf("%s.%d", where, i))
			if err != nil {
				return nil, err
			}
			out[i] = next
		default:
			return nil, badDiff("unknown field %q in %s's array diff", e.Key, where)
		}
	}
	return out, nil
}

func asLength(v any) (int, bool) {
	switch n := v.(type) {
	case int32:
		return int(n), n >= 0
	case int64:
		return int(n), n >= 0
	case float64:
		return int(n), n >= 0 && n == float64(int(n))
	}
	return 0, false
}

// resize cuts arr to n elements or pads it with nulls, as an array diff's
// "l" does.
func resize(arr bson.A, n int) bson.A {
	if n <= len(arr) {
		return arr[:n]
	}
	for len(arr) < n {
		arr = append(arr, nil)
	}
	return arr
}
