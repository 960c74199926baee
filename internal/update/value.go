package update

import (
	"bytes"
	"math"
	"reflect"
	"slices"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// While an update runs, every container it writes into is first copied into
// an owned *mdoc or *marr; values reached from it that nothing wrote stay the
// caller's bson.D/bson.A and are never modified. finish turns the owned
// containers back into bson.D/bson.A.
type mdoc struct{ d bson.D }
type marr struct{ a bson.A }

type kind int

const (
	kindOther kind = iota
	kindDoc
	kindArr
)

func kindOf(v any) kind {
	switch v.(type) {
	case bson.D, *mdoc, bson.M, bson.Raw:
		return kindDoc
	case bson.A, *marr, []any:
		return kindArr
	}
	return kindOther
}

// docOf returns the fields of a document value (owned or not) without copying
// an owned one; callers must not modify the result.
func docOf(v any) bson.D {
	if m, ok := v.(*mdoc); ok {
		return m.d
	}
	return bsonutil.ToD(v)
}

func arrOf(v any) bson.A {
	if m, ok := v.(*marr); ok {
		return m.a
	}
	return bsonutil.ToA(v)
}

// own returns a writable copy of a container; other values come back as is.
func own(v any) any {
	switch x := v.(type) {
	case *mdoc, *marr:
		return v
	case bson.D:
		return &mdoc{d: slices.Clone(x)}
	case bson.A:
		return &marr{a: slices.Clone(x)}
	}
	switch kindOf(v) {
	case kindDoc:
		return &mdoc{d: slices.Clone(bsonutil.ToD(v))}
	case kindArr:
		return &marr{a: slices.Clone(bsonutil.ToA(v))}
	}
	return v
}

// finishDoc is finish of a document, returned as one: boxing it in an
// any to assert it back would allocate.
func finishDoc(x *mdoc) bson.D {
	for i := range x.d {
		x.d[i].Value = finish(x.d[i].Value)
	}
	return x.d
}

// finish converts owned containers back to bson.D/bson.A in place.
func finish(v any) any {
	switch x := v.(type) {
	case *mdoc:
		return finishDoc(x)
	case *marr:
		for i := range x.a {
			x.a[i] = finish(x.a[i])
		}
		return x.a
	}
	return v
}

// plain returns v with owned containers converted, leaving v usable.
func plain(v any) any {
	switch x := v.(type) {
	case *mdoc:
		d := make(bson.D, len(x.d))
		for i, e := range x.d {
			d[i] = bson.E{Key: e.Key, Value: plain(e.Value)}
		}
		return d
	case *marr:
		a := make(bson.A, len(x.a))
		for i, e := range x.a {
			a[i] = plain(e)
		}
		return a
	}
	return v
}

// lookup finds a field of an owned document.
func (m *mdoc) index(key string) int {
	for i := range m.d {
		if m.d[i].Key == key {
			return i
		}
	}
	return -1
}

// identical reports whether a and b have the same BSON type and bytes, the
// test MongoDB uses to call a $set or a replacement a no-op.
func identical(a, b any) bool {
	if typeNumber(a) != typeNumber(b) {
		return false
	}
	switch kindOf(a) {
	case kindDoc:
		return identicalDocs(docOf(a), docOf(b))
	case kindArr:
		return identicalArrays(arrOf(a), arrOf(b))
	}
	return identicalScalars(a, b)
}

func identicalDocs(a, b bson.D) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Key != b[i].Key || !identical(a[i].Value, b[i].Value) {
			return false
		}
	}
	return true
}

func identicalArrays(a, b bson.A) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !identical(a[i], b[i]) {
			return false
		}
	}
	return true
}

func identicalScalars(a, b any) bool {
	switch x := a.(type) {
	case float64:
		return math.Float64bits(x) == math.Float64bits(b.(float64))
	case nil:
		return true
	case int:
		return int64(x) == toInt64(b)
	case bson.Binary:
		y := asBinary(b)
		return x.Subtype == y.Subtype && bytes.Equal(x.Data, y.Data)
	case []byte:
		y := asBinary(b)
		return y.Subtype == 0 && bytes.Equal(x, y.Data)
	case bson.CodeWithScope:
		y := b.(bson.CodeWithScope)
		return x.Code == y.Code && identical(x.Scope, y.Scope)
	}
	if !reflect.TypeOf(a).Comparable() {
		return reflect.DeepEqual(a, b)
	}
	return a == b
}

func asBinary(v any) bson.Binary {
	if b, ok := v.([]byte); ok {
		return bson.Binary{Data: b}
	}
	return v.(bson.Binary)
}

func toInt64(v any) int64 {
	switch x := v.(type) {
	case int32:
		return int64(x)
	case int64:
		return x
	case int:
		return int64(x)
	}
	return 0
}

// typeNumber is bsonutil.TypeNumber extended to owned containers.
func typeNumber(v any) int {
	switch v.(type) {
	case *mdoc:
		return 3
	case *marr:
		return 4
	}
	return bsonutil.TypeNumber(v)
}

// typeName is bsonutil.TypeName extended to owned containers.
func typeName(v any) string {
	switch kindOf(v) {
	case kindDoc:
		return "object"
	case kindArr:
		return "array"
	}
	return bsonutil.TypeName(v)
}

// compareValues orders values as MongoDB does, owned containers included.
func compareValues(a, b any) int {
	return bsonutil.Compare(plainIfOwned(a), plainIfOwned(b))
}

func plainIfOwned(v any) any {
	switch v.(type) {
	case *mdoc, *marr:
		return plain(v)
	}
	return v
}

// formatValue and formatElem print values, owned containers included, in
// MongoDB's error-message form.
func formatValue(v any) string { return bsonutil.Format(plainIfOwned(v)) }

func formatElem(name string, v any) string { return bsonutil.FormatElem(name, plainIfOwned(v)) }

// bsonBytes is a lower bound on v's size as a BSON element's value: exact
// for the types documents are made of, 0 for the rest.
func bsonBytes(v any) int {
	switch x := v.(type) {
	case *mdoc:
		return docBytes(x.d)
	case bson.D:
		return docBytes(x)
	case *marr:
		return arrBytes(x.a)
	case bson.A:
		return arrBytes(x)
	case string:
		return 5 + len(x)
	case bson.Binary:
		return 5 + len(x.Data)
	case int32:
		return 4
	case int64, float64, bson.DateTime, bson.Timestamp:
		return 8
	case bson.Decimal128:
		return 16
	case bson.ObjectID:
		return 12
	case bool:
		return 1
	}
	return 0
}

// docBytes is bsonBytes of a document: a length, the elements (type byte,
// name, terminating zero, value) and a closing zero.
func docBytes(d bson.D) int {
	n := 5
	for _, e := range d {
		n += 2 + len(e.Key) + bsonBytes(e.Value)
	}
	return n
}

func arrBytes(a bson.A) int {
	n := 5 + nullElementsBytes(0, len(a))
	for _, e := range a {
		n += bsonBytes(e)
	}
	return n
}
