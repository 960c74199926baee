package paging

import (
	"context"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/clock"
	"github.com/mayflydb/mayfly/internal/cursor"
	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/query"
)

// Tailable cursors on capped collections stay open at the end of the
// data: each getMore looks again for documents after the last one
// returned. With awaitData a getMore that finds none waits for new ones,
// up to its maxTimeMS (1 second by default), before answering an empty
// batch.

// awaitDataDefault is how long an awaitData getMore waits by default.
const awaitDataDefault = time.Second

// pollInterval is how often a waiting getMore looks for new documents.
const pollInterval = 5 * time.Millisecond

// Tailable is a source that stays open at its end: a tailable cursor's.
type Tailable interface {
	// Awaits says whether a getMore that finds nothing waits for more
	// (awaitData).
	Awaits() bool
}

// Wait is a getMore's part in a tailable cursor's wait for new documents.
type Wait struct {
	Ctx   context.Context
	Clock clock.Clock
	// For is how long an empty getMore waits (AwaitTime).
	For time.Duration
	// Waiting marks the operation as waiting until the func it returns
	// is called.
	Waiting func() func()
}

// AwaitTime is how long an empty getMore under ctx may wait: maxTimeMS
// when positive, or a second, and never past ctx's deadline.
func AwaitTime(ctx context.Context, maxTimeMS int64) time.Duration {
	wait := awaitDataDefault
	if maxTimeMS > 0 {
		wait = time.Duration(maxTimeMS) * time.Millisecond
	}
	if dl, ok := ctx.Deadline(); ok {
		wait = min(wait, time.Until(dl)-pollInterval)
	}
	return wait
}

// Tail is a tailable cursor's source over a capped collection: the
// documents of db.coll that match filter, in insertion order, each
// getMore reading on after the last one returned.
func Tail(store *docstore.Store, db, coll string, filter *query.Filter, await bool) cursor.Source {
	return &tailSource{store: store, db: db, coll: coll, filter: filter, await: await}
}

type tailSource struct {
	store    *docstore.Store
	db, coll string
	filter   *query.Filter
	last     any
	hasLast  bool
	cur      *docstore.DocIter
	await    bool
}

func (s *tailSource) Next() (bson.D, bool, error) {
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

func (s *tailSource) Close() error {
	if s.cur != nil {
		return s.cur.Close()
	}
	return nil
}

func (s *tailSource) Awaits() bool { return s.await }

// tail returns the tailable source under the pager's, nil if none.
func (p *Pager) tail() Tailable {
	src := p.src
	if ps, ok := src.(*projectSource); ok {
		src = ps.src
	}
	t, _ := src.(Tailable)
	return t
}

// awaitMore waits, for an awaitData getMore that found nothing, until new
// documents come or the wait (one timer, as a stream's await) is over.
func (p *Pager) awaitMore(w *Wait, n int64) (bson.A, error) {
	over := w.Clock.NewTimer(w.For)
	defer over.Stop()
	for {
		select {
		case <-over.C():
			return bson.A{}, nil
		default:
		}
		if !w.poll() {
			return bson.A{}, nil
		}
		p.done = false
		batch, err := p.Fill(n)
		if err != nil || len(batch) > 0 {
			return batch, err
		}
	}
}

// poll waits one pollInterval as a waiting operation; false when the
// getMore ended first.
func (w *Wait) poll() bool {
	defer w.Waiting()()
	t := w.Clock.NewTimer(pollInterval)
	defer t.Stop()
	select {
	case <-w.Ctx.Done():
		return false
	case <-t.C():
		return true
	}
}
