package executor

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/aggregate"
	"github.com/mayflydb/mayfly/internal/collation"
	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/query"
)

// Verbosity is how much explain tells.
type Verbosity int

// The verbosities of explain, in mongod's order.
const (
	QueryPlannerOnly Verbosity = iota
	ExecutionStats
	AllPlansExecution
)

// Explained is what one explained operation reports.
type Explained struct {
	ns       string
	parsed   bson.D
	planner  bson.D // winningPlan
	exec     bson.D // executionStages; nil when not executed
	returned int64
	keys     int64
	docs     int64
	millis   int64
	// Stages, when set, is an aggregate's explain: the pipeline with its
	// first stage a $cursor holding the query part.
	Stages bson.A
}

// QueryPlanner is explain's queryPlanner section.
func (ex *Explained) QueryPlanner() bson.D {
	return bson.D{
		{Key: "namespace", Value: ex.ns},
		{Key: "parsedQuery", Value: ex.parsed},
		{Key: "indexFilterSet", Value: false},
		{Key: "optimizationTimeMillis", Value: int32(0)},
		{Key: "maxIndexedOrSolutionsReached", Value: false},
		{Key: "maxIndexedAndSolutionsReached", Value: false},
		{Key: "maxScansToExplodeReached", Value: false},
		{Key: "prunedSimilarIndexes", Value: false},
		{Key: "winningPlan", Value: cached(ex.planner)},
		{Key: "rejectedPlans", Value: bson.A{}},
	}
}

// cached marks the top stage as not taken from the plan cache: Mayfly
// plans every query afresh.
func cached(stage bson.D) bson.D {
	return append(bson.D{{Key: "isCached", Value: false}}, stage...)
}

// ExecutionStats is explain's executionStats section at verbosity v.
func (ex *Explained) ExecutionStats(v Verbosity) bson.D {
	out := bson.D{
		{Key: "executionSuccess", Value: true},
		{Key: "nReturned", Value: docstore.Num(ex.returned)},
		{Key: "executionTimeMillis", Value: docstore.Num(ex.millis)},
		{Key: "totalKeysExamined", Value: docstore.Num(ex.keys)},
		{Key: "totalDocsExamined", Value: docstore.Num(ex.docs)},
		{Key: "executionStages", Value: cached(ex.exec)},
	}
	if v == AllPlansExecution {
		out = append(out, bson.E{Key: "allPlansExecution", Value: bson.A{}})
	}
	return out
}

// Explained renders the plan, and with executed the counters of the run.
func (p *Plan) Explained(ns string, executed bool) *Explained {
	out := &Explained{ns: ns, parsed: query.ParsedQuery(p.filter), planner: p.tree(false, 0)}
	if !executed {
		return out
	}
	out.millis = p.clock.Now().Sub(p.started).Milliseconds()
	out.exec = p.tree(true, out.millis)
	if p.scan != nil {
		out.keys, out.docs = p.scan.Stats.KeysExamined, p.scan.Stats.DocsExamined
	}
	out.returned = p.returned()
	return out
}

// allStages are the stages above the scan: the find pipeline's, with the
// counters of its run when it ran, then the pushed ones.
func (p *Plan) allStages() []*aggregate.StageRun {
	var out []*aggregate.StageRun
	switch {
	case p.run != nil:
		out = p.run.Stages()
	case p.pipe != nil:
		out = p.pipe.Planned()
	}
	return append(append([]*aggregate.StageRun(nil), out...), p.stages...)
}

func (p *Plan) returned() int64 {
	n := p.ScanReturned()
	for _, st := range p.allStages() {
		n = st.Out
	}
	return n
}

// ScanReturned is how many documents the scan has passed on.
func (p *Plan) ScanReturned() int64 {
	if p.scan == nil {
		return 0
	}
	return p.scan.Stats.Returned
}

// tree nests the stages over the scan, top first.
func (p *Plan) tree(executed bool, millis int64) bson.D {
	doc := p.leaf(executed, millis)
	in := p.ScanReturned()
	for _, st := range p.allStages() {
		doc = describeStage(st, doc, executed, in, millis)
		in = st.Out
	}
	return doc
}

func (p *Plan) leaf(executed bool, millis int64) bson.D {
	switch {
	case p.plan == nil:
		return eofStage(executed)
	case executed && p.scan != nil:
		return scanStage(p.scan.Plan(), p.filter, p.express, &execView{s: p.scan.Stats, millis: millis})
	}
	return scanStage(p.plan, p.filter, p.express, nil)
}

// eofStage stands for a scan of a collection that does not exist.
func eofStage(executed bool) bson.D {
	out := bson.D{{Key: "stage", Value: "EOF"}}
	if executed {
		out = append(out, stageCounters(0, 0, true, 0)...)
	}
	return append(out, bson.E{Key: "type", Value: "nonExistentNamespace"})
}

// describeStage renders one stage in find's explain shape: its name,
// with executed its counters over the in documents it was given, its
// details, what it measured, and the stage below.
func describeStage(st *aggregate.StageRun, input bson.D, executed bool, in, millis int64) bson.D {
	out := bson.D{{Key: "stage", Value: st.Name}}
	if executed {
		out = append(out, stageCounters(st.Out, in, st.EOF, millis)...)
	}
	if d, ok := st.Spec.(bson.D); ok {
		out = append(out, d...)
	}
	if executed {
		for _, e := range st.Exec {
			if n, isLong := e.Value.(int64); isLong {
				e.Value = docstore.Num(n)
			}
			out = append(out, e)
		}
	}
	return append(out, bson.E{Key: "inputStage", Value: input})
}

// stageCounters are the counters of a stage that returned n of the in
// documents it was given.
func stageCounters(n, in int64, eof bool, millis int64) bson.D {
	works, isEOF := in, int32(0)
	if eof {
		works, isEOF = in+1, 1
	}
	return bson.D{
		{Key: "nReturned", Value: docstore.Num(n)},
		{Key: "executionTimeMillisEstimate", Value: docstore.Num(millis)},
		{Key: "works", Value: docstore.Num(works)},
		{Key: "advanced", Value: docstore.Num(n)},
		{Key: "needTime", Value: docstore.Num(max(works-n-int64(isEOF), 0))},
		{Key: "needYield", Value: int32(0)},
		{Key: "saveState", Value: int32(0)},
		{Key: "restoreState", Value: int32(0)},
		{Key: "isEOF", Value: isEOF},
	}
}

// ExplainFind plans a find of c and explains it, running it to its end
// unless v is QueryPlannerOnly.
func (e *Executor) ExplainFind(op *Op, c *docstore.Collection, s *FindSpec, ns string, v Verbosity) (*Explained, error) {
	p, err := e.PlanFind(op, c, s)
	if err != nil {
		return nil, err
	}
	if v == QueryPlannerOnly {
		return p.Explained(ns, false), nil
	}
	run, err := p.RunFind()
	if err != nil {
		return nil, err
	}
	defer run.Close()
	if err := op.Drain(run); err != nil {
		return nil, err
	}
	return p.Explained(ns, true), nil
}

// CountQuery is a count command's query, parsed.
type CountQuery struct {
	Query     bson.D
	Hint      any
	Collation *collation.Collation
	// Counted gives COUNT's own counters for n matching documents.
	Counted func(n int64) bson.D
}

// ExplainCount explains a count of c: from the collection's counter when
// Count would answer from it, else a scan under a COUNT stage.
func (e *Executor) ExplainCount(op *Op, c *docstore.Collection, q *CountQuery, ns string, v Verbosity) (*Explained, error) {
	if c != nil && e.fastCount(c, q.Query, q.Hint) {
		return fastCountExplain(ns, q.Counted(c.Count()), v), nil
	}
	f, err := Filter(q.Query, nil, q.Collation)
	if err != nil {
		return nil, err
	}
	p, err := e.PlanScan(op, c, f, docstore.Query{Filter: f, Hint: q.Hint})
	if err != nil {
		return nil, err
	}
	st := p.Push("COUNT", nil)
	return p.ExplainAll(ns, v, func() { st.Exec = q.Counted(p.ScanReturned()) })
}

// fastCountExplain is a count answered from the collection's counter.
func fastCountExplain(ns string, counted bson.D, v Verbosity) *Explained {
	stage := bson.D{{Key: "stage", Value: "RECORD_STORE_FAST_COUNT"}}
	out := &Explained{ns: ns, parsed: bson.D{}, planner: stage}
	if v == QueryPlannerOnly {
		return out
	}
	out.exec = append(append(append(bson.D{}, stage...), stageCounters(0, 0, true, 0)...), counted...)
	return out
}

// ExplainAll explains a plan whose stages pass everything the scan finds;
// afterDrain, when set, fills in execution details once the scan is done.
func (p *Plan) ExplainAll(ns string, v Verbosity, afterDrain func()) (*Explained, error) {
	if v == QueryPlannerOnly {
		return p.Explained(ns, false), nil
	}
	src := p.Start()
	defer src.Close()
	if err := p.op.Drain(src); err != nil {
		return nil, err
	}
	if afterDrain != nil {
		afterDrain()
	}
	return p.Explained(ns, true), nil
}

// ExplainPipeline explains pipe over the planned scan p, running it to its
// end unless v is QueryPlannerOnly.
func (p *Plan) ExplainPipeline(pipe *aggregate.Pipeline, ns string, v Verbosity) (*Explained, error) {
	executed := v >= ExecutionStats
	stages := pipe.Planned()
	if executed {
		run, err := p.runPipeline(pipe)
		if err != nil {
			return nil, err
		}
		stages = run.Stages()
	}
	ex := p.Explained(ns, executed)
	ex.Stages = aggregateStages(ex, stages, p.ScanReturned(), executed, v)
	return ex, nil
}

// aggregateStages lays out an aggregate's explain: a $cursor stage for
// the scan, with a leading $match folded in, then the pipeline's stages
// with their counters. It is nil when the scan answers the whole pipeline
// (the explain is then a find's).
func aggregateStages(ex *Explained, stages []*aggregate.StageRun, scanned int64, executed bool, v Verbosity) bson.A {
	cursorOut := scanned
	if len(stages) > 0 && stages[0].Name == "$match" {
		cursorOut = stages[0].Out
		stages = stages[1:]
	}
	if len(stages) == 0 {
		return nil
	}
	cur := bson.D{{Key: "queryPlanner", Value: ex.QueryPlanner()}}
	first := bson.D{{Key: "$cursor", Value: cur}}
	if executed {
		first[0].Value = append(cur, bson.E{Key: "executionStats", Value: ex.ExecutionStats(v)})
		first = append(first,
			bson.E{Key: "nReturned", Value: cursorOut},
			bson.E{Key: "executionTimeMillisEstimate", Value: ex.millis})
	}
	out := bson.A{first}
	for _, st := range stages {
		if !st.Absorbed {
			out = append(out, st.Explain(executed, ex.millis))
		}
	}
	return out
}
