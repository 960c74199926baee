package bsonutil

import (
	"bytes"
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
	var vs valueSlabs // small slabs, so cases span several
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
		var vs valueSlabs
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
// strings, documents and arrays share the slab of headers, a slab holds
// what the census counted up to slabChunk, and past the census each value
// is an allocation of its own.
func TestSlabBoxingAllocatesPerSlab(t *testing.T) {
	for _, c := range []struct {
		kind            string
		counted, values int
		slabs           float64
	}{
		{"headers", 9, 9, 1},
		{"headers", 9, 3, 1},
		{"headers", 100, 100, 2}, // 64 + 36
		{"headers", 9, 12, 1 + 3},
		{"headers", 0, 0, 0},
		{"words", 3, 3, 1},
		{"words", 3, 5, 1 + 2},
	} {
		got := testing.AllocsPerRun(100, func() {
			var vs valueSlabs
			vs.heads.left, vs.words.left = c.counted, c.counted
			for i := range c.values {
				switch {
				case c.kind == "words":
					_ = vs.boxDateTime(bson.DateTime(1_800_000_000_000 + i))
				case i%3 == 0:
					_ = vs.boxString("sessions")
				case i%3 == 1:
					_ = vs.boxD(bson.D{})
				default:
					_ = vs.boxA(bson.A{})
				}
			}
		})
		if got != c.slabs {
			t.Errorf("%s, %d counted, %d boxed: %v allocations, want %v", c.kind, c.counted, c.values, got, c.slabs)
		}
	}
}

// The census counts at least what a shared decode takes from each slab,
// so decoding a counted document allocates only its text and one slab
// per kind it uses. The document holds every type the
// slabs box, at values that take a slab and values Go boxes for free; the
// rare types (decimal, regex, the deprecated ones) keep Go's boxing.
func TestCensusCoversTheDecode(t *testing.T) {
	oid := bson.NewObjectID()
	doc := bson.D{
		{Key: "s", Value: "sessions"}, {Key: "e", Value: ""},
		{Key: "d", Value: bson.D{{Key: "x", Value: bson.A{int32(1), int32(1000), "two", bson.D{}, bson.A{}}}}},
		{Key: "bin", Value: bson.Binary{Subtype: 4, Data: make([]byte, 16)}},
		{Key: "oid", Value: oid}, {Key: "t", Value: true}, {Key: "n", Value: nil},
		{Key: "date", Value: bson.DateTime(1_800_000_000_000)}, {Key: "f", Value: 1.5},
		{Key: "i64", Value: int64(1) << 40}, {Key: "ts", Value: bson.Timestamp{T: 1, I: 2}},
		{Key: "min", Value: bson.MinKey{}}, {Key: "max", Value: bson.MaxKey{}},
	}
	raw, err := bson.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	var c census
	c.document(raw, false)
	var sd SharedDecoder
	sd.Reset(bytes.Clone(raw))
	sd.Count(raw, 2)
	if _, err := sd.Decode(raw, 0, 2); err != nil {
		t.Fatal(err)
	}
	d := &sd.d
	for _, k := range []struct {
		name             string
		left, free, want int
	}{
		{"elements", d.elems.left, len(d.elems.free), c.elems + 2},
		{"array values", d.vals.left, len(d.vals.free), c.vals},
		{"headers", d.slabs.heads.left, len(d.slabs.heads.free), c.heads},
		{"words", d.slabs.words.left, len(d.slabs.words.free), c.words},
		{"binaries", d.slabs.bins.left, len(d.slabs.bins.free), c.bins},
	} {
		if k.left != 0 {
			t.Errorf("%s: %d counted but no slab made for them", k.name, k.left)
		}
		if k.want == 0 {
			t.Errorf("%s: the document has none; the table must hold some", k.name)
		}
	}
	got := testing.AllocsPerRun(100, func() {
		var sd SharedDecoder
		sd.Reset(bytes.Clone(raw))
		sd.Count(raw, 2)
		if _, err := sd.Decode(raw, 0, 2); err != nil {
			t.Fatal(err)
		}
	})
	// The text and five slabs: a binary's bytes are part of the text.
	if want := 1.0 + 5; got != want {
		t.Errorf("decoding a counted document: %v allocations, want %v", got, want)
	}
}

// A decoded binary's bytes are part of the shared text, as its strings
// are, but no string shares them and the binary has no room past them:
// its owner may change them or append to them and every other value of
// the decode stays as it was.
func TestSharedBinaryIsItsOwn(t *testing.T) {
	src := bson.D{
		{Key: "before", Value: "abc"},
		{Key: "bin", Value: bson.Binary{Subtype: 4, Data: []byte("0123456789abcdef")}},
		{Key: "after", Value: "xyz"},
		{Key: "nested", Value: bson.D{{Key: "k", Value: bson.Binary{Subtype: 0, Data: []byte("v")}}}},
	}
	raw, err := bson.Marshal(src)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeShared(raw, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, src) {
		t.Fatalf("decoded %v, want %v", got, src)
	}
	for _, bin := range []bson.Binary{got[1].Value.(bson.Binary), got[3].Value.(bson.D)[0].Value.(bson.Binary)} {
		if cap(bin.Data) != len(bin.Data) {
			t.Errorf("binary of %d bytes has room for %d more", len(bin.Data), cap(bin.Data)-len(bin.Data))
		}
		for i := range bin.Data {
			bin.Data[i] = 0xFF
		}
		_ = append(bin.Data, 0xEE, 0xEE, 0xEE, 0xEE)
	}
	if got[0].Value != "abc" || got[2].Value != "xyz" || got[0].Key != "before" || got[2].Key != "after" || got[3].Value.(bson.D)[0].Key != "k" {
		t.Fatalf("changing the binaries changed a string: %v", got)
	}
}
