// Package collation implements MongoDB's collation option with
// golang.org/x/text/collate: it validates a collation document as mongod
// does and turns strings into sort keys, so that comparing keys bytewise
// (MongoDB's simple comparison) compares the strings under the collation.
//
// Callers compare collated values by transforming both sides: a filter's
// operands once, each document as it is matched or sorted.
package collation

import (
	"strings"
	"sync"

	"go.mongodb.org/mongo-driver/v2/bson"
	"golang.org/x/text/collate"
	"golang.org/x/text/language"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// Collation is a parsed, non-simple collation. It is safe for concurrent
// use.
type Collation struct {
	spec bson.D
	mu   sync.Mutex
	c    *collate.Collator
	buf  collate.Buffer
}

// settings are the fields of a collation document.
type settings struct {
	locale          string
	strength        int
	caseLevel       bool
	caseFirst       string
	numericOrdering bool
	alternate       string
	maxVariable     string
	normalization   bool
	backwards       bool
}

// Parse validates a collation option (v as the command sent it). It
// returns nil for an absent or {locale: "simple"} collation: plain binary
// comparison.
func Parse(v any) (*Collation, error) {
	if v == nil {
		return nil, nil
	}
	d, ok := v.(bson.D)
	if !ok {
		return nil, mongoerr.Newf(mongoerr.TypeMismatch, "BSON field 'collation' is the wrong type '%s', expected type 'object'", bsonutil.TypeName(v))
	}
	s, err := readSettings(d)
	if err != nil {
		return nil, err
	}
	if s.locale == "simple" {
		if len(d) > 1 {
			return nil, mongoerr.New(mongoerr.BadValue, "If locale is \"simple\", no other collation fields may be specified")
		}
		return nil, nil
	}
	tag, err := localeTag(s.locale, d)
	if err != nil {
		return nil, err
	}
	ut, err := s.extension(tag)
	if err != nil {
		return nil, err
	}
	return &Collation{spec: s.spec(), c: collate.New(ut, collate.OptionsFromTag(ut))}, nil
}

func readSettings(d bson.D) (settings, error) {
	s := settings{strength: 3, caseFirst: "off", alternate: "non-ignorable", maxVariable: "punct"}
	hasLocale := false
	for _, e := range d {
		var err error
		switch e.Key {
		case "locale":
			s.locale, err = str(e)
			hasLocale = true
		case "strength":
			s.strength, err = strength(e)
		case "caseLevel":
			s.caseLevel, err = boolean(e)
		case "caseFirst":
			s.caseFirst, err = oneOf(e, "upper", "lower", "off")
		case "numericOrdering":
			s.numericOrdering, err = boolean(e)
		case "alternate":
			s.alternate, err = oneOf(e, "non-ignorable", "shifted")
		case "maxVariable":
			s.maxVariable, err = oneOf(e, "punct", "space")
		case "normalization":
			s.normalization, err = boolean(e)
		case "backwards":
			s.backwards, err = boolean(e)
		case "version":
			_, err = str(e)
		default:
			err = mongoerr.Newf(mongoerr.Location40415, "BSON field 'collation.%s' is an unknown field.", e.Key)
		}
		if err != nil {
			return s, err
		}
	}
	if !hasLocale {
		return s, mongoerr.New(mongoerr.Location40414, "BSON field 'collation.locale' is missing but a required field")
	}
	return s, nil
}

func str(e bson.E) (string, error) {
	s, ok := e.Value.(string)
	if !ok {
		return "", wrongType(e, "string")
	}
	return s, nil
}

func boolean(e bson.E) (bool, error) {
	b, ok := e.Value.(bool)
	if !ok {
		return false, wrongType(e, "bool")
	}
	return b, nil
}

func strength(e bson.E) (int, error) {
	if !bsonutil.IsNumber(e.Value) {
		return 0, wrongType(e, "int")
	}
	f := bsonutil.ToFloat(e.Value)
	if f < 1 || f > 5 || f != float64(int(f)) {
		return 0, mongoerr.Newf(mongoerr.Location51024, "BSON field 'collation.strength' value must be >= 1 and <= 5, actual value '%s'", bsonutil.Format(e.Value))
	}
	return int(f), nil
}

func oneOf(e bson.E, allowed ...string) (string, error) {
	s, err := str(e)
	if err != nil {
		return "", err
	}
	for _, a := range allowed {
		if s == a {
			return s, nil
		}
	}
	return "", mongoerr.Newf(mongoerr.FailedToParse, "Enumeration value '%s' for field 'collation.%s' is not a valid value.", s, e.Key)
}

func wrongType(e bson.E, want string) error {
	return mongoerr.Newf(mongoerr.TypeMismatch, "BSON field 'collation.%s' is the wrong type '%s', expected type '%s'", e.Key, bsonutil.TypeName(e.Value), want)
}

// localeTag accepts ICU-style locale names ("en_US", "de@collation=phonebook"
// is not among them) whose language x/text knows.
func localeTag(locale string, d bson.D) (language.Tag, error) {
	invalid := mongoerr.Newf(mongoerr.BadValue, "Field 'locale' is invalid in: %s", bsonutil.Format(d))
	if locale == "" || strings.ContainsAny(locale, "@=") {
		return language.Tag{}, invalid
	}
	tag, err := language.Parse(strings.ReplaceAll(locale, "_", "-"))
	if err != nil {
		return language.Tag{}, invalid
	}
	if _, conf := tag.Base(); conf == language.No {
		return language.Tag{}, invalid
	}
	return tag, nil
}

// extension expresses the settings as a BCP 47 -u- extension, which
// collate.OptionsFromTag reads. x/text has no caseFirst and no variable
// top: a collation asking for them is refused rather than approximated.
func (s settings) extension(tag language.Tag) (language.Tag, error) {
	if s.caseFirst != "off" {
		return tag, mongoerr.New(mongoerr.BadValue, "collation caseFirst other than \"off\" is not supported by Mayfly")
	}
	if s.maxVariable != "punct" {
		return tag, mongoerr.New(mongoerr.BadValue, "collation maxVariable other than \"punct\" is not supported by Mayfly")
	}
	levels := map[int]string{1: "level1", 2: "level2", 3: "level3", 4: "level4", 5: "identic"}
	ext := "u-ks-" + levels[s.strength]
	if s.caseLevel {
		ext += "-kc-true"
	}
	if s.numericOrdering {
		ext += "-kn-true"
	}
	if s.alternate == "shifted" {
		ext += "-ka-shifted"
	}
	if s.backwards {
		ext += "-kb-true"
	}
	t, err := language.Parse(tag.String() + "-" + ext)
	if err != nil {
		return tag, mongoerr.Newf(mongoerr.BadValue, "collation %s: %v", ext, err)
	}
	return t, nil
}

// spec is the collation as mongod reports it, every field filled in.
func (s settings) spec() bson.D {
	return bson.D{
		{Key: "locale", Value: s.locale},
		{Key: "caseLevel", Value: s.caseLevel},
		{Key: "caseFirst", Value: s.caseFirst},
		{Key: "strength", Value: int32(s.strength)},
		{Key: "numericOrdering", Value: s.numericOrdering},
		{Key: "alternate", Value: s.alternate},
		{Key: "maxVariable", Value: s.maxVariable},
		{Key: "normalization", Value: s.normalization},
		{Key: "backwards", Value: s.backwards},
		{Key: "version", Value: "57.1"},
	}
}

// Spec returns the full collation document.
func (c *Collation) Spec() bson.D { return c.spec }

// Key returns the sort key of s under the collation.
func (c *Collation) Key(s string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.buf.Reset()
	return string(c.c.KeyFromString(&c.buf, s))
}

// Value returns v with every string in it (inside documents and arrays
// too) replaced by its key. Field names are not collated, as in MongoDB.
func (c *Collation) Value(v any) any {
	switch x := v.(type) {
	case string:
		return c.Key(x)
	case bson.Symbol:
		return bson.Symbol(c.Key(string(x)))
	case bson.D:
		return c.Doc(x)
	case bson.A:
		out := make(bson.A, len(x))
		for i, e := range x {
			out[i] = c.Value(e)
		}
		return out
	}
	return v
}

// Doc returns a copy of d with its string values replaced by keys.
func (c *Collation) Doc(d bson.D) bson.D {
	out := make(bson.D, len(d))
	for i, e := range d {
		out[i] = bson.E{Key: e.Key, Value: c.Value(e.Value)}
	}
	return out
}
