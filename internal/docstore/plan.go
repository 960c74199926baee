package docstore

import (
	"bytes"
	"slices"
	"sort"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/catalog"
	"github.com/mayflydb/mayfly/internal/collation"
	"github.com/mayflydb/mayfly/internal/ixbounds"
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
		bounds: []fieldBounds{{path: "_id", ivals: ixbounds.Points(p.Values)}},
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
	return ix.partial == nil || ixbounds.ImpliesPartial(preds, ix.def.Partial)
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
	iv [1]ixbounds.Interval
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
func (r *singleBounds) slices(n int) ([]fieldBounds, []ixbounds.Interval) {
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
func (ix *indexState) fieldBound(i int, b fieldBounds, ps []query.Predicate, one []ixbounds.Interval) (fieldBounds, []query.Predicate, int, bool) {
	if ix.def.Fields[i].Hashed {
		b, pts, open := ix.hashedFieldBound(b, ps)
		return b, nil, pts, open
	}
	sparse := ix.def.Sparse
	multikey := ix.def.FieldMultiKey(i)
	if k := findOpIndex(ps, query.OpEq); k >= 0 && !(sparse && ixbounds.Nullish(ps[k].Values[0])) {
		b.full, b.ivals = false, append(one, ixbounds.Point(ps[k].Values[0]))
		return b, ps[k : k+1 : k+1], 2, true // capped: an append copies
	}
	if in := findOp(ps, query.OpIn); in != nil && !(sparse && ixbounds.AnyNullish(in.Values)) {
		b.full, b.ivals = false, ixbounds.Points(in.Values)
		return b, []query.Predicate{*in}, 1, !ix.def.IsMultiKey()
	}
	iv, used, ok := ixbounds.Range(ps)
	if ok && !multikey {
		iv, used = ixbounds.Intersect(iv, used, ps)
	}
	if ok && !(sparse && ixbounds.Nullish(used[0].Values[0])) {
		b.full, b.ivals = false, append(one, iv)
		return b, used, 1, false
	}
	return b, nil, 0, false
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
		if iv.IsPoint() {
			out = appendRanges(out, room, appendComponent(room.withEndRoom(p), iv.Lo, b.desc), bounds[1:])
			continue
		}
		if r, ok := intervalKeyRange(iv, p, b.desc); ok {
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
	ivals []ixbounds.Interval
	// keyed: the index stores collation keys, and so do string bounds.
	keyed bool
	// hashed: the index stores hashes; the bounds are hashes (int64) and
	// keep no order of the values.
	hashed bool
}

func (b fieldBounds) isPoint() bool {
	return !b.full && len(b.ivals) == 1 && b.ivals[0].IsPoint()
}

// intervalKeyRange is the byte range of iv's keys after p. A descending
// field's encoding reverses value order, so its ends swap.
func intervalKeyRange(iv ixbounds.Interval, p []byte, desc bool) (keyRange, bool) {
	lo, loIncl, hi, hiIncl := iv.Lo, iv.LoIncl, iv.Hi, iv.HiIncl
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
