package docstore

import (
	"encoding/hex"
	"math"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/ixbounds"
	"github.com/mayflydb/mayfly/internal/query"
)

// Explain renders the plan's access stages as explain's
// queryPlanner.winningPlan does: COLLSCAN, FETCH over IXSCAN, IDHACK, or
// EXPRESS_IXSCAN when express is set (MongoDB 8.0's fast path for a find
// by one _id; the caller knows whether the operation qualifies).
func (p *Plan) Explain(f *query.Filter, express bool) bson.D {
	return p.stage(f, express, nil)
}

// ExplainStats renders the scan's stages with its counters, as
// executionStats.executionStages does; millis is the time spent.
func (d *DocIter) ExplainStats(express bool, millis int64) bson.D {
	return d.plan.stage(d.filter, express, &execView{s: d.Stats, millis: millis})
}

// execView is what a finished scan contributes to executionStages.
type execView struct {
	s      ScanStats
	millis int64
}

func (p *Plan) stage(f *query.Filter, express bool, ev *execView) bson.D {
	switch {
	case p.Kind == CollScan:
		return p.collScanStage(f, ev)
	case p.PointLookup() && express:
		return expressStage(ev)
	case p.PointLookup():
		return idHackStage(ev)
	}
	return p.fetchStage(f, ev)
}

func (p *Plan) collScanStage(f *query.Filter, ev *execView) bson.D {
	out := bson.D{{Key: "stage", Value: "COLLSCAN"}}
	if pq := query.ParsedQuery(f); len(pq) > 0 {
		out = append(out, bson.E{Key: "filter", Value: pq})
	}
	if ev != nil {
		out = append(out, ev.common(ev.s.DocsExamined)...)
	}
	out = append(out, bson.E{Key: "direction", Value: p.direction()})
	if ev != nil {
		out = append(out, bson.E{Key: "docsExamined", Value: Num(ev.s.DocsExamined)})
	}
	return out
}

func (p *Plan) direction() string {
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
		bson.E{Key: "keysExamined", Value: Num(ev.s.KeysExamined)},
		bson.E{Key: "docsExamined", Value: Num(ev.s.DocsExamined)},
		bson.E{Key: "nReturned", Value: Num(ev.s.Returned)})
}

func idHackStage(ev *execView) bson.D {
	out := bson.D{{Key: "stage", Value: "IDHACK"}}
	if ev == nil {
		return out
	}
	out = append(out, ev.common(ev.s.KeysExamined)...)
	return append(out,
		bson.E{Key: "keysExamined", Value: Num(ev.s.KeysExamined)},
		bson.E{Key: "docsExamined", Value: Num(ev.s.DocsExamined)})
}

func (p *Plan) fetchStage(f *query.Filter, ev *execView) bson.D {
	out := bson.D{{Key: "stage", Value: "FETCH"}}
	if rest := p.residual(f); len(rest) > 0 {
		out = append(out, bson.E{Key: "filter", Value: rest})
	}
	if ev != nil {
		out = append(out, ev.common(ev.s.KeysExamined)...)
		out = append(out,
			bson.E{Key: "docsExamined", Value: Num(ev.s.DocsExamined)},
			bson.E{Key: "alreadyHasObj", Value: int32(0)})
	}
	return append(out, bson.E{Key: "inputStage", Value: p.ixScanStage(ev)})
}

func (p *Plan) ixScanStage(ev *execView) bson.D {
	out := bson.D{{Key: "stage", Value: "IXSCAN"}}
	var ix execView
	if ev != nil {
		ix = execView{s: ev.s, millis: ev.millis}
		ix.s.Returned = ev.s.KeysExamined - ev.s.DupsDropped
		out = append(out, ix.common(ev.s.KeysExamined)...)
	}
	out = append(out, p.indexFields()...)
	if ev == nil {
		return out
	}
	return append(out,
		bson.E{Key: "keysExamined", Value: Num(ev.s.KeysExamined)},
		bson.E{Key: "seeks", Value: Num(ev.s.Seeks)},
		bson.E{Key: "dupsTested", Value: Num(p.dupsTested(ev.s))},
		bson.E{Key: "dupsDropped", Value: Num(ev.s.DupsDropped)})
}

func (p *Plan) dupsTested(s ScanStats) int64 {
	if p.Index.IsID() {
		return 0
	}
	return s.KeysExamined
}

// indexFields describe the index an IXSCAN reads, with the multikey
// paths the index has recorded (an index from before tracking began
// lists every prefix of every field).
func (p *Plan) indexFields() bson.D {
	ix := p.Index
	return bson.D{
		{Key: "keyPattern", Value: ix.KeyPattern()},
		{Key: "indexName", Value: ix.Name},
		{Key: "isMultiKey", Value: ix.IsMultiKey()},
		{Key: "multiKeyPaths", Value: p.multiKeyPaths()},
		{Key: "isUnique", Value: ix.Unique},
		{Key: "isSparse", Value: ix.Sparse},
		{Key: "isPartial", Value: ix.Partial != nil},
		{Key: "indexVersion", Value: int32(2)},
		{Key: "direction", Value: p.direction()},
		{Key: "indexBounds", Value: p.boundsDoc()},
	}
}

func (p *Plan) multiKeyPaths() bson.D {
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
		{Key: "nReturned", Value: Num(ev.s.Returned)},
		{Key: "executionTimeMillisEstimate", Value: Num(ev.millis)},
		{Key: "works", Value: Num(works)},
		{Key: "advanced", Value: Num(ev.s.Returned)},
		{Key: "needTime", Value: Num(needTime)},
		{Key: "needYield", Value: int32(0)},
		{Key: "saveState", Value: int32(0)},
		{Key: "restoreState", Value: int32(0)},
		{Key: "isEOF", Value: eof},
	}
}

// Num stores a counter as MongoDB does: an int when it fits, else a long.
func Num(n int64) any {
	if n >= math.MinInt32 && n <= math.MaxInt32 {
		return int32(n)
	}
	return n
}

// boundsDoc renders indexBounds: for each field, its intervals in the
// order the scan meets them.
func (p *Plan) boundsDoc() bson.D {
	out := bson.D{}
	for _, b := range p.bounds {
		out = append(out, bson.E{Key: b.path, Value: b.strings(b.desc != p.Reverse)})
	}
	return out
}

func (b fieldBounds) strings(backwards bool) bson.A {
	if b.full {
		if backwards {
			return bson.A{"[MaxKey, MinKey]"}
		}
		return bson.A{"[MinKey, MaxKey]"}
	}
	out := make(bson.A, 0, len(b.ivals))
	for i := range b.ivals {
		iv := b.ivals[i]
		if backwards {
			iv = b.ivals[len(b.ivals)-1-i]
		}
		out = append(out, intervalString(iv, backwards, b.keyed))
	}
	return out
}

// intervalString prints an interval as MongoDB does: "[5, 5]",
// "(3, inf.0]", and a collation key as "CollationKey(0x…)".
func intervalString(iv ixbounds.Interval, backwards, keyed bool) string {
	lo, loIncl, hi, hiIncl := iv.Lo, iv.LoIncl, iv.Hi, iv.HiIncl
	if backwards {
		lo, loIncl, hi, hiIncl = hi, hiIncl, lo, loIncl
	}
	open, closing := "(", ")"
	if loIncl {
		open = "["
	}
	if hiIncl {
		closing = "]"
	}
	return open + formatBound(lo, keyed) + ", " + formatBound(hi, keyed) + closing
}

func formatBound(v any, keyed bool) string {
	if s, ok := v.(string); ok && keyed {
		return "CollationKey(0x" + hex.EncodeToString([]byte(s)) + ")"
	}
	if keyed {
		v = hexKeys(v, "CollationKey(0x", ")")
	}
	return bsonutil.Format(v)
}

// hexKeys is v with the collation keys in it (its strings, inside
// documents and arrays too) written as hex between before and after: a
// key is bytes, often not UTF-8, which a driver would refuse in a reply.
func hexKeys(v any, before, after string) any {
	switch x := v.(type) {
	case string:
		return before + hex.EncodeToString([]byte(x)) + after
	case bson.D:
		out := make(bson.D, len(x))
		for i, e := range x {
			out[i] = bson.E{Key: e.Key, Value: hexKeys(e.Value, before, after)}
		}
		return out
	case bson.A:
		out := make(bson.A, len(x))
		for i, e := range x {
			out[i] = hexKeys(e, before, after)
		}
		return out
	}
	return v
}
