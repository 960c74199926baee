package commands

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/aggregate"
	"github.com/mayflydb/mayfly/internal/aggwrite"
	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// $out and $merge end a pipeline by writing its results to a collection.
// The aggregate package stays free of storage: the command layer strips
// the last stage, runs the rest, and writes what comes out.

// aggTarget is a parsed $out or $merge.
type aggTarget struct {
	stage string
	aggwrite.Target
}

// writeStage finds a $out or $merge: only as the last stage, as in mongod.
func writeStage(r *request) (*aggTarget, error) {
	stages := stagesOf(r)
	for i, s := range stages {
		d, _ := s.(bson.D)
		if len(d) != 1 || (d[0].Key != "$out" && d[0].Key != "$merge") {
			continue
		}
		if i != len(stages)-1 {
			return nil, mongoerr.Newf(mongoerr.Location40601, "%s can only be the final stage in the pipeline", d[0].Key)
		}
		if d[0].Key == "$out" {
			return parseOut(r.db, d[0].Value)
		}
		return parseMerge(r.db, d[0].Value)
	}
	return nil, nil
}

func parseOut(db string, v any) (*aggTarget, error) {
	t := &aggTarget{stage: "$out", Target: aggwrite.Target{DB: db}}
	switch x := v.(type) {
	case string:
		t.Coll = x
	case bson.D:
		dbv, _ := bsonutil.Field(x, "db")
		collv, _ := bsonutil.Field(x, "coll")
		s, ok1 := dbv.(string)
		c, ok2 := collv.(string)
		if !ok1 || !ok2 {
			return nil, mongoerr.New(mongoerr.Location16994, "If an object is passed to $out it must have exactly 2 fields: 'db' and 'coll'")
		}
		t.DB, t.Coll = s, c
	default:
		return nil, mongoerr.Newf(mongoerr.Location16990, "$out only supports a string or object argument, but found %s", bsonutil.TypeName(v))
	}
	return t, t.checkTarget()
}

func parseMerge(db string, v any) (*aggTarget, error) {
	t := &aggTarget{stage: "$merge", Target: aggwrite.Target{DB: db, On: []string{"_id"}, WhenMatched: "merge", WhenNotMatched: "insert"}}
	if s, ok := v.(string); ok {
		t.Coll = s
		return t, t.checkTarget()
	}
	d, ok := v.(bson.D)
	if !ok {
		return nil, mongoerr.Newf(mongoerr.Location51182, "$merge only supports a string or object argument, not %s", bsonutil.TypeName(v))
	}
	for _, e := range d {
		if err := t.mergeOption(e); err != nil {
			return nil, err
		}
	}
	if t.Coll == "" {
		return nil, mongoerr.New(mongoerr.Location40414, "BSON field '$merge.into' is missing but a required field")
	}
	return t, t.checkTarget()
}

// checkTarget applies mongod's rules for a $out or $merge target: a valid
// namespace, no system collection and no internal database (admin, local,
// config), each stage with its own codes and wording.
func (t *aggTarget) checkTarget() error {
	if err := docstore.ValidateNamespace(t.DB, t.Coll); err != nil {
		return err
	}
	system := strings.HasPrefix(t.Coll, "system.")
	internal := t.DB == "admin" || t.DB == "local" || t.DB == "config"
	switch {
	case t.stage == "$out" && system:
		return mongoerr.Newf(mongoerr.Location17385, "Can't $out to special collection: %s", t.Coll)
	case t.stage == "$out" && internal:
		return mongoerr.Newf(mongoerr.Location31321, "Can't $out to internal database: %s", t.DB)
	case system:
		return mongoerr.Newf(mongoerr.Location31319, "Cannot $merge to special collection: %s", t.Coll)
	case internal:
		return mongoerr.Newf(mongoerr.Location31320, "Cannot $merge to internal database: %s", t.DB)
	}
	return nil
}

func (t *aggTarget) mergeOption(e bson.E) error {
	var err error
	switch e.Key {
	case "into":
		err = t.mergeInto(e.Value)
	case "on":
		t.On, err = mergeOn(e.Value)
	case "whenMatched":
		err = t.mergeWhenMatched(e.Value)
	case "whenNotMatched":
		t.WhenNotMatched, err = enumArg("$merge.whenNotMatched", e.Value, "insert", "discard", "fail")
	case "let":
	default:
		err = mongoerr.Newf(mongoerr.Location40415, "BSON field '$merge.%s' is an unknown field.", e.Key)
	}
	return err
}

func (t *aggTarget) mergeInto(v any) error {
	switch x := v.(type) {
	case string:
		t.Coll = x
	case bson.D:
		if s, ok := bsonutil.Field(x, "db"); ok {
			t.DB, _ = s.(string)
		}
		c, _ := bsonutil.Field(x, "coll")
		t.Coll, _ = c.(string)
	default:
		return wrongType("$merge", "into", v, "string")
	}
	return nil
}

func mergeOn(v any) ([]string, error) {
	if s, ok := v.(string); ok {
		return []string{s}, nil
	}
	a, ok := v.(bson.A)
	if !ok || len(a) == 0 {
		return nil, mongoerr.New(mongoerr.Location51186, "$merge 'on' field must be a non-empty array of strings or a string")
	}
	out := make([]string, 0, len(a))
	for _, x := range a {
		s, ok := x.(string)
		if !ok {
			return nil, mongoerr.New(mongoerr.Location51134, "$merge 'on' array elements must be strings")
		}
		out = append(out, s)
	}
	return out, nil
}

func (t *aggTarget) mergeWhenMatched(v any) error {
	if a, ok := v.(bson.A); ok {
		// Parsed here to report errors before anything runs; each
		// matched document parses it again with its own $$new.
		_, err := aggregate.Parse(a, aggregate.Options{Let: bson.D{{Key: "new", Value: nil}}})
		t.WhenMatched, t.MatchedPipeline = "pipeline", a
		return err
	}
	var err error
	t.WhenMatched, err = enumArg("$merge.whenMatched", v, "replace", "keepExisting", "merge", "fail")
	return err
}

func enumArg(field string, v any, allowed ...string) (string, error) {
	return mongoerr.Enum(field, v, allowed...)
}

// aggregateInto runs the pipeline without its last stage and writes the
// results to the target; the reply is an empty cursor, as mongod's.
func (h *Handler) aggregateInto(r *request, coll string, t *aggTarget) (bson.D, error) {
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
func (h *Handler) writeInto(r *request, ns string, t *aggTarget, out aggregate.Iterator) (bson.D, error) {
	defer out.Close()
	if err := h.refuseView(t.DB, t.Coll); err != nil {
		return nil, err
	}
	w, err := h.aggWriter(r)
	if err != nil {
		return nil, err
	}
	if t.stage == "$out" {
		err = w.Out(&t.Target, out)
	} else {
		err = w.Merge(&t.Target, out)
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
		Prepare:     prepareForInsert,
		RunPipeline: func(p *aggregate.Pipeline, doc bson.D) (bson.D, error) {
			next, _, err := pipelineModifier{p: p}.apply(doc, -1, false, h.deps.Clock.Now())
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
	out, err := p.Run(&sliceSource{}, nilEnv{now: h.deps.Clock.Now(), guard: newGuard(r.ctx)})
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
