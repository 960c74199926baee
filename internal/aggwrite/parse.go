package aggwrite

import (
	"slices"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/aggregate"
	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/nsname"
)

// ParseStage reads a $out or $merge stage of a pipeline run in db, with
// mongod's errors.
func ParseStage(db string, stage bson.E) (*Target, error) {
	if stage.Key == "$out" {
		return parseOut(db, stage.Value)
	}
	return parseMerge(db, stage.Value)
}

func parseOut(db string, v any) (*Target, error) {
	t := &Target{Stage: "$out", DB: db}
	switch x := v.(type) {
	case string:
		t.Coll = x
	case bson.D:
		dbv, _ := bsonutil.Field(x, "db")
		collv, _ := bsonutil.Field(x, "coll")
		s, ok1 := dbv.(string)
		c, ok2 := collv.(string)
		if !ok1 || !ok2 {
			return nil, mongoerr.New(mongoerr.Location16994, "If an object is passed to $out it must have exactly 2 fields: 'db' and 'coll'")
		}
		t.DB, t.Coll = s, c
	default:
		return nil, mongoerr.Newf(mongoerr.Location16990, "$out only supports a string or object argument, but found %s", bsonutil.TypeName(v))
	}
	return t, t.checkTarget()
}

func parseMerge(db string, v any) (*Target, error) {
	t := &Target{Stage: "$merge", DB: db, On: []string{"_id"}, WhenMatched: "merge", WhenNotMatched: "insert"}
	if s, ok := v.(string); ok {
		t.Coll = s
		return t, t.checkTarget()
	}
	d, ok := v.(bson.D)
	if !ok {
		return nil, mongoerr.Newf(mongoerr.Location51182, "$merge only supports a string or object argument, not %s", bsonutil.TypeName(v))
	}
	for _, e := range d {
		if err := t.mergeOption(e); err != nil {
			return nil, err
		}
	}
	if t.Coll == "" {
		return nil, mongoerr.New(mongoerr.Location40414, "BSON field '$merge.into' is missing but a required field")
	}
	return t, t.checkTarget()
}

// checkTarget applies mongod's rules for a $out or $merge target: a valid
// namespace, no system collection and no internal database (admin, local,
// config), each stage with its own codes and wording.
func (t *Target) checkTarget() error {
	if err := nsname.ValidateNamespace(t.DB, t.Coll); err != nil {
		return err
	}
	system := strings.HasPrefix(t.Coll, "system.")
	internal := t.DB == "admin" || t.DB == "local" || t.DB == "config"
	switch {
	case t.Stage == "$out" && system:
		return mongoerr.Newf(mongoerr.Location17385, "Can't $out to special collection: %s", t.Coll)
	case t.Stage == "$out" && internal:
		return mongoerr.Newf(mongoerr.Location31321, "Can't $out to internal database: %s", t.DB)
	case system:
		return mongoerr.Newf(mongoerr.Location31319, "Cannot $merge to special collection: %s", t.Coll)
	case internal:
		return mongoerr.Newf(mongoerr.Location31320, "Cannot $merge to internal database: %s", t.DB)
	}
	return nil
}

func (t *Target) mergeOption(e bson.E) error {
	var err error
	switch e.Key {
	case "into":
		err = t.mergeInto(e.Value)
	case "on":
		t.On, err = mergeOn(e.Value)
	case "whenMatched":
		err = t.mergeWhenMatched(e.Value)
	case "whenNotMatched":
		t.WhenNotMatched, err = oneOf("$merge.whenNotMatched", e.Value, "insert", "discard", "fail")
	case "let":
	default:
		err = mongoerr.Newf(mongoerr.Location40415, "BSON field '$merge.%s' is an unknown field.", e.Key)
	}
	return err
}

func (t *Target) mergeInto(v any) error {
	switch x := v.(type) {
	case string:
		t.Coll = x
	case bson.D:
		if s, ok := bsonutil.Field(x, "db"); ok {
			t.DB, _ = s.(string)
		}
		c, _ := bsonutil.Field(x, "coll")
		t.Coll, _ = c.(string)
	default:
		return mongoerr.Newf(mongoerr.TypeMismatch, "BSON field '$merge.into' is the wrong type '%s', expected type 'string'", bsonutil.TypeName(v))
	}
	return nil
}

func mergeOn(v any) ([]string, error) {
	if s, ok := v.(string); ok {
		return []string{s}, nil
	}
	a, ok := v.(bson.A)
	if !ok || len(a) == 0 {
		return nil, mongoerr.New(mongoerr.Location51186, "$merge 'on' field must be a non-empty array of strings or a string")
	}
	out := make([]string, 0, len(a))
	for _, x := range a {
		s, ok := x.(string)
		if !ok {
			return nil, mongoerr.New(mongoerr.Location51134, "$merge 'on' array elements must be strings")
		}
		out = append(out, s)
	}
	return out, nil
}

func (t *Target) mergeWhenMatched(v any) error {
	if a, ok := v.(bson.A); ok {
		// Parsed here to report errors before anything runs; each
		// matched document parses it again with its own $$new.
		_, err := aggregate.Parse(a, aggregate.Options{Let: bson.D{{Key: "new", Value: nil}}})
		t.WhenMatched, t.MatchedPipeline = "pipeline", a
		return err
	}
	var err error
	t.WhenMatched, err = oneOf("$merge.whenMatched", v, "replace", "keepExisting", "merge", "fail")
	return err
}

// oneOf is v when it is one of the allowed strings of an enumeration.
func oneOf(field string, v any, allowed ...string) (string, error) {
	if s, _ := v.(string); slices.Contains(allowed, s) {
		return s, nil
	}
	return "", mongoerr.Newf(mongoerr.BadValue, "Enumeration value '%s' for field '%s' is not a valid value.", bsonutil.Format(v), field)
}
