package executor

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/aggregate"
	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/query"
)

// The explains of update, delete and findAndModify: the plan's scan, a
// SORT keeping the first document when a single-document write has a
// sort, then the UPDATE or DELETE stage. Nothing is written; at
// executionStats the write's counters say what would be.

// DryWrite is an explained write, as the command layer parsed it.
type DryWrite struct {
	// Stage is the write's stage: UPDATE or DELETE.
	Stage string
	// Sort, with its spec as given, orders a single-document write (nil:
	// none): the first document in order is the one it changes.
	Sort     *query.Sort
	SortSpec bson.D
	// One: the write changes at most one document.
	One bool
	// Update reports whether the update would change a matching document;
	// nil for a delete.
	Update func(doc bson.D) (changed bool, err error)
	// Upsert: the update inserts when nothing matches.
	Upsert bool
}

// ExplainWrite explains w over the planned scan p, at verbosity v.
func (p *Plan) ExplainWrite(w DryWrite, ns string, v Verbosity) (*Explained, error) {
	var sortSt *aggregate.StageRun
	if w.Sort != nil && !w.Sort.IsEmpty() {
		sortSt = p.Push("SORT", bson.D{{Key: "sortPattern", Value: w.SortSpec}, {Key: "memLimit", Value: int32(SortMemoryLimit)}, {Key: "limitAmount", Value: int32(1)}, {Key: "type", Value: "simple"}})
	}
	write := p.Push(w.Stage, nil)
	if v == QueryPlannerOnly {
		return p.Explained(ns, false), nil
	}
	matched, modified, err := p.dryRun(w, sortSt)
	if err != nil {
		return nil, err
	}
	write.Exec = bson.D{{Key: "nWouldDelete", Value: docstore.Num(matched)}}
	if w.Update != nil {
		write.Exec = bson.D{
			{Key: "nMatched", Value: docstore.Num(matched)},
			{Key: "nWouldModify", Value: docstore.Num(modified)},
			{Key: "nWouldUpsert", Value: matched == 0 && w.Upsert},
		}
	}
	return p.Explained(ns, true), nil
}

// dryRun counts the documents w would match and change.
func (p *Plan) dryRun(w DryWrite, sortSt *aggregate.StageRun) (matched, modified int64, err error) {
	if !w.One && sortSt == nil {
		return p.dryRunAll(w)
	}
	target, err := p.dryTarget(w.Sort, sortSt)
	if err != nil || target == nil {
		return 0, 0, err
	}
	if w.Update == nil {
		return 1, 0, nil
	}
	changed, err := w.Update(target)
	if changed {
		modified = 1
	}
	return 1, modified, err
}

// dryRunAll counts every matching document, and those the update would
// change.
func (p *Plan) dryRunAll(w DryWrite) (matched, modified int64, err error) {
	src := p.Start()
	defer src.Close()
	if w.Update == nil {
		matched, err = p.op.CountAll(src)
		return matched, 0, err
	}
	for {
		doc, ok, err := src.Next()
		if err != nil || !ok {
			return matched, modified, err
		}
		matched++
		changed, err := w.Update(doc)
		if err != nil {
			return matched, modified, err
		}
		if changed {
			modified++
		}
	}
}

// dryTarget is the document a single-document write would change: the
// first in the sort's order when there is a SORT stage, nil for none.
func (p *Plan) dryTarget(s *query.Sort, sortSt *aggregate.StageRun) (bson.D, error) {
	src := p.Start()
	defer src.Close()
	if sortSt == nil {
		d, _, err := src.Next()
		return d, err
	}
	docs, _, err := SortWithin(p.op.Check, src, s, 1, false)
	sortSt.Out = int64(len(docs))
	if err != nil || len(docs) == 0 {
		return nil, err
	}
	return docs[0], nil
}
