package docstore

import (
	"bytes"
	"math"
	"slices"
	"sort"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/catalog"
	"github.com/mayflydb/mayfly/internal/collation"
	"github.com/mayflydb/mayfly/internal/keyenc"
	"github.com/mayflydb/mayfly/internal/keyspace"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/query"
)

// PlanKind names the access path a scan takes, as explain shows it.
type PlanKind int

// Access paths.
const (
	CollScan  PlanKind = iota // every document
	IDLookup                  // point reads by _id (IDHACK / EXPRESS in MongoDB)
	IndexScan                 // ranges of one index, then the documents
)

// Query is what the planner reads of an operation: its filter, its sort
// specification (only paths and directions matter; nil for none) and its
// hint (nil, an index name, a key pattern, or {$natural: ±1}).
type Query struct {
	Filter *query.Filter
	Sort   bson.D
	Hint   any
}

// Plan is a chosen access path. The full filter is always applied to the
// documents it yields, so bounds may be looser than the predicate.
type Plan struct {
	Kind  PlanKind
	Index *catalog.Index
	// SortProvided is true when the scan yields documents in the order the
	// query's sort asks for (trivially so without a sort): the caller then
	// needs no in-memory sort.
	SortProvided bool
	// Reverse reads the collection or the index backwards.
	Reverse bool

	// ranges are the key ranges of a plan made with them (keyrange.go,
	// scanafter.go). A plan chosen among indexes leaves them to each scan
	// (lazyRanges), which makes them from rangePrefix and bounds in room
	// of its own (DocIter.planRanges): their keys then live as long as
	// the scan that reads them, not the plan, which a cursor's scan lets
	// go of (Lean).
	ranges      []keyRange
	rangePrefix []byte
	lazyRanges  bool
	ids         [][]byte
	bounds      []fieldBounds     // per index field, for explain
	covered     []query.Predicate // predicates the bounds apply exactly
	idScan      bool              // an index scan over the _id index: the documents themselves
}

type keyRange struct{ lo, hi []byte }

// PointLookup reports whether the plan reads at most one document by _id.
func (p *Plan) PointLookup() bool { return p.Kind == IDLookup && len(p.ids) <= 1 }

// PlanQuery chooses how to find the documents matching f, without a sort.
func (c *Collection) PlanQuery(f *query.Filter, hint any) (*Plan, error) {
	return c.Plan(Query{Filter: f, Hint: hint})
}

// FindOne is the first live document matching filter, nil when none: a
// point read by the plan the filter gets.
func (c *Collection) FindOne(filter bson.D) (bson.D, error) {
	f, err := query.NewFilter(filter)
	if err != nil {
		return nil, err
	}
	plan, err := c.PlanQuery(f, nil)
	if err != nil {
		return nil, err
	}
	it := c.Scan(plan, f)
	defer it.Close()
	doc, _, err := it.Next()
	return doc, err
}

// Plan chooses the access path for q: a hint when given, else _id point
// reads, else the index with the best bounds (an index that also provides
// the sort wins ties, and is used for the sort alone when nothing narrows
// the scan), else a collection scan.
func (c *Collection) Plan(q Query) (*Plan, error) {
	st := c.state.Load()
	s := parseSortSpec(q.Sort)
	// Made here, with room for a few paths, so that the map and the set
	// stay on the stack: nothing the plan keeps refers to them.
	preds := predicateSet{f: q.Filter, own: make(map[string][]query.Predicate, 4)}
	if q.Filter != nil {
		addByPath(preds.own, q.Filter.Predicates(), true)
	}
	return st.plan(&preds, s, q.Hint)
}

func (st *collState) plan(preds *predicateSet, s sortSpec, hint any) (*Plan, error) {
	if d, isDoc := hint.(bson.D); hint != nil && !(isDoc && len(d) == 0) {
		return st.planHint(preds, s, hint) // an empty hint is none, as in MongoDB
	}
	if s.natural != 0 {
		return collScanPlan(s), nil
	}
	if p := st.idPlan(preds.own, s); p != nil {
		return p, nil
	}
	if best, ok := st.bestCandidate(preds, s); ok {
		return best.plan(), nil
	}
	return collScanPlan(s), nil
}

func collScanPlan(s sortSpec) *Plan {
	return &Plan{Kind: CollScan, Reverse: s.natural < 0, SortProvided: len(s.keys) == 0}
}

func (st *collState) planHint(preds *predicateSet, s sortSpec, hint any) (*Plan, error) {
	if n, ok := naturalHint(hint); ok {
		return &Plan{Kind: CollScan, Reverse: n < 0, SortProvided: len(s.keys) == 0}, nil
	}
	for _, ix := range st.indexes {
		if !ix.def.Ready || ix.def.Hidden || !hintMatches(ix.def, hint) {
			continue
		}
		if ix.def.IsID() {
			if p := st.idPlan(preds.own, s); p != nil {
				return p, nil
			}
		}
		c := st.evaluate(ix, preds.forIndex(ix), s)
		return c.plan(), nil
	}
	return nil, mongoerr.New(mongoerr.BadValue, "error processing query: planner returned error :: caused by :: hint provided does not correspond to an existing index")
}

// naturalHint recognises {$natural: ±1}.
func naturalHint(hint any) (int, bool) {
	d, ok := hint.(bson.D)
	if !ok || len(d) != 1 || d[0].Key != "$natural" {
		return 0, false
	}
	if bsonutil.ToFloat(d[0].Value) < 0 {
		return -1, true
	}
	return 1, true
}

func hintMatches(ix *catalog.Index, hint any) bool {
	switch h := hint.(type) {
	case string:
		return ix.Name == h
	case bson.D:
		return bsonutil.Compare(ix.KeyPattern(), h) == 0
	}
	return false
}

// sortSpec is the part of a sort specification the planner matches
// against index keys.
type sortSpec struct {
	keys    []sortKey
	natural int
}

type sortKey struct {
	path string
	desc bool
}

// parseSortSpec reads an already validated sort specification.
func parseSortSpec(spec bson.D) sortSpec {
	var s sortSpec
	for _, e := range spec {
		desc := bsonutil.IsNumber(e.Value) && bsonutil.ToFloat(e.Value) < 0
		if e.Key == "$natural" {
			s.natural = 1
			if desc {
				s.natural = -1
			}
			continue
		}
		s.keys = append(s.keys, sortKey{path: e.Key, desc: desc})
	}
	return s
}

func (s sortSpec) hasPath(path string) bool {
	for _, k := range s.keys {
		if k.path == path {
			return true
		}
	}
	return false
}

// isIDOnly reports whether the sort is exactly {_id: ±1}.
func (s sortSpec) isIDOnly() bool { return len(s.keys) == 1 && s.keys[0].path == "_id" }

// predicateSet is a query's indexable predicates by path, for the two
// kinds of index: own, the filter's predicates, for an index of the
// strings themselves; for an index of collation keys, those with string
// operands as keys when the collations agree, else those without strings.
// The second kind is worked out only when an index of keys asks.
type predicateSet struct {
	f   *query.Filter
	own map[string][]query.Predicate
	// keyed and noStrings are set on first use.
	keyed, noStrings map[string][]query.Predicate
}

// forIndex is the predicates that may bound ix.
func (ps *predicateSet) forIndex(ix *indexState) map[string][]query.Predicate {
	if ix.collator == nil || ps.f == nil {
		return ps.own
	}
	if coll, ok := ps.f.Collation().(*collation.Collation); ok && bsonutil.Compare(coll.Spec(), ix.def.Collation) == 0 {
		if ps.keyed == nil {
			ps.keyed = byPath(ps.f.KeyedPredicates(), true)
		}
		return ps.keyed
	}
	if ps.noStrings == nil {
		ps.noStrings = byPath(ps.f.Predicates(), false)
	}
	return ps.noStrings
}

// byPath groups the indexable predicates by path, those on strings only
// when withStrings.
func byPath(preds []query.Predicate, withStrings bool) map[string][]query.Predicate {
	out := map[string][]query.Predicate{}
	addByPath(out, preds, withStrings)
	return out
}

// addByPath is byPath into out.
func addByPath(out map[string][]query.Predicate, preds []query.Predicate, withStrings bool) {
	for i, p := range preds {
		if !indexable(p) || (!withStrings && p.HasString()) {
			continue
		}
		// A path's first predicate is a view of preds (no allocation:
		// most paths have one), capped so that a second one copies.
		if prev, ok := out[p.Path]; ok {
			out[p.Path] = append(prev, p)
		} else {
			out[p.Path] = preds[i : i+1 : i+1]
		}
	}
}

// indexable rejects values whose index bounds are not a plain range: whole
// arrays (an index holds their elements) and regexes.
func indexable(p query.Predicate) bool {
	for _, v := range p.Values {
		switch v.(type) {
		case bson.A, bson.Regex:
			return false
		}
	}
	return len(p.Values) > 0 || p.Op == query.OpIn
}

// idPlan reads documents by _id for an equality or $in on _id. The ids
// come in BSON order ($in values are sorted), so {_id: ±1} is provided.
func (st *collState) idPlan(preds map[string][]query.Predicate, s sortSpec) *Plan {
	p := findIDPoints(preds["_id"])
	if p == nil {
		return nil
	}
	ids := make([][]byte, 0, len(p.Values))
	for _, v := range p.Values {
		ids = append(ids, keyenc.AppendValue(nil, v))
	}
	sort.Slice(ids, func(i, j int) bool { return bytes.Compare(ids[i], ids[j]) < 0 })
	ids = slices.CompactFunc(ids, bytes.Equal) // each document once
	plan := &Plan{
		Kind: IDLookup, Index: st.indexes[0].def, ids: ids, covered: []query.Predicate{*p},
		bounds: []fieldBounds{{path: "_id", ivals: points(p.Values)}},
	}
	plan.SortProvided = len(ids) <= 1 || len(s.keys) == 0 || s.isIDOnly()
	if s.isIDOnly() && s.keys[0].desc {
		plan.Reverse = true
		reverseIDs(ids)
	}
	return plan
}

func findIDPoints(preds []query.Predicate) *query.Predicate {
	for i := range preds {
		if preds[i].Op == query.OpEq || preds[i].Op == query.OpIn {
			return &preds[i]
		}
	}
	return nil
}

func reverseIDs(ids [][]byte) {
	for i, j := 0, len(ids)-1; i < j; i, j = i+1, j-1 {
		ids[i], ids[j] = ids[j], ids[i]
	}
}

// candidate is one index weighed for a query.
type candidate struct {
	st      *collState
	ix      *indexState
	score   int
	bounds  []fieldBounds
	covered []query.Predicate
	sorted  bool
	reverse bool
	// room, for a single-field index, holds the bounds and the plan.
	room *singleBounds
}

// bestCandidate is the best useful candidate, if any. Candidates are
// values, not pointers: the plan keeps none of them.
func (st *collState) bestCandidate(preds *predicateSet, s sortSpec) (candidate, bool) {
	var best candidate
	found := false
	for _, ix := range st.indexes {
		if !ix.def.Ready || ix.def.Hidden || !ix.usableFor(preds.own) {
			continue
		}
		fieldPreds := preds.forIndex(ix)
		if len(s.keys) == 0 && len(fieldPreds[ix.def.Fields[0].Path]) == 0 {
			continue // its first field unbounded and no sort: it scores 0
		}
		c := st.evaluate(ix, fieldPreds, s)
		if c.useful(s) && (!found || c.beats(&best)) {
			best, found = c, true
		}
	}
	return best, found
}

// usableFor excludes partial indexes whose filter the query does not imply:
// they lack the entries of documents outside the filter.
func (ix *indexState) usableFor(preds map[string][]query.Predicate) bool {
	return ix.partial == nil || impliesPartial(preds, ix.def.Partial)
}

func (st *collState) evaluate(ix *indexState, preds map[string][]query.Predicate, s sortSpec) candidate {
	c := candidate{st: st, ix: ix}
	c.bounds, c.covered, c.score, c.room = ix.boundsFor(preds)
	c.sorted, c.reverse = ix.providesSort(c.bounds, s)
	return c
}

// useful: the index narrows the scan, or provides the sort. A sparse index
// never serves a sort alone: it lacks documents without the field.
func (c *candidate) useful(s sortSpec) bool {
	if c.score > 0 {
		return true
	}
	return len(s.keys) > 0 && c.sorted && !c.ix.def.Sparse
}

// beats ranks candidates: better bounds, then a provided sort, then a
// unique index, then fewer fields.
func (c *candidate) beats(o *candidate) bool {
	switch {
	case o == nil:
		return true
	case c.score != o.score:
		return c.score > o.score
	case c.sorted != o.sorted:
		return c.sorted
	case c.ix.def.Unique != o.ix.def.Unique:
		return c.ix.def.Unique
	}
	return len(c.ix.def.Fields) < len(o.ix.def.Fields)
}

func (c *candidate) plan() *Plan {
	p := c.room.plan()
	*p = Plan{
		Kind: IndexScan, Index: c.ix.def, SortProvided: c.sorted, Reverse: c.reverse,
		bounds: c.bounds, covered: c.covered, idScan: c.ix.def.IsID(),
		rangePrefix: c.scanPrefix(), lazyRanges: true,
	}
	return p
}

// scanPrefix is where the index's entries live: the _id index has none of
// its own, its entries are the document keys.
func (c *candidate) scanPrefix() []byte {
	if c.ix.def.IsID() {
		return docPrefix(c.st.meta.ID)
	}
	return c.ix.prefix
}

// boundsFor turns predicates into bounds for each index field: single
// points for leading equalities, then $in points (on an index that is not
// multikey, every combination of them, while there are at most
// maxScanPoints), then one range, then everything. Scoring: two points per
// equality, one per field bounded otherwise.
func (ix *indexState) boundsFor(preds map[string][]query.Predicate) ([]fieldBounds, []query.Predicate, int, *singleBounds) {
	room := boundsRoom(len(ix.def.Fields))
	bounds, one := room.slices(len(ix.def.Fields))
	var covered []query.Predicate
	score, open, combos := 0, true, 1
	for i, f := range ix.def.Fields {
		b := fieldBounds{path: f.Path, desc: f.Desc, full: true, keyed: ix.collator != nil}
		if open {
			var used []query.Predicate
			var pts int
			b, used, pts, open = ix.fieldBound(i, b, preds[f.Path], one)
			covered = appendCovered(covered, used)
			score += pts
			if !b.full {
				combos *= len(b.ivals)
			}
			open = open && combos <= maxScanPoints
		}
		bounds = append(bounds, b)
	}
	return bounds, covered, score, room
}

// singleBounds is a single-field index's bounds with room for one
// interval and for the plan they make: an equality's plan (a lookup by
// token) in one allocation. The plan's key ranges are not in it: a
// cursor's scan keeps its range keys after Lean has let the plan go.
type singleBounds struct {
	b  [1]fieldBounds
	iv [1]interval
	p  firstRoom[Plan]
}

// boundsRoom is room for the bounds of n fields: nil but for one field.
func boundsRoom(n int) *singleBounds {
	if n != 1 {
		return nil
	}
	return new(singleBounds)
}

// slices returns room for the bounds of n fields and, in r, for the one
// interval of one field (else nil). Both are capped: a second bound or
// interval is appended elsewhere.
func (r *singleBounds) slices(n int) ([]fieldBounds, []interval) {
	if r == nil {
		return make([]fieldBounds, 0, n), nil
	}
	return r.b[:0:1], r.iv[:0:1]
}

// plan returns the room's plan the first time, else a new one.
func (r *singleBounds) plan() *Plan {
	if r == nil {
		return new(Plan)
	}
	return r.p.take()
}

// appendCovered appends used to covered. The first field's predicates
// are taken as they are, not copied: a fieldBound result is a capped view
// of the predicates (or a slice of its own), which nothing writes to.
func appendCovered(covered, used []query.Predicate) []query.Predicate {
	if covered == nil {
		return used
	}
	return append(covered, used...)
}

// maxScanPoints bounds the combinations of $in points a compound scan
// explodes into (MongoDB's internalQueryMaxScansToExplode is 200).
const maxScanPoints = 200

// fieldBound bounds field i. A sparse index only takes predicates that no
// document without the field can satisfy. The last result says whether
// the next field may be bounded too: after an equality always; after $in
// points only on an index that is not multikey, where a document has one
// key per field and the scan can go point by point. A bound of one
// interval is appended to one (empty; nil: none), boundsRoom's room.
func (ix *indexState) fieldBound(i int, b fieldBounds, ps []query.Predicate, one []interval) (fieldBounds, []query.Predicate, int, bool) {
	if ix.def.Fields[i].Hashed {
		b, pts, open := ix.hashedFieldBound(b, ps)
		return b, nil, pts, open
	}
	sparse := ix.def.Sparse
	multikey := ix.def.FieldMultiKey(i)
	if k := findOpIndex(ps, query.OpEq); k >= 0 && !(sparse && nullish(ps[k].Values[0])) {
		b.full, b.ivals = false, append(one, point(ps[k].Values[0]))
		return b, ps[k : k+1 : k+1], 2, true // capped: an append copies
	}
	if in := findOp(ps, query.OpIn); in != nil && !(sparse && anyNullish(in.Values)) {
		b.full, b.ivals = false, points(in.Values)
		return b, []query.Predicate{*in}, 1, !ix.def.IsMultiKey()
	}
	iv, used, ok := rangeInterval(ps)
	if ok && !multikey {
		iv, used = intersectRange(iv, used, ps)
	}
	if ok && !(sparse && nullish(used[0].Values[0])) {
		b.full, b.ivals = false, append(one, iv)
		return b, used, 1, false
	}
	return b, nil, 0, false
}

// nullish values are those a document without the field may match.
func nullish(v any) bool {
	switch v.(type) {
	case nil, bson.Null, bson.Undefined, bson.MinKey, bson.MaxKey:
		return true
	}
	return false
}

func anyNullish(vs []any) bool {
	for _, v := range vs {
		if nullish(v) {
			return true
		}
	}
	return false
}

func findOp(ps []query.Predicate, op query.Op) *query.Predicate {
	if i := findOpIndex(ps, op); i >= 0 {
		return &ps[i]
	}
	return nil
}

// findOpIndex is the index in ps of the first predicate with op, or -1.
func findOpIndex(ps []query.Predicate, op query.Op) int {
	for i := range ps {
		if ps[i].Op == op {
			return i
		}
	}
	return -1
}

// providesSort reports whether scanning the bounds (forwards, or backwards
// with reverse) yields the sort order. Leading fields pinned to one value
// may be skipped. As MongoDB does, sort fields that may hold arrays must
// be unbounded: a document whose array has elements outside the bounds
// sorts by an element the scan never meets.
func (ix *indexState) providesSort(bounds []fieldBounds, s sortSpec) (bool, bool) {
	if len(s.keys) == 0 {
		return true, false
	}
	if ix.collator != nil {
		return false, false // its strings are in the collation's order
	}
	k := pinnedPrefix(bounds, s)
	if k+len(s.keys) > len(bounds) {
		return false, false
	}
	reverse := bounds[k].desc != s.keys[0].desc
	for j, sk := range s.keys {
		b := bounds[k+j]
		if b.hashed || b.path != sk.path || (b.desc != sk.desc) != reverse || !(b.full || !ix.def.FieldMultiKey(k+j)) {
			return false, false
		}
	}
	return !ix.def.IsMultiKey() || !sharesRoot(bounds[:k], s), reverse
}

// pinnedPrefix counts the leading fields bound to a single value that the
// sort does not name.
func pinnedPrefix(bounds []fieldBounds, s sortSpec) int {
	k := 0
	for k < len(bounds) && bounds[k].isPoint() && !s.hasPath(bounds[k].path) {
		k++
	}
	return k
}

// sharesRoot reports whether a bounded field and a sort field start with
// the same path component: they may then come from one array of
// documents, whose elements the bounds pick apart (SERVER-32525).
func sharesRoot(bounds []fieldBounds, s sortSpec) bool {
	for _, b := range bounds {
		for _, k := range s.keys {
			if rootOf(b.path) == rootOf(k.path) {
				return true
			}
		}
	}
	return false
}

func rootOf(path string) string {
	if i := bytes.IndexByte([]byte(path), '.'); i >= 0 {
		return path[:i]
	}
	return path
}

// keyRanges appends to dst (empty) the key ranges of bounds under prefix,
// in key order: each point of a field extends the prefix for the fields
// after it, a range gives one key range, and an unbounded field ends it.
// Their keys are cut from room while it has some (nil: none).
func keyRanges(dst []keyRange, room *keyRoom, prefix []byte, bounds []fieldBounds) []keyRange {
	p := prefix
	if len(bounds) == 0 || bounds[0].full {
		// appendRanges keeps p only for an unbounded field; for a bounded
		// one it copies p before appending (a second copy here would be
		// garbage), so only then must the index's own prefix be copied.
		p = room.withEndRoom(prefix)
	}
	out := appendRanges(dst, room, p, bounds)
	if len(out) < 2 { // an equality, the common case: nothing to order
		return out
	}
	slices.SortFunc(out, func(a, b keyRange) int { return bytes.Compare(a.lo, b.lo) })
	return dedupeRanges(out)
}

// withRoom copies p with room for a typical key component after it, so
// that appending one does not allocate again.
func withRoom(p []byte) []byte {
	return append(make([]byte, 0, len(p)+64), p...)
}

// keyRoom is room a scan has for its ranges' keys (spare's capacity),
// each byte handed out once.
type keyRoom struct{ spare []byte }

// withEndRoom is withRoom with room for a copy of the whole after that:
// the end of a range that starts with the result (appendRanges) then
// needs no allocation of its own. It is cut from r while r has room.
func (r *keyRoom) withEndRoom(p []byte) []byte {
	n := 2 * (len(p) + 64)
	if r == nil || cap(r.spare) < n {
		return append(make([]byte, 0, n), p...)
	}
	b := r.spare[:0:n]
	r.spare = r.spare[n:n]
	return append(b, p...)
}

// appendRanges appends the ranges of bounds under p. p's spare capacity,
// if any, is this call's alone (withEndRoom's), and a range that ends at
// p takes its end from it.
func appendRanges(out []keyRange, room *keyRoom, p []byte, bounds []fieldBounds) []keyRange {
	if len(bounds) == 0 || bounds[0].full {
		n := len(p)
		return append(out, keyRange{lo: p[:n:n], hi: keyspace.AppendPrefixEnd(p[n:n], p)})
	}
	b := bounds[0]
	for _, iv := range b.ivals {
		if iv.isPoint() {
			out = appendRanges(out, room, appendComponent(room.withEndRoom(p), iv.lo, b.desc), bounds[1:])
			continue
		}
		if r, ok := iv.keyRange(p, b.desc); ok {
			out = append(out, r)
		}
	}
	return out
}

// dedupeRanges drops repeated ranges ($in lists may repeat a value).
func dedupeRanges(rs []keyRange) []keyRange {
	var out []keyRange
	for _, r := range rs {
		if n := len(out); n > 0 && bytes.Equal(r.lo, out[n-1].lo) && bytes.Equal(r.hi, out[n-1].hi) {
			continue
		}
		out = append(out, r)
	}
	return out
}

func appendComponent(dst []byte, v any, desc bool) []byte {
	if desc {
		return keyenc.AppendValueDesc(dst, v)
	}
	return keyenc.AppendValue(dst, v)
}

// fieldBounds are the values an index field is scanned over, as intervals
// in ascending value order.
type fieldBounds struct {
	path  string
	desc  bool
	full  bool // [MinKey, MaxKey]
	ivals []interval
	// keyed: the index stores collation keys, and so do string bounds.
	keyed bool
	// hashed: the index stores hashes; the bounds are hashes (int64) and
	// keep no order of the values.
	hashed bool
}

// interval is a range of values; an end that is not inclusive is open.
type interval struct {
	lo, hi         any
	loIncl, hiIncl bool
}

func (b fieldBounds) isPoint() bool {
	return !b.full && len(b.ivals) == 1 && b.ivals[0].isPoint()
}

func (iv interval) isPoint() bool {
	return iv.loIncl && iv.hiIncl && bsonutil.Compare(iv.lo, iv.hi) == 0
}

func point(v any) interval { return interval{lo: v, hi: v, loIncl: true, hiIncl: true} }

// points are the intervals of an $in list, sorted and without repeats.
func points(vs []any) []interval {
	sorted := append([]any(nil), vs...)
	sort.SliceStable(sorted, func(i, j int) bool { return bsonutil.Compare(sorted[i], sorted[j]) < 0 })
	out := make([]interval, 0, len(sorted))
	for i, v := range sorted {
		if i > 0 && bsonutil.Compare(sorted[i-1], v) == 0 {
			continue
		}
		out = append(out, point(v))
	}
	return out
}

// keyRange is the byte range of the interval's keys after p. A descending
// field's encoding reverses value order, so its ends swap.
func (iv interval) keyRange(p []byte, desc bool) (keyRange, bool) {
	lo, loIncl, hi, hiIncl := iv.lo, iv.loIncl, iv.hi, iv.hiIncl
	if desc {
		lo, loIncl, hi, hiIncl = hi, hiIncl, lo, loIncl
	}
	start := appendComponent(withRoom(p), lo, desc)
	if !loIncl {
		start = prefixEnd(start)
	}
	end := appendComponent(withRoom(p), hi, desc)
	if hiIncl {
		end = prefixEnd(end)
	}
	return keyRange{lo: start, hi: end}, bytes.Compare(start, end) < 0
}

// rangeInterval bounds a field by its comparisons. Only the side of the
// first one is used, as MongoDB does for multikey indexes: two bounds may
// be met by different array elements ({a: [1, 10]} matches {$gt: 5,
// $lt: 2}), so intersecting them could miss documents. Bounds on the same
// side and of one type are tightened. The filter recheck removes the rest.
func rangeInterval(ps []query.Predicate) (interval, []query.Predicate, bool) {
	var best *query.Predicate
	var used []query.Predicate
	for i := range ps {
		p := &ps[i]
		if !p.Op.IsRange() || (best != nil && !sameSide(p, best)) {
			continue
		}
		used = append(used, *p)
		if best == nil || tighter(p, best) {
			best = p
		}
	}
	if best == nil {
		return interval{}, nil, false
	}
	return bracket(best), used, true
}

// intersectRange narrows iv, the bound of one side, by the tightest
// comparison of the other side of the same type. Only for a field that
// holds no arrays, where one value must meet both.
func intersectRange(iv interval, used []query.Predicate, ps []query.Predicate) (interval, []query.Predicate) {
	first := used[0]
	var other []query.Predicate
	for _, p := range ps {
		if p.Op.IsRange() && p.Op.IsLower() != first.Op.IsLower() && bsonutil.Rank(p.Values[0]) == bsonutil.Rank(first.Values[0]) && !isNaN(p.Values[0]) {
			other = append(other, p)
		}
	}
	if len(other) == 0 || isNaN(first.Values[0]) {
		return iv, used
	}
	side, _, _ := rangeInterval(other)
	if first.Op.IsLower() {
		iv.hi, iv.hiIncl = side.hi, side.hiIncl
	} else {
		iv.lo, iv.loIncl = side.lo, side.loIncl
	}
	return iv, append(used, other...)
}

func sameSide(p, q *query.Predicate) bool {
	return p.Op.IsLower() == q.Op.IsLower() && bsonutil.Rank(p.Values[0]) == bsonutil.Rank(q.Values[0])
}

func tighter(p, best *query.Predicate) bool {
	c := bsonutil.Compare(p.Values[0], best.Values[0])
	if p.Op.IsLower() {
		return c > 0 || (c == 0 && p.Op == query.OpGt)
	}
	return c < 0 || (c == 0 && p.Op == query.OpLt)
}

// bracket is the interval of one comparison, within the values of its
// type (MongoDB's type bracketing: {$gt: 5} never matches a string).
func bracket(p *query.Predicate) interval {
	v := p.Values[0]
	if isNaN(v) {
		return point(v)
	}
	bottom, top, topIncl := typeBracket(v)
	switch p.Op {
	case query.OpGt:
		return interval{lo: v, hi: top, hiIncl: topIncl}
	case query.OpGte:
		return interval{lo: v, hi: top, loIncl: true, hiIncl: topIncl}
	case query.OpLt:
		return interval{lo: bottom, hi: v, loIncl: true}
	}
	return interval{lo: bottom, hi: v, loIncl: true, hiIncl: true}
}

func isNaN(v any) bool {
	switch x := v.(type) {
	case float64:
		return math.IsNaN(x)
	case bson.Decimal128:
		return x.IsNaN()
	}
	return false
}

// typeBracket returns the smallest and largest values of v's type, with
// MongoDB's choices where explain shows them (numbers -inf.0 to inf.0,
// strings "" to {} exclusive); top is exclusive unless topIncl.
func typeBracket(v any) (bottom, top any, topIncl bool) {
	switch v.(type) {
	case int32, int64, float64, bson.Decimal128, int:
		return math.Inf(-1), math.Inf(1), true
	case string, bson.Symbol:
		return "", bson.D{}, false
	case bson.DateTime:
		return bson.DateTime(math.MinInt64), bson.DateTime(math.MaxInt64), true
	case bool:
		return false, true, true
	case bson.MaxKey:
		return bson.MaxKey{}, bson.MaxKey{}, true
	}
	rank := bsonutil.Rank(v)
	return rankFloor(rank), rankCeiling(rank), false
}

// rankOrder lists one smallest value of each canonical type, in order.
func rankOrder() []any {
	return []any{
		bson.MinKey{}, bson.Undefined{}, nil, math.Inf(-1), "", bson.D{}, bson.A{},
		bson.Binary{Data: []byte{}}, bson.ObjectID{}, false, bson.DateTime(math.MinInt64),
		bson.Timestamp{}, bson.Regex{}, bson.MaxKey{},
	}
}

func rankFloor(rank int) any {
	for _, v := range rankOrder() {
		if bsonutil.Rank(v) >= rank {
			return v
		}
	}
	return bson.MaxKey{}
}

// rankCeiling is the smallest value of the next type: an exclusive bound.
func rankCeiling(rank int) any {
	for _, v := range rankOrder() {
		if bsonutil.Rank(v) > rank {
			return v
		}
	}
	return bson.MaxKey{}
}

// impliesPartial reports whether every document the query's predicates
// match also matches a partial index's filter: each clause of the filter
// must be a comparison, $in or {$exists: true} that a predicate on the same
// path implies. Anything else (an $or, a regex) makes the index unusable
// without a hint, which is safe.
func impliesPartial(preds map[string][]query.Predicate, partial bson.D) bool {
	for _, c := range query.NormalizeFilter(partial) {
		if !impliedBy(c, preds[c.Path]) {
			return false
		}
	}
	return true
}

func impliedBy(c query.Clause, ps []query.Predicate) bool {
	for _, p := range ps {
		if c.Path != "" && implies(p, c) {
			return true
		}
	}
	return false
}

func implies(p query.Predicate, c query.Clause) bool {
	switch {
	case c.Op == "$exists":
		return bsonutil.TrueValue(c.Val) && !anyNullish(p.Values) && len(p.Values) > 0
	case p.Op == query.OpEq || p.Op == query.OpIn:
		return len(p.Values) > 0 && allSatisfy(p.Values, c)
	case p.Op.IsRange() && c.Op.IsRange():
		return rangeImplies(p, c)
	}
	return false
}

// allSatisfy reports whether each value satisfies the clause on its own.
func allSatisfy(vs []any, c query.Clause) bool {
	for _, v := range vs {
		if !satisfies(v, c) {
			return false
		}
	}
	return true
}

func satisfies(v any, c query.Clause) bool {
	if c.Op == query.OpIn {
		for _, x := range bsonutil.ToA(c.Val) {
			if bsonutil.Equal(v, x) {
				return true
			}
		}
		return false
	}
	if c.Op == query.OpEq {
		return bsonutil.Equal(v, c.Val)
	}
	if !c.Op.IsRange() || bsonutil.Rank(v) != bsonutil.Rank(c.Val) {
		return false
	}
	return compareHolds(bsonutil.Compare(v, c.Val), c.Op)
}

func compareHolds(cmp int, op query.Op) bool {
	switch op {
	case query.OpGt:
		return cmp > 0
	case query.OpGte:
		return cmp >= 0
	case query.OpLt:
		return cmp < 0
	}
	return cmp <= 0
}

// rangeImplies: {$gt: 7} implies {$gt: 5} and {$gte: 7}; some element
// beyond the tighter bound is beyond the looser one too.
func rangeImplies(p query.Predicate, c query.Clause) bool {
	v := p.Values[0]
	if p.Op.IsLower() != c.Op.IsLower() || bsonutil.Rank(v) != bsonutil.Rank(c.Val) {
		return false
	}
	cmp := bsonutil.Compare(v, c.Val)
	if !p.Op.IsLower() {
		cmp = -cmp
	}
	strict := c.Op.IsStrict()
	pStrict := p.Op.IsStrict()
	return cmp > 0 || (cmp == 0 && (pStrict || !strict))
}
