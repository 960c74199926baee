package paging

import (
	"context"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/aggregate"
	"github.com/mayflydb/mayfly/internal/docstore"
)

// Live is what a cursor made by one request re-checks before each
// getMore: the collection scans it reads, the sorted results it holds
// past their scan, and the context its pipeline checks. Its zero value
// tracks nothing; a request that may open a cursor fills it as it plans
// its read.
type Live struct {
	scans  []*docstore.DocIter
	sorted []*unexpired
	ctx    *swapCtx
}

// Track remembers a scan that a cursor must bring up to date before each
// getMore.
func (l *Live) Track(scan *docstore.DocIter) {
	if scan != nil {
		l.scans = append(l.scans, scan)
	}
}

// Recheck drops sorted results of c that have expired by the time they
// are returned: a blocking sort holds its documents past the scan that
// hid expired ones, and a getMore may come after they expire.
func (l *Live) Recheck(c *docstore.Collection, sorted aggregate.Iterator) aggregate.Iterator {
	u := &unexpired{src: sorted, c: c}
	l.sorted = append(l.sorted, u)
	return u
}

// Context returns ctx made replaceable: a cursor outlives the command
// that opened it (whose context ends when it returns), so each getMore
// puts its own in for the pipeline and scans to check.
func (l *Live) Context(ctx context.Context) context.Context {
	l.ctx = &swapCtx{}
	l.ctx.set(ctx)
	return l.ctx
}

// reopen brings the scans up to now under ctx; pendingLive is false when
// the document read ahead for the last batch is gone, expired or no
// longer matches.
func (l *Live) reopen(ctx context.Context) (pendingLive bool, err error) {
	if l.ctx != nil {
		l.ctx.set(ctx)
	}
	pendingLive = true
	for _, s := range l.scans {
		live, err := s.Reopen(ctx)
		if err != nil {
			return false, err
		}
		pendingLive = pendingLive && live
	}
	for _, u := range l.sorted {
		pendingLive = pendingLive && !u.lastExpired()
	}
	return pendingLive, nil
}

// swapCtx is the context a cursor's pipeline and scans check: the
// command that runs them now.
type swapCtx struct {
	cur atomic.Pointer[context.Context]
}

func (s *swapCtx) set(ctx context.Context)     { s.cur.Store(&ctx) }
func (s *swapCtx) now() context.Context        { return *s.cur.Load() }
func (s *swapCtx) Deadline() (time.Time, bool) { return s.now().Deadline() }
func (s *swapCtx) Done() <-chan struct{}       { return s.now().Done() }
func (s *swapCtx) Err() error                  { return s.now().Err() }
func (s *swapCtx) Value(key any) any           { return s.now().Value(key) }

// AfterFunc registers f with the context in place, so that
// context.AfterFunc and child contexts of s are registered with it as they
// would be with it directly, rather than each watching Done in a goroutine
// of its own. A Guard arms again on the next command's context (expr).
func (s *swapCtx) AfterFunc(f func()) (stop func() bool) { return context.AfterFunc(s.now(), f) }

// unexpired passes on sorted results that have not expired.
type unexpired struct {
	src  aggregate.Iterator
	c    *docstore.Collection
	last bson.D // the last document returned, for lastExpired
}

func (s *unexpired) Next() (bson.D, bool, error) {
	for {
		d, ok, err := s.src.Next()
		if !ok || err != nil || !s.c.ExpiredNow(d) {
			s.last = d
			return d, ok, err
		}
	}
}

// lastExpired reports whether the document last returned (the one a
// batch read ahead) has expired since.
func (s *unexpired) lastExpired() bool { return s.last != nil && s.c.ExpiredNow(s.last) }

func (s *unexpired) Close() error { return s.src.Close() }
