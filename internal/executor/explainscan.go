package executor

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/query"
)

// The access stages of a scan as explain's queryPlanner.winningPlan shows
// them (executionStats.executionStages with its counters): COLLSCAN,
// FETCH over IXSCAN, IDHACK, or EXPRESS_IXSCAN when express is set
// (MongoDB 8.0's fast path for a find by one _id; the caller knows
// whether the operation qualifies).

// execView is what a finished scan contributes to executionStages.
type execView struct {
	s      docstore.ScanStats
	millis int64
}

func scanStage(p *docstore.Plan, f *query.Filter, express bool, ev *execView) bson.D {
	switch {
	case p.Kind == docstore.CollScan:
		return collScanStage(p, f, ev)
	case p.PointLookup() && express:
		return expressStage(ev)
	case p.PointLookup():
		return idHackStage(ev)
	}
	return fetchStage(p, f, ev)
}

func collScanStage(p *docstore.Plan, f *query.Filter, ev *execView) bson.D {
	out := bson.D{{Key: "stage", Value: "COLLSCAN"}}
	if pq := query.ParsedQuery(f); len(pq) > 0 {
		out = append(out, bson.E{Key: "filter", Value: pq})
	}
	if ev != nil {
		out = append(out, ev.common(ev.s.DocsExamined)...)
	}
	out = append(out, bson.E{Key: "direction", Value: direction(p)})
	if ev != nil {
		out = append(out, bson.E{Key: "docsExamined", Value: docstore.Num(ev.s.DocsExamined)})
	}
	return out
}

func direction(p *docstore.Plan) string {
	if p.Reverse {
		return "backward"
	}
	return "forward"
}

func expressStage(ev *execView) bson.D {
	out := bson.D{
		{Key: "stage", Value: "EXPRESS_IXSCAN"},
		{Key: "keyPattern", Value: "{ _id: 1 }"},
		{Key: "indexName", Value: "_id_"},
	}
	if ev == nil {
		return out
	}
	return append(out,
		bson.E{Key: "keysExamined", Value: docstore.Num(ev.s.KeysExamined)},
		bson.E{Key: "docsExamined", Value: docstore.Num(ev.s.DocsExamined)},
		bson.E{Key: "nReturned", Value: docstore.Num(ev.s.Returned)})
}

func idHackStage(ev *execView) bson.D {
	out := bson.D{{Key: "stage", Value: "IDHACK"}}
	if ev == nil {
		return out
	}
	out = append(out, ev.common(ev.s.KeysExamined)...)
	return append(out,
		bson.E{Key: "keysExamined", Value: docstore.Num(ev.s.KeysExamined)},
		bson.E{Key: "docsExamined", Value: docstore.Num(ev.s.DocsExamined)})
}

func fetchStage(p *docstore.Plan, f *query.Filter, ev *execView) bson.D {
	out := bson.D{{Key: "stage", Value: "FETCH"}}
	if rest := p.Residual(f); len(rest) > 0 {
		out = append(out, bson.E{Key: "filter", Value: rest})
	}
	if ev != nil {
		out = append(out, ev.common(ev.s.KeysExamined)...)
		out = append(out,
			bson.E{Key: "docsExamined", Value: docstore.Num(ev.s.DocsExamined)},
			bson.E{Key: "alreadyHasObj", Value: int32(0)})
	}
	return append(out, bson.E{Key: "inputStage", Value: ixScanStage(p, ev)})
}

func ixScanStage(p *docstore.Plan, ev *execView) bson.D {
	out := bson.D{{Key: "stage", Value: "IXSCAN"}}
	var ix execView
	if ev != nil {
		ix = execView{s: ev.s, millis: ev.millis}
		ix.s.Returned = ev.s.KeysExamined - ev.s.DupsDropped
		out = append(out, ix.common(ev.s.KeysExamined)...)
	}
	out = append(out, indexFields(p)...)
	if ev == nil {
		return out
	}
	return append(out,
		bson.E{Key: "keysExamined", Value: docstore.Num(ev.s.KeysExamined)},
		bson.E{Key: "seeks", Value: docstore.Num(ev.s.Seeks)},
		bson.E{Key: "dupsTested", Value: docstore.Num(dupsTested(p, ev.s))},
		bson.E{Key: "dupsDropped", Value: docstore.Num(ev.s.DupsDropped)})
}

func dupsTested(p *docstore.Plan, s docstore.ScanStats) int64 {
	if p.Index.IsID() {
		return 0
	}
	return s.KeysExamined
}

// indexFields describe the index an IXSCAN reads, with the multikey
// paths the index has recorded (an index from before tracking began
// lists every prefix of every field).
func indexFields(p *docstore.Plan) bson.D {
	ix := p.Index
	return bson.D{
		{Key: "keyPattern", Value: ix.KeyPattern()},
		{Key: "indexName", Value: ix.Name},
		{Key: "isMultiKey", Value: ix.IsMultiKey()},
		{Key: "multiKeyPaths", Value: multiKeyPaths(p)},
		{Key: "isUnique", Value: ix.Unique},
		{Key: "isSparse", Value: ix.Sparse},
		{Key: "isPartial", Value: ix.Partial != nil},
		{Key: "indexVersion", Value: int32(2)},
		{Key: "direction", Value: direction(p)},
		{Key: "indexBounds", Value: p.BoundsDoc()},
	}
}

func multiKeyPaths(p *docstore.Plan) bson.D {
	out := bson.D{}
	for i, f := range p.Index.Fields {
		paths := bson.A{}
		for _, s := range p.Index.FieldMultiKeyPaths(i) {
			paths = append(paths, s)
		}
		out = append(out, bson.E{Key: f.Path, Value: paths})
	}
	return out
}

// common are the counters every executionStages entry has. works counts
// one call per item examined, and one more to find the end.
func (ev *execView) common(examined int64) bson.D {
	works, eof := examined, int32(0)
	if ev.s.EOF {
		works, eof = examined+1, 1
	}
	needTime := max(works-ev.s.Returned-int64(eof), 0)
	return bson.D{
		{Key: "nReturned", Value: docstore.Num(ev.s.Returned)},
		{Key: "executionTimeMillisEstimate", Value: docstore.Num(ev.millis)},
		{Key: "works", Value: docstore.Num(works)},
		{Key: "advanced", Value: docstore.Num(ev.s.Returned)},
		{Key: "needTime", Value: docstore.Num(needTime)},
		{Key: "needYield", Value: int32(0)},
		{Key: "saveState", Value: int32(0)},
		{Key: "restoreState", Value: int32(0)},
		{Key: "isEOF", Value: eof},
	}
}
