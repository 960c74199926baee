package expr

import (
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// This file checks variable scope when an expression is parsed, as MongoDB
// does: a command that reads $$x without defining it fails with 17276 even
// when no document is ever evaluated.

// EvalLet evaluates a command's let document once: each value is an
// expression over no document, with $$NOW fixed at now. Names follow
// $let's rules.
func EvalLet(let bson.D, now time.Time) (map[string]any, error) {
	vars := map[string]any{"NOW": bson.NewDateTimeFromTime(now)}
	for _, e := range let {
		if err := validateVarName(e.Key, true); err != nil {
			return nil, err
		}
		x, err := Compile(e.Value)
		if err != nil {
			return nil, err
		}
		if err := CheckDefined(e.Value, vars); err != nil {
			return nil, err
		}
		v, err := x.Eval(bson.D{}, vars)
		if err != nil {
			return nil, err
		}
		vars[e.Key] = v
	}
	return vars, nil
}

// CheckDefined returns MongoDB's 17276 error for the first $$variable in
// the expression v that is neither a builtin, nor bound by an enclosing
// $let, $map, $filter or $reduce, nor a key of defined.
func CheckDefined(v any, defined map[string]any) error {
	return checkScope(v, &scope{user: defined})
}

type scope struct {
	user  map[string]any
	names []string
}

func (s *scope) with(names ...string) *scope {
	return &scope{user: s.user, names: append(append([]string(nil), s.names...), names...)}
}

func (s *scope) has(name string) bool {
	switch name {
	case "ROOT", "CURRENT", "REMOVE", "NOW", "CLUSTER_TIME", "USER_ROLES", "SEARCH_META", "SEARCH_SCORE":
		return true
	}
	if _, ok := s.user[name]; ok {
		return true
	}
	for _, n := range s.names {
		if n == name {
			return true
		}
	}
	return false
}

func checkScope(v any, s *scope) error {
	switch x := v.(type) {
	case string:
		return checkRef(x, s)
	case bson.D:
		return checkDoc(x, s)
	case bson.A:
		for _, e := range x {
			if err := checkScope(e, s); err != nil {
				return err
			}
		}
	}
	return nil
}

func checkRef(ref string, s *scope) error {
	if !strings.HasPrefix(ref, "$$") {
		return nil
	}
	name, _, _ := strings.Cut(ref[2:], ".")
	if name == "" || s.has(name) {
		return nil
	}
	return mongoerr.Newf(mongoerr.Location17276, "Use of undefined variable: %s", name)
}

func checkDoc(d bson.D, s *scope) error {
	if len(d) == 1 {
		switch d[0].Key {
		case "$literal", "$const":
			return nil
		case "$let":
			return checkLet(d[0].Value, s)
		case "$map", "$filter":
			return checkLoop(d[0].Value, s, "in", "cond")
		case "$reduce":
			return checkReduce(d[0].Value, s)
		}
	}
	for _, e := range d {
		if err := checkScope(e.Value, s); err != nil {
			return err
		}
	}
	return nil
}

// checkLet: vars are evaluated in the outer scope, in in the inner one.
func checkLet(arg any, s *scope) error {
	d, _ := arg.(bson.D)
	vars, _ := fieldOf(d, "vars").(bson.D)
	names := make([]string, 0, len(vars))
	for _, e := range vars {
		if err := checkScope(e.Value, s); err != nil {
			return err
		}
		names = append(names, e.Key)
	}
	return checkScope(fieldOf(d, "in"), s.with(names...))
}

// checkLoop: $map's in and $filter's cond see the element as "as" (this
// by default); input and limit see only the outer scope.
func checkLoop(arg any, s *scope, bodies ...string) error {
	d, _ := arg.(bson.D)
	as := "this"
	if a, ok := fieldOf(d, "as").(string); ok {
		as = a
	}
	for _, e := range d {
		inner := s
		for _, b := range bodies {
			if e.Key == b {
				inner = s.with(as)
			}
		}
		if err := checkScope(e.Value, inner); err != nil {
			return err
		}
	}
	return nil
}

func checkReduce(arg any, s *scope) error {
	d, _ := arg.(bson.D)
	for _, e := range d {
		inner := s
		if e.Key == "in" {
			inner = s.with("this", "value")
		}
		if err := checkScope(e.Value, inner); err != nil {
			return err
		}
	}
	return nil
}

func fieldOf(d bson.D, key string) any {
	for _, e := range d {
		if e.Key == key {
			return e.Value
		}
	}
	return nil
}
