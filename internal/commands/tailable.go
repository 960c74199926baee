package commands

import (
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/query"
)

// Tailable cursors on capped collections stay open at the end of the
// data: each getMore looks again for documents after the last one
// returned. With awaitData a getMore that finds none waits for new ones,
// up to its maxTimeMS (1 second by default), before answering an empty
// batch.

// awaitDataDefault is how long an awaitData getMore waits by default.
const awaitDataDefault = time.Second

// tailablePoll is how often a waiting getMore looks for new documents.
const tailablePoll = 5 * time.Millisecond

type tailableSource struct {
	store    *docstore.Store
	db, coll string
	filter   *query.Filter
	last     any
	hasLast  bool
	cur      *docstore.DocIter
	await    bool
}

func (s *tailableSource) Next() (bson.D, bool, error) {
	if s.cur == nil {
		c := s.store.Collection(s.db, s.coll)
		if c == nil {
			return nil, false, nil
		}
		s.cur = c.ScanAfter(s.last, s.hasLast, s.filter)
	}
	d, ok, err := s.cur.Next()
	if !ok || err != nil {
		_ = s.cur.Close()
		s.cur = nil
		return nil, false, err
	}
	s.last, s.hasLast = docstore.DocID(d), true
	return d, true, nil
}

func (s *tailableSource) Close() error {
	if s.cur != nil {
		return s.cur.Close()
	}
	return nil
}

// tailOptions reads find's tailable and awaitData and checks them as
// mongod does.
func tailOptions(r *request, a *findArgs) (tailable, await bool, err error) {
	if tailable, err = optBool(r, "tailable"); err != nil {
		return false, false, err
	}
	if await, err = optBool(r, "awaitData"); err != nil {
		return false, false, err
	}
	switch {
	case await && !tailable:
		return false, false, mongoerr.New(mongoerr.FailedToParse, "Cannot set 'awaitData' without also setting 'tailable'")
	case tailable && a.sort != nil && !a.sort.IsEmpty():
		return false, false, mongoerr.New(mongoerr.BadValue, "cannot use tailable option with a sort other than {$natural: 1}")
	case tailable && a.singleBatch:
		return false, false, mongoerr.New(mongoerr.FailedToParse, "cannot use tailable option with the 'singleBatch' option")
	}
	return tailable, await, nil
}

// findTailable starts a tailable cursor.
func (h *Handler) findTailable(r *request, a *findArgs, c *docstore.Collection, await bool) (bson.D, error) {
	if !c.Meta().Capped {
		return nil, mongoerr.Newf(mongoerr.BadValue, "error processing query: ns=%s.%s tailable cursor requested on non capped collection", r.db, a.coll)
	}
	var src interface {
		Next() (bson.D, bool, error)
		Close() error
	} = &tailableSource{store: h.deps.Store, db: r.db, coll: a.coll, filter: a.filter, await: await}
	if a.projection != nil {
		src = &projectSource{src: src, f: projector(a.projection, a.filter, false)}
	}
	return h.requestCursorReply(r, r.db+"."+a.coll, src, a.batchSize, false)
}

// tailable is a source that stays open at its end: a tailable cursor's.
type tailable interface {
	// awaits says whether a getMore that finds nothing waits for more
	// (awaitData).
	awaits() bool
}

func (s *tailableSource) awaits() bool { return s.await }

// tailer returns the tailable source under a cursor's source, nil if none.
func tailableOf(p *peekSource) tailable {
	src := p.src
	if ps, ok := src.(*projectSource); ok {
		src = ps.src
	}
	t, _ := src.(tailable)
	return t
}

// pollWait waits one tailablePoll as a waiting operation; false when the
// request ended first.
func (h *Handler) pollWait(r *request) bool {
	defer h.waiting(r)()
	t := h.deps.Clock.NewTimer(tailablePoll)
	defer t.Stop()
	select {
	case <-r.ctx.Done():
		return false
	case <-t.C():
		return true
	}
}

// awaitMore waits, for an awaitData getMore that found nothing, until new
// documents come or the wait (one timer, as a stream's await) is over.
func (h *Handler) awaitMore(r *request, p *peekSource, n int64) (bson.A, error) {
	over := h.deps.Clock.NewTimer(awaitWait(r))
	defer over.Stop()
	for {
		select {
		case <-over.C():
			return bson.A{}, nil
		default:
		}
		if !h.pollWait(r) {
			return bson.A{}, nil
		}
		p.done = false
		batch, err := fillBatch(p, n)
		if err != nil || len(batch) > 0 {
			return batch, err
		}
	}
}
