package changestream

import (
	"slices"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/aggregate"
	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

var specFields = []string{"resumeAfter", "startAfter", "startAtOperationTime", "fullDocument",
	"fullDocumentBeforeChange", "allChangesForCluster", "showExpandedEvents", "allowToRunOnConfigDB", "allowToRunOnSystemNS"}

// optionsUnsupported are options Mayfly refuses when true rather than
// ignore: streams on system collections and the config database.
var optionsUnsupported = []string{"allowToRunOnConfigDB", "allowToRunOnSystemNS"}

// pipelineStages are the stages mongod allows after $changeStream.
var pipelineStages = []string{"$match", "$project", "$addFields", "$set", "$unset", "$replaceRoot", "$replaceWith", "$redact"}

// Parse reads a pipeline that starts with $changeStream, opened on db.coll
// (coll "": the whole database), into a Spec, with mongod's errors; let
// is the command's let, for the stages after it.
func Parse(db, coll string, stages bson.A, let bson.D) (*Spec, error) {
	opts, ok := stages[0].(bson.D)[0].Value.(bson.D)
	if !ok {
		return nil, mongoerr.Newf(mongoerr.Location50808, "$changeStream stage expects a document as argument")
	}
	if err := checkOptions(opts); err != nil {
		return nil, err
	}
	spec := &Spec{FullDocument: "default", Before: "off"}
	var err error
	if spec.Scope, err = scopeOf(db, coll, opts); err != nil {
		return nil, err
	}
	if err := parseModes(spec, opts); err != nil {
		return nil, err
	}
	if err := parseResume(spec, opts); err != nil {
		return nil, err
	}
	if len(stages) > 1 {
		if spec.Pipeline, err = parsePipeline(stages[1:], let); err != nil {
			return nil, err
		}
		spec.Match, spec.Pipeline = PushDownMatch(spec.Pipeline)
	}
	return spec, nil
}

func checkOptions(opts bson.D) error {
	for _, e := range opts {
		if !slices.Contains(specFields, e.Key) {
			return mongoerr.Newf(mongoerr.Location40415, "BSON field '$changeStream.%s' is an unknown field.", e.Key)
		}
		if slices.Contains(optionsUnsupported, e.Key) && e.Value == true {
			return mongoerr.Newf(mongoerr.InvalidOptions, "the $changeStream option '%s' is not supported by Mayfly", e.Key)
		}
	}
	return nil
}

// scopeOf applies mongod's rules for where a stream may be opened.
func scopeOf(db, coll string, opts bson.D) (Scope, error) {
	all, _ := bsonutil.Field(opts, "allChangesForCluster")
	cluster, _ := all.(bool)
	switch {
	case cluster && (db != "admin" || coll != ""):
		return Scope{}, mongoerr.New(mongoerr.InvalidNamespace, "A $changeStream with 'allChangesForCluster:true' may only be opened on the 'admin' database, and with no collection name")
	case cluster:
		return Scope{Cluster: true}, nil
	case db == "admin" || db == "config" || db == "local":
		return Scope{}, mongoerr.Newf(mongoerr.InvalidNamespace, "$changeStream may not be opened on the internal %s database", db)
	case strings.HasPrefix(coll, "system."):
		return Scope{}, mongoerr.Newf(mongoerr.InvalidNamespace, "$changeStream may not be opened on the internal %s.%s collection", db, coll)
	}
	return Scope{DB: db, Coll: coll}, nil
}

func parseModes(s *Spec, opts bson.D) error {
	if v, ok := bsonutil.Field(opts, "fullDocument"); ok {
		mode, _ := v.(string)
		if !slices.Contains([]string{"default", "updateLookup", "whenAvailable", "required"}, mode) {
			return mongoerr.Newf(mongoerr.BadValue, "Enumeration value '%s' for field '$changeStream.fullDocument' is not a valid value.", bsonutil.Format(v))
		}
		s.FullDocument = mode
	}
	if v, ok := bsonutil.Field(opts, "showExpandedEvents"); ok {
		on, isBool := v.(bool)
		if !isBool {
			return mongoerr.WrongType("$changeStream", "showExpandedEvents", v, "bool")
		}
		s.Expanded = on
	}
	if v, ok := bsonutil.Field(opts, "fullDocumentBeforeChange"); ok {
		mode, _ := v.(string)
		if !slices.Contains([]string{"off", "whenAvailable", "required"}, mode) {
			return mongoerr.Newf(mongoerr.BadValue, "Enumeration value '%s' for field '$changeStream.fullDocumentBeforeChange' is not a valid value.", bsonutil.Format(v))
		}
		s.Before = mode
	}
	return nil
}

// parseResume reads resumeAfter, startAfter and startAtOperationTime; at
// most one may be given.
func parseResume(s *Spec, opts bson.D) error {
	n := 0
	for _, f := range []string{"resumeAfter", "startAfter", "startAtOperationTime"} {
		if _, ok := bsonutil.Field(opts, f); ok {
			n++
		}
	}
	if n > 1 {
		return mongoerr.New(mongoerr.Location40674, "Only one type of resume option is allowed, but multiple were found.")
	}
	if v, ok := bsonutil.Field(opts, "startAtOperationTime"); ok {
		ts, ok := v.(bson.Timestamp)
		if !ok {
			return mongoerr.WrongType("$changeStream", "startAtOperationTime", v, "timestamp")
		}
		s.After, s.Resumed = JustBefore(Timestamp{T: ts.T, I: ts.I}), true
		return nil
	}
	for _, f := range []string{"resumeAfter", "startAfter"} {
		if v, ok := bsonutil.Field(opts, f); ok {
			return resumeFrom(s, f, v)
		}
	}
	return nil
}

func resumeFrom(s *Spec, field string, v any) error {
	tok, err := parseResumeToken(field, v)
	if err != nil {
		return err
	}
	if tok.Kind == KindInvalidate && field == "resumeAfter" {
		return mongoerr.New(mongoerr.InvalidResumeToken, "Attempting to resume a change stream using 'resumeAfter' is not allowed from an invalidate notification.")
	}
	s.After, s.Resumed, s.Token = tok.Pos, true, &tok
	return nil
}

func parseResumeToken(field string, v any) (Token, error) {
	s, err := ResumeTokenData(field, v)
	if err != nil {
		return Token{}, err
	}
	tok, err := ParseToken(s)
	if err != nil {
		return Token{}, mongoerr.Newf(mongoerr.FailedToParse, "Bad resume token: _data is not a resume token of this server: %s", s)
	}
	return tok, nil
}

// ResumeTokenData reads the _data string of a resumeAfter or startAfter
// value, with mongod's errors for a value of another shape (a router
// reads its own tokens' text with it).
func ResumeTokenData(field string, v any) (string, error) {
	d, ok := v.(bson.D)
	if !ok {
		return "", mongoerr.WrongType("$changeStream", field, v, "object")
	}
	data, _ := bsonutil.Field(d, "_data")
	s, ok := data.(string)
	if !ok {
		return "", mongoerr.New(mongoerr.FailedToParse, "Bad resume token: _data of missing or of wrong type. Expected string, got "+typeNameOf(data))
	}
	return s, nil
}

func typeNameOf(v any) string {
	if v == nil {
		return "missing"
	}
	return bsonutil.TypeName(v)
}

func parsePipeline(stages bson.A, let bson.D) (*aggregate.Pipeline, error) {
	if err := aggregate.LiteParse(stages); err != nil {
		return nil, err
	}
	for _, s := range stages {
		d, _ := s.(bson.D)
		if len(d) == 1 && d[0].Key == "$changeStream" {
			return nil, mongoerr.New(mongoerr.Location40602, "$changeStream is only valid as the first stage in a pipeline.")
		}
		if len(d) == 1 && !slices.Contains(pipelineStages, d[0].Key) {
			return nil, mongoerr.Newf(mongoerr.IllegalOperation, "%s is not permitted in a $changeStream pipeline", d[0].Key)
		}
	}
	return aggregate.Parse(stages, aggregate.Options{Let: let})
}
