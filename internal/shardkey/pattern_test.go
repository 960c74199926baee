package shardkey

import (
	"errors"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/mongoerr"
)

func TestParseAccepts(t *testing.T) {
	for _, tc := range []struct {
		spec   bson.D
		fields []Field
		single bool
	}{
		{bson.D{{Key: "k", Value: "hashed"}}, []Field{{"k", true}}, true},
		{bson.D{{Key: "a", Value: int32(1)}, {Key: "b.c", Value: 1.0}}, []Field{{"a", false}, {"b.c", false}}, false},
		{bson.D{{Key: "a", Value: int64(1)}, {Key: "b", Value: "hashed"}}, []Field{{"a", false}, {"b", true}}, false},
		{bson.D{{Key: "a", Value: 1.5}}, []Field{{"a", false}}, false}, // safeNumberInt(1.5) == 1
	} {
		p, err := Parse(tc.spec)
		if err != nil {
			t.Fatalf("%v: %v", tc.spec, err)
		}
		got := p.Fields()
		if len(got) != len(tc.fields) {
			t.Fatalf("%v: fields %v", tc.spec, got)
		}
		for i := range got {
			if got[i] != tc.fields[i] {
				t.Errorf("%v: field %d = %v, want %v", tc.spec, i, got[i], tc.fields[i])
			}
		}
		if p.IsSingleHashed() != tc.single {
			t.Errorf("%v: IsSingleHashed = %v", tc.spec, p.IsSingleHashed())
		}
	}
}

// TestParseRefuses: each of mongod's parse errors, with its message.
func TestParseRefuses(t *testing.T) {
	for _, tc := range []struct {
		spec bson.D
		msg  string
	}{
		{bson.D{}, "Shard key is empty"},
		{bson.D{{Key: "", Value: int32(1)}}, "Field  is empty"},
		{bson.D{{Key: "a.", Value: int32(1)}}, "Field a. contains empty parts"},
		{bson.D{{Key: "a..b", Value: int32(1)}}, "Field a..b contains empty parts"},
		{bson.D{{Key: ".a", Value: int32(1)}}, "Field .a contains empty parts"},
		{bson.D{{Key: "a", Value: int32(-1)}}, `Shard key { a: -1 } can contain at most one 'hashed' field, and/or multiple numerical fields set to a value of 1. Failed to parse field a`},
		{bson.D{{Key: "a", Value: "text"}}, `Shard key { a: "text" } can contain at most one 'hashed' field, and/or multiple numerical fields set to a value of 1. Failed to parse field a`},
		{bson.D{{Key: "a", Value: "hashed"}, {Key: "b", Value: "hashed"}}, `Shard key { a: "hashed", b: "hashed" } can contain at most one 'hashed' field, and/or multiple numerical fields set to a value of 1. Failed to parse field b`},
	} {
		_, err := Parse(tc.spec)
		var me *mongoerr.Error
		if !errors.As(err, &me) || me.Code != mongoerr.BadValue || me.Msg != tc.msg {
			t.Errorf("%v: err = %v, want BadValue %q", tc.spec, err, tc.msg)
		}
	}
}

func mustParse(t *testing.T, spec bson.D) *Pattern {
	t.Helper()
	p, err := Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestExtract(t *testing.T) {
	ranged := mustParse(t, bson.D{{Key: "a", Value: int32(1)}, {Key: "b.c", Value: int32(1)}})
	for _, tc := range []struct {
		doc  bson.D
		want bson.D
	}{
		{bson.D{{Key: "a", Value: "x"}, {Key: "b", Value: bson.D{{Key: "c", Value: int32(7)}}}},
			bson.D{{Key: "a", Value: "x"}, {Key: "b.c", Value: int32(7)}}},
		{bson.D{{Key: "z", Value: int32(1)}}, bson.D{{Key: "a", Value: nil}, {Key: "b.c", Value: nil}}},
		{bson.D{{Key: "a", Value: int32(1)}, {Key: "b", Value: int32(5)}}, // scalar where a document was needed
			bson.D{{Key: "a", Value: int32(1)}, {Key: "b.c", Value: nil}}},
		{bson.D{{Key: "a", Value: bson.D{{Key: "x", Value: int32(1)}}}},
			bson.D{{Key: "a", Value: bson.D{{Key: "x", Value: int32(1)}}}, {Key: "b.c", Value: nil}}},
	} {
		got, err := ranged.Extract(tc.doc)
		if err != nil {
			t.Fatalf("%v: %v", tc.doc, err)
		}
		if bsonString(t, got) != bsonString(t, tc.want) {
			t.Errorf("Extract(%v) = %v, want %v", tc.doc, got, tc.want)
		}
	}
}

func bsonString(t *testing.T, d bson.D) string {
	t.Helper()
	b, err := bson.MarshalExtJSON(d, true, false)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestExtractHashed: a hashed field holds the hash of its value; a missing
// field hashes as null.
func TestExtractHashed(t *testing.T) {
	p := mustParse(t, bson.D{{Key: "u.id", Value: "hashed"}})
	got, err := p.Extract(bson.D{{Key: "u", Value: bson.D{{Key: "id", Value: int32(42)}}}})
	if err != nil || len(got) != 1 || got[0].Key != "u.id" || got[0].Value != int64(hashOf42) {
		t.Fatalf("Extract = %v, %v; want {u.id: %d}", got, err, int64(hashOf42))
	}
	h, err := p.HashOf(bson.D{{Key: "other", Value: int32(1)}})
	if err != nil || h != 2338878944348059895 {
		t.Fatalf("missing field hash = %d, %v; want the hash of null", h, err)
	}
	if _, err := mustParse(t, bson.D{{Key: "a", Value: int32(1)}}).HashOf(bson.D{}); err == nil {
		t.Fatal("HashOf on a ranged pattern succeeded")
	}
}

// TestExtractRefusesArrays: an array at the end of the path or on the way
// is refused with mongod's code and message, for ranged and hashed keys.
func TestExtractRefusesArrays(t *testing.T) {
	docs := []bson.D{
		{{Key: "a", Value: bson.D{{Key: "b", Value: bson.A{int32(1)}}}}},
		{{Key: "a", Value: bson.A{bson.D{{Key: "b", Value: int32(1)}}}}},
		{{Key: "a", Value: bson.A{}}},
	}
	for _, spec := range []bson.D{{{Key: "a.b", Value: int32(1)}}, {{Key: "a.b", Value: "hashed"}}} {
		p := mustParse(t, spec)
		for _, doc := range docs {
			_, err := p.Extract(doc)
			var me *mongoerr.Error
			if !errors.As(err, &me) || me.Code != mongoerr.ShardKeyNotFound ||
				me.Msg != "Shard key cannot contain array values or array descendants." {
				t.Errorf("%v on %v: err = %v", spec, doc, err)
			}
		}
	}
}
