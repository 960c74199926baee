package bsonutil

import (
	"bytes"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

func rawDoc(t *testing.T, d bson.D) []byte {
	t.Helper()
	raw, err := bson.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// diff is the span in which a and b, of one length, differ.
func diff(a, b []byte) (lo, hi int) {
	for lo < len(a) && a[lo] == b[lo] {
		lo++
	}
	for hi = len(a); hi > lo && a[hi-1] == b[hi-1]; hi-- {
	}
	return lo, hi
}

// TestChangedDate: only a change within one top-level date's value is
// one; a date's change beside another field's, a change of a date inside
// a subdocument or an array, of another type, or none, is not.
func TestChangedDate(t *testing.T) {
	t1, t2 := bson.DateTime(1_000), bson.DateTime(1_000+int64(time.Hour/time.Millisecond))
	base := func(first, last bson.DateTime, n int32, sub bson.DateTime) bson.D {
		return bson.D{{Key: "first", Value: first}, {Key: "n", Value: n}, {Key: "sub", Value: bson.D{{Key: "d", Value: sub}}},
			{Key: "arr", Value: bson.A{sub}}, {Key: "last", Value: last}}
	}
	old := rawDoc(t, base(t1, t1, 1, t1))
	for _, tc := range []struct {
		name string
		doc  bson.D
		want string
	}{
		{"the first field", base(t2, t1, 1, t1), "first"},
		{"the last field", base(t1, t2, 1, t1), "last"},
		{"two dates", base(t2, t2, 1, t1), ""},
		{"a date and an int", base(t2, t1, 2, t1), ""},
		{"an int", base(t1, t1, 2, t1), ""},
		{"dates in a subdocument and an array", base(t1, t1, 1, t2), ""},
		{"nothing", base(t1, t1, 1, t1), ""},
	} {
		raw := rawDoc(t, tc.doc)
		lo, hi := diff(old, raw)
		name, ok := ChangedDate(raw, lo, hi)
		if string(name) != tc.want || ok != (tc.want != "") {
			t.Errorf("%s: %q, %v; want %q", tc.name, name, ok, tc.want)
		}
	}
}

// TestDateOffset: the offset of a top-level date's value, which a
// write there changes; not found for a field of another type or none.
func TestDateOffset(t *testing.T) {
	doc := bson.D{{Key: "s", Value: "x"}, {Key: "t", Value: bson.DateTime(5)}, {Key: "n", Value: int32(1)}}
	raw := rawDoc(t, doc)
	at, ok := DateOffset(raw, "t")
	if !ok {
		t.Fatal("t not found")
	}
	moved := rawDoc(t, bson.D{doc[0], {Key: "t", Value: bson.DateTime(6)}, doc[2]})
	if raw[at]++; !bytes.Equal(raw, moved) {
		t.Fatalf("offset %d is not the date's value", at)
	}
	for _, name := range []string{"s", "n", "missing"} {
		if _, ok := DateOffset(raw, name); ok {
			t.Errorf("%s found as a date", name)
		}
	}
}
