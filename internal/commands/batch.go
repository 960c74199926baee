package commands

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/cmdargs"
	"github.com/mayflydb/mayfly/internal/cursor"
	"github.com/mayflydb/mayfly/internal/cursor/paging"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// requestCursorReply answers a cursor-producing command: it sends the
// first batch and registers the rest, unless it is exhausted or
// singleBatch was asked; the cursor is bound to r's session and scans (r
// nil: neither).
func (h *Handler) requestCursorReply(r *request, ns string, src cursor.Source, batchSize int64, singleBatch bool) (bson.D, error) {
	var live paging.Live
	var session []byte
	if r != nil {
		live, session = r.live, sessionID(r)
	}
	p := paging.New(src, live)
	batch, err := p.Fill(batchSize)
	if err != nil {
		_ = p.Close()
		return nil, err
	}
	id := int64(0)
	if p.StaysOpen() && !singleBatch {
		id = h.deps.Cursors.Add(ns, p, session).ID
		p.Registered()
	} else {
		_ = p.Close()
	}
	return cursorDoc(id, r.boxedNamespace(ns), "firstBatch", batch), nil
}

// cursorDoc is a cursor reply; ns is the namespace, a string (in an
// interface, which a request may have made already: boxedNamespace).
func cursorDoc(id int64, ns any, key string, batch bson.A) bson.D {
	// The reply and its cursor document share one allocation: both are
	// built here and live as long as the reply.
	room := new(struct {
		reply  [1 + replyRoom]bson.E
		cursor [3]bson.E
	})
	room.cursor = [3]bson.E{{Key: "id", Value: id}, {Key: "ns", Value: ns}, {Key: key, Value: batch}}
	out := room.reply[:1]
	out[0] = bson.E{Key: "cursor", Value: bson.D(room.cursor[:])}
	return out
}

// batchSizeArg reads cursor.batchSize (aggregate) or batchSize (find).
func batchSizeArg(r *request, v any, field string) (int64, error) {
	if v == nil {
		return paging.DefaultBatchSize, nil
	}
	n, err := cmdargs.Int64(r.name, field, v)
	if err != nil {
		return 0, err
	}
	if n < 0 {
		return 0, mongoerr.Newf(mongoerr.Location51024, "BSON field 'batchSize' value must be >= 0, actual value '%d'", n)
	}
	return n, nil
}
