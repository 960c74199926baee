package commands

import (
	"context"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/aggregate"
	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/cmdargs"
	"github.com/mayflydb/mayfly/internal/cursor/paging"
	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/executor"
	"github.com/mayflydb/mayfly/internal/expr"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/nsname"
)

var aggregateFields = []string{"pipeline", "cursor", "explain", "allowDiskUse", "hint", "let", "collation", "bypassDocumentValidation", "fromMongos", "needsMerge"}

func cmdAggregate(h *Handler, r *request) (bson.D, error) {
	cursorContext(r)
	if err := checkFields(r, aggregateFields...); err != nil {
		return nil, err
	}
	coll, collectionless, err := aggregateNamespace(r)
	if err != nil {
		return nil, err
	}
	if err := checkPipelineArg(r, collectionless); err != nil {
		return nil, err
	}
	if _, err := parseCollation(r.body); err != nil {
		return nil, err
	}
	if explain, err := optBool(r, "explain"); err != nil || explain {
		if err != nil {
			return nil, err
		}
		return h.aggregateExplainReply(r)
	}
	if _, ok := bsonutil.Field(r.body, "cursor"); !ok {
		return nil, mongoerr.New(mongoerr.FailedToParse, "The 'cursor' option is required, except for aggregate with the explain argument")
	}
	batch, err := cursorBatchSize(r)
	if err != nil {
		return nil, err
	}
	if isChangeStream(r) {
		return h.openChangeStream(r, coll, batch)
	}
	if collectionless {
		return h.collectionlessAggregate(r, stagesOf(r), batch)
	}
	if err := nsname.ValidateNamespace(r.db, coll); err != nil {
		return nil, err
	}
	if v, err := h.resolveView(r.db, coll); err != nil || v != nil {
		if err != nil {
			return nil, err
		}
		return h.readView(r, coll, v, stagesOf(r), batch, false)
	}
	if t, err := writeStage(r); err != nil || t != nil {
		if err != nil {
			return nil, err
		}
		return h.aggregateInto(r, coll, t)
	}
	r.refreshReads = paging.ReturnsDocuments(stagesOf(r))
	out, err := h.runAggregate(r, coll)
	if err != nil {
		return nil, err
	}
	reply, err := h.requestCursorReply(r, r.joinNamespace(coll), out, batch, false)
	return reply, causedBy(aggregateExecContext, err)
}

// stagesOf returns the pipeline array (validated by the caller's parse).
func stagesOf(r *request) bson.A {
	v, _ := bsonutil.Field(r.body, "pipeline")
	a, _ := v.(bson.A)
	return a
}

// parsePipeline parses the pipeline under the request's collation (or the
// collection's default).
func (h *Handler) parsePipeline(r *request) (*aggregate.Pipeline, error) {
	v, ok := bsonutil.Field(r.body, "pipeline")
	if !ok {
		return nil, mongoerr.New(mongoerr.Location40414, "BSON field 'aggregate.pipeline' is missing but a required field")
	}
	stages, ok := v.(bson.A)
	if !ok {
		return nil, wrongType(r.name, "pipeline", v, "array")
	}
	allowDisk, err := optBool(r, "allowDiskUse")
	if err != nil {
		return nil, err
	}
	let, err := optDoc(r, "let")
	if err != nil {
		return nil, err
	}
	coll, err := h.requestCollation(r)
	if err != nil {
		return nil, err
	}
	return aggregate.Parse(stages, aggregate.Options{AllowDiskUse: allowDisk, Let: let, Collation: collator(coll)})
}

// aggregateInput scans the collection, using an index for a leading
// $match (the stage itself still runs; the scan only narrows the input)
// and for a leading $sort, which is then left out of the pipeline.
func (h *Handler) aggregateInput(r *request, coll string, p *aggregate.Pipeline) (aggregate.Iterator, *aggregate.Pipeline, error) {
	if h.localView(r.db, coll) {
		return h.localSource(r, coll), p, nil
	}
	ex, p, err := h.planAggregate(r, coll, p)
	if err != nil {
		return nil, nil, err
	}
	src := ex.Start()
	r.live.Track(ex.Scan())
	if r.refreshReads {
		// The scan yields what the leading $match passes on.
		src = h.refreshing(ex.Collection(), src)
	}
	return src, p, nil
}

// planAggregate plans the scan under the pipeline p of the aggregate r
// on coll, leaving out of p a leading $sort the index provides.
func (h *Handler) planAggregate(r *request, coll string, p *aggregate.Pipeline) (*executor.Plan, *aggregate.Pipeline, error) {
	cn, err := h.requestCollation(r)
	if err != nil {
		return nil, nil, err
	}
	hint, _ := bsonutil.Field(r.body, "hint")
	c := h.collection(r, r.db, coll)
	ex, provided, err := h.executor().PlanAggregate(h.readOp(r, coll), c, p, cn, hint)
	if err != nil {
		return nil, nil, err
	}
	if provided {
		p = p.WithoutStage(executor.LeadingSortIndex(stagesOf(r)))
	}
	return ex, p, nil
}

// aggEnv gives a pipeline access to its database. It is held by the
// pipeline, and so by a cursor made from it, for the cursor's life: it
// keeps the names and the context it needs, not the request.
type aggEnv struct {
	h    *Handler
	ctx  context.Context
	db   string
	coll string
	// txn is the transaction or snapshot read the pipeline runs in: its
	// $lookup and $unionWith read the same snapshot (nil: the latest).
	txn *docstore.Txn
}

func newAggEnv(h *Handler, r *request, coll string) *aggEnv {
	return &aggEnv{h: h, ctx: r.ctx, db: r.db, coll: coll, txn: r.storeTxn()}
}

func (e *aggEnv) Collection(name string) (aggregate.Iterator, error) {
	c := collectionIn(e.h.deps.Store, e.txn, e.db, name)
	if c == nil {
		return paging.Slice(), nil
	}
	return paging.Interruptible(c.Scan(nil, nil).Within(e.txn), e.ctx, checkInterrupt), nil
}

func (e *aggEnv) Now() time.Time { return e.h.deps.Clock.Now() }

// Guard lets the pipeline's expressions stop when the command's context
// ends (maxTimeMS, killOp, the client leaving).
func (e *aggEnv) Guard() *expr.Guard { return newGuard(e.ctx) }

func (e *aggEnv) CollStats(spec bson.D) (bson.D, error) {
	if !e.h.localView(e.db, e.coll) && e.h.deps.Store.Collection(e.db, e.coll) == nil {
		return nil, nsNotFound(e.db, e.coll)
	}
	out := bson.D{
		{Key: "ns", Value: e.db + "." + e.coll},
		{Key: "host", Value: "localhost"},
		{Key: "localTime", Value: bson.NewDateTimeFromTime(e.Now())},
	}
	if v, ok := bsonutil.Field(spec, "storageStats"); ok {
		st, _, err := e.h.storageStats(e.db, e.coll, scaleOf(v), nil)
		if err != nil {
			return nil, err
		}
		out = append(out, bson.E{Key: "storageStats", Value: st})
	}
	if _, ok := bsonutil.Field(spec, "count"); ok {
		n, err := e.h.docCount(e.db, e.coll)
		if err != nil {
			return nil, err
		}
		out = append(out, bson.E{Key: "count", Value: n})
	}
	return out, nil
}

func scaleOf(v any) int64 {
	d, _ := v.(bson.D)
	if s, ok := bsonutil.Field(d, "scale"); ok {
		if n, err := cmdargs.Int64("$collStats", "scale", s); err == nil && n > 0 {
			return n
		}
	}
	return 1
}
