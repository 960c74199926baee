package collation

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/mongoerr"
)

func mustParse(t *testing.T, d bson.D) *Collation {
	t.Helper()
	c, err := Parse(d)
	if err != nil || c == nil {
		t.Fatalf("Parse(%v): %v %v", d, c, err)
	}
	return c
}

func TestKeysOrderStrings(t *testing.T) {
	ci := mustParse(t, bson.D{{Key: "locale", Value: "en"}, {Key: "strength", Value: 2}})
	if ci.Key("Hello") != ci.Key("hello") || ci.Key("apple") >= ci.Key("Banana") {
		t.Fatal("strength 2 must ignore case and order alphabetically")
	}
	cs := mustParse(t, bson.D{{Key: "locale", Value: "en"}})
	if cs.Key("Hello") == cs.Key("hello") {
		t.Fatal("strength 3 must tell case apart")
	}
	p := mustParse(t, bson.D{{Key: "locale", Value: "fr"}, {Key: "strength", Value: 1}})
	if p.Key("côte") != p.Key("cote") {
		t.Fatal("strength 1 must ignore accents")
	}
	n := mustParse(t, bson.D{{Key: "locale", Value: "en"}, {Key: "numericOrdering", Value: true}})
	if n.Key("2") >= n.Key("10") {
		t.Fatal("numericOrdering must sort 2 before 10")
	}
	alt := mustParse(t, bson.D{{Key: "locale", Value: "en"}, {Key: "alternate", Value: "shifted"}, {Key: "strength", Value: 1}})
	if alt.Key("a-b") != alt.Key("ab") {
		t.Fatal("alternate shifted must ignore punctuation at strength 1")
	}
}

func TestParseErrorsAsMongod(t *testing.T) {
	for _, tc := range []struct {
		spec bson.D
		code mongoerr.Code
		msg  string
	}{
		{bson.D{{Key: "locale", Value: "xx_nope!"}}, 2, `Field 'locale' is invalid in: { locale: "xx_nope!" }`},
		{bson.D{{Key: "locale", Value: "en"}, {Key: "strength", Value: 6}}, 51024, "BSON field 'collation.strength' value must be >= 1 and <= 5, actual value '6'"},
		{bson.D{{Key: "locale", Value: "en"}, {Key: "bogus", Value: 1}}, 40415, "BSON field 'collation.bogus' is an unknown field."},
		{bson.D{{Key: "strength", Value: 2}}, 40414, "BSON field 'collation.locale' is missing but a required field"},
		{bson.D{{Key: "locale", Value: 1}}, 14, "BSON field 'collation.locale' is the wrong type 'int', expected type 'string'"},
	} {
		_, err := Parse(tc.spec)
		if e := mongoerr.As(err); err == nil || e.Code != tc.code || e.Msg != tc.msg {
			t.Errorf("%v: %v", tc.spec, err)
		}
	}
	if c, err := Parse(bson.D{{Key: "locale", Value: "simple"}}); c != nil || err != nil {
		t.Fatalf("simple: %v %v", c, err)
	}
}
