package aggregate

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/expr"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// replaceStage is $replaceRoot and $replaceWith: the document becomes
// the value of an expression, which must be a document.
type replaceStage struct {
	name string
	what string // how MongoDB's message names the expression
	e    *expr.Expr
}

func parseReplaceRoot(spec any, _ Options) (stage, error) {
	d, ok := spec.(bson.D)
	if !ok {
		return nil, mongoerr.Newf(mongoerr.Location40229, "expected an object as specification for $replaceRoot stage, got %s",
			typeNameOf(spec))
	}
	var newRoot any
	found := false
	for _, e := range d {
		if e.Key != "newRoot" {
			return nil, mongoerr.Newf(mongoerr.Location40230,
				"unrecognized option to $replaceRoot stage: %s, only valid option is 'newRoot'.", e.Key)
		}
		newRoot, found = e.Value, true
	}
	if !found {
		return nil, mongoerr.New(mongoerr.Location40231, "no newRoot specified for the $replaceRoot stage")
	}
	e, err := expr.Compile(newRoot)
	if err != nil {
		return nil, err
	}
	return &replaceStage{name: "$replaceRoot", what: "'newRoot' expression ", e: e}, nil
}

func parseReplaceWith(spec any, _ Options) (stage, error) {
	e, err := expr.Compile(spec)
	if err != nil {
		return nil, err
	}
	return &replaceStage{name: "$replaceWith", what: "'replacement document' ", e: e}, nil
}

func (s *replaceStage) run(in Iterator, rc *runCtx) (Iterator, error) {
	return &mapIter{in: in, name: s.name, f: oneToOne(func(d bson.D) (bson.D, error) {
		v, err := s.e.Eval(d, rc.variables())
		if err != nil {
			return nil, err
		}
		out, ok := v.(bson.D)
		if !ok {
			return nil, s.notDocument(v, d)
		}
		return out, nil
	})}, nil
}

func (s *replaceStage) notDocument(v any, d bson.D) error {
	shown, typ := bsonutil.Format(v), bsonutil.TypeName(v)
	if expr.IsMissing(v) {
		shown, typ = "MISSING", "missing"
	}
	return mongoerr.Newf(mongoerr.Location40228,
		"%smust evaluate to an object, but resulting value was: %s. Type of resulting value: '%s'. Input document: %s",
		s.what, shown, typ, bsonutil.Format(d))
}
