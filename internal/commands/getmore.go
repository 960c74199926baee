package commands

import (
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/changestream"
	"github.com/mayflydb/mayfly/internal/cmdargs"
	"github.com/mayflydb/mayfly/internal/cursor"
	"github.com/mayflydb/mayfly/internal/cursor/paging"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// getMore continues a cursor. One request goes: cmdGetMore reads the
// arguments, checkoutCursor takes the cursor if this user may use it on
// this namespace, checkSession checks it is used in the session that
// opened it, then a change stream reads on (streamGetMore,
// changestream.go) and any other cursor fills its next batch
// (documentsGetMore: paging.Pager's Reopen and More, a tailable one
// waiting for new documents). killCursors is here too: the other command
// on open cursors.

func cmdGetMore(h *Handler, r *request) (bson.D, error) {
	id, ok := r.body[0].Value.(int64)
	if !ok {
		return nil, wrongType(r.name, "getMore", r.body[0].Value, "long")
	}
	if err := checkFields(r, "collection", "batchSize", "term", "lastKnownCommittedOpTime"); err != nil {
		return nil, err
	}
	collV, _ := bsonutil.Field(r.body, "collection")
	coll, ok := collV.(string)
	if !ok {
		return nil, wrongType(r.name, "collection", collV, "string")
	}
	n, err := getMoreBatchSize(r)
	if err != nil {
		return nil, err
	}
	return h.getMore(r, id, r.db+"."+coll, n)
}

// getMoreBatchSize is the getMore's batchSize; -1 (no count limit) when
// it is missing or 0.
func getMoreBatchSize(r *request) (int64, error) {
	v, ok := bsonutil.Field(r.body, "batchSize")
	if !ok {
		return -1, nil
	}
	n, err := batchSizeArg(r, v, "batchSize")
	if err != nil || n == 0 {
		return -1, err
	}
	return n, nil
}

func (h *Handler) getMore(r *request, id int64, ns string, n int64) (bson.D, error) {
	c, err := h.checkoutCursor(r, id, ns)
	if err != nil {
		return nil, err
	}
	if err := h.failGetMore(r, c); err != nil {
		return nil, err
	}
	if err := checkSession(r, c); err != nil {
		h.deps.Cursors.Checkin(c)
		return nil, err
	}
	if s, ok := c.Source.(*changestream.Stream); ok {
		return h.streamGetMore(r, c, s, n)
	}
	return h.documentsGetMore(r, c, n)
}

// checkoutCursor takes cursor id for r, when r's user may use it and it
// belongs to ns.
func (h *Handler) checkoutCursor(r *request, id int64, ns string) (*cursor.Cursor, error) {
	c, ok := h.deps.Cursors.Checkout(id)
	if !ok {
		return nil, mongoerr.Newf(mongoerr.CursorNotFound, "cursor id %d not found", id)
	}
	if err := h.checkCursorUse(r, c); err != nil {
		h.deps.Cursors.Checkin(c)
		return nil, err
	}
	if c.NS != ns {
		h.deps.Cursors.Checkin(c)
		return nil, mongoerr.Newf(mongoerr.Unauthorized, "Requested getMore on namespace '%s', but cursor belongs to a different namespace %s", ns, c.NS)
	}
	return c, nil
}

// documentsGetMore answers a getMore on a cursor over documents: it
// brings the cursor's scans up to now and fills the next batch.
func (h *Handler) documentsGetMore(r *request, c *cursor.Cursor, n int64) (bson.D, error) {
	p := c.Source.(*paging.Pager)
	if err := p.Reopen(r.ctx); err != nil {
		h.deps.Cursors.Remove(c.ID)
		return nil, err
	}
	batch, err := p.More(h.tailWait(r), n)
	if err != nil {
		h.deps.Cursors.Remove(c.ID)
		return nil, causedBy(getMoreExecContext, err)
	}
	if !p.StaysOpen() {
		h.deps.Cursors.Remove(c.ID)
		return cursorDoc(0, c.NS, "nextBatch", batch), nil
	}
	h.deps.Cursors.Checkin(c)
	return cursorDoc(c.ID, c.NS, "nextBatch", batch), nil
}

// tailWait is r's part in a tailable cursor's wait for new documents.
func (h *Handler) tailWait(r *request) *paging.Wait {
	return &paging.Wait{Ctx: r.ctx, Clock: h.deps.Clock, For: awaitWait(r), Waiting: func() func() { return h.waiting(r) }}
}

// awaitWait is how long an empty getMore may wait (paging.AwaitTime).
func awaitWait(r *request) time.Duration {
	var ms int64
	if v, ok := bsonutil.Field(r.body, "maxTimeMS"); ok {
		ms, _ = cmdargs.Int64(r.name, "maxTimeMS", v)
	}
	return paging.AwaitTime(r.ctx, ms)
}

func cmdKillCursors(h *Handler, r *request) (bson.D, error) {
	if _, err := collectionArg(r); err != nil {
		return nil, err
	}
	v, _ := bsonutil.Field(r.body, "cursors")
	ids, ok := v.(bson.A)
	if !ok {
		return nil, wrongType(r.name, "cursors", v, "array")
	}
	if err := h.checkCursorsKill(r, ids); err != nil {
		return nil, err
	}
	killed, notFound := bson.A{}, bson.A{}
	for _, x := range ids {
		id, ok := x.(int64)
		if !ok {
			return nil, wrongType(r.name, "cursors", x, "long")
		}
		if h.deps.Cursors.Remove(id) {
			killed = append(killed, id)
		} else {
			notFound = append(notFound, id)
		}
	}
	return bson.D{
		{Key: "cursorsKilled", Value: killed},
		{Key: "cursorsNotFound", Value: notFound},
		{Key: "cursorsAlive", Value: bson.A{}},
		{Key: "cursorsUnknown", Value: bson.A{}},
	}, nil
}
