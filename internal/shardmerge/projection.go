package shardmerge

import (
	"slices"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/query"
)

// Mayfly's shards have no {$meta: "sortKey"}, which mongod's router adds
// to a sorted find's projection so that it can merge on keys computed
// before the projection. Instead the shards' projection keeps every field
// a sort path starts in, and the router applies the user's projection
// after the merge when that changed anything.

// sortTopFields are the first components of the sort's paths: the fields
// whose values the merge compares.
func sortTopFields(s *query.Sort, spec bson.D) []string {
	if s == nil {
		return nil
	}
	var tops []string
	for _, e := range spec {
		top, _, _ := strings.Cut(e.Key, ".")
		tops = append(tops, top)
	}
	return tops
}

// projectionShape is what a projection does, as far as the split cares.
type projectionShape int

const (
	plainInclusion projectionShape = iota // only paths: {a: 1, "b.c": true}, _id maybe 0
	plainExclusion                        // only paths: {a: 0}
	computedShape                         // expressions, $slice, $elemMatch, "a.$"
)

// splitProjection returns the projection the shards run and the one the
// router applies after the merge (nil when the shards' is the user's).
func splitProjection(spec bson.D, sortTops []string) (shard, router bson.D) {
	if len(spec) == 0 || len(sortTops) == 0 {
		return spec, nil
	}
	switch shapeOf(spec) {
	case plainInclusion:
		missing := uncoveredTops(spec, sortTops)
		if len(missing) == 0 {
			return spec, nil
		}
		return widenInclusion(spec, missing), spec
	case plainExclusion:
		kept := withoutTops(spec, sortTops)
		if len(kept) == len(spec) {
			return spec, nil
		}
		if len(kept) == 0 {
			return nil, spec
		}
		return kept, spec
	}
	return nil, spec
}

func shapeOf(spec bson.D) projectionShape {
	included, excluded := false, false
	var walk func(d bson.D, atRoot bool) bool
	walk = func(d bson.D, atRoot bool) bool {
		for _, e := range d {
			if strings.HasPrefix(e.Key, "$") || strings.HasSuffix(e.Key, ".$") {
				return false
			}
			if sub, ok := e.Value.(bson.D); ok {
				if len(sub) == 0 || !walk(sub, false) {
					return false
				}
				continue
			}
			if !bsonutil.IsNumber(e.Value) && !isBool(e.Value) {
				return false
			}
			switch {
			case bsonutil.TrueValue(e.Value):
				included = true
			case !(atRoot && e.Key == "_id"):
				excluded = true
			}
		}
		return true
	}
	switch {
	case !walk(spec, true) || included && excluded:
		return computedShape
	case included:
		return plainInclusion
	}
	return plainExclusion
}

func isBool(v any) bool {
	_, ok := v.(bool)
	return ok
}

// uncoveredTops are the sort fields an inclusion projection does not keep
// whole (_id is kept unless excluded).
func uncoveredTops(spec bson.D, tops []string) []string {
	var missing []string
	for _, top := range tops {
		v, listed := bsonutil.Field(spec, top)
		_, isSub := v.(bson.D)
		kept := listed && !isSub && bsonutil.TrueValue(v)
		if top == "_id" && !listed {
			kept = true
		}
		if !kept {
			missing = append(missing, top)
		}
	}
	return missing
}

// widenInclusion replaces whatever an inclusion projection says about the
// missing sort fields by keeping them whole.
func widenInclusion(spec bson.D, missing []string) bson.D {
	out := withoutTops(spec, missing)
	for _, top := range missing {
		if top != "_id" { // dropping {_id: 0} already keeps it
			out = append(out, bson.E{Key: top, Value: true})
		}
	}
	return out
}

// withoutTops drops the projection's entries on the given top fields.
func withoutTops(spec bson.D, tops []string) bson.D {
	out := make(bson.D, 0, len(spec))
	for _, e := range spec {
		top, _, _ := strings.Cut(e.Key, ".")
		if !slices.Contains(tops, top) {
			out = append(out, e)
		}
	}
	return out
}

// hasPositional reports whether the projection has a positional "a.$".
func hasPositional(spec bson.D) bool {
	for _, e := range spec {
		if strings.HasSuffix(e.Key, ".$") {
			return true
		}
	}
	return false
}
