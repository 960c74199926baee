package aggregate

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/expr"
	"github.com/mayflydb/mayfly/internal/query"
)

// One engine runs both aggregate pipelines and find: a find is the
// pipeline [SORT, SKIP, LIMIT, PROJECTION] built by Compose from the Steps
// below, over the same planned scan an aggregate reads. Every run counts
// what each stage took and passed on (StageRun), which is what explain's
// executionStats reports, per stage, for both.

// StageRun is one stage of a pipeline as explain shows it: its name and
// argument, and once run, the documents it took and passed on.
type StageRun struct {
	// Name is "$sort", "$group", ... for a parsed pipeline; find's stage
	// name ("SORT", "PROJECTION_SIMPLE", ...) for a composed one.
	Name string
	// Spec is the stage's argument as parsed, or for a find stage its
	// explain details (sortPattern, skipAmount, ...).
	Spec any
	// In and Out count the documents taken from below and passed on; EOF
	// says the stage reached its end.
	In, Out int64
	EOF     bool
	// Exec holds details known once the stage ran (bytes sorted, ...).
	Exec bson.D
	// Absorbed says explain shows the stage folded into the one before
	// it, as mongod's does (a $limit into its $sort).
	Absorbed bool
}

// Execution is one run of a pipeline: an Iterator over its output that
// also keeps each stage's counters.
type Execution struct {
	out    Iterator
	input  *StageRun // &inputRun
	stages []*StageRun
	// inputRun counts the input, made with the Execution.
	inputRun StageRun
}

// Next returns the pipeline's next document.
func (e *Execution) Next() (bson.D, bool, error) { return e.out.Next() }

// Close closes the pipeline and its input.
func (e *Execution) Close() error { return e.out.Close() }

// Stages returns the counters of each stage, first stage first; In is
// filled from the stage below.
func (e *Execution) Stages() []*StageRun {
	prev := e.input
	for _, s := range e.stages {
		s.In = prev.Out
		prev = s
	}
	return e.stages
}

// InputRead is the number of documents the pipeline read from its input.
func (e *Execution) InputRead() int64 { return e.input.Out }

// Returned is the number of documents the pipeline passed on.
func (e *Execution) Returned() int64 {
	if len(e.stages) == 0 {
		return e.input.Out
	}
	return e.stages[len(e.stages)-1].Out
}

// Planned returns the pipeline's stages without counters, for an explain
// that does not run it.
func (p *Pipeline) Planned() []*StageRun {
	out := make([]*StageRun, len(p.stages))
	for i := range p.stages {
		out[i] = p.stageRun(i)
	}
	return out
}

// stageRun is stage i's record, before it runs.
func (p *Pipeline) stageRun(i int) *StageRun {
	return &StageRun{Name: p.names[i], Spec: p.specs[i].Value, Absorbed: i < len(p.absorbed) && p.absorbed[i]}
}

// countIter is what every stage's output, and the pipeline's input, pass
// through: it counts the documents into run, and before each one looks at
// the operation's guard. So every stage, whatever it does with its input,
// stops between two documents it emits once the operation ends.
type countIter struct {
	in    Iterator
	run   *StageRun
	guard *expr.Guard
}

func (c *countIter) Next() (bson.D, bool, error) {
	if err := c.guard.Step(); err != nil {
		return nil, false, err
	}
	d, ok, err := c.in.Next()
	if ok {
		c.run.Out++
	} else if err == nil {
		c.run.EOF = true
	}
	return d, ok, err
}

func (c *countIter) Close() error { return c.in.Close() }

// start chains the stages over in, counting each stage's output.
func (p *Pipeline) start(in Iterator, rc *runCtx) (*Execution, error) {
	ex := &Execution{}
	ex.input = &ex.inputRun
	in = &countIter{in: in, run: ex.input, guard: rc.guard}
	for i, s := range p.stages {
		run := p.stageRun(i)
		if !rc.specs {
			run.Spec = nil
		}
		rc.cur = run
		out, err := s.run(in, rc)
		if err != nil {
			return nil, wrapStageErr(p.names[i], err)
		}
		in = &countIter{in: out, run: run, guard: rc.guard}
		ex.stages = append(ex.stages, run)
	}
	ex.out = in
	return ex, nil
}

// Step is a stage built outside Parse, with the name and details its
// explain shows: find's plan is a list of Steps.
type Step struct {
	name    string
	details bson.D
	s       stage
}

// Compose builds a pipeline from steps, to be run with Start.
func Compose(opt Options, steps ...Step) *Pipeline {
	p := &Pipeline{opt: opt}
	if len(steps) > 0 { // each slice in one allocation, not grown
		p.stages = make([]stage, 0, len(steps))
		p.names = make([]string, 0, len(steps))
		p.specs = make([]bson.E, 0, len(steps))
	}
	for _, st := range steps {
		p.stages = append(p.stages, st.s)
		p.names = append(p.names, st.name)
		p.specs = append(p.specs, bson.E{Key: st.name, Value: st.details})
	}
	return p
}

// SortStep sorts its whole input (SortBuffered): keep > 0 holds only the
// best keep documents; check is called with the bytes held and its error
// stops the sort (find's memory limit and interruption). then, when set,
// wraps the sorted output.
func SortStep(name string, details bson.D, s *query.Sort, keep int64, check func(held int64) error, then func(Iterator) Iterator) Step {
	return Step{name: name, details: details, s: &sortStage{sort: s, limit: keep, check: check, then: then, sizeKey: "totalDataSizeSorted"}}
}

// SkipStep passes on its input without the first n documents.
func SkipStep(name string, details bson.D, n int64) Step {
	return Step{name: name, details: details, s: &skipStage{n: n}}
}

// LimitStep passes on at most n documents.
func LimitStep(name string, details bson.D, n int64) Step {
	return Step{name: name, details: details, s: &limitStage{n: n}}
}

// MapStep passes on f of each document (find's projection).
func MapStep(name string, details bson.D, f func(bson.D) (bson.D, error)) Step {
	return Step{name: name, details: details, s: mapStage(f)}
}

// mapStage is a one-to-one transform.
type mapStage func(bson.D) (bson.D, error)

func (m mapStage) run(in Iterator, _ *runCtx) (Iterator, error) {
	return &mapIter{in: in, f: oneToOne(m), name: "projection"}, nil
}

// Explain renders the stage as an aggregate explain lists it: the stage
// and its argument, then, once run, what it measured and its counters.
// millis is the run's time, which Mayfly does not split between stages.
func (s *StageRun) Explain(executed bool, millis int64) bson.D {
	out := bson.D{{Key: s.Name, Value: s.Spec}}
	if !executed {
		return out
	}
	out = append(out, s.Exec...)
	return append(out,
		bson.E{Key: "nReturned", Value: s.Out},
		bson.E{Key: "executionTimeMillisEstimate", Value: millis})
}
