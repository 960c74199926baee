package bsonutil

import (
	"unsafe"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// valueSlabs holds the values a shared decode puts in interfaces. Go boxes
// a string, a slice or a scalar above 255 into an `any` with a heap
// allocation of its own, which made a session request's values most of its
// decoding garbage. A shared decode instead writes each value into a slab
// of its kind and makes the interface point at it: one allocation per kind
// per request. The interface is what `any(v)` would give (the same dynamic
// type and value), and a slab's element is never written again once an
// interface points at it, so the value stays as immutable as Go's own
// boxing makes it. As with the shared text, a value kept of the request
// keeps its slab alive, which is why only small documents are decoded so.
type valueSlabs struct {
	// heads holds the headers of strings, documents and arrays. A string's
	// header (data pointer, length) is the start of a slice's (data
	// pointer, length, capacity), so one slab serves all three and the
	// collector, which reads the data pointer of each, scans them right.
	heads slab[bson.D]
	bins  slab[bson.Binary]
	words slab[uint64] // the pointer-free scalars, one or two words each
}

func (vs *valueSlabs) head() *bson.D { return vs.heads.one() }

// takeWords returns n consecutive words.
func (vs *valueSlabs) takeWords(n int) unsafe.Pointer {
	return unsafe.Pointer(&vs.words.take(n)[0])
}

// eface is the layout the runtime gives an empty interface (its eface):
// the dynamic type, then a pointer to the value. The box tests check every
// kind against Go's own conversion, so a runtime that changed it would
// fail them, not corrupt values quietly.
type eface struct {
	typ  unsafe.Pointer
	data unsafe.Pointer
}

// pointing returns proto, an interface holding a value of the type to
// box, with its value pointer replaced by data. proto must be converted
// from a constant or a zero value, which Go boxes without allocating.
func pointing(proto any, data unsafe.Pointer) any {
	(*eface)(unsafe.Pointer(&proto)).data = data
	return proto
}

func (vs *valueSlabs) boxString(s string) any {
	if s == "" {
		return s
	}
	p := unsafe.Pointer(vs.head())
	*(*string)(p) = s
	return pointing("", p)
}

func (vs *valueSlabs) boxD(d bson.D) any {
	p := vs.head()
	*p = d
	return pointing(bson.D(nil), unsafe.Pointer(p))
}

func (vs *valueSlabs) boxA(a bson.A) any {
	p := unsafe.Pointer(vs.head())
	*(*bson.A)(p) = a
	return pointing(bson.A(nil), p)
}

func (vs *valueSlabs) boxBinary(b bson.Binary) any {
	p := vs.bins.one()
	*p = b
	return pointing(bson.Binary{}, unsafe.Pointer(p))
}

// The scalars: values Go boxes without allocating (small integers, zero
// values) are boxed by Go; the others go through boxWords.

// boxWords boxes v, a pointer-free value of at most two words, from the
// words slab; proto is the zero value of v's type.
func boxWords[T any](vs *valueSlabs, v T, proto any) any {
	p := vs.takeWords(int(unsafe.Sizeof(v)+7) / 8)
	*(*T)(p) = v
	return pointing(proto, p)
}

func (vs *valueSlabs) boxInt32(v int32) any {
	if uint32(v) < 256 {
		return v
	}
	return boxWords(vs, v, int32(0))
}

func (vs *valueSlabs) boxInt64(v int64) any {
	if uint64(v) < 256 {
		return v
	}
	return boxWords(vs, v, int64(0))
}

func (vs *valueSlabs) boxDouble(v float64) any {
	if v == 0 {
		return v
	}
	return boxWords(vs, v, float64(0))
}

func (vs *valueSlabs) boxDateTime(v bson.DateTime) any {
	if uint64(v) < 256 {
		return v
	}
	return boxWords(vs, v, bson.DateTime(0))
}

func (vs *valueSlabs) boxObjectID(v bson.ObjectID) any { return boxWords(vs, v, bson.ObjectID{}) }

func (vs *valueSlabs) boxTimestamp(v bson.Timestamp) any {
	return boxWords(vs, v, bson.Timestamp{})
}
