package bsonutil

import (
	"slices"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Documents edited as copies (a collection's options, an index's
// specification, a stage's output), so that a document in use never
// changes under a reader.

// WithField is a copy of d with key set to v: in place when d has it,
// appended when not.
func WithField(d bson.D, key string, v any) bson.D {
	out := append(bson.D(nil), d...)
	for i := range out {
		if out[i].Key == key {
			out[i].Value = v
			return out
		}
	}
	return append(out, bson.E{Key: key, Value: v})
}

// WithoutField is a copy of d without key.
func WithoutField(d bson.D, key string) bson.D {
	out := make(bson.D, 0, len(d))
	for _, e := range d {
		if e.Key != key {
			out = append(out, e)
		}
	}
	return out
}

// WithFields is a copy of d with each field of set set, as WithField.
func WithFields(d, set bson.D) bson.D {
	out := append(bson.D(nil), d...)
	for _, e := range set {
		if i := slices.IndexFunc(out, func(x bson.E) bool { return x.Key == e.Key }); i >= 0 {
			out[i].Value = e.Value
		} else {
			out = append(out, e)
		}
	}
	return out
}

// HoldsString reports whether v holds a string (or symbol) anywhere,
// inside documents and arrays too: the values a collation applies to.
func HoldsString(v any) bool {
	switch x := v.(type) {
	case string, bson.Symbol:
		return true
	case bson.D:
		return slices.ContainsFunc(x, func(e bson.E) bool { return HoldsString(e.Value) })
	case bson.A:
		return slices.ContainsFunc(x, HoldsString)
	}
	return false
}

// DocField is d's field name when it holds a document.
func DocField(d bson.D, name string) (bson.D, bool) {
	v, ok := Field(d, name)
	doc, isDoc := v.(bson.D)
	return doc, ok && isDoc
}
