package commands

import (
	"math"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/aggregate"
	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/changestream"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// Change streams: aggregate with a leading $changeStream opens a cursor
// that tails the change log (internal/changestream). A getMore reads the
// changes after the cursor's position, turns them into events, runs the
// rest of the pipeline on them and, when none come, waits up to
// maxTimeMS (1 s by default) for new ones. Every batch carries
// postBatchResumeToken. See docs/design/0012-change-streams.md.

// streamScope is what a change stream watches.
type streamScope struct {
	db, coll string // coll "": the whole database
	cluster  bool   // every database (allChangesForCluster)
}

// streamSpec is a parsed $changeStream stage.
type streamSpec struct {
	scope        streamScope
	after        changestream.Position // the stream starts after it
	resumed      bool                  // a resume option set after
	token        *changestream.Token   // resumeAfter/startAfter, to check it exists
	fullDocument string                // default, updateLookup, whenAvailable, required
	before       string                // fullDocumentBeforeChange: off, whenAvailable, required
	expanded     bool                  // showExpandedEvents: DDL events and their extra fields
	pipeline     *aggregate.Pipeline   // the stages after $changeStream and match (nil: none)
	match        *streamFilter         // a leading $match tested on the change (nil: none)
}

var changeStreamFields = []string{"resumeAfter", "startAfter", "startAtOperationTime", "fullDocument",
	"fullDocumentBeforeChange", "allChangesForCluster", "showExpandedEvents", "allowToRunOnConfigDB", "allowToRunOnSystemNS"}

// streamOptionsUnsupported are options Mayfly refuses when true rather
// than ignore: streams on system collections and the config database.
var streamOptionsUnsupported = []string{"allowToRunOnConfigDB", "allowToRunOnSystemNS"}

// isChangeStream reports whether the aggregate's pipeline starts with
// $changeStream.
func isChangeStream(r *request) bool {
	v, _ := bsonutil.Field(r.body, "pipeline")
	stages, _ := v.(bson.A)
	if len(stages) == 0 {
		return false
	}
	first, _ := stages[0].(bson.D)
	return len(first) == 1 && first[0].Key == "$changeStream"
}

// openChangeStream answers an aggregate whose pipeline starts with
// $changeStream: the first batch (never waiting) and a cursor.
func (h *Handler) openChangeStream(r *request, coll string, batch int64) (bson.D, error) {
	if h.deps.Changes == nil {
		return nil, mongoerr.New(mongoerr.Location40573, "The $changeStream stage is only supported on replica sets")
	}
	if coll != "" {
		if v, err := h.resolveView(r.db, coll); err != nil || v != nil {
			if err != nil {
				return nil, err
			}
			return nil, mongoerr.New(mongoerr.CommandNotSupportedOnView, "$changeStream is not supported on views.")
		}
	}
	spec, err := h.parseChangeStream(r, coll)
	if err != nil {
		return nil, err
	}
	if rec := h.deps.Changes.Record; rec != nil {
		if err := rec(); err != nil {
			return nil, err
		}
	}
	if err := h.checkResumePoint(spec); err != nil {
		return nil, err
	}
	c := &streamCursor{h: h, spec: spec, pos: spec.after, lsid: sessionID(r)}
	if !spec.resumed {
		if c.pos, err = h.deps.Changes.Now(); err != nil {
			return nil, err
		}
	}
	c.pbrt = changestream.Token{Pos: c.pos}
	docs, err := c.read(r, batch)
	if err != nil {
		return nil, err
	}
	ns := r.db + "." + coll
	if coll == "" {
		ns = r.db + ".$cmd.aggregate"
	}
	id := int64(0)
	if !c.ended {
		c.join() // before Add: the registry may close it from then on
		id = h.deps.Cursors.Add(ns, c, 0, int64(len(docs))).ID
	}
	return c.reply(id, ns, "firstBatch", docs), nil
}

func (h *Handler) parseChangeStream(r *request, coll string) (*streamSpec, error) {
	stages := stagesOf(r)
	opts, ok := stages[0].(bson.D)[0].Value.(bson.D)
	if !ok {
		return nil, mongoerr.Newf(mongoerr.Location50808, "$changeStream stage expects a document as argument")
	}
	for _, e := range opts {
		if !contains(changeStreamFields, e.Key) {
			return nil, mongoerr.Newf(mongoerr.Location40415, "BSON field '$changeStream.%s' is an unknown field.", e.Key)
		}
		if contains(streamOptionsUnsupported, e.Key) && e.Value == true {
			return nil, mongoerr.Newf(mongoerr.InvalidOptions, "the $changeStream option '%s' is not supported by Mayfly", e.Key)
		}
	}
	spec := &streamSpec{fullDocument: "default", before: "off"}
	var err error
	if spec.scope, err = streamScopeOf(r.db, coll, opts); err != nil {
		return nil, err
	}
	if err := spec.parseModes(opts); err != nil {
		return nil, err
	}
	if err := spec.parseResume(opts); err != nil {
		return nil, err
	}
	if len(stages) > 1 {
		if spec.pipeline, err = streamPipeline(r, stages[1:]); err != nil {
			return nil, err
		}
		spec.match, spec.pipeline = pushDownMatch(spec.pipeline)
	}
	return spec, nil
}

// streamScopeOf applies mongod's rules for where a stream may be opened.
func streamScopeOf(db, coll string, opts bson.D) (streamScope, error) {
	all, _ := bsonutil.Field(opts, "allChangesForCluster")
	cluster, _ := all.(bool)
	switch {
	case cluster && (db != "admin" || coll != ""):
		return streamScope{}, mongoerr.New(mongoerr.InvalidNamespace, "A $changeStream with 'allChangesForCluster:true' may only be opened on the 'admin' database, and with no collection name")
	case cluster:
		return streamScope{cluster: true}, nil
	case db == "admin" || db == "config" || db == "local":
		return streamScope{}, mongoerr.Newf(mongoerr.InvalidNamespace, "$changeStream may not be opened on the internal %s database", db)
	case strings.HasPrefix(coll, "system."):
		return streamScope{}, mongoerr.Newf(mongoerr.InvalidNamespace, "$changeStream may not be opened on the internal %s.%s collection", db, coll)
	}
	return streamScope{db: db, coll: coll}, nil
}

func (s *streamSpec) parseModes(opts bson.D) error {
	if v, ok := bsonutil.Field(opts, "fullDocument"); ok {
		mode, _ := v.(string)
		if !contains([]string{"default", "updateLookup", "whenAvailable", "required"}, mode) {
			return mongoerr.Newf(mongoerr.BadValue, "Enumeration value '%s' for field '$changeStream.fullDocument' is not a valid value.", bsonutil.Format(v))
		}
		s.fullDocument = mode
	}
	if v, ok := bsonutil.Field(opts, "showExpandedEvents"); ok {
		on, isBool := v.(bool)
		if !isBool {
			return wrongType("$changeStream", "showExpandedEvents", v, "bool")
		}
		s.expanded = on
	}
	if v, ok := bsonutil.Field(opts, "fullDocumentBeforeChange"); ok {
		mode, _ := v.(string)
		if !contains([]string{"off", "whenAvailable", "required"}, mode) {
			return mongoerr.Newf(mongoerr.BadValue, "Enumeration value '%s' for field '$changeStream.fullDocumentBeforeChange' is not a valid value.", bsonutil.Format(v))
		}
		s.before = mode
	}
	return nil
}

// parseResume reads resumeAfter, startAfter and startAtOperationTime; at
// most one may be given.
func (s *streamSpec) parseResume(opts bson.D) error {
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
			return wrongType("$changeStream", "startAtOperationTime", v, "timestamp")
		}
		s.after, s.resumed = justBefore(changestream.Timestamp{T: ts.T, I: ts.I}), true
		return nil
	}
	for _, f := range []string{"resumeAfter", "startAfter"} {
		if v, ok := bsonutil.Field(opts, f); ok {
			return s.resumeFrom(f, v)
		}
	}
	return nil
}

func (s *streamSpec) resumeFrom(field string, v any) error {
	tok, err := parseResumeToken(field, v)
	if err != nil {
		return err
	}
	if tok.Kind == changestream.KindInvalidate && field == "resumeAfter" {
		return mongoerr.New(mongoerr.InvalidResumeToken, "Attempting to resume a change stream using 'resumeAfter' is not allowed from an invalidate notification.")
	}
	s.after, s.resumed, s.token = tok.Pos, true, &tok
	return nil
}

func parseResumeToken(field string, v any) (changestream.Token, error) {
	d, ok := v.(bson.D)
	if !ok {
		return changestream.Token{}, wrongType("$changeStream", field, v, "object")
	}
	data, _ := bsonutil.Field(d, "_data")
	s, ok := data.(string)
	if !ok {
		return changestream.Token{}, mongoerr.New(mongoerr.FailedToParse, "Bad resume token: _data of missing or of wrong type. Expected string, got "+typeNameOf(data))
	}
	tok, err := changestream.ParseToken(s)
	if err != nil {
		return changestream.Token{}, mongoerr.Newf(mongoerr.FailedToParse, "Bad resume token: _data is not a resume token of this server: %s", s)
	}
	return tok, nil
}

func typeNameOf(v any) string {
	if v == nil {
		return "missing"
	}
	return bsonutil.TypeName(v)
}

// justBefore is the position after which the changes stamped ts or later
// come.
func justBefore(ts changestream.Timestamp) changestream.Position {
	switch {
	case ts.I > 0:
		return changestream.HighWater(changestream.Timestamp{T: ts.T, I: ts.I - 1})
	case ts.T > 0:
		return changestream.HighWater(changestream.Timestamp{T: ts.T - 1, I: math.MaxUint32})
	}
	return changestream.Position{}
}

// checkResumePoint refuses a resume point the log no longer covers (286)
// and a token whose change is not in the log (280).
func (h *Handler) checkResumePoint(spec *streamSpec) error {
	if !spec.resumed {
		return nil
	}
	feed := h.deps.Changes
	trimmed, err := changestream.TrimmedTo(feed.Reader)
	if err != nil {
		return err
	}
	if trimmed.After(spec.after) {
		return mongoerr.New(mongoerr.ChangeStreamHistoryLost, "Resume of change stream was not possible, as the resume point may no longer be in the oplog.")
	}
	if spec.token == nil || spec.token.Pos.Index == math.MaxUint32 {
		return nil
	}
	found, err := changestream.Has(feed.Reader, spec.token.Pos)
	if err != nil {
		return err
	}
	if !found {
		return mongoerr.Newf(mongoerr.ChangeStreamFatalError, "cannot resume stream; the resume token was not found. {_data: \"%s\"}", spec.token.String())
	}
	return nil
}

// streamStages are the stages mongod allows after $changeStream.
var streamStages = []string{"$match", "$project", "$addFields", "$set", "$unset", "$replaceRoot", "$replaceWith", "$redact"}

func streamPipeline(r *request, stages bson.A) (*aggregate.Pipeline, error) {
	for _, s := range stages {
		d, _ := s.(bson.D)
		if len(d) == 1 && d[0].Key == "$changeStream" {
			return nil, mongoerr.New(mongoerr.Location40602, "$changeStream is only valid as the first stage in a pipeline.")
		}
		if len(d) == 1 && !contains(streamStages, d[0].Key) {
			return nil, mongoerr.Newf(mongoerr.IllegalOperation, "%s is not permitted in a $changeStream pipeline", d[0].Key)
		}
	}
	let, err := optDoc(r, "let")
	if err != nil {
		return nil, err
	}
	return aggregate.Parse(stages, aggregate.Options{Let: let})
}
