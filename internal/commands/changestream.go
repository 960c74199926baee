package commands

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/aggregate"
	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/changestream"
	"github.com/mayflydb/mayfly/internal/cursor"
	"github.com/mayflydb/mayfly/internal/cursor/paging"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// Change streams: aggregate with a leading $changeStream opens a cursor
// over the change log. This file is their front end: it parses the
// stage's arguments into a changestream.Spec, answers the aggregate and
// each getMore with a batch and postBatchResumeToken, and labels the
// errors a driver may resume after. Reading the log, building events and
// waiting for new ones is internal/changestream's (Stream). See
// docs/design/0012-change-streams.md.

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
	if h.streams == nil {
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
	if err := h.streams.CheckResume(spec); err != nil {
		return nil, err
	}
	s, err := h.streams.Open(spec)
	if err != nil {
		return nil, err
	}
	docs, err := s.Read(h.streamCall(r), batch)
	if err != nil {
		return nil, err
	}
	ns := r.db + "." + coll
	if coll == "" {
		ns = r.db + ".$cmd.aggregate"
	}
	id := int64(0)
	if !s.Ended() {
		s.Join() // before Add: the registry may close it from then on
		id = h.deps.Cursors.Add(ns, s, sessionID(r)).ID
	}
	return streamReply(s, id, ns, "firstBatch", docs), nil
}

func (h *Handler) parseChangeStream(r *request, coll string) (*changestream.Spec, error) {
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
	spec := &changestream.Spec{FullDocument: "default", Before: "off"}
	var err error
	if spec.Scope, err = streamScopeOf(r.db, coll, opts); err != nil {
		return nil, err
	}
	if err := parseModes(spec, opts); err != nil {
		return nil, err
	}
	if err := parseResume(spec, opts); err != nil {
		return nil, err
	}
	if len(stages) > 1 {
		if spec.Pipeline, err = streamPipeline(r, stages[1:]); err != nil {
			return nil, err
		}
		spec.Match, spec.Pipeline = changestream.PushDownMatch(spec.Pipeline)
	}
	return spec, nil
}

// streamScopeOf applies mongod's rules for where a stream may be opened.
func streamScopeOf(db, coll string, opts bson.D) (changestream.Scope, error) {
	all, _ := bsonutil.Field(opts, "allChangesForCluster")
	cluster, _ := all.(bool)
	switch {
	case cluster && (db != "admin" || coll != ""):
		return changestream.Scope{}, mongoerr.New(mongoerr.InvalidNamespace, "A $changeStream with 'allChangesForCluster:true' may only be opened on the 'admin' database, and with no collection name")
	case cluster:
		return changestream.Scope{Cluster: true}, nil
	case db == "admin" || db == "config" || db == "local":
		return changestream.Scope{}, mongoerr.Newf(mongoerr.InvalidNamespace, "$changeStream may not be opened on the internal %s database", db)
	case strings.HasPrefix(coll, "system."):
		return changestream.Scope{}, mongoerr.Newf(mongoerr.InvalidNamespace, "$changeStream may not be opened on the internal %s.%s collection", db, coll)
	}
	return changestream.Scope{DB: db, Coll: coll}, nil
}

func parseModes(s *changestream.Spec, opts bson.D) error {
	if v, ok := bsonutil.Field(opts, "fullDocument"); ok {
		mode, _ := v.(string)
		if !contains([]string{"default", "updateLookup", "whenAvailable", "required"}, mode) {
			return mongoerr.Newf(mongoerr.BadValue, "Enumeration value '%s' for field '$changeStream.fullDocument' is not a valid value.", bsonutil.Format(v))
		}
		s.FullDocument = mode
	}
	if v, ok := bsonutil.Field(opts, "showExpandedEvents"); ok {
		on, isBool := v.(bool)
		if !isBool {
			return wrongType("$changeStream", "showExpandedEvents", v, "bool")
		}
		s.Expanded = on
	}
	if v, ok := bsonutil.Field(opts, "fullDocumentBeforeChange"); ok {
		mode, _ := v.(string)
		if !contains([]string{"off", "whenAvailable", "required"}, mode) {
			return mongoerr.Newf(mongoerr.BadValue, "Enumeration value '%s' for field '$changeStream.fullDocumentBeforeChange' is not a valid value.", bsonutil.Format(v))
		}
		s.Before = mode
	}
	return nil
}

// parseResume reads resumeAfter, startAfter and startAtOperationTime; at
// most one may be given.
func parseResume(s *changestream.Spec, opts bson.D) error {
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
		s.After, s.Resumed = changestream.JustBefore(changestream.Timestamp{T: ts.T, I: ts.I}), true
		return nil
	}
	for _, f := range []string{"resumeAfter", "startAfter"} {
		if v, ok := bsonutil.Field(opts, f); ok {
			return resumeFrom(s, f, v)
		}
	}
	return nil
}

func resumeFrom(s *changestream.Spec, field string, v any) error {
	tok, err := parseResumeToken(field, v)
	if err != nil {
		return err
	}
	if tok.Kind == changestream.KindInvalidate && field == "resumeAfter" {
		return mongoerr.New(mongoerr.InvalidResumeToken, "Attempting to resume a change stream using 'resumeAfter' is not allowed from an invalidate notification.")
	}
	s.After, s.Resumed, s.Token = tok.Pos, true, &tok
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

// streamGetMore continues a change stream: the changes since the last
// batch, or, when there are none, the first to come within the wait.
func (h *Handler) streamGetMore(r *request, c *cursor.Cursor, s *changestream.Stream, n int64) (bson.D, error) {
	docs, err := s.Await(h.streamCall(r), n)
	if err != nil {
		h.deps.Cursors.Remove(c.ID)
		return nil, changestream.ResumableError(err)
	}
	id := c.ID
	if s.Ended() {
		h.deps.Cursors.Remove(c.ID)
		id = 0
	} else {
		h.deps.Cursors.Checkin(c)
	}
	return streamReply(s, id, c.NS, "nextBatch", docs), nil
}

// streamReply is a change stream's cursor reply, with postBatchResumeToken.
func streamReply(s *changestream.Stream, id int64, ns, key string, batch []bson.Raw) bson.D {
	tok := s.ResumeToken()
	return bson.D{{Key: "cursor", Value: bson.D{
		{Key: key, Value: batch},
		{Key: "postBatchResumeToken", Value: bson.D{{Key: "_data", Value: tok.String()}}},
		{Key: "id", Value: id},
		{Key: "ns", Value: ns},
	}}}
}

// streamCall is r's part in reading a stream.
func (h *Handler) streamCall(r *request) *changestream.Call {
	return &changestream.Call{
		Ctx:     r.ctx,
		Env:     newAggEnv(h, r, ""),
		Wait:    awaitWait(r),
		Waiting: func() func() { return h.waiting(r) },
	}
}

// streamHost is the server's part in the change streams.
type streamHost struct{ h *Handler }

var _ changestream.Host = streamHost{}

// Current reads the document an update changed as it is now (nil when it
// is gone or expired), as updateLookup does on mongod.
func (s streamHost) Current(db, coll string, id any) (bson.D, error) {
	c := s.h.deps.Store.Collection(db, coll)
	if c == nil {
		return nil, nil
	}
	return c.FindOne(bson.D{{Key: "_id", Value: id}})
}

func (streamHost) EncodeEvent(d bson.D) ([]byte, error) { return paging.EncodeResult(d) }

func (streamHost) MaxEventBytes() int { return paging.MaxResultBytes }
