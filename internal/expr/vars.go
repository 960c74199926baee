package expr

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// fieldNode reads a dotted path of $$CURRENT ("$a.b").
type fieldNode struct{ path []string }

func (n fieldNode) eval(c *ctx) (any, error) { return walkDoc(c.root, n.path), nil }

// varNode reads a variable and optionally a path below it ("$$v.a.b").
type varNode struct {
	name string
	path []string
}

func (n varNode) eval(c *ctx) (any, error) {
	v, err := c.lookupVar(n.name)
	if err != nil || len(n.path) == 0 {
		return v, err
	}
	return walkValue(v, n.path), nil
}

// lookupVar resolves a variable: local bindings first, then the builtins,
// then the caller's variables.
func (c *ctx) lookupVar(name string) (any, error) {
	for f := c.local; f != nil; f = f.up {
		if f.name == name {
			return f.val, nil
		}
	}
	switch name {
	case "ROOT", "CURRENT":
		return c.root, nil
	case "REMOVE":
		return Missing, nil
	case "NOW":
		return c.nowValue(), nil
	}
	if v, ok := c.user[name]; ok {
		return v, nil
	}
	return nil, mongoerr.Newf(mongoerr.Location17276, "Use of undefined variable: %s", name)
}

// compileFieldPath parses "$a.b" or "$$var.a.b".
func compileFieldPath(raw string) (node, error) {
	if len(raw) < 2 {
		return nil, mongoerr.New(mongoerr.Location16872, "'$' by itself is not a valid FieldPath")
	}
	if raw[1] != '$' {
		path, err := splitPath(raw[1:])
		return fieldNode{path: path}, err
	}
	name, rest, dotted := strings.Cut(raw[2:], ".")
	if err := validateVarName(name, false); err != nil {
		return nil, err
	}
	if err := checkBuiltinVar(name); err != nil {
		return nil, err
	}
	if !dotted {
		return varNode{name: name}, nil
	}
	path, err := splitPath(rest)
	return varNode{name: name, path: path}, err
}

// checkBuiltinVar rejects the builtins Mayfly cannot provide, so that they
// fail loudly instead of reading as undefined user variables.
func checkBuiltinVar(name string) error {
	switch name {
	case "CLUSTER_TIME":
		return mongoerr.New(mongoerr.Location10071,
			"Builtin variable '$$CLUSTER_TIME' is not available as the server is not part of a replica set")
	case "USER_ROLES", "SEARCH_META", "SEARCH_SCORE":
		return mongoerr.Newf(mongoerr.NotImplemented, "Builtin variable '$$%s' is not supported", name)
	}
	return nil
}

// splitPath splits and validates a dotted field path.
func splitPath(p string) ([]string, error) {
	if p == "" {
		return nil, mongoerr.New(mongoerr.Location40352, "FieldPath cannot be constructed with empty string")
	}
	if strings.HasSuffix(p, ".") {
		return nil, mongoerr.New(mongoerr.Location40353, "FieldPath must not end with a '.'.")
	}
	parts := strings.Split(p, ".")
	for _, part := range parts {
		if part == "" {
			return nil, mongoerr.New(mongoerr.Location15998, "FieldPath field names may not be empty strings.")
		}
		if strings.HasPrefix(part, "$") {
			return nil, mongoerr.New(mongoerr.Location16410,
				"FieldPath field names may not start with '$'. Consider using $getField or $setField.")
		}
	}
	return parts, nil
}

// validateVarName applies MongoDB's variable naming rules. Names that are
// written (by $let, $map, as: ...) must start with a lowercase letter or a
// non-ASCII character; names that are read may also be uppercase builtins.
func validateVarName(name string, write bool) error {
	codes := [3]mongoerr.Code{mongoerr.Location16869, mongoerr.Location16870, mongoerr.Location16871}
	if write {
		codes = [3]mongoerr.Code{mongoerr.Location16866, mongoerr.Location16867, mongoerr.Location16868}
	}
	if name == "" {
		return mongoerr.New(codes[0], "empty variable names are not allowed")
	}
	first := name[0]
	okFirst := (first >= 'a' && first <= 'z') || first >= 0x80 || (!write && first >= 'A' && first <= 'Z')
	if !okFirst {
		return mongoerr.Newf(codes[1], "'%s' starts with an invalid character for a user variable name", name)
	}
	for i := 1; i < len(name); i++ {
		if !varChar(name[i]) {
			return mongoerr.Newf(codes[2], "'%s' contains an invalid character for a variable name: '%c'",
				name, name[i])
		}
	}
	return nil
}

func varChar(b byte) bool {
	return b == '_' || b >= 0x80 || (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') || (b >= '0' && b <= '9')
}

// ValidateVarName checks a variable name being defined by a caller, such as
// the keys of $lookup's let; it applies the same rules as $let.
func ValidateVarName(name string) error { return validateVarName(name, true) }

// walkValue reads path below v: through documents, and through arrays by
// collecting the path from every document element (non-documents are
// skipped, as MongoDB does).
func walkValue(v any, path []string) any {
	if d := asDocument(v); d != nil || isDocument(v) {
		return walkDoc(d, path)
	}
	if a, ok := asArray(v); ok {
		return walkArray(a, path)
	}
	return Missing
}

func walkDoc(d bson.D, path []string) any {
	v, ok := bsonutil.Field(d, path[0])
	if !ok {
		return Missing
	}
	if len(path) == 1 {
		return v
	}
	return walkValue(v, path[1:])
}

func walkArray(a bson.A, path []string) any {
	out := bson.A{}
	for _, e := range a {
		if !isDocument(e) {
			continue
		}
		if v := walkDoc(asDocument(e), path); !IsMissing(v) {
			out = append(out, v)
		}
	}
	return out
}
