package commands

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/aggregate"
	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/catalog"
	"github.com/mayflydb/mayfly/internal/cursor/paging"
	"github.com/mayflydb/mayfly/internal/executor"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// Views (executor/views.go) are read-only collections defined by a
// pipeline over another collection or view. Reads through one run as an
// aggregate over its base collection; writes are refused with mongod's
// CommandNotSupportedOnView; create and collMod define them (internal/ddl).

func isView(m *catalog.Collection) bool { return executor.IsView(m) }

// resolveView returns the view db.name stands for, nil for a collection
// or nothing.
func (h *Handler) resolveView(db, name string) (*executor.View, error) {
	return h.executor().ResolveView(db, name)
}

// refuseView answers a write to a view as mongod does.
func (h *Handler) refuseView(db, coll string) error {
	if err := h.refuseLocalWrite(db, coll); err != nil {
		return err
	}
	c := h.deps.Store.Collection(db, coll)
	if c != nil && isView(c.Meta()) {
		return mongoerr.Newf(mongoerr.CommandNotSupportedOnView, "Namespace %s.%s is a view, not a collection", db, coll)
	}
	return nil
}

// viewInfo is a view's listCollections entry.
func viewInfo(m *catalog.Collection) bson.D {
	return bson.D{
		{Key: "name", Value: m.Name},
		{Key: "type", Value: "view"},
		{Key: "options", Value: m.Options},
		{Key: "info", Value: bson.D{{Key: "readOnly", Value: true}}},
	}
}

// viewRequest is an aggregate over the view's base collection: the view's
// pipeline, then extra.
func viewRequest(r *request, v *executor.View, extra bson.A, batchSize int64) *request {
	// The view's collation, not the base collection's default, applies.
	coll := v.Collation
	if coll == nil {
		coll = bson.D{{Key: "locale", Value: "simple"}}
	}
	return innerAggregate(r, v.Base, append(append(bson.A{}, v.Pipeline...), extra...), batchSize,
		bson.D{{Key: "collation", Value: coll}}, "hint", "allowDiskUse", "let")
}

// innerAggregate is an aggregate of stages over coll that r runs: its
// options, then those of r's fields named by inherit.
func innerAggregate(r *request, coll string, stages bson.A, batchSize int64, options bson.D, inherit ...string) *request {
	inner := *r
	inner.name = "aggregate"
	inner.body = append(bson.D{
		{Key: "aggregate", Value: coll},
		{Key: "pipeline", Value: stages},
		{Key: "cursor", Value: bson.D{{Key: "batchSize", Value: batchSize}}},
	}, options...)
	for _, k := range inherit {
		if val, ok := bsonutil.Field(r.body, k); ok {
			inner.body = append(inner.body, bson.E{Key: k, Value: val})
		}
	}
	return &inner
}

// readView runs an aggregate over a view and replies with a cursor on
// the view's namespace, as mongod does.
func (h *Handler) readView(r *request, name string, v *executor.View, extra bson.A, batchSize int64, singleBatch bool) (bson.D, error) {
	if err := viewReadOptions(r, v); err != nil {
		return nil, err
	}
	inner := viewRequest(r, v, extra, batchSize)
	out, err := h.runAggregate(inner, v.Base)
	if err != nil {
		return nil, err
	}
	reply, err := h.requestCursorReply(r, r.db+"."+name, out, batchSize, singleBatch)
	return reply, causedBy(aggregateExecContext, err)
}

// runAggregate parses and starts a collection aggregate.
func (h *Handler) runAggregate(r *request, coll string) (aggregate.Iterator, error) {
	p, err := h.parsePipeline(r)
	if err != nil {
		return nil, err
	}
	in, p, err := h.aggregateInput(r, coll, p)
	if err != nil {
		return nil, err
	}
	out, err := p.Run(paging.Interruptible(in, r.ctx, checkInterrupt), newAggEnv(h, r, coll))
	return out, causedBy(aggregateExecContext, err)
}

// viewReadOptions refuses what a read through a view cannot honour, as
// mongod does, rather than dropping it.
func viewReadOptions(r *request, v *executor.View) error {
	if _, ok := bsonutil.Field(r.body, "collation"); ok {
		c, err := parseCollation(r.body)
		if err != nil {
			return err
		}
		var spec bson.D
		if c != nil {
			spec = c.Spec()
		}
		if bsonutil.Compare(spec, v.Collation) != 0 {
			return mongoerr.New(mongoerr.OptionNotSupportedOnView, "Cannot override a view's default collation")
		}
	}
	for _, opt := range []string{"tailable", "awaitData", "showRecordId", "returnKey"} {
		if v, ok := bsonutil.Field(r.body, opt); ok && v != false {
			return mongoerr.Newf(mongoerr.OptionNotSupportedOnView, "the %s option is not supported on a view", opt)
		}
	}
	return nil
}

// findOnView answers a find on a view.
func (h *Handler) findOnView(r *request, a *findArgs, v *executor.View) (bson.D, error) {
	if err := viewReadOptions(r, v); err != nil {
		return nil, err
	}
	filter, err := optDoc(r, "filter")
	if err != nil {
		return nil, err
	}
	spec := a.spec(nil)
	return h.readView(r, a.coll, v, executor.FindStages(filter, &spec), a.batchSize, a.singleBatch)
}

// viewMatching runs the view v's pipeline, then a $match of q.
func (h *Handler) viewMatching(r *request, v *executor.View, q bson.D) (aggregate.Iterator, error) {
	if err := viewReadOptions(r, v); err != nil {
		return nil, err
	}
	extra := bson.A{}
	if len(q) > 0 {
		extra = append(extra, bson.D{{Key: "$match", Value: q}})
	}
	return h.runAggregate(viewRequest(r, v, extra, 0), v.Base)
}

// countOnView counts what a view yields after the query.
func (h *Handler) countOnView(r *request, v *executor.View, q bson.D) (int64, error) {
	out, err := h.viewMatching(r, v, q)
	if err != nil {
		return 0, err
	}
	return countResults(r, out)
}

// countResults counts what out yields, and closes it.
func countResults(r *request, out aggregate.Iterator) (int64, error) {
	defer out.Close()
	n := int64(0)
	err := eachResult(r, out, func(bson.D) error { n++; return nil })
	return n, err
}

// distinctOnView collects a key's distinct values over a view.
func (h *Handler) distinctOnView(r *request, v *executor.View, key string, q bson.D) (bson.A, error) {
	out, err := h.viewMatching(r, v, q)
	if err != nil {
		return nil, err
	}
	defer out.Close()
	var vals []any
	err = eachResult(r, out, func(d bson.D) error { vals = append(vals, executor.DistinctOf(d, key)...); return nil })
	return executor.DedupeSorted(vals, nil), err
}
