// Package aggregate parses and runs MongoDB aggregation pipelines.
//
// Parse validates every stage up front, with MongoDB's error codes and
// messages, so a bad pipeline fails before any document is read. Run then
// chains the stages as iterators: streaming stages ($match, $project,
// $unwind, $lookup, ...) pass documents through one at a time, blocking
// stages ($sort, $group, $facet, ...) hold their input in memory under a
// per-stage memory limit, as MongoDB does without disk spilling.
//
// Expressions are evaluated by internal/expr and filters by internal/query.
package aggregate

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/expr"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/query"
)

// Env is what a running pipeline needs from the database around it.
type Env interface {
	// Collection streams the documents of another collection of the same
	// database (for $lookup); the caller's store applies its own visibility
	// rules (e.g. expired TTL documents are invisible).
	Collection(name string) (Iterator, error)
	// CollStats answers a $collStats stage for the pipeline's collection.
	CollStats(spec bson.D) (bson.D, error)
	// Now is the time $$NOW reads.
	Now() time.Time
}

// Iterator is a stream of documents. Next returns ok=false at the end.
type Iterator interface {
	Next() (doc bson.D, ok bool, err error)
	Close() error
}

// defaultMemoryLimit is MongoDB's per-stage limit for blocking stages.
const defaultMemoryLimit = 100 << 20

// Options are the aggregate command's options that shape a pipeline.
type Options struct {
	// AllowDiskUse lets blocking stages exceed MemoryLimitBytes. Mayfly
	// does not spill to disk: such stages simply keep going in memory.
	AllowDiskUse bool
	// MemoryLimitBytes bounds each blocking stage; 0 means 100 MiB.
	MemoryLimitBytes int64
	// Let defines variables ($$name) visible to the whole pipeline.
	Let bson.D
	// Collation, when set, is the command's non-simple collation (see
	// collation.go for the stages that apply it).
	Collation query.Collator
}

func (o Options) memoryLimit() int64 {
	if o.MemoryLimitBytes > 0 {
		return o.MemoryLimitBytes
	}
	return defaultMemoryLimit
}

// Pipeline is a parsed pipeline. It is immutable and may be run many times.
type Pipeline struct {
	stages []stage
	names  []string
	specs  []bson.E // each stage's argument as explain shows it
	// absorbed marks a stage explain folds into the one before it (a
	// $limit into the $sort it bounds).
	absorbed []bool
	opt      Options
	let      []letVar
}

// stage is one parsed stage. run takes ownership of in: it returns an
// iterator that closes in, or closes in itself before returning an error.
type stage interface {
	run(in Iterator, rc *runCtx) (Iterator, error)
}

// runCtx is the state shared by the stages of one run.
type runCtx struct {
	env Env
	// vars are the run's variables, nil until variables makes them.
	vars map[string]any
	// now is $$NOW, one instant for the whole run.
	now bson.DateTime
	opt Options
	// guard ends the run when the operation ends; nil runs to the end.
	guard *expr.Guard
	// cur is the counters of the stage being started, where a blocking
	// stage records what it did (bytes sorted, ...).
	cur *StageRun
	// specs keeps each stage's argument in its record (explain's runs).
	specs bool
}

// letVar is one variable of Options.Let, evaluated once per run.
type letVar struct {
	name string
	e    *expr.Expr
}

// Parse validates stages and returns the pipeline.
func Parse(stages bson.A, opt Options) (*Pipeline, error) {
	p := &Pipeline{opt: opt}
	let, err := parseLet(opt.Let)
	if err != nil {
		return nil, err
	}
	p.let = let
	if err := p.parseStages(stages, ""); err != nil {
		return nil, err
	}
	return p, nil
}

// parseStages fills p from the stage list. within names the stage whose
// sub-pipeline this is ("$facet", "$lookup", "$unionWith"), "" at the top.
func (p *Pipeline) parseStages(stages bson.A, within string) error {
	for i, raw := range stages {
		spec, err := stageSpec(raw)
		if err != nil {
			return err
		}
		if err := checkPlacement(spec.Key, i, within); err != nil {
			return err
		}
		if within == "" {
			if err := checkStageVars(spec, p.opt.Let); err != nil {
				return err
			}
		}
		s, err := parseStage(spec, p.opt)
		if err != nil {
			return fmt.Errorf("parsing pipeline stage %d (%s): %w", i, spec.Key, err)
		}
		p.stages = append(p.stages, s)
		p.names = append(p.names, spec.Key)
		p.specs = append(p.specs, spec)
	}
	p.explainSpecs()
	p.fuseSortLimit()
	return nil
}

// stageSpec checks that a stage is a one-field document.
func stageSpec(raw any) (bson.E, error) {
	d, ok := raw.(bson.D)
	if !ok || len(d) != 1 {
		return bson.E{}, mongoerr.New(mongoerr.Location40323, "A pipeline stage specification object must contain exactly one field.")
	}
	return d[0], nil
}

// firstOnly are the stages that must start a pipeline.
// ($changeStream runs in the commands layer, which takes it off the front
// of the pipeline; anywhere else it is misplaced.)
var firstOnly = map[string]bool{"$collStats": true, "$documents": true, "$listLocalSessions": true, "$changeStream": true}

func checkPlacement(name string, i int, within string) error {
	switch {
	case within == "$facet" && (name == "$facet" || firstOnly[name]):
		return mongoerr.Newf(mongoerr.Location40600, "%s is not allowed to be used within a $facet stage", name)
	case within != "" && name == "$collStats":
		return mongoerr.Newf(mongoerr.Location51047, "%s is not allowed to be used within a %s stage", name, within)
	}
	if firstOnly[name] && i != 0 {
		return mongoerr.Newf(mongoerr.Location40602, "%s is only valid as the first stage in a pipeline.", name)
	}
	return nil
}

// parseStage dispatches on the stage name.
func parseStage(spec bson.E, opt Options) (stage, error) {
	parse, ok := stageParsers()[spec.Key]
	if refuse, atlas := atlasSearchStages()[spec.Key]; !ok && atlas {
		return nil, refuse()
	}
	if !ok {
		return nil, unrecognizedStage(spec.Key)
	}
	return parse(spec.Value, opt)
}

func unrecognizedStage(name string) error {
	return mongoerr.Newf(mongoerr.Location40324, "Unrecognized pipeline stage name: '%s'", name)
}

// LiteParse refuses the first stage that is not a one-field document or
// that no part of Mayfly knows, as mongod's LiteParsedPipeline does
// before any check of a stage's arguments or of where it may stand.
func LiteParse(stages bson.A) error {
	known := apiStrictRules() // it has every stage
	for _, raw := range stages {
		spec, ok := raw.(bson.D)
		if !ok {
			continue // the command's own parse refuses it
		}
		if _, err := stageSpec(spec); err != nil {
			return err
		}
		if _, ok := known[spec[0].Key]; !ok {
			return unrecognizedStage(spec[0].Key)
		}
	}
	return nil
}

type stageParser func(spec any, opt Options) (stage, error)

// StageNames lists every stage Parse accepts, sorted: tests hold tables
// over the whole class against it.
func StageNames() []string { return slices.Sorted(maps.Keys(stageParsers())) }

// stageParsers is the table of supported stages. Stages MongoDB has but
// Mayfly does not ($geoNear, $search, ...) are absent and so fail as
// unrecognized, never silently ignored. $changeStream is absent too: the
// commands layer runs it (internal/changestream).
func stageParsers() map[string]stageParser {
	return map[string]stageParser{
		"$match":       parseMatch,
		"$project":     parseProject,
		"$addFields":   parseAddFields("$addFields"),
		"$set":         parseAddFields("$set"),
		"$unset":       parseUnset,
		"$sort":        parseSort,
		"$skip":        parseSkip,
		"$limit":       parseLimit,
		"$group":       parseGroup,
		"$count":       parseCount,
		"$sortByCount": parseSortByCount,
		"$unwind":      parseUnwind,
		"$lookup":      parseLookup,
		"$replaceRoot": parseReplaceRoot,
		"$replaceWith": parseReplaceWith,
		"$facet":       parseFacet,
		"$collStats":   parseCollStats,
		"$documents":   parseDocuments,
		"$bucket":      parseBucket,
		"$unionWith":   parseUnionWith,
		"$sample":      parseSample,
		// $listLocalSessions runs in {aggregate: 1}, which the command
		// layer answers; on a collection it is mongod's error.
		"$listLocalSessions": func(any, Options) (stage, error) {
			return nil, mongoerr.New(mongoerr.InvalidNamespace, "$listLocalSessions must be run against the database with {aggregate: 1}, not a collection")
		},
	}
}

// parseLet compiles the pipeline-level let variables.
func parseLet(let bson.D) ([]letVar, error) {
	out := make([]letVar, 0, len(let))
	for _, e := range let {
		if err := expr.ValidateVarName(e.Key); err != nil {
			return nil, err
		}
		x, err := expr.Compile(e.Value)
		if err != nil {
			return nil, err
		}
		out = append(out, letVar{name: e.Key, e: x})
	}
	return out, nil
}

// LeadingMatch returns the filter of a leading $match, so the caller can
// narrow its scan with an index; nil if the pipeline does not start with
// one. The $match stage still runs on whatever the caller feeds in.
//
// $expr clauses are left out: they may read variables ($$NOW, let) that
// only the pipeline binds, and dropping a conjunct only widens the scan.
func (p *Pipeline) LeadingMatch() bson.D {
	if len(p.names) > 0 && p.names[0] == "$match" {
		return pushdownFilter(p.stages[0].(*matchStage).spec)
	}
	return nil
}

// LeadingMatchFilter is the compiled filter of a leading $match without
// $expr, which is then the whole of LeadingMatch: a caller narrowing its
// scan with it shares the stage's compiled filter instead of compiling
// the same (possibly very large) filter a second time. nil otherwise.
func (p *Pipeline) LeadingMatchFilter() *query.Filter {
	if len(p.names) == 0 || p.names[0] != "$match" {
		return nil
	}
	if m := p.stages[0].(*matchStage); !m.hasExpr {
		return m.filter
	}
	return nil
}

// Len is the number of stages.
func (p *Pipeline) Len() int { return len(p.stages) }

// WithoutStage returns the pipeline without its stage at position i (a
// $sort the caller's index scan provides), sharing the other stages, so
// that nothing is parsed twice; p itself is unchanged. An i out of range
// gives p.
func (p *Pipeline) WithoutStage(i int) *Pipeline {
	if i < 0 || i >= len(p.stages) {
		return p
	}
	out := *p
	out.stages = slices.Delete(slices.Clone(p.stages), i, i+1)
	out.names = slices.Delete(slices.Clone(p.names), i, i+1)
	out.specs = slices.Delete(slices.Clone(p.specs), i, i+1)
	if len(p.absorbed) == len(p.stages) {
		// A $limit the removed $sort absorbed stands on its own again.
		absorbed := slices.Clone(p.absorbed)
		if i+1 < len(absorbed) {
			absorbed[i+1] = false
		}
		out.absorbed = slices.Delete(absorbed, i, i+1)
	}
	return &out
}

// LeadingSort returns the $sort spec that comes first, or right after a
// leading $match; nil if there is none.
func (p *Pipeline) LeadingSort() bson.D {
	i := 0
	if len(p.names) > 0 && p.names[0] == "$match" {
		i = 1
	}
	if i < len(p.names) && p.names[i] == "$sort" {
		return p.stages[i].(*sortStage).spec
	}
	return nil
}

// StartsWithCollStats reports whether the first stage is $collStats, whose
// output does not depend on the collection's documents.
func (p *Pipeline) StartsWithCollStats() bool {
	return len(p.names) > 0 && p.names[0] == "$collStats"
}

// Run streams input through the pipeline. The returned iterator owns
// input and closes it.
// Its stages' records carry no arguments: a cursor made from it may live
// for minutes, and a stage's argument can be megabytes (a $match with a
// large $in) that only explain shows.
func (p *Pipeline) Run(input Iterator, env Env) (Iterator, error) {
	ex, err := p.begin(input, env, false)
	if err != nil {
		return nil, err
	}
	return ex, nil
}

// Start is Run that also gives each stage's counters and argument (for
// explain).
func (p *Pipeline) Start(input Iterator, env Env) (*Execution, error) {
	return p.begin(input, env, true)
}

func (p *Pipeline) begin(input Iterator, env Env, specs bool) (*Execution, error) {
	rc := &runCtx{env: env, opt: p.opt, specs: specs, now: bson.NewDateTimeFromTime(env.Now())}
	if g, ok := env.(interface{ Guard() *expr.Guard }); ok {
		rc.guard = g.Guard()
	}
	if len(p.let) > 0 {
		vars := rc.variables()
		for _, v := range p.let {
			val, err := v.e.Eval(bson.D{}, vars)
			if err != nil {
				input.Close()
				return nil, err
			}
			vars[v.name] = val
		}
	}
	return p.start(input, rc)
}

// variables returns the run's variables ($$NOW, let's), with its guard and
// collation for the expressions that read them, made on first use: most
// of find's pipelines evaluate no expression.
func (rc *runCtx) variables() map[string]any {
	if rc.vars == nil {
		rc.vars = map[string]any{"NOW": rc.now}
		if rc.guard != nil {
			rc.vars = expr.WithGuard(rc.vars, rc.guard)
		}
		if rc.opt.Collation != nil {
			rc.vars = expr.WithCollation(rc.vars, rc.opt.Collation)
		}
	}
	return rc.vars
}

// runWith chains the stages over in (a sub-pipeline's run).
func (p *Pipeline) runWith(in Iterator, rc *runCtx) (Iterator, error) {
	sub := *rc // the sub-pipeline's stages keep their own counters
	ex, err := p.start(in, &sub)
	if err != nil {
		return nil, err
	}
	return ex, nil
}

func wrapStageErr(name string, err error) error {
	return fmt.Errorf("%s stage: %w", name, err)
}
