package shardkey

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// hashedName is the value that marks a hashed field in a key pattern.
const hashedName = "hashed"

// Field is one field of a shard key pattern.
type Field struct {
	// Path is the dotted path of the field in a document.
	Path string
	// Hashed means the key holds the field's hash, not its value.
	Hashed bool
}

// Pattern is a parsed shard key pattern, such as {k: "hashed"} or
// {a: 1, b: 1}.
type Pattern struct {
	spec   bson.D
	fields []Field
}

// Parse checks a shard key pattern as mongod's ShardKeyPattern does: a
// non-empty document of dotted paths without empty parts, each either the
// number 1 or, for at most one field, "hashed". Errors carry mongod's
// BadValue messages.
func Parse(spec bson.D) (*Pattern, error) {
	if len(spec) == 0 {
		return nil, mongoerr.New(mongoerr.BadValue, "Shard key is empty")
	}
	p := &Pattern{spec: append(bson.D(nil), spec...), fields: make([]Field, 0, len(spec))}
	hashed := 0
	for _, e := range spec {
		if err := checkPath(e.Key); err != nil {
			return nil, err
		}
		isHashed := e.Value == hashedName
		if isHashed {
			hashed++
		}
		if !(isOne(e.Value) || isHashed && hashed == 1) {
			return nil, mongoerr.Newf(mongoerr.BadValue,
				"Shard key %s can contain at most one 'hashed' field, and/or multiple numerical fields set to a value of 1. Failed to parse field %s",
				bsonutil.Format(spec), e.Key)
		}
		p.fields = append(p.fields, Field{Path: e.Key, Hashed: isHashed})
	}
	return p, nil
}

// checkPath refuses the field names mongod's FieldRef cannot take as a
// key path. FieldRef keeps an empty part for a leading, doubled or
// trailing dot, so all three are "empty parts".
func checkPath(path string) error {
	if path == "" {
		return mongoerr.Newf(mongoerr.BadValue, "Field %s is empty", path)
	}
	for _, part := range strings.Split(path, ".") {
		if part == "" {
			return mongoerr.Newf(mongoerr.BadValue, "Field %s contains empty parts", path)
		}
	}
	return nil
}

// isOne reports whether v is a number whose safeNumberInt is 1 (1, 1.0,
// 1.9, NumberLong(1) all are).
func isOne(v any) bool {
	if !bsonutil.IsNumber(v) {
		return false
	}
	switch x := v.(type) {
	case int32:
		return x == 1
	case int64:
		return x == 1
	case float64:
		return doubleForHash(x) == 1
	case bson.Decimal128:
		return decimalForHash(x) == 1
	}
	return false
}

// Spec returns the pattern as given, e.g. {k: "hashed"}.
func (p *Pattern) Spec() bson.D { return append(bson.D(nil), p.spec...) }

// Fields returns the pattern's fields in order.
func (p *Pattern) Fields() []Field { return append([]Field(nil), p.fields...) }

// HashedField returns the path of the hashed field, if there is one.
func (p *Pattern) HashedField() (string, bool) {
	for _, f := range p.fields {
		if f.Hashed {
			return f.Path, true
		}
	}
	return "", false
}

// IsSingleHashed reports whether the pattern is one hashed field, the only
// kind the router places in its first version.
func (p *Pattern) IsSingleHashed() bool {
	return len(p.fields) == 1 && p.fields[0].Hashed
}

// String formats the pattern as mongod prints a BSON object.
func (p *Pattern) String() string { return bsonutil.Format(p.spec) }
