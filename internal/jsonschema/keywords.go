package jsonschema

import (
	"regexp"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
)

// The keywords below are the structural ones MongoDB implements beyond
// the basic checks: patternProperties, additionalProperties as a schema,
// dependencies, items as an array with additionalItems, and encrypt. Their
// failures are explained in the shape of mongod's doc_validation_error.

// patternProp is one patternProperties entry.
type patternProp struct {
	raw    string
	re     *regexp.Regexp
	schema *Schema
}

// dependency is one dependencies entry: when prop is present, the
// document must hold required (property dependency) or match schema.
type dependency struct {
	prop     string
	required []string
	schema   *Schema
}

// binDataEncrypted is BinData subtype 6, what encrypt requires.
const binDataEncrypted = 6

func (s *Schema) compilePatternProperties(e bson.E) error {
	return eachSubschema(e, func(pattern string, c *Schema) error {
		re, err := regexp.Compile(pattern)
		if err != nil {
			return badKeyword("patternProperties", "holds an invalid regular expression")
		}
		s.patternProps = append(s.patternProps, patternProp{raw: pattern, re: re, schema: c})
		return nil
	})
}

func (s *Schema) compileAdditionalProperties(e bson.E) error {
	switch v := e.Value.(type) {
	case bool:
		s.additional = &v
	case bson.D:
		c, err := Compile(v)
		if err != nil {
			return err
		}
		s.additionalSchema = c
	default:
		return badKeyword("additionalProperties", "must be a boolean or an object")
	}
	return nil
}

func (s *Schema) compileDependencies(e bson.E) error {
	d, ok := e.Value.(bson.D)
	if !ok {
		return badKeyword("dependencies", "must be an object")
	}
	for _, dep := range d {
		switch v := dep.Value.(type) {
		case bson.D:
			c, err := Compile(v)
			if err != nil {
				return err
			}
			s.deps = append(s.deps, dependency{prop: dep.Key, schema: c})
		case bson.A:
			req, err := stringList(bson.E{Key: "dependencies", Value: v})
			if err != nil {
				return err
			}
			s.deps = append(s.deps, dependency{prop: dep.Key, required: req})
		default:
			return badKeyword("dependencies", "must hold objects or arrays of strings")
		}
	}
	return nil
}

// compileItems takes items as one schema (every element) or an array of
// schemas (element by element).
func (s *Schema) compileItems(e bson.E) error {
	switch v := e.Value.(type) {
	case bson.D:
		c, err := Compile(v)
		s.items = c
		return err
	case bson.A:
		s.itemList = []*Schema{}
		for _, x := range v {
			d, ok := x.(bson.D)
			if !ok {
				return badKeyword("items", "must hold objects")
			}
			c, err := Compile(d)
			if err != nil {
				return err
			}
			s.itemList = append(s.itemList, c)
		}
		return nil
	}
	return badKeyword("items", "must be an object or an array")
}

func (s *Schema) compileAdditionalItems(e bson.E) error {
	switch v := e.Value.(type) {
	case bool:
		s.additionalItems = &v
	case bson.D:
		c, err := Compile(v)
		if err != nil {
			return err
		}
		s.additionalItemsSchema = c
	default:
		return badKeyword("additionalItems", "must be a boolean or an object")
	}
	return nil
}

// compileEncrypt reads encrypt's keyId, algorithm and bsonType; a value
// then must be encrypted (BinData subtype 6), of bsonType if given.
func (s *Schema) compileEncrypt(e bson.E) error {
	d, ok := e.Value.(bson.D)
	if !ok {
		return badKeyword("encrypt", "must be an object")
	}
	s.encrypt = &encryptSpec{}
	for _, f := range d {
		switch f.Key {
		case "keyId", "algorithm":
		case "bsonType":
			types, err := typeNames(f)
			if err != nil {
				return err
			}
			s.encrypt.types = types
		default:
			return badKeyword("encrypt", "holds an unknown field "+f.Key)
		}
	}
	return nil
}

type encryptSpec struct{ types []string }

// allowedPropertyFailures explains additionalProperties and
// patternProperties.
func (s *Schema) allowedPropertyFailures(d bson.D) bson.A {
	out := bson.A{}
	extra := s.extraProperties(d)
	if s.additional != nil && !*s.additional && len(extra) > 0 {
		out = append(out, s.rule("additionalProperties", bson.E{Key: "additionalProperties", Value: extra}))
	}
	if s.additionalSchema != nil {
		for _, name := range extra {
			v, _ := bsonutil.Field(d, name.(string))
			if f := s.additionalSchema.Failures(v); len(f) > 0 {
				out = append(out, bson.D{{Key: "operatorName", Value: "additionalProperties"},
					{Key: "reason", Value: "at least one additional property did not match the subschema"},
					{Key: "failingProperty", Value: name}, {Key: "details", Value: f}})
				break
			}
		}
	}
	if failed := s.patternFailures(d); len(failed) > 0 {
		out = append(out, bson.D{{Key: "operatorName", Value: "patternProperties"}, {Key: "details", Value: failed}})
	}
	return out
}

// patternFailures is, for each pattern, the first property it matches
// whose value fails its schema.
func (s *Schema) patternFailures(d bson.D) bson.A {
	out := bson.A{}
	for _, p := range s.patternProps {
		for _, e := range d {
			if !p.re.MatchString(e.Key) {
				continue
			}
			if f := p.schema.Failures(e.Value); len(f) > 0 {
				out = append(out, bson.D{{Key: "propertyName", Value: e.Key}, {Key: "regexMatched", Value: p.raw}, {Key: "details", Value: f}})
				break
			}
		}
	}
	return out
}

func (s *Schema) dependencyFailures(d bson.D) bson.A {
	failed := bson.A{}
	for _, dep := range s.deps {
		if _, ok := bsonutil.Field(d, dep.prop); !ok {
			continue
		}
		if dep.schema != nil {
			if f := dep.schema.Failures(d); len(f) > 0 {
				failed = append(failed, bson.D{{Key: "conditionalProperty", Value: dep.prop}, {Key: "details", Value: f}})
			}
			continue
		}
		if missing := missingProperties(d, dep.required); len(missing) > 0 {
			failed = append(failed, bson.D{{Key: "conditionalProperty", Value: dep.prop}, {Key: "missingProperties", Value: missing}})
		}
	}
	if len(failed) == 0 {
		return bson.A{}
	}
	return bson.A{bson.D{{Key: "operatorName", Value: "dependencies"}, {Key: "failingDependencies", Value: failed}}}
}

// itemListFailures explains items given as an array of schemas, and
// additionalItems, which only applies then.
func (s *Schema) itemListFailures(a bson.A) bson.A {
	out := bson.A{}
	if s.itemList == nil {
		return out
	}
	failed := bson.A{}
	for i, sub := range s.itemList {
		if i >= len(a) {
			break
		}
		if f := sub.Failures(a[i]); len(f) > 0 {
			failed = append(failed, bson.D{{Key: "itemIndex", Value: int32(i)}, {Key: "details", Value: f}})
		}
	}
	if len(failed) > 0 {
		out = append(out, bson.D{{Key: "operatorName", Value: "items"}, {Key: "details", Value: failed}})
	}
	n := len(s.itemList)
	if s.additionalItems != nil && !*s.additionalItems && len(a) > n {
		out = append(out, s.rule("additionalItems", bson.E{Key: "reason", Value: "found additional items"}, bson.E{Key: "additionalItems", Value: a[n:]}))
	}
	if s.additionalItemsSchema != nil {
		for i := n; i < len(a); i++ {
			if f := s.additionalItemsSchema.Failures(a[i]); len(f) > 0 {
				out = append(out, bson.D{{Key: "operatorName", Value: "additionalItems"},
					{Key: "reason", Value: "At least one additional item did not match the sub-schema"},
					{Key: "itemIndex", Value: int32(i)}, {Key: "details", Value: f}})
				break
			}
		}
	}
	return out
}

// encryptFailures: an encrypted value is BinData subtype 6 whose payload
// records the original type in its 18th byte (after the blob subtype and
// the 16-byte key id).
func (s *Schema) encryptFailures(v any) bson.A {
	if s.encrypt == nil {
		return bson.A{}
	}
	b, ok := v.(bson.Binary)
	if !ok || b.Subtype != binDataEncrypted {
		return bson.A{bson.D{{Key: "operatorName", Value: "encrypt"}, {Key: "reason", Value: "value was not encrypted"}}}
	}
	if s.encrypt.types != nil && (len(b.Data) < 18 || !contains(s.encrypt.types, typeNameOfCode(b.Data[17]))) {
		return bson.A{bson.D{{Key: "operatorName", Value: "encrypt"}, {Key: "reason", Value: "encrypted value has wrong type"}}}
	}
	return bson.A{}
}

// typeNameOfCode is the BSON type name of a type byte.
func typeNameOfCode(c byte) string {
	names := [...]string{1: "double", 2: "string", 3: "object", 4: "array", 5: "binData", 6: "undefined",
		7: "objectId", 8: "bool", 9: "date", 10: "null", 11: "regex", 12: "dbPointer", 13: "javascript",
		14: "symbol", 15: "javascriptWithScope", 16: "int", 17: "timestamp", 18: "long", 19: "decimal"}
	switch {
	case c == 0xFF:
		return "minKey"
	case c == 0x7F:
		return "maxKey"
	case int(c) < len(names):
		return names[c]
	}
	return ""
}
