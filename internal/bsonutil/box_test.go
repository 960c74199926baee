package bsonutil

import (
	"math"
	"reflect"
	"runtime"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// boxCase is one value boxed by the slabs and by Go.
type boxCase struct {
	name string
	want any                   // Go's boxing of the value
	box  func(*valueSlabs) any // the slabs' boxing of the same value
}

// boxCases covers every boxing function with the values at its edges:
// those Go boxes without allocating (which the slabs leave to Go) and
// those it allocates for.
func boxCases() []boxCase {
	var cases []boxCase
	add := func(name string, want any, box func(*valueSlabs) any) {
		cases = append(cases, boxCase{name, want, box})
	}
	for _, s := range []string{"", "a", "sessions"} {
		add("string "+s, s, func(vs *valueSlabs) any { return vs.boxString(s) })
	}
	for _, i := range []int32{0, 1, 255, 256, -1, math.MaxInt32, math.MinInt32} {
		add("int32", i, func(vs *valueSlabs) any { return vs.boxInt32(i) })
	}
	for _, i := range []int64{0, 255, 256, -1, math.MaxInt64, math.MinInt64} {
		add("int64", i, func(vs *valueSlabs) any { return vs.boxInt64(i) })
	}
	for _, f := range []float64{0, math.Copysign(0, -1), 1.5, -2, math.Inf(1), math.MaxFloat64} {
		add("double", f, func(vs *valueSlabs) any { return vs.boxDouble(f) })
	}
	for _, dt := range []bson.DateTime{0, 255, 256, -1, 1_800_000_000_000} {
		add("date", dt, func(vs *valueSlabs) any { return vs.boxDateTime(dt) })
	}
	oid := bson.ObjectID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}
	add("objectId", oid, func(vs *valueSlabs) any { return vs.boxObjectID(oid) })
	add("objectId zero", bson.ObjectID{}, func(vs *valueSlabs) any { return vs.boxObjectID(bson.ObjectID{}) })
	ts := bson.Timestamp{T: 7, I: math.MaxUint32}
	add("timestamp", ts, func(vs *valueSlabs) any { return vs.boxTimestamp(ts) })
	bin := bson.Binary{Subtype: 4, Data: []byte("0123456789abcdef")}
	add("binary", bin, func(vs *valueSlabs) any { return vs.boxBinary(bin) })
	d := bson.D{{Key: "k", Value: "v"}}
	add("document", d, func(vs *valueSlabs) any { return vs.boxD(d) })
	add("document nil", bson.D(nil), func(vs *valueSlabs) any { return vs.boxD(nil) })
	a := bson.A{int32(1), "two"}
	add("array", a, func(vs *valueSlabs) any { return vs.boxA(a) })
	return cases
}

// A value boxed from the slabs is the value Go's conversion gives: the
// same dynamic type, equal (and equal as a map key where comparable),
// and the same through a type switch.
func TestSlabBoxingIsGoBoxing(t *testing.T) {
	vs := valueSlabs{size: 2} // small slabs, so cases span several
	for _, c := range boxCases() {
		got := c.box(&vs)
		if reflect.TypeOf(got) != reflect.TypeOf(c.want) {
			t.Errorf("%s: type %T, want %T", c.name, got, c.want)
			continue
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %#v, want %#v", c.name, got, c.want)
		}
		if reflect.TypeOf(got).Comparable() {
			m := map[any]bool{c.want: true}
			if !m[got] {
				t.Errorf("%s: %#v is not found as a map key equal to %#v", c.name, got, c.want)
			}
		}
		if got, want := Compare(got, c.want), 0; got != want {
			t.Errorf("%s: Compare with Go's boxing gives %d", c.name, got)
		}
	}
}

// The slabs' values live as long as an interface points at them: boxed,
// the slabs dropped, the collector run and memory of the slabs' sizes
// allocated and scribbled over, every value is intact.
func TestSlabBoxedValuesSurviveCollection(t *testing.T) {
	const rounds = 2000
	cases := boxCases()
	boxed := make([]any, 0, rounds*len(cases))
	func() {
		vs := valueSlabs{size: 16}
		for range rounds {
			for _, c := range cases {
				boxed = append(boxed, c.box(&vs))
			}
		}
	}()
	runtime.GC()
	runtime.GC()
	var junk [][]byte
	for range 4 * rounds {
		b := make([]byte, 16*16)
		for i := range b {
			b[i] = 0xA5
		}
		junk = append(junk, b)
	}
	runtime.KeepAlive(junk)
	for i, got := range boxed {
		c := cases[i%len(cases)]
		if !reflect.DeepEqual(got, c.want) {
			t.Fatalf("value %d (%s) after collection: %#v, want %#v", i, c.name, got, c.want)
		}
	}
}

// Boxing into the slabs allocates once per slab, not once per value:
// strings, documents and arrays share the slab of headers.
func TestSlabBoxingAllocatesPerSlab(t *testing.T) {
	const size = 9
	got := testing.AllocsPerRun(100, func() {
		vs := valueSlabs{size: size}
		for range size / 3 {
			_ = vs.boxString("sessions")
			_ = vs.boxD(bson.D{})
			_ = vs.boxA(bson.A{})
		}
		for i := range size {
			_ = vs.boxDateTime(bson.DateTime(1_800_000_000_000 + i))
		}
	})
	if got != 2 {
		t.Fatalf("%v allocations for %d strings, documents, arrays and dates: want 2 (one slab of headers, one of words)", got, 2*size)
	}
}
