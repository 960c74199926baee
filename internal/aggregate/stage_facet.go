package aggregate

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/expr"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// facetStage is $facet: several sub-pipelines over the same input, whose
// results become the arrays of one output document.
type facetStage struct {
	names []string
	subs  []*Pipeline
}

func parseFacet(spec any, opt Options) (stage, error) {
	d, ok := spec.(bson.D)
	if !ok || len(d) == 0 {
		return nil, mongoerr.Newf(mongoerr.Location40169, "the $facet specification must be a non-empty object, but found: %s",
			bsonutil.Format(spec))
	}
	f := &facetStage{}
	for _, e := range d {
		sub, err := parseFacetPipeline(e, opt)
		if err != nil {
			return nil, err
		}
		f.names = append(f.names, e.Key)
		f.subs = append(f.subs, sub)
	}
	return f, nil
}

func parseFacetPipeline(e bson.E, opt Options) (*Pipeline, error) {
	if err := expr.ValidateFieldName(e.Key); err != nil {
		return nil, err
	}
	stages, ok := e.Value.(bson.A)
	if !ok {
		return nil, mongoerr.Newf(mongoerr.Location40170, "arguments to $facet must be arrays, %s is type %s",
			e.Key, typeNameOf(e.Value))
	}
	if len(stages) == 0 {
		return nil, mongoerr.New(mongoerr.BadValue, "sub-pipeline in $facet stage cannot be empty")
	}
	for i, st := range stages {
		if d, ok := st.(bson.D); !ok || len(d) == 0 {
			return nil, mongoerr.Newf(mongoerr.Location40171,
				"elements of arrays in $facet spec must be non-empty objects, %s argument contained an element of type %s: %d",
				e.Key, typeNameOf(st), i)
		}
	}
	sub := &Pipeline{opt: opt}
	return sub, sub.parseStages(stages, "$facet")
}

func (f *facetStage) run(in Iterator, rc *runCtx) (Iterator, error) {
	docs, err := drain(in, rc, "$facet")
	if err != nil {
		return nil, err
	}
	out := make(bson.D, len(f.subs))
	for i, sub := range f.subs {
		it, err := sub.runWith(&sliceIter{docs: docs}, rc)
		if err != nil {
			return nil, err
		}
		res, err := drain(it, rc, "$facet")
		if err != nil {
			return nil, err
		}
		arr := make(bson.A, len(res))
		for j, r := range res {
			arr[j] = r
		}
		out[i] = bson.E{Key: f.names[i], Value: arr}
	}
	return &sliceIter{docs: []bson.D{out}}, nil
}

// collStatsStage is $collStats; the command layer computes the answer.
type collStatsStage struct{ spec bson.D }

// collStatsFields are the options $collStats accepts.
var collStatsFields = map[string]bool{"latencyStats": true, "storageStats": true, "count": true, "queryExecStats": true}

func parseCollStats(spec any, _ Options) (stage, error) {
	d, ok := spec.(bson.D)
	if !ok {
		return nil, mongoerr.Newf(mongoerr.Location5447000, "$collStats must take a nested object but found: $collStats: %s",
			bsonutil.Format(spec))
	}
	for _, e := range d {
		if !collStatsFields[e.Key] {
			return nil, mongoerr.Newf(mongoerr.Location40415, "BSON field '$collStats.%s' is an unknown field.", e.Key)
		}
	}
	return &collStatsStage{spec: d}, nil
}

func (s *collStatsStage) run(in Iterator, rc *runCtx) (Iterator, error) {
	in.Close()
	doc, err := rc.env.CollStats(s.spec)
	if err != nil {
		return nil, err
	}
	return &sliceIter{docs: []bson.D{doc}}, nil
}

// documentsStage is $documents: literal documents replace the input.
type documentsStage struct{ e *expr.Expr }

func parseDocuments(spec any, _ Options) (stage, error) {
	e, err := expr.Compile(spec)
	if err != nil {
		return nil, err
	}
	return &documentsStage{e: e}, nil
}

func (s *documentsStage) run(in Iterator, rc *runCtx) (Iterator, error) {
	in.Close()
	v, err := s.e.Eval(bson.D{}, rc.variables())
	if err != nil {
		return nil, err
	}
	arr, ok := v.(bson.A)
	if !ok {
		return nil, mongoerr.New(mongoerr.Location5858203, "error during $documents stage: $documents must evaluate to an array of objects")
	}
	docs := make([]bson.D, len(arr))
	for i, x := range arr {
		if docs[i], ok = x.(bson.D); !ok {
			return nil, mongoerr.New(mongoerr.Location5858203, "error during $documents stage: $documents must evaluate to an array of objects")
		}
	}
	return &sliceIter{docs: docs}, nil
}
