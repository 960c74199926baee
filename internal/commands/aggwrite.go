package commands

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/aggregate"
	"github.com/mayflydb/mayfly/internal/aggwrite"
	"github.com/mayflydb/mayfly/internal/cursor/paging"
	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/writeops"
)

// $out and $merge end a pipeline by writing its results to a collection
// (internal/aggwrite): the command layer strips the last stage, runs the
// rest, and hands what comes out to the writer.

// writeStage finds a $out or $merge: only as the last stage, as in mongod.
func writeStage(r *request) (*aggwrite.Target, error) {
	stages := stagesOf(r)
	for i, s := range stages {
		d, _ := s.(bson.D)
		if len(d) != 1 || (d[0].Key != "$out" && d[0].Key != "$merge") {
			continue
		}
		if i != len(stages)-1 {
			return nil, mongoerr.Newf(mongoerr.Location40601, "%s can only be the final stage in the pipeline", d[0].Key)
		}
		return aggwrite.ParseStage(r.db, d[0])
	}
	return nil, nil
}

// aggregateInto runs the pipeline without its last stage and writes the
// results to the target; the reply is an empty cursor, as mongod's.
func (h *Handler) aggregateInto(r *request, coll string, t *aggwrite.Target) (bson.D, error) {
	inner := *r
	inner.body = withPipeline(r.body, stagesOf(r)[:len(stagesOf(r))-1])
	out, err := h.runAggregate(&inner, coll)
	if err != nil {
		return nil, err
	}
	return h.writeInto(r, r.db+"."+coll, t, out)
}

// writeInto writes a pipeline's results, out, into t's collection and
// replies as an aggregate with a write stage does: an empty cursor on ns.
func (h *Handler) writeInto(r *request, ns string, t *aggwrite.Target, out aggregate.Iterator) (bson.D, error) {
	defer out.Close()
	if err := h.refuseView(t.DB, t.Coll); err != nil {
		return nil, err
	}
	w, err := h.aggWriter(r)
	if err != nil {
		return nil, err
	}
	if t.Stage == "$out" {
		err = w.Out(t, out)
	} else {
		err = w.Merge(t, out)
	}
	if err != nil {
		return nil, causedBy(aggregateExecContext, err)
	}
	return cursorDoc(0, ns, "firstBatch", bson.A{}), nil
}

func withPipeline(body bson.D, stages bson.A) bson.D {
	out := make(bson.D, len(body))
	copy(out, body)
	for i := range out {
		if out[i].Key == "pipeline" {
			out[i].Value = stages
		}
	}
	return out
}

// aggWriter is the writer of the command's results: with its
// bypassDocumentValidation, interrupted when the operation ends.
func (h *Handler) aggWriter(r *request) (*aggwrite.Writer, error) {
	bypass, err := bypassArg(r)
	if err != nil {
		return nil, err
	}
	return &aggwrite.Writer{
		Store:       h.deps.Store,
		Opt:         docstore.WriteOptions{BypassValidation: bypass},
		Interrupted: func() error { return checkInterrupt(r.ctx) },
		Prepare:     writeops.PrepareInsert,
		RunPipeline: func(p *aggregate.Pipeline, doc bson.D) (bson.D, error) {
			next, _, err := writeops.PipelineModifier{Pipeline: p}.Apply(doc, -1, false, h.deps.Clock.Now())
			return next, err
		},
	}, nil
}

// eachResult calls fn on each document the pipeline yields, until the
// operation ends.
func eachResult(r *request, out aggregate.Iterator, fn func(bson.D) error) error {
	return aggwrite.Each(out, func() error { return checkInterrupt(r.ctx) }, fn)
}

// documentsAggregate runs {aggregate: 1} over a leading $documents: the
// pipeline reads no collection.
func (h *Handler) documentsAggregate(r *request, stages bson.A, batch int64) (bson.D, error) {
	t, err := writeStage(r)
	if err != nil {
		return nil, err
	}
	read := r
	if t != nil { // $documents then $out or $merge: a collection seeded from the command
		inner := *r
		inner.body = withPipeline(r.body, stages[:len(stages)-1])
		read = &inner
	}
	p, err := h.parsePipeline(read)
	if err != nil {
		return nil, err
	}
	out, err := p.Run(paging.Slice(), aggregate.Standalone(h.deps.Clock.Now(), newGuard(r.ctx)))
	if err != nil {
		return nil, causedBy(aggregateExecContext, err)
	}
	ns := r.db + ".$cmd.aggregate"
	if t != nil {
		return h.writeInto(r, ns, t, out)
	}
	reply, err := h.requestCursorReply(r, ns, out, batch, false)
	return reply, causedBy(aggregateExecContext, err)
}
