package executor

import (
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/aggregate"
	"github.com/mayflydb/mayfly/internal/clock"
	"github.com/mayflydb/mayfly/internal/collation"
	"github.com/mayflydb/mayfly/internal/cursor"
	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/query"
)

// SortMemoryLimit is MongoDB's internalQueryMaxBlockingSortMemoryUsageBytes.
const SortMemoryLimit = 100 * 1024 * 1024

// Plan is an operation's planned scan and the stages above it. A find's
// stages are an aggregate pipeline (composed by PlanFind) whose run counts
// what each stage did; the stages of other commands (COUNT, UPDATE,
// DELETE, the SORT of a single-document write) are pushed with Push and
// their counters set by the command.
type Plan struct {
	op      *Op
	c       *docstore.Collection
	filter  *query.Filter
	plan    *docstore.Plan
	scan    *docstore.DocIter
	express bool
	pipe    *aggregate.Pipeline
	run     *aggregate.Execution
	stages  []*aggregate.StageRun // bottom up
	clock   clock.Clock           // the steady clock, for executionTimeMillis
	started time.Time
}

// PlanScan plans the scan of c (nil: a collection that does not exist)
// for q, whose compiled filter is f.
func (e *Executor) PlanScan(op *Op, c *docstore.Collection, f *query.Filter, q docstore.Query) (*Plan, error) {
	p := &Plan{op: op, c: c, filter: f, clock: e.steady, started: e.steady.Now()}
	if c == nil {
		return p, nil
	}
	plan, err := c.Plan(q)
	if err != nil {
		return nil, err
	}
	p.plan = plan
	return p, nil
}

// Start opens the scan; a missing collection yields nothing.
func (p *Plan) Start() cursor.Source {
	if p.plan == nil {
		return emptySource{}
	}
	p.scan = p.c.Scan(p.plan, p.filter).WithContext(p.op.Ctx).Within(p.op.Txn)
	return p.scan
}

// Scan is the scan Start opened, nil before.
func (p *Plan) Scan() *docstore.DocIter { return p.scan }

// Collection is the collection scanned, nil when it does not exist.
func (p *Plan) Collection() *docstore.Collection { return p.c }

// Push adds a stage that passes nothing on (COUNT, UPDATE, DELETE) or
// whose counters the command sets (a single-document write's SORT).
func (p *Plan) Push(name string, details bson.D) *aggregate.StageRun {
	st := &aggregate.StageRun{Name: name, Spec: details, EOF: true}
	p.stages = append(p.stages, st)
	return st
}

// FindSpec is what a find reads, parsed.
type FindSpec struct {
	Filter   *query.Filter
	Sort     *query.Sort // nil: none
	SortSpec bson.D
	// Project is the projection step (nil: none): the caller's, which may
	// refresh a document before reshaping it.
	Project     func(bson.D) (bson.D, error)
	ProjSpec    bson.D
	Skip, Limit int64
	Hint        any
	AllowDisk   bool
	Collation   *collation.Collation
}

// PlanFind plans a find and lays out its stages as MongoDB does: SORT
// (with skip+limit as its limit) unless the index provides the order, then
// SKIP, LIMIT (folded into SORT when there is one) and PROJECTION. The
// stages are an aggregate pipeline over the planned scan.
func (e *Executor) PlanFind(op *Op, c *docstore.Collection, s *FindSpec) (*Plan, error) {
	q := docstore.Query{Filter: s.Filter, Sort: s.SortSpec, Hint: s.Hint}
	if s.Collation != nil {
		// Index order is binary order: it sorts no collated strings.
		q.Sort = nil
	}
	p, err := e.PlanScan(op, c, s.Filter, q)
	if err != nil {
		return nil, err
	}
	var steps []aggregate.Step
	sorted := s.Sort != nil && !s.Sort.IsEmpty() && p.plan != nil && (!p.plan.SortProvided || s.Collation != nil)
	if sorted {
		steps = append(steps, p.findSortStep(s))
	}
	if s.Skip > 0 {
		steps = append(steps, aggregate.SkipStep("SKIP", bson.D{{Key: "skipAmount", Value: docstore.Num(s.Skip)}}, s.Skip))
	}
	// A read of one _id returns at most one document: limit 1 is moot.
	point := p.plan != nil && p.plan.PointLookup()
	if s.Limit > 0 && !sorted && !(point && s.Limit == 1) {
		steps = append(steps, aggregate.LimitStep("LIMIT", bson.D{{Key: "limitAmount", Value: docstore.Num(s.Limit)}}, s.Limit))
	}
	if s.Project != nil {
		steps = append(steps, aggregate.MapStep(projectionStage(s.ProjSpec), bson.D{{Key: "transformBy", Value: s.ProjSpec}}, s.Project))
	}
	p.pipe = aggregate.Compose(aggregate.Options{AllowDiskUse: s.AllowDisk}, steps...)
	p.express = point && len(steps) == 0
	return p, nil
}

// findSortStep is find's SORT: a top-k sort when a limit follows, under
// find's memory limit, and on a TTL collection the sorted documents are
// re-checked for expiry as a cursor hands them out.
func (p *Plan) findSortStep(s *FindSpec) aggregate.Step {
	keep := int64(0)
	if s.Limit > 0 {
		keep = s.Skip + s.Limit
	}
	var then func(aggregate.Iterator) aggregate.Iterator
	if p.c.HasTTL() && p.op.Live != nil {
		then = func(in aggregate.Iterator) aggregate.Iterator { return p.op.Live.Recheck(p.c, in) }
	}
	return aggregate.SortStep("SORT", sortDetails(s), s.Sort, keep, SortCheck(p.op.Check, s.AllowDisk), then)
}

func sortDetails(s *FindSpec) bson.D {
	d := bson.D{
		{Key: "sortPattern", Value: s.SortSpec},
		{Key: "memLimit", Value: int32(SortMemoryLimit)},
	}
	if s.Limit > 0 {
		d = append(d, bson.E{Key: "limitAmount", Value: docstore.Num(s.Skip + s.Limit)})
	}
	return append(d, bson.E{Key: "type", Value: "simple"})
}

// projectionStage: PROJECTION_SIMPLE for inclusions or exclusions of
// top-level fields, PROJECTION_DEFAULT for anything more.
func projectionStage(spec bson.D) string {
	for _, e := range spec {
		switch e.Value.(type) {
		case bool, int32, int64, float64:
		default:
			return "PROJECTION_DEFAULT"
		}
		if strings.ContainsAny(e.Key, ".$") {
			return "PROJECTION_DEFAULT"
		}
	}
	return "PROJECTION_SIMPLE"
}

// PlanAggregate plans the scan under a pipeline: its leading $match
// filters the scan through an index, and its leading $sort (first, or
// right after that $match) is provided by the index when one can. It
// reports whether the $sort is provided, so the caller can leave it out.
func (e *Executor) PlanAggregate(op *Op, c *docstore.Collection, pipe *aggregate.Pipeline, coll *collation.Collation, hint any) (*Plan, bool, error) {
	if pipe.StartsWithCollStats() {
		c = nil
	}
	var f *query.Filter
	if m := pipe.LeadingMatch(); m != nil {
		// The $match stage's compiled filter when it is the whole of m:
		// a large filter is then compiled, and held by a cursor, once.
		if f = pipe.LeadingMatchFilter(); f == nil {
			var err error
			if f, err = Filter(m, nil, coll); err != nil {
				return nil, false, err
			}
		}
	}
	sortSpec := pipe.LeadingSort()
	if coll != nil {
		sortSpec = nil // index order is binary order
	}
	p, err := e.PlanScan(op, c, f, docstore.Query{Filter: f, Sort: sortSpec, Hint: hint})
	if err != nil {
		return nil, false, err
	}
	return p, sortSpec != nil && p.plan != nil && p.plan.SortProvided, nil
}

// LeadingSortIndex is the position of a pipeline's leading $sort: first,
// or right after a leading $match.
func LeadingSortIndex(stages bson.A) int {
	if len(stages) > 0 && FirstKey(stages[0]) == "$match" {
		return 1
	}
	return 0
}

// FirstKey is a stage's name: the first key of its document.
func FirstKey(stage any) string {
	if d, ok := stage.(bson.D); ok && len(d) > 0 {
		return d[0].Key
	}
	return ""
}
