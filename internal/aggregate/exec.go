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
	// room holds the counters and iterators of a short pipeline (find's
	// are one or two stages), so that starting one allocates once.
	room execRoom
}

// smallPipeline is the most stages an Execution or a composed Pipeline
// keeps in its own allocation; longer ones allocate the rest.
const smallPipeline = 3

type execRoom struct {
	runs    [smallPipeline]StageRun
	runPtrs [smallPipeline]*StageRun
	iters   [smallPipeline + 1]countIter
	used    int // of runs
	counted int // of iters
}

// stageRun returns stage i's counters, from the room while it lasts.
func (e *Execution) stageRun(p *Pipeline, i int) *StageRun {
	if e.room.used == len(e.room.runs) {
		r := p.stageRun(i)
		return &r
	}
	r := &e.room.runs[e.room.used]
	e.room.used++
	*r = p.stageRun(i)
	return r
}

// counted returns in counted into run, from the room while it lasts.
func (e *Execution) counted(in Iterator, run *StageRun, guard *expr.Guard) Iterator {
	if e.room.counted == len(e.room.iters) {
		return &countIter{in: in, run: run, guard: guard}
	}
	c := &e.room.iters[e.room.counted]
	e.room.counted++
	*c = countIter{in: in, run: run, guard: guard}
	return c
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
		run := p.stageRun(i)
		out[i] = &run
	}
	return out
}

// stageRun is stage i's record, before it runs.
func (p *Pipeline) stageRun(i int) StageRun {
	return StageRun{Name: p.names[i], Spec: p.specs[i].Value, Absorbed: i < len(p.absorbed) && p.absorbed[i]}
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
	ex.stages = ex.room.runPtrs[:0]
	in = ex.counted(in, ex.input, rc.guard)
	for i, s := range p.stages {
		run := ex.stageRun(p, i)
		if !rc.specs {
			run.Spec = nil
		}
		rc.cur = run
		out, err := s.run(in, rc)
		if err != nil {
			return nil, wrapStageErr(p.names[i], err)
		}
		in = ex.counted(out, run, rc.guard)
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

// composed is a Pipeline with room for a short one's stages.
type composed struct {
	Pipeline
	stages [smallPipeline]stage
	names  [smallPipeline]string
	specs  [smallPipeline]bson.E
}

// Compose builds a pipeline from steps, to be run with Start.
func Compose(opt Options, steps ...Step) *Pipeline {
	room := &composed{Pipeline: Pipeline{opt: opt}}
	p := &room.Pipeline
	if len(steps) <= smallPipeline { // a short pipeline in one allocation
		p.stages, p.names, p.specs = room.stages[:0], room.names[:0], room.specs[:0]
	} else { // each slice in one allocation, not grown
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
