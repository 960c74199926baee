package commands

import (
	"context"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/aggregate"
	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/clock"
	"github.com/mayflydb/mayfly/internal/collation"
	"github.com/mayflydb/mayfly/internal/cursor"
	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/query"
)

// verbosity is how much explain tells.
type verbosity int

const (
	queryPlannerOnly verbosity = iota
	executionStats
	allPlansExecution
)

// explained is what one explained operation reports.
type explained struct {
	ns       string
	parsed   bson.D
	planner  bson.D // winningPlan
	exec     bson.D // executionStages; nil when not executed
	returned int64
	keys     int64
	docs     int64
	millis   int64
	// stages, when set, is an aggregate's explain: the pipeline with its
	// first stage a $cursor holding the query part.
	stages bson.A
}

func cmdExplain(h *Handler, r *request) (bson.D, error) {
	inner, ok := r.body[0].Value.(bson.D)
	if !ok || len(inner) == 0 {
		return nil, mongoerr.New(mongoerr.BadValue, "explain command requires a nested object")
	}
	if err := checkFields(r, "verbosity"); err != nil {
		return nil, err
	}
	v, err := explainVerbosity(r)
	if err != nil {
		return nil, err
	}
	if err := checkInnerDB(r, inner); err != nil {
		return nil, err
	}
	ir := &request{ctx: r.ctx, conn: r.conn, db: r.db, name: inner[0].Key, body: withoutDB(inner)}
	ex, err := h.explainCommand(ir, v)
	if err != nil {
		return nil, err
	}
	return h.explainReply(ir, ex, v), nil
}

func explainVerbosity(r *request) (verbosity, error) {
	raw, ok := bsonutil.Field(r.body, "verbosity")
	if !ok {
		return allPlansExecution, nil
	}
	s, isStr := raw.(string)
	if !isStr {
		return 0, mongoerr.New(mongoerr.FailedToParse, "explain verbosity must be a string")
	}
	switch s {
	case "queryPlanner":
		return queryPlannerOnly, nil
	case "executionStats":
		return executionStats, nil
	case "allPlansExecution":
		return allPlansExecution, nil
	}
	return 0, mongoerr.New(mongoerr.FailedToParse, "verbosity string must be one of {'queryPlanner', 'executionStats', 'allPlansExecution'}")
}

func checkInnerDB(r *request, inner bson.D) error {
	v, ok := bsonutil.Field(inner, "$db")
	if !ok {
		return nil
	}
	if s, _ := v.(string); s != r.db {
		return mongoerr.Newf(mongoerr.InvalidNamespace, "Mismatched $db in explain command. Expected %s but got %v", r.db, v)
	}
	return nil
}

func withoutDB(d bson.D) bson.D {
	out := make(bson.D, 0, len(d))
	for _, e := range d {
		if e.Key != "$db" {
			out = append(out, e)
		}
	}
	return out
}

// explainCommand runs the explain of one command.
func (h *Handler) explainCommand(r *request, v verbosity) (*explained, error) {
	switch r.name {
	case "find":
		return h.explainFind(r, v)
	case "aggregate":
		return h.explainAggregate(r, v)
	case "count":
		return h.explainCount(r, v)
	case "distinct":
		return h.explainDistinct(r, v)
	case "update":
		return h.explainUpdate(r, v)
	case "delete":
		return h.explainDelete(r, v)
	case "findAndModify", "findandmodify":
		return h.explainFAM(r, v)
	case "explain":
		return nil, mongoerr.New(mongoerr.IllegalOperation, "Explain cannot explain itself.")
	}
	if _, known := h.table[r.name]; known {
		return nil, mongoerr.Newf(mongoerr.IllegalOperation, "Cannot explain cmd: %s", r.name)
	}
	return nil, mongoerr.Newf(mongoerr.CommandNotFound, "Explain failed due to unknown command: %s", r.name)
}

// explainReply assembles MongoDB's explain reply around ex.
func (h *Handler) explainReply(r *request, ex *explained, v verbosity) bson.D {
	out := bson.D{{Key: "explainVersion", Value: "1"}}
	if ex.stages != nil {
		out = append(out, bson.E{Key: "stages", Value: ex.stages})
	} else {
		out = append(out, bson.E{Key: "queryPlanner", Value: ex.queryPlanner()})
		if v >= executionStats {
			out = append(out, bson.E{Key: "executionStats", Value: ex.executionStats(v)})
		}
	}
	cmd := append(append(bson.D{}, r.body...), bson.E{Key: "$db", Value: r.db})
	return append(out,
		bson.E{Key: "command", Value: cmd},
		bson.E{Key: "serverInfo", Value: serverInfo(r)},
		bson.E{Key: "serverParameters", Value: serverParameters()})
}

func (ex *explained) queryPlanner() bson.D {
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

func (ex *explained) executionStats(v verbosity) bson.D {
	out := bson.D{
		{Key: "executionSuccess", Value: true},
		{Key: "nReturned", Value: docstore.Num(ex.returned)},
		{Key: "executionTimeMillis", Value: docstore.Num(ex.millis)},
		{Key: "totalKeysExamined", Value: docstore.Num(ex.keys)},
		{Key: "totalDocsExamined", Value: docstore.Num(ex.docs)},
		{Key: "executionStages", Value: cached(ex.exec)},
	}
	if v == allPlansExecution {
		out = append(out, bson.E{Key: "allPlansExecution", Value: bson.A{}})
	}
	return out
}

func serverInfo(r *request) bson.D {
	host, _ := os.Hostname()
	port := int32(27017)
	if r.conn != nil {
		if _, p, err := net.SplitHostPort(r.conn.LocalAddr()); err == nil {
			if n, err := strconv.Atoi(p); err == nil {
				port = int32(n)
			}
		}
	}
	return bson.D{
		{Key: "host", Value: host},
		{Key: "port", Value: port},
		{Key: "version", Value: Version},
		{Key: "gitVersion", Value: "mayfly-" + MayflyVersion},
	}
}

// serverParameters are the memory limits explain reports; Mayfly applies
// the same 100 MiB defaults.
func serverParameters() bson.D {
	const limit = int32(sortMemoryLimit)
	return bson.D{
		{Key: "internalQueryFacetBufferSizeBytes", Value: limit},
		{Key: "internalQueryFacetMaxOutputDocSizeBytes", Value: limit},
		{Key: "internalLookupStageIntermediateDocumentMaxSizeBytes", Value: limit},
		{Key: "internalDocumentSourceGroupMaxMemoryBytes", Value: limit},
		{Key: "internalQueryMaxBlockingSortMemoryUsageBytes", Value: limit},
		{Key: "internalQueryProhibitBlockingMergeOnMongoS", Value: int32(0)},
		{Key: "internalQueryMaxAddToSetBytes", Value: limit},
		{Key: "internalDocumentSourceSetWindowFieldsMaxMemoryBytes", Value: limit},
		{Key: "internalQueryFrameworkControl", Value: "trySbeRestricted"},
		{Key: "internalQueryPlannerIgnoreIndexWithCollationForRegex", Value: int32(1)},
	}
}

// queryExec is an operation's planned scan and the stages above it. A
// find's stages are an aggregate pipeline (pipe, composed by planFind)
// whose run counts what each stage did; the stages of other commands
// (COUNT, UPDATE, DELETE, the SORT of a single-document write) are
// pushed with push and their counters set by the command.
type queryExec struct {
	ctx     context.Context // the command's: maxTimeMS ends the scan
	c       *docstore.Collection
	filter  *query.Filter
	plan    *docstore.Plan
	scan    *docstore.DocIter
	express bool
	pipe    *aggregate.Pipeline
	run     *aggregate.Execution
	stages  []*aggregate.StageRun // bottom up
	clock   clock.Clock           // the handler's steady clock, for executionTimeMillis
	started time.Time
	// refreshOut: the documents the pipeline returns refresh their
	// refreshOnRead dates (a find without a projection; with one, the
	// projection refreshes the whole document before reshaping it).
	refreshOut bool
}

func (h *Handler) newExec(ctx context.Context, c *docstore.Collection, f *query.Filter, q docstore.Query) (*queryExec, error) {
	ex := &queryExec{ctx: ctx, c: c, filter: f, clock: h.steady, started: h.steady.Now()}
	if c == nil {
		return ex, nil
	}
	plan, err := c.Plan(q)
	if err != nil {
		return nil, err
	}
	ex.plan = plan
	return ex, nil
}

// start opens the scan; a missing collection yields nothing.
func (ex *queryExec) start() cursor.Source {
	if ex.plan == nil {
		return &sliceSource{}
	}
	ex.scan = ex.c.Scan(ex.plan, ex.filter).WithContext(ex.ctx)
	return ex.scan
}

// push adds a stage that passes nothing on (COUNT, UPDATE, DELETE) or
// whose counters the command sets (a single-document write's SORT).
func (ex *queryExec) push(name string, details bson.D) *aggregate.StageRun {
	st := &aggregate.StageRun{Name: name, Spec: details, EOF: true}
	ex.stages = append(ex.stages, st)
	return st
}

// explained renders the plan, and with executed the counters of the run.
func (ex *queryExec) explained(ns string, executed bool) *explained {
	out := &explained{ns: ns, parsed: docstore.ParsedQuery(ex.filter), planner: ex.tree(false, 0)}
	if !executed {
		return out
	}
	out.millis = ex.clock.Now().Sub(ex.started).Milliseconds()
	out.exec = ex.tree(true, out.millis)
	if ex.scan != nil {
		out.keys, out.docs = ex.scan.Stats.KeysExamined, ex.scan.Stats.DocsExamined
	}
	out.returned = ex.returned()
	return out
}

// allStages are the stages above the scan: the find pipeline's, with the
// counters of its run when it ran, then the pushed ones.
func (ex *queryExec) allStages() []*aggregate.StageRun {
	var out []*aggregate.StageRun
	switch {
	case ex.run != nil:
		out = ex.run.Stages()
	case ex.pipe != nil:
		out = ex.pipe.Planned()
	}
	return append(append([]*aggregate.StageRun(nil), out...), ex.stages...)
}

func (ex *queryExec) returned() int64 {
	n := ex.scanReturned()
	for _, st := range ex.allStages() {
		n = st.Out
	}
	return n
}

func (ex *queryExec) scanReturned() int64 {
	if ex.scan == nil {
		return 0
	}
	return ex.scan.Stats.Returned
}

// tree nests the stages over the scan, top first.
func (ex *queryExec) tree(executed bool, millis int64) bson.D {
	doc := ex.leaf(executed, millis)
	in := ex.scanReturned()
	for _, st := range ex.allStages() {
		doc = describeStage(st, doc, executed, in, millis)
		in = st.Out
	}
	return doc
}

func (ex *queryExec) leaf(executed bool, millis int64) bson.D {
	switch {
	case ex.plan == nil:
		return eofStage(executed)
	case executed && ex.scan != nil:
		return ex.scan.ExplainStats(ex.express, millis)
	}
	return ex.plan.Explain(ex.filter, ex.express)
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

// drain runs a source to its end, as executionStats needs.
func drain(r *request, src cursor.Source) error {
	for n := 0; ; n++ {
		if n%1024 == 0 {
			if err := checkInterrupt(r.ctx); err != nil {
				return err
			}
		}
		_, ok, err := src.Next()
		if err != nil || !ok {
			return err
		}
	}
}

// ---- find ----

// planFind plans a find and lays out its stages as MongoDB does: SORT
// (with skip+limit as its limit) unless the index provides the order, then
// SKIP, LIMIT (folded into SORT when there is one) and PROJECTION. The
// stages are an aggregate pipeline over the planned scan.
func (h *Handler) planFind(r *request, c *docstore.Collection, a *findArgs) (*queryExec, error) {
	q := docstore.Query{Filter: a.filter, Sort: a.sortSpec, Hint: a.hint}
	if a.collation != nil {
		// Index order is binary order: it sorts no collated strings.
		q.Sort = nil
	}
	ex, err := h.newExec(r.ctx, c, a.filter, q)
	if err != nil {
		return nil, err
	}
	var steps []aggregate.Step
	sorted := a.sort != nil && !a.sort.IsEmpty() && ex.plan != nil && (!ex.plan.SortProvided || a.collation != nil)
	if sorted {
		steps = append(steps, findSortStep(r, ex, a))
	}
	if a.skip > 0 {
		steps = append(steps, aggregate.SkipStep("SKIP", bson.D{{Key: "skipAmount", Value: docstore.Num(a.skip)}}, a.skip))
	}
	// A read of one _id returns at most one document: limit 1 is moot.
	point := ex.plan != nil && ex.plan.PointLookup()
	if a.limit > 0 && !sorted && !(point && a.limit == 1) {
		steps = append(steps, aggregate.LimitStep("LIMIT", bson.D{{Key: "limitAmount", Value: docstore.Num(a.limit)}}, a.limit))
	}
	if a.projection != nil {
		project := projector(a.projection, a.filter, a.showRecord)
		if a.refresh {
			project = refreshThen(ex.c, project)
		}
		steps = append(steps, aggregate.MapStep(projectionStage(a.projSpec), bson.D{{Key: "transformBy", Value: a.projSpec}}, project))
	}
	ex.refreshOut = a.refresh && a.projection == nil
	ex.pipe = aggregate.Compose(aggregate.Options{AllowDiskUse: a.allowDisk}, steps...)
	ex.express = point && len(steps) == 0
	return ex, nil
}

// findSortStep is find's SORT: a top-k sort when a limit follows, under
// find's memory limit, and on a TTL collection the sorted documents are
// re-checked for expiry as a cursor hands them out.
func findSortStep(r *request, ex *queryExec, a *findArgs) aggregate.Step {
	keep := int64(0)
	if a.limit > 0 {
		keep = a.skip + a.limit
	}
	var then func(aggregate.Iterator) aggregate.Iterator
	if ex.c.HasTTL() {
		then = func(in aggregate.Iterator) aggregate.Iterator {
			u := &unexpiredSource{src: in, c: ex.c}
			r.sorted = append(r.sorted, u)
			return u
		}
	}
	return aggregate.SortStep("SORT", sortDetails(a), a.sort, keep, sortCheck(r, a.allowDisk), then)
}

func sortDetails(a *findArgs) bson.D {
	d := bson.D{
		{Key: "sortPattern", Value: a.sortSpec},
		{Key: "memLimit", Value: int32(sortMemoryLimit)},
	}
	if a.limit > 0 {
		d = append(d, bson.E{Key: "limitAmount", Value: docstore.Num(a.skip + a.limit)})
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

// runFind opens the scan and runs the planned stages over it. A SORT
// reads its whole input here, so that its memory limit applies at once.
func (ex *queryExec) runFind(h *Handler, r *request, coll string) (cursor.Source, error) {
	src := ex.start()
	r.track(ex.scan)
	run, err := ex.pipe.Start(src, newAggEnv(h, r, coll))
	if err != nil {
		return nil, err
	}
	ex.run = run
	if ex.refreshOut {
		return &refreshSource{src: run, c: ex.c}, nil
	}
	return run, nil
}

// sortWithin reads src and sorts it in memory (aggregate.SortBuffered)
// under find's memory limit (sortCheck). With keep > 0 only the best keep
// documents are held, as MongoDB's top-k sort does. It also returns the
// bytes it sorted.
func sortWithin(r *request, src cursor.Source, s *query.Sort, keep int64, allowDisk bool) ([]bson.D, int64, error) {
	return aggregate.SortBuffered(src, s, keep, sortCheck(r, allowDisk))
}

// sortCheck fails a blocking sort as MongoDB does when it holds more than
// 100 MiB without allowDiskUse (Mayfly then keeps sorting in memory), and
// when the operation is interrupted.
func sortCheck(r *request, allowDisk bool) func(held int64) error {
	return func(held int64) error {
		if err := checkInterrupt(r.ctx); err != nil {
			return err
		}
		if held > sortMemoryLimit && !allowDisk {
			return sortMemoryError()
		}
		return nil
	}
}

func sortMemoryError() error {
	return mongoerr.Newf(mongoerr.QueryExceededMemoryLimitNoDiskUseAllowed, "Executor error during find command :: caused by :: Sort exceeded memory limit of %d bytes, but did not opt in to external sorting.", sortMemoryLimit)
}

func (h *Handler) explainFind(r *request, v verbosity) (*explained, error) {
	a, err := parseFind(h, r)
	if err != nil {
		return nil, err
	}
	c := h.deps.Store.Collection(r.db, a.coll)
	ex, err := h.planFind(r, c, a)
	if err != nil {
		return nil, err
	}
	ns := r.db + "." + a.coll
	if v == queryPlannerOnly {
		return ex.explained(ns, false), nil
	}
	src, err := ex.runFind(h, r, a.coll)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	if err := drain(r, src); err != nil {
		return nil, err
	}
	return ex.explained(ns, true), nil
}

// ---- count and distinct ----

func (h *Handler) explainCount(r *request, v verbosity) (*explained, error) {
	a, err := parseCountArgs(h, r)
	if err != nil {
		return nil, err
	}
	c := h.deps.Store.Collection(r.db, a.coll)
	ns := r.db + "." + a.coll
	if c != nil && len(a.query) == 0 && a.hint == nil && !(h.deps.Store.ExactExpiry() && c.HasTTL()) {
		return fastCountExplain(ns, a, c.Count(), v), nil
	}
	f, err := commandFilter(a.query, nil, a.collation)
	if err != nil {
		return nil, err
	}
	ex, err := h.newExec(r.ctx, c, f, docstore.Query{Filter: f, Hint: a.hint})
	if err != nil {
		return nil, err
	}
	st := ex.push("COUNT", nil)
	return ex.runAll(r, ns, v, func() { st.Exec = a.counted(ex.scanReturned()) })
}

type countArgs struct {
	coll        string
	collation   *collation.Collation
	query       bson.D
	skip, limit int64
	hint        any
}

func parseCountArgs(h *Handler, r *request) (*countArgs, error) {
	a := &countArgs{}
	var err error
	if a.coll, err = collectionArg(r); err != nil {
		return nil, err
	}
	if err = checkFields(r, "query", "limit", "skip", "hint", "collation", "fields", "readConcern"); err != nil {
		return nil, err
	}
	if a.collation, err = h.requestCollation(r); err != nil {
		return nil, err
	}
	if a.query, err = optDoc(r, "query"); err != nil {
		return nil, err
	}
	if a.skip, err = optInt(r, "skip", 0); err != nil {
		return nil, err
	}
	a.hint, _ = bsonutil.Field(r.body, "hint")
	a.limit, err = countLimit(r)
	return a, err
}

// counted are COUNT's own counters for n matching documents.
func (a *countArgs) counted(n int64) bson.D {
	counted := max(n-a.skip, 0)
	if a.limit > 0 && counted > a.limit {
		counted = a.limit
	}
	return bson.D{
		{Key: "nCounted", Value: docstore.Num(counted)},
		{Key: "nSkipped", Value: docstore.Num(min(n, a.skip))},
	}
}

// fastCountExplain is a count answered from the collection's counter.
func fastCountExplain(ns string, a *countArgs, n int64, v verbosity) *explained {
	stage := bson.D{{Key: "stage", Value: "RECORD_STORE_FAST_COUNT"}}
	out := &explained{ns: ns, parsed: bson.D{}, planner: stage}
	if v == queryPlannerOnly {
		return out
	}
	out.exec = append(append(append(bson.D{}, stage...), stageCounters(0, 0, true, 0)...), a.counted(n)...)
	return out
}

func (h *Handler) explainDistinct(r *request, v verbosity) (*explained, error) {
	name, err := collectionArg(r)
	if err != nil {
		return nil, err
	}
	if err := checkFields(r, "key", "query", "collation", "hint"); err != nil {
		return nil, err
	}
	q, err := optDoc(r, "query")
	if err != nil {
		return nil, err
	}
	coll, err := h.requestCollation(r)
	if err != nil {
		return nil, err
	}
	f, err := commandFilter(q, nil, coll)
	if err != nil {
		return nil, err
	}
	hint, _ := bsonutil.Field(r.body, "hint")
	ex, err := h.newExec(r.ctx, h.deps.Store.Collection(r.db, name), f, docstore.Query{Filter: f, Hint: hint})
	if err != nil {
		return nil, err
	}
	return ex.runAll(r, r.db+"."+name, v, nil)
}

// runAll explains a plan whose stages pass everything the scan finds;
// afterDrain, when set, fills in execution details once the scan is done.
func (ex *queryExec) runAll(r *request, ns string, v verbosity, afterDrain func()) (*explained, error) {
	if v == queryPlannerOnly {
		return ex.explained(ns, false), nil
	}
	src := ex.start()
	defer src.Close()
	if err := drain(r, src); err != nil {
		return nil, err
	}
	if afterDrain != nil {
		afterDrain()
	}
	return ex.explained(ns, true), nil
}

// ---- writes: nothing is written, the counters say what would be ----

func (h *Handler) explainUpdate(r *request, v verbosity) (*explained, error) {
	a, stmts, err := parseWriteArgs(r, "updates")
	if err != nil {
		return nil, err
	}
	if len(stmts) != 1 {
		return nil, mongoerr.New(mongoerr.InvalidLength, "explained write batches must be of size 1")
	}
	lv, err := h.parseLet(r)
	if err != nil {
		return nil, err
	}
	st, err := parseUpdateStmt(stmts[0], lv, h.defaultCollation(r.db, a.coll))
	if err != nil {
		return nil, err
	}
	ex, err := h.newExec(r.ctx, h.deps.Store.Collection(r.db, a.coll), st.filter, docstore.Query{Filter: st.filter, Hint: st.hint})
	if err != nil {
		return nil, err
	}
	sortSt := pushSortOne(ex, st.sort, st.sortSpec)
	up := ex.push("UPDATE", nil)
	ns := r.db + "." + a.coll
	if v == queryPlannerOnly {
		return ex.explained(ns, false), nil
	}
	matched, modified, err := h.dryRunUpdate(r, ex, st, sortSt)
	if err != nil {
		return nil, err
	}
	up.Exec = bson.D{
		{Key: "nMatched", Value: docstore.Num(matched)},
		{Key: "nWouldModify", Value: docstore.Num(modified)},
		{Key: "nWouldUpsert", Value: matched == 0 && st.upsert},
	}
	return ex.explained(ns, true), nil
}

// dryRunUpdate applies the update to the matching documents without
// storing anything.
func (h *Handler) dryRunUpdate(r *request, ex *queryExec, st *updateStmt, sortSt *aggregate.StageRun) (matched, modified int64, err error) {
	if sortSt != nil {
		return h.dryRunSortedUpdate(r, ex, st, sortSt)
	}
	src := ex.start()
	defer src.Close()
	now := h.deps.Clock.Now()
	for st.multi || matched == 0 {
		doc, ok, err := src.Next()
		if err != nil || !ok {
			return matched, modified, err
		}
		matched++
		_, pos := st.filter.MatchPositional(doc)
		_, changed, err := st.mod.apply(doc, pos, false, now)
		if err != nil {
			return matched, modified, err
		}
		if changed {
			modified++
		}
	}
	return matched, modified, checkInterrupt(r.ctx)
}

func (h *Handler) explainDelete(r *request, v verbosity) (*explained, error) {
	a, stmts, err := parseWriteArgs(r, "deletes")
	if err != nil {
		return nil, err
	}
	if len(stmts) != 1 {
		return nil, mongoerr.New(mongoerr.InvalidLength, "explained write batches must be of size 1")
	}
	lv, err := h.parseLet(r)
	if err != nil {
		return nil, err
	}
	f, limit, hint, err := parseDeleteStmt(stmts[0], lv, h.defaultCollation(r.db, a.coll))
	if err != nil {
		return nil, err
	}
	ex, err := h.newExec(r.ctx, h.deps.Store.Collection(r.db, a.coll), f, docstore.Query{Filter: f, Hint: hint})
	if err != nil {
		return nil, err
	}
	del := ex.push("DELETE", nil)
	ns := r.db + "." + a.coll
	if v == queryPlannerOnly {
		return ex.explained(ns, false), nil
	}
	var src cursor.Source = ex.start()
	if limit == 1 {
		src = aggregate.Limit(src, 1)
	}
	defer src.Close()
	n, err := countAll(r, src)
	if err != nil {
		return nil, err
	}
	del.Exec = bson.D{{Key: "nWouldDelete", Value: docstore.Num(n)}}
	return ex.explained(ns, true), nil
}

func countAll(r *request, src cursor.Source) (int64, error) {
	var n int64
	for {
		if err := checkInterrupt(r.ctx); err != nil {
			return n, err
		}
		_, ok, err := src.Next()
		if err != nil || !ok {
			return n, err
		}
		n++
	}
}

// explainFAM explains findAndModify as it runs: the scan, an in-memory
// SORT keeping the first document when a sort is given, then the UPDATE
// or DELETE of that document.
func (h *Handler) explainFAM(r *request, v verbosity) (*explained, error) {
	a, err := parseFAM(h, r)
	if err != nil {
		return nil, err
	}
	ex, err := h.newExec(r.ctx, h.deps.Store.Collection(r.db, a.coll), a.filter, docstore.Query{Filter: a.filter, Hint: a.hint})
	if err != nil {
		return nil, err
	}
	spec, _ := optDoc(r, "sort")
	sortSt := pushSortOne(ex, a.sort, spec)
	write := ex.push(famStageName(a), nil)
	ns := r.db + "." + a.coll
	if v == queryPlannerOnly {
		return ex.explained(ns, false), nil
	}
	target, err := famDryTarget(r, ex, a, sortSt)
	if err != nil {
		return nil, err
	}
	write.Exec, err = h.famCounters(a, target)
	if err != nil {
		return nil, err
	}
	return ex.explained(ns, true), nil
}

func famStageName(a *famArgs) string {
	if a.remove {
		return "DELETE"
	}
	return "UPDATE"
}

// famDryTarget finds the document findAndModify would change.
func famDryTarget(r *request, ex *queryExec, a *famArgs, sortSt *aggregate.StageRun) (bson.D, error) {
	return dryTarget(r, ex, a.sort, sortSt)
}

// dryTarget is the document a single-document write would change: the
// first in the sort's order when there is a SORT stage.
func dryTarget(r *request, ex *queryExec, s *query.Sort, sortSt *aggregate.StageRun) (bson.D, error) {
	src := ex.start()
	defer src.Close()
	if sortSt == nil {
		d, _, err := src.Next()
		return d, err
	}
	docs, _, err := sortWithin(r, src, s, 1, false)
	sortSt.Out = int64(len(docs))
	if err != nil || len(docs) == 0 {
		return nil, err
	}
	return docs[0], nil
}

func (h *Handler) famCounters(a *famArgs, target bson.D) (bson.D, error) {
	matched := int64(0)
	if target != nil {
		matched = 1
	}
	if a.remove {
		return bson.D{{Key: "nWouldDelete", Value: docstore.Num(matched)}}, nil
	}
	modified := int64(0)
	if target != nil {
		_, pos := a.filter.MatchPositional(target)
		_, changed, err := a.mod.apply(target, pos, false, h.deps.Clock.Now())
		if err != nil {
			return nil, err
		}
		if changed {
			modified = 1
		}
	}
	return bson.D{
		{Key: "nMatched", Value: docstore.Num(matched)},
		{Key: "nWouldModify", Value: docstore.Num(modified)},
		{Key: "nWouldUpsert", Value: matched == 0 && a.upsert},
	}, nil
}

// ---- aggregate ----

// planAggregate plans the scan under a pipeline: its leading $match
// filters the scan through an index, and its leading $sort (first, or
// right after that $match) is provided by the index when one can. It
// reports whether the $sort is provided, so the caller can leave it out.
func (h *Handler) planAggregate(r *request, c *docstore.Collection, p *aggregate.Pipeline) (*queryExec, bool, error) {
	if p.StartsWithCollStats() {
		c = nil
	}
	coll, err := h.requestCollation(r)
	if err != nil {
		return nil, false, err
	}
	var f *query.Filter
	if m := p.LeadingMatch(); m != nil {
		// The $match stage's compiled filter when it is the whole of m:
		// a large filter is then compiled, and held by a cursor, once.
		if f = p.LeadingMatchFilter(); f == nil {
			if f, err = commandFilter(m, nil, coll); err != nil {
				return nil, false, err
			}
		}
	}
	sortSpec := p.LeadingSort()
	if coll != nil {
		sortSpec = nil // index order is binary order
	}
	hint, _ := bsonutil.Field(r.body, "hint")
	ex, err := h.newExec(r.ctx, c, f, docstore.Query{Filter: f, Sort: sortSpec, Hint: hint})
	if err != nil {
		return nil, false, err
	}
	return ex, sortSpec != nil && ex.plan != nil && ex.plan.SortProvided, nil
}

// leadingSortIndex is the position of the pipeline's leading $sort.
func leadingSortIndex(stages bson.A) int {
	if len(stages) > 0 && firstKey(stages[0]) == "$match" {
		return 1
	}
	return 0
}

func firstKey(stage any) string {
	if d, ok := stage.(bson.D); ok && len(d) > 0 {
		return d[0].Key
	}
	return ""
}

func (h *Handler) explainAggregate(r *request, v verbosity) (*explained, error) {
	if err := checkFields(r, aggregateFields...); err != nil {
		return nil, err
	}
	p, err := h.parsePipeline(r)
	if err != nil {
		return nil, err
	}
	coll, ok := r.body[0].Value.(string)
	if !ok {
		return nil, mongoerr.Newf(mongoerr.InvalidNamespace, "{aggregate: 1} is not supported by Mayfly for this pipeline")
	}
	ex, provided, err := h.planAggregate(r, h.deps.Store.Collection(r.db, coll), p)
	if err != nil {
		return nil, err
	}
	if provided {
		p = p.WithoutStage(leadingSortIndex(stagesOf(r)))
	}
	executed := v >= executionStats
	stages := p.Planned()
	if executed {
		run, err := h.runPipelineForExplain(r, coll, ex, p)
		if err != nil {
			return nil, err
		}
		stages = run.Stages()
	}
	e := ex.explained(r.db+"."+coll, executed)
	e.stages = aggregateStages(e, stages, ex.scanReturned(), executed, v)
	return e, nil
}

// aggregateStages lays out an aggregate's explain: a $cursor stage for
// the scan, with a leading $match folded in, then the pipeline's stages
// with their counters. It is nil when the scan answers the whole pipeline
// (the explain is then a find's).
func aggregateStages(e *explained, stages []*aggregate.StageRun, scanned int64, executed bool, v verbosity) bson.A {
	cursorOut := scanned
	if len(stages) > 0 && stages[0].Name == "$match" {
		cursorOut = stages[0].Out
		stages = stages[1:]
	}
	if len(stages) == 0 {
		return nil
	}
	cur := bson.D{{Key: "queryPlanner", Value: e.queryPlanner()}}
	first := bson.D{{Key: "$cursor", Value: cur}}
	if executed {
		first[0].Value = append(cur, bson.E{Key: "executionStats", Value: e.executionStats(v)})
		first = append(first,
			bson.E{Key: "nReturned", Value: cursorOut},
			bson.E{Key: "executionTimeMillisEstimate", Value: e.millis})
	}
	out := bson.A{first}
	for _, st := range stages {
		if !st.Absorbed {
			out = append(out, st.Explain(executed, e.millis))
		}
	}
	return out
}

// runPipelineForExplain runs the pipeline over the planned scan to its
// end, for its counters.
func (h *Handler) runPipelineForExplain(r *request, coll string, ex *queryExec, p *aggregate.Pipeline) (*aggregate.Execution, error) {
	run, err := p.Start(ex.start(), newAggEnv(h, r, coll))
	if err != nil {
		return nil, err
	}
	defer run.Close()
	return run, drain(r, run)
}

// aggregateExplainReply answers aggregate's explain: true option, which is
// explain at queryPlanner verbosity.
func (h *Handler) aggregateExplainReply(r *request) (bson.D, error) {
	ex, err := h.explainAggregate(r, queryPlannerOnly)
	if err != nil {
		return nil, err
	}
	return h.explainReply(r, ex, queryPlannerOnly), nil
}

// pushSortOne adds the SORT stage of a single-document write with a sort
// (nil when there is none): the first document in order is the one.
func pushSortOne(ex *queryExec, s *query.Sort, spec bson.D) *aggregate.StageRun {
	if s == nil || s.IsEmpty() {
		return nil
	}
	return ex.push("SORT", bson.D{{Key: "sortPattern", Value: spec}, {Key: "memLimit", Value: int32(sortMemoryLimit)}, {Key: "limitAmount", Value: int32(1)}, {Key: "type", Value: "simple"}})
}

// dryRunSortedUpdate is dryRunUpdate for an update with a sort: only the
// first matching document in order would change.
func (h *Handler) dryRunSortedUpdate(r *request, ex *queryExec, st *updateStmt, sortSt *aggregate.StageRun) (matched, modified int64, err error) {
	target, err := dryTarget(r, ex, st.sort, sortSt)
	if err != nil || target == nil {
		return 0, 0, err
	}
	_, pos := st.filter.MatchPositional(target)
	_, changed, err := st.mod.apply(target, pos, false, h.deps.Clock.Now())
	return 1, b2i(changed), err
}
