// Package executor runs the reads of find, count, distinct and aggregate:
// it plans the scan of a collection and the stages above it, runs them,
// and explains them in mongod's explain shape; it resolves views to their
// base collection and pipeline. It knows no command syntax and no wire
// protocol: the command layer parses a request, hands over an Op and what
// to read, and builds the reply from what comes back.
package executor

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/aggregate"
	"github.com/mayflydb/mayfly/internal/clock"
	"github.com/mayflydb/mayfly/internal/collation"
	"github.com/mayflydb/mayfly/internal/cursor"
	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/expr"
	"github.com/mayflydb/mayfly/internal/query"
)

// Executor plans and runs reads of one store.
type Executor struct {
	store *docstore.Store
	// steady times executionTimeMillis: a test clock moved forward to
	// expire documents must not bend it.
	steady clock.Clock
}

// New returns an Executor reading store, timing its runs with steady.
func New(store *docstore.Store, steady clock.Clock) *Executor {
	return &Executor{store: store, steady: steady}
}

// Op is one read as the command layer hands it over: the context it runs
// under, and the hooks through which a cursor made from it keeps what it
// needs past the command.
type Op struct {
	Ctx context.Context
	// CheckCtx returns the operation's error once ctx has ended
	// (maxTimeMS, killOp, shutdown, the client leaving), nil before. It is
	// a plain function of the context, not a closure over the request, so
	// that handing over an Op allocates nothing.
	CheckCtx func(ctx context.Context) error
	// Live, when set, keeps what a cursor from this read must bring up to
	// date before each getMore.
	Live Live
	// Env gives a pipeline its database ($lookup, $collStats, $$NOW).
	Env aggregate.Env
	// Txn, when set, is the transaction the read belongs to: its scans
	// read the transaction's snapshot under its writes.
	Txn *docstore.Txn
}

// Live is what a cursor made from a read re-checks before each getMore.
type Live interface {
	// Track is given each scan the cursor must bring up to date.
	Track(scan *docstore.DocIter)
	// Recheck wraps the output of a blocking sort on a TTL collection so
	// that documents expired by the time the cursor hands them out are
	// dropped.
	Recheck(c *docstore.Collection, sorted aggregate.Iterator) aggregate.Iterator
}

// Check returns the operation's error once its context has ended, nil
// before.
func (op *Op) Check() error { return op.CheckCtx(op.Ctx) }

// NewGuard returns a Guard that stops expression loops with Check's error.
func (op *Op) NewGuard() *expr.Guard { return expr.NewGuardFor(op.Ctx, op.CheckCtx) }

func (op *Op) track(scan *docstore.DocIter) {
	if op.Live != nil && scan != nil {
		op.Live.Track(scan)
	}
}

// Drain runs src to its end, as executionStats needs, checking for an
// interruption every 1024 documents.
func (op *Op) Drain(src cursor.Source) error {
	for n := 0; ; n++ {
		if n%1024 == 0 {
			if err := op.Check(); err != nil {
				return err
			}
		}
		_, ok, err := src.Next()
		if err != nil || !ok {
			return err
		}
	}
}

// CountAll counts what src yields, checking for an interruption before
// each document.
func (op *Op) CountAll(src cursor.Source) (int64, error) {
	var n int64
	for {
		if err := op.Check(); err != nil {
			return n, err
		}
		_, ok, err := src.Next()
		if err != nil || !ok {
			return n, err
		}
		n++
	}
}

// Collator is c as the query layer takes it (a nil interface for none).
func Collator(c *collation.Collation) query.Collator {
	if c == nil {
		return nil
	}
	return c
}

// Filter compiles a read's query with the command's let variables (nil:
// none) under its collation (nil: simple).
func Filter(q bson.D, vars map[string]any, c *collation.Collation) (*query.Filter, error) {
	return query.NewFilterWith(q, query.FilterOptions{Vars: vars, Collation: Collator(c)})
}

// emptySource is the scan of a collection that does not exist.
type emptySource struct{}

func (emptySource) Next() (bson.D, bool, error) { return nil, false, nil }
func (emptySource) Close() error                { return nil }
