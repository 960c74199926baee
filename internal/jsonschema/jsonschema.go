// Package jsonschema evaluates MongoDB's $jsonSchema (draft 4 with
// bsonType, as MongoDB implements it) for collection validators, and
// explains a failure the way mongod's validation errors do
// (schemaRulesNotSatisfied).
//
// Supported keywords: bsonType, type, required, properties,
// additionalProperties, enum, minimum, maximum, exclusiveMinimum,
// exclusiveMaximum, multipleOf, minLength, maxLength, pattern, minItems,
// maxItems, uniqueItems, items (one schema or an array of them),
// additionalItems, minProperties, maxProperties, patternProperties,
// dependencies, encrypt, allOf, anyOf, oneOf, not, title, description.
// Any other keyword is refused (FailedToParse) when the schema is
// compiled.
package jsonschema

import (
	"math"
	"regexp"
	"unicode/utf8"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// Schema is a compiled $jsonSchema.
type Schema struct {
	spec       bson.D
	types      []string // bsonType names accepted, nil for any
	required   []string
	properties []property
	additional *bool
	enum       bson.A
	hasEnum    bool
	min, max   any
	exclMin    bool
	exclMax    bool
	minLen     int64
	maxLen     int64
	pattern    *regexp.Regexp
	minItems   int64
	maxItems   int64
	items      *Schema
	minProps   int64
	maxProps   int64
	// logical keywords: allOf, anyOf, oneOf (lists) and not
	allOf, anyOf, oneOf []*Schema
	not                 *Schema
	uniqueItems         bool
	multipleOf          any
	// structural keywords (keywords.go)
	patternProps          []patternProp
	additionalSchema      *Schema
	deps                  []dependency
	itemList              []*Schema // items as an array; nil when not
	additionalItems       *bool
	additionalItemsSchema *Schema
	encrypt               *encryptSpec
}

type property struct {
	name   string
	schema *Schema
}

// jsonTypes maps JSON Schema's type names to BSON type names.
var jsonTypes = map[string][]string{
	"object": {"object"}, "array": {"array"}, "string": {"string"}, "boolean": {"bool"},
	"null": {"null"}, "number": {"int", "long", "double", "decimal"},
}

// Compile checks and compiles a $jsonSchema document.
func Compile(spec bson.D) (*Schema, error) {
	s := &Schema{spec: spec, minLen: -1, maxLen: -1, minItems: -1, maxItems: -1, minProps: -1, maxProps: -1}
	for _, e := range spec {
		if err := s.keyword(e); err != nil {
			return nil, err
		}
	}
	return s, nil
}

func (s *Schema) keyword(e bson.E) error {
	var err error
	switch e.Key {
	case "bsonType", "type":
		s.types, err = typeNames(e)
	case "required":
		s.required, err = stringList(e)
	case "properties":
		err = s.compileProperties(e)
	case "additionalProperties":
		err = s.compileAdditionalProperties(e)
	case "patternProperties":
		err = s.compilePatternProperties(e)
	case "dependencies":
		err = s.compileDependencies(e)
	case "additionalItems":
		err = s.compileAdditionalItems(e)
	case "encrypt":
		err = s.compileEncrypt(e)
	case "enum":
		s.enum, s.hasEnum = e.Value.(bson.A)
		if !s.hasEnum || len(s.enum) == 0 {
			return badKeyword("enum", "must be a non-empty array")
		}
	case "minimum", "maximum":
		err = s.bound(e)
	case "exclusiveMinimum", "exclusiveMaximum":
		b, ok := e.Value.(bool)
		if !ok {
			return badKeyword(e.Key, "must be a boolean")
		}
		if e.Key == "exclusiveMinimum" {
			s.exclMin = b
		} else {
			s.exclMax = b
		}
	case "minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties":
		err = s.count(e)
	case "pattern":
		p, ok := e.Value.(string)
		if !ok {
			return badKeyword("pattern", "must be a string")
		}
		if s.pattern, err = regexp.Compile(p); err != nil {
			return badKeyword("pattern", "is not a valid regular expression")
		}
	case "items":
		err = s.compileItems(e)
	case "allOf", "anyOf", "oneOf":
		err = s.compileList(e)
	case "not":
		d, ok := e.Value.(bson.D)
		if !ok {
			return badKeyword("not", "must be an object")
		}
		s.not, err = Compile(d)
	case "uniqueItems":
		b, ok := e.Value.(bool)
		if !ok {
			return badKeyword("uniqueItems", "must be a boolean")
		}
		s.uniqueItems = b
	case "multipleOf":
		if !bsonutil.IsNumber(e.Value) || bsonutil.ToFloat(e.Value) <= 0 {
			return badKeyword("multipleOf", "must be a positive number")
		}
		s.multipleOf = e.Value
	case "title", "description":
	default:
		return mongoerr.Newf(mongoerr.FailedToParse, "Unknown $jsonSchema keyword: %s", e.Key)
	}
	return err
}

func badKeyword(k, why string) error {
	return mongoerr.Newf(mongoerr.FailedToParse, "$jsonSchema keyword '%s' %s", k, why)
}

func typeNames(e bson.E) ([]string, error) {
	names, err := stringList(e)
	if s, ok := e.Value.(string); ok {
		names, err = []string{s}, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, n := range names {
		if e.Key == "type" {
			t, ok := jsonTypes[n]
			if !ok {
				return nil, badKeyword("type", "must name a JSON type")
			}
			out = append(out, t...)
			continue
		}
		if n == "number" {
			out = append(out, jsonTypes["number"]...)
			continue
		}
		out = append(out, n)
	}
	return out, nil
}

func stringList(e bson.E) ([]string, error) {
	a, ok := e.Value.(bson.A)
	if !ok {
		return nil, badKeyword(e.Key, "must be an array")
	}
	out := make([]string, 0, len(a))
	for _, x := range a {
		s, ok := x.(string)
		if !ok {
			return nil, badKeyword(e.Key, "must be an array of strings")
		}
		out = append(out, s)
	}
	return out, nil
}

func (s *Schema) compileProperties(e bson.E) error {
	return eachSubschema(e, func(name string, c *Schema) error {
		s.properties = append(s.properties, property{name: name, schema: c})
		return nil
	})
}

// eachSubschema compiles the object of named subschemas a keyword holds.
func eachSubschema(e bson.E, add func(name string, c *Schema) error) error {
	d, ok := e.Value.(bson.D)
	if !ok {
		return badKeyword(e.Key, "must be an object")
	}
	for _, p := range d {
		sub, ok := p.Value.(bson.D)
		if !ok {
			return badKeyword(e.Key, "must hold objects")
		}
		c, err := Compile(sub)
		if err != nil {
			return err
		}
		if err := add(p.Key, c); err != nil {
			return err
		}
	}
	return nil
}

func (s *Schema) bound(e bson.E) error {
	if !bsonutil.IsNumber(e.Value) {
		return badKeyword(e.Key, "must be a number")
	}
	if e.Key == "minimum" {
		s.min = e.Value
	} else {
		s.max = e.Value
	}
	return nil
}

func (s *Schema) count(e bson.E) error {
	if !bsonutil.IsNumber(e.Value) || bsonutil.ToFloat(e.Value) < 0 {
		return badKeyword(e.Key, "must be a non-negative number")
	}
	n := int64(bsonutil.ToFloat(e.Value))
	switch e.Key {
	case "minLength":
		s.minLen = n
	case "maxLength":
		s.maxLen = n
	case "minItems":
		s.minItems = n
	case "maxItems":
		s.maxItems = n
	case "minProperties":
		s.minProps = n
	default:
		s.maxProps = n
	}
	return nil
}

func (s *Schema) compileList(e bson.E) error {
	a, ok := e.Value.(bson.A)
	if !ok || len(a) == 0 {
		return badKeyword(e.Key, "must be a non-empty array")
	}
	list := make([]*Schema, 0, len(a))
	for _, x := range a {
		d, ok := x.(bson.D)
		if !ok {
			return badKeyword(e.Key, "must hold objects")
		}
		c, err := Compile(d)
		if err != nil {
			return err
		}
		list = append(list, c)
	}
	switch e.Key {
	case "allOf":
		s.allOf = list
	case "anyOf":
		s.anyOf = list
	default:
		s.oneOf = list
	}
	return nil
}

// Match reports whether v satisfies the schema.
func (s *Schema) Match(v any) bool { return len(s.Failures(v)) == 0 }

// Failures explains why v does not satisfy the schema: one entry per rule
// not satisfied, as mongod's schemaRulesNotSatisfied lists them.
func (s *Schema) Failures(v any) bson.A {
	out := bson.A{}
	if s.types != nil && !contains(s.types, bsonutil.TypeName(v)) {
		return append(out, s.rule("bsonType", bson.E{Key: "reason", Value: "type did not match"},
			bson.E{Key: "consideredValue", Value: v}, bson.E{Key: "consideredType", Value: bsonutil.TypeName(v)}))
	}
	if s.hasEnum && !inEnum(s.enum, v) {
		out = append(out, s.rule("enum", bson.E{Key: "reason", Value: "value was not found in enum"}, bson.E{Key: "consideredValue", Value: v}))
	}
	switch x := v.(type) {
	case bson.D:
		out = append(out, s.objectFailures(x)...)
	case bson.A:
		out = append(out, s.arrayFailures(x)...)
	case string:
		out = append(out, s.stringFailures(x)...)
	}
	if bsonutil.IsNumber(v) {
		out = append(out, s.numberFailures(v)...)
	}
	out = append(out, s.encryptFailures(v)...)
	return append(out, s.logicalFailures(v)...)
}

// logicalFailures checks allOf, anyOf, oneOf and not.
func (s *Schema) logicalFailures(v any) bson.A {
	out := bson.A{}
	if failed := failingSchemas(s.allOf, v); len(failed) > 0 {
		out = append(out, bson.D{{Key: "operatorName", Value: "allOf"}, {Key: "schemasNotSatisfied", Value: failed}})
	}
	if s.anyOf != nil && len(failingSchemas(s.anyOf, v)) == len(s.anyOf) {
		out = append(out, bson.D{{Key: "operatorName", Value: "anyOf"}, {Key: "schemasNotSatisfied", Value: failingSchemas(s.anyOf, v)}})
	}
	if s.oneOf != nil {
		if matched := len(s.oneOf) - len(failingSchemas(s.oneOf, v)); matched != 1 {
			reason := "no schema matched"
			if matched > 1 {
				reason = "more than one schema matched"
			}
			out = append(out, bson.D{{Key: "operatorName", Value: "oneOf"}, {Key: "reason", Value: reason}})
		}
	}
	if s.not != nil && s.not.Match(v) {
		out = append(out, bson.D{{Key: "operatorName", Value: "not"}, {Key: "reason", Value: "child expression matched"}})
	}
	return out
}

func failingSchemas(list []*Schema, v any) bson.A {
	out := bson.A{}
	for i, c := range list {
		if f := c.Failures(v); len(f) > 0 {
			out = append(out, bson.D{{Key: "index", Value: int32(i)}, {Key: "details", Value: f}})
		}
	}
	return out
}

func (s *Schema) rule(keyword string, extra ...bson.E) bson.D {
	spec := bson.D{}
	for _, e := range s.spec {
		if e.Key == keyword || (keyword == "bsonType" && e.Key == "type") {
			spec = bson.D{e}
			keyword = e.Key
		}
	}
	return append(bson.D{{Key: "operatorName", Value: keyword}, {Key: "specifiedAs", Value: spec}}, extra...)
}

func (s *Schema) objectFailures(d bson.D) bson.A {
	out := bson.A{}
	if missing := missingProperties(d, s.required); len(missing) > 0 {
		out = append(out, s.rule("required", bson.E{Key: "missingProperties", Value: missing}))
	}
	if failed := s.propertyFailures(d); len(failed) > 0 {
		out = append(out, bson.D{{Key: "operatorName", Value: "properties"}, {Key: "propertiesNotSatisfied", Value: failed}})
	}
	out = append(out, s.allowedPropertyFailures(d)...)
	out = append(out, s.dependencyFailures(d)...)
	if (s.minProps >= 0 && int64(len(d)) < s.minProps) || (s.maxProps >= 0 && int64(len(d)) > s.maxProps) {
		out = append(out, bson.D{{Key: "operatorName", Value: "minProperties"}, {Key: "reason", Value: "specified number of properties was not satisfied"}, {Key: "numberOfProperties", Value: int32(len(d))}})
	}
	return out
}

func missingProperties(d bson.D, required []string) bson.A {
	out := bson.A{}
	for _, r := range required {
		if _, ok := bsonutil.Field(d, r); !ok {
			out = append(out, r)
		}
	}
	return out
}

func (s *Schema) propertyFailures(d bson.D) bson.A {
	out := bson.A{}
	for _, p := range s.properties {
		v, ok := bsonutil.Field(d, p.name)
		if !ok {
			continue
		}
		if f := p.schema.Failures(v); len(f) > 0 {
			out = append(out, bson.D{{Key: "propertyName", Value: p.name}, {Key: "details", Value: f}})
		}
	}
	return out
}

// extraProperties are the fields neither in properties nor matched by a
// patternProperties regex (_id included, as in mongod).
func (s *Schema) extraProperties(d bson.D) bson.A {
	out := bson.A{}
	for _, e := range d {
		allowed := false
		for _, p := range s.properties {
			allowed = allowed || p.name == e.Key
		}
		for _, p := range s.patternProps {
			allowed = allowed || p.re.MatchString(e.Key)
		}
		if !allowed {
			out = append(out, e.Key)
		}
	}
	return out
}

func (s *Schema) arrayFailures(a bson.A) bson.A {
	out := bson.A{}
	if (s.minItems >= 0 && int64(len(a)) < s.minItems) || (s.maxItems >= 0 && int64(len(a)) > s.maxItems) {
		k := "minItems"
		if s.maxItems >= 0 && int64(len(a)) > s.maxItems {
			k = "maxItems"
		}
		out = append(out, s.rule(k, bson.E{Key: "reason", Value: "array did not match specified length"}, bson.E{Key: "consideredValue", Value: a}))
	}
	if s.uniqueItems && hasDuplicates(a) {
		out = append(out, s.rule("uniqueItems", bson.E{Key: "reason", Value: "found a duplicate item"}, bson.E{Key: "consideredValue", Value: a}))
	}
	out = append(out, s.itemListFailures(a)...)
	if s.items != nil {
		for i, x := range a {
			if f := s.items.Failures(x); len(f) > 0 {
				out = append(out, bson.D{{Key: "operatorName", Value: "items"}, {Key: "reason", Value: "At least one item did not match the sub-schema"}, {Key: "itemIndex", Value: int32(i)}, {Key: "details", Value: f}})
				break
			}
		}
	}
	return out
}

func (s *Schema) stringFailures(str string) bson.A {
	out := bson.A{}
	n := int64(utf8.RuneCountInString(str))
	if s.minLen >= 0 && n < s.minLen {
		out = append(out, s.rule("minLength", bson.E{Key: "reason", Value: "specified string length was not satisfied"}, bson.E{Key: "consideredValue", Value: str}))
	}
	if s.maxLen >= 0 && n > s.maxLen {
		out = append(out, s.rule("maxLength", bson.E{Key: "reason", Value: "specified string length was not satisfied"}, bson.E{Key: "consideredValue", Value: str}))
	}
	if s.pattern != nil && !s.pattern.MatchString(str) {
		out = append(out, s.rule("pattern", bson.E{Key: "reason", Value: "regular expression did not match"}, bson.E{Key: "consideredValue", Value: str}))
	}
	return out
}

func (s *Schema) numberFailures(v any) bson.A {
	out := bson.A{}
	if s.min != nil {
		c := bsonutil.Compare(v, s.min)
		if c < 0 || (c == 0 && s.exclMin) {
			out = append(out, s.rule("minimum", bson.E{Key: "reason", Value: "comparison failed"}, bson.E{Key: "consideredValue", Value: v}))
		}
	}
	if s.multipleOf != nil {
		q := bsonutil.ToFloat(v) / bsonutil.ToFloat(s.multipleOf)
		if q != math.Trunc(q) {
			out = append(out, s.rule("multipleOf", bson.E{Key: "reason", Value: "considered value is not a multiple of the specified value"}, bson.E{Key: "consideredValue", Value: v}))
		}
	}
	if s.max != nil {
		c := bsonutil.Compare(v, s.max)
		if c > 0 || (c == 0 && s.exclMax) {
			out = append(out, s.rule("maximum", bson.E{Key: "reason", Value: "comparison failed"}, bson.E{Key: "consideredValue", Value: v}))
		}
	}
	return out
}

func hasDuplicates(a bson.A) bool {
	for i := range a {
		for j := i + 1; j < len(a); j++ {
			if bsonutil.Compare(a[i], a[j]) == 0 {
				return true
			}
		}
	}
	return false
}

func inEnum(enum bson.A, v any) bool {
	for _, x := range enum {
		if bsonutil.Compare(x, v) == 0 {
			return true
		}
	}
	return false
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
