package docstore

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/ixbounds"
	"github.com/mayflydb/mayfly/internal/query"
)

// Residual is the part of the filter the index bounds do not apply
// exactly, which explain shows as the FETCH stage's filter. Mayfly's FETCH
// rechecks the whole filter; the difference is only in what is shown.
func (p *Plan) Residual(f *query.Filter) bson.D {
	if f == nil {
		return bson.D{}
	}
	var rest []query.Clause
	for _, c := range query.NormalizeFilter(f.Spec()) {
		if !p.coversClause(c) {
			rest = append(rest, c)
		}
	}
	return query.ClausesDoc(rest)
}

// hasResidual reports whether Residual(f) is not empty, without building
// it: a write asks this of its plan on every call (CandidateIDs), and its
// filter is most often equalities, which need no clause slices.
func (p *Plan) hasResidual(f *query.Filter) bool {
	if f == nil {
		return false
	}
	for _, e := range f.Spec() {
		if c, ok := query.EqualityClause(e); ok {
			if !p.coversClause(c) {
				return true
			}
			continue
		}
		for _, c := range query.NormalizeElem(e) {
			if !p.coversClause(c) {
				return true
			}
		}
	}
	return false
}

// coversClause: the bounds hold exactly the values the clause accepts.
// Null equality is never exact: its bounds also hold missing fields.
func (p *Plan) coversClause(c query.Clause) bool {
	for _, q := range p.covered {
		if q.Path == c.Path && q.Op == c.Op && !ixbounds.AnyNullish(q.Values) && sameOperand(q, c) {
			return true
		}
	}
	return false
}

func sameOperand(q query.Predicate, c query.Clause) bool {
	if q.Op == "$in" {
		return len(bsonutil.ToA(c.Val)) == len(q.Values)
	}
	return len(q.Values) == 1 && bsonutil.Compare(q.Values[0], c.Val) == 0
}
