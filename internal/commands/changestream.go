package commands

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/changestream"
	"github.com/mayflydb/mayfly/internal/cursor"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// Change streams: aggregate with a leading $changeStream opens a cursor
// over the change log. This file is their front end: it hands the
// pipeline to changestream.Parse, answers the aggregate and each getMore
// with a batch and postBatchResumeToken, and labels the errors a driver
// may resume after (changestream.ResumableError). Parsing the stage,
// reading the log, building events and waiting for new ones is
// internal/changestream's (Spec, Stream). See
// docs/design/0012-change-streams.md.

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
	s, docs, err := h.streams.Start(spec, h.streamCall(r), batch)
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

// parseChangeStream parses the pipeline's stages with the command's let
// (changestream.Parse).
func (h *Handler) parseChangeStream(r *request, coll string) (*changestream.Spec, error) {
	let, err := optDoc(r, "let")
	if err != nil {
		return nil, err
	}
	return changestream.Parse(r.db, coll, stagesOf(r), let)
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
