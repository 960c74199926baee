package docstore

import (
	"math"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/catalog"
	"github.com/mayflydb/mayfly/internal/keyenc"
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

// Plan is a chosen access path. The full filter is always applied to the
// documents it yields, so bounds may be looser than the predicate.
type Plan struct {
	Kind   PlanKind
	Index  *catalog.Index
	ranges []keyRange
	ids    [][]byte
}

type keyRange struct{ lo, hi []byte }

// PlanQuery chooses how to find the documents matching f. hint is nil, an
// index name, a key pattern, or {$natural: ±1}.
func (c *Collection) PlanQuery(f *query.Filter, hint any) (*Plan, error) {
	st := c.state.Load()
	if hint != nil {
		return st.planHint(f, hint)
	}
	preds := predicatesByPath(f)
	if ids := idPoints(preds["_id"]); ids != nil {
		return &Plan{Kind: IDLookup, Index: st.indexes[0].def, ids: ids}, nil
	}
	best, bestScore := (*indexState)(nil), 0
	for _, ix := range st.indexes[1:] {
		if ix.def.Hidden || !ix.def.Ready || ix.partial != nil {
			continue
		}
		if s := ix.score(preds); s > bestScore {
			best, bestScore = ix, s
		}
	}
	if best == nil {
		return &Plan{Kind: CollScan}, nil
	}
	return &Plan{Kind: IndexScan, Index: best.def, ranges: best.bounds(preds)}, nil
}

func (st *collState) planHint(f *query.Filter, hint any) (*Plan, error) {
	if d, ok := hint.(bson.D); ok && len(d) == 1 && d[0].Key == "$natural" {
		return &Plan{Kind: CollScan}, nil
	}
	for _, ix := range st.indexes {
		if !hintMatches(ix.def, hint) {
			continue
		}
		preds := predicatesByPath(f)
		if ix.def.IsID() {
			if ids := idPoints(preds["_id"]); ids != nil {
				return &Plan{Kind: IDLookup, Index: ix.def, ids: ids}, nil
			}
			return &Plan{Kind: CollScan, Index: ix.def}, nil
		}
		return &Plan{Kind: IndexScan, Index: ix.def, ranges: ix.bounds(preds)}, nil
	}
	return nil, mongoerr.New(mongoerr.BadValue, "error processing query: planner returned error :: caused by :: hint provided does not correspond to an existing index")
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

func predicatesByPath(f *query.Filter) map[string][]query.Predicate {
	out := map[string][]query.Predicate{}
	if f == nil {
		return out
	}
	for _, p := range f.Predicates() {
		if indexable(p) {
			out[p.Path] = append(out[p.Path], p)
		}
	}
	return out
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
	return len(p.Values) > 0 || p.Op == "$in"
}

func idPoints(preds []query.Predicate) [][]byte {
	for _, p := range preds {
		if p.Op != "$eq" && p.Op != "$in" {
			continue
		}
		ids := make([][]byte, 0, len(p.Values))
		for _, v := range p.Values {
			ids = append(ids, keyenc.AppendValue(nil, v))
		}
		return ids
	}
	return nil
}

// score ranks an index for the predicates: two points per leading equality
// field, one for a trailing range or $in.
func (ix *indexState) score(preds map[string][]query.Predicate) int {
	score := 0
	for _, f := range ix.def.Fields {
		ps := preds[f.Path]
		if eq := findOp(ps, "$eq"); eq != nil && !(ix.def.Sparse && eq.Values[0] == nil) {
			score += 2
			continue
		}
		if len(ps) > 0 && !ix.def.Sparse {
			score++
		}
		break
	}
	return score
}

func findOp(ps []query.Predicate, op string) *query.Predicate {
	for i := range ps {
		if ps[i].Op == op {
			return &ps[i]
		}
	}
	return nil
}

// bounds turns predicates into key ranges: exact prefixes for the leading
// equality fields, then one range (or a set of points for $in).
func (ix *indexState) bounds(preds map[string][]query.Predicate) []keyRange {
	prefix := append([]byte(nil), ix.prefix...)
	for _, f := range ix.def.Fields {
		ps := preds[f.Path]
		if eq := findOp(ps, "$eq"); eq != nil {
			prefix = appendComponent(prefix, eq.Values[0], f.Desc)
			continue
		}
		if in := findOp(ps, "$in"); in != nil {
			return pointRanges(prefix, in.Values, f.Desc)
		}
		if len(ps) > 0 {
			return []keyRange{rangeFor(prefix, ps, f.Desc)}
		}
		break
	}
	return []keyRange{{lo: prefix, hi: prefixEnd(prefix)}}
}

func appendComponent(dst []byte, v any, desc bool) []byte {
	if desc {
		return keyenc.AppendValueDesc(dst, v)
	}
	return keyenc.AppendValue(dst, v)
}

func pointRanges(prefix []byte, vals []any, desc bool) []keyRange {
	out := make([]keyRange, 0, len(vals))
	for _, v := range vals {
		p := appendComponent(append([]byte(nil), prefix...), v, desc)
		out = append(out, keyRange{lo: p, hi: prefixEnd(p)})
	}
	return out
}

// rangeFor uses one side of the comparison: with a multikey index two
// bounds may be met by different array elements, so intersecting them
// could miss documents. The filter recheck removes the excess.
func rangeFor(prefix []byte, ps []query.Predicate, desc bool) keyRange {
	var lo, hi any
	loSet, hiSet := false, false
	for _, p := range ps {
		switch p.Op {
		case "$gt", "$gte":
			lo, loSet = p.Values[0], true
		case "$lt", "$lte":
			hi, hiSet = p.Values[0], true
		}
	}
	switch {
	case loSet:
		hi = rankCeiling(bsonutil.Rank(lo))
	case hiSet:
		lo = rankFloor(bsonutil.Rank(hi))
	default:
		return keyRange{lo: prefix, hi: prefixEnd(prefix)}
	}
	a := appendComponent(append([]byte(nil), prefix...), lo, desc)
	b := appendComponent(append([]byte(nil), prefix...), hi, desc)
	if desc {
		a, b = b, a
	}
	if !loSet || desc {
		b = prefixEnd(b)
	}
	return keyRange{lo: a, hi: b}
}

// rankOrder lists one smallest value of each canonical type, in order.
func rankOrder() []any {
	return []any{
		bson.MinKey{}, bson.Undefined{}, nil, math.NaN(), "", bson.D{}, bson.A{},
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
