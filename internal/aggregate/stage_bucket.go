package aggregate

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/query"
)

// bucketSpec is the parsed argument of $bucket.
type bucketSpec struct {
	groupBy    any
	boundaries bson.A
	def        any
	hasDefault bool
	output     bson.D
}

// parseBucket desugars $bucket into the $group (keyed by a $switch over
// the boundaries) and $sort {_id: 1} that MongoDB itself runs.
func parseBucket(spec any, opt Options) (stage, error) {
	d, ok := spec.(bson.D)
	if !ok {
		return nil, mongoerr.Newf(mongoerr.Location40201, "Argument to $bucket stage must be an object, but found type: %s.",
			typeNameOf(spec))
	}
	b, err := readBucketSpec(d)
	if err != nil {
		return nil, err
	}
	if err := b.validate(); err != nil {
		return nil, err
	}
	g, err := parseGroup(b.groupSpec(), opt)
	if err != nil {
		return nil, err
	}
	sort, err := query.NewSort(bson.D{{Key: "_id", Value: int32(1)}})
	if err != nil {
		return nil, err
	}
	return &groupSortStage{group: g.(*groupStage), sort: sort}, nil
}

func readBucketSpec(d bson.D) (*bucketSpec, error) {
	b := &bucketSpec{}
	var hasGroupBy bool
	for _, e := range d {
		switch e.Key {
		case "groupBy":
			b.groupBy, hasGroupBy = e.Value, true
		case "boundaries":
			b.boundaries, _ = e.Value.(bson.A)
			if b.boundaries == nil {
				return nil, mongoerr.Newf(mongoerr.Location40200, "The $bucket 'boundaries' field must be an array, but found type: %s.",
					typeNameOf(e.Value))
			}
		case "default":
			b.def, b.hasDefault = e.Value, true
		case "output":
			var ok bool
			if b.output, ok = e.Value.(bson.D); !ok {
				return nil, mongoerr.Newf(mongoerr.Location40196, "The $bucket 'output' field must be an object, but found type: %s.",
					typeNameOf(e.Value))
			}
		default:
			return nil, mongoerr.Newf(mongoerr.Location40197, "Unrecognized option to $bucket: %s.", e.Key)
		}
	}
	if !hasGroupBy || b.boundaries == nil {
		return nil, mongoerr.New(mongoerr.Location40198, "$bucket requires 'groupBy' and 'boundaries' to be specified.")
	}
	return b, nil
}

func (b *bucketSpec) validate() error {
	s, isStr := b.groupBy.(string)
	if !(isStr && strings.HasPrefix(s, "$")) && !isOperatorDoc(b.groupBy) {
		return mongoerr.Newf(mongoerr.Location40202,
			"The $bucket 'groupBy' field must be defined as a $-prefixed path or an expression, but found: %s.",
			bsonutil.Format(b.groupBy))
	}
	if len(b.boundaries) < 2 {
		return mongoerr.Newf(mongoerr.Location40192, "The $bucket 'boundaries' field must have at least 2 values, but found %d value(s).",
			len(b.boundaries))
	}
	if err := b.checkBoundaries(); err != nil {
		return err
	}
	return b.checkDefault()
}

func (b *bucketSpec) checkBoundaries() error {
	for i := 1; i < len(b.boundaries); i++ {
		prev, cur := b.boundaries[i-1], b.boundaries[i]
		if bsonutil.Rank(prev) != bsonutil.Rank(cur) {
			return mongoerr.Newf(mongoerr.Location40193,
				"All values in the the 'boundaries' option to $bucket must have the same type. Found conflicting types %s and %s.",
				typeNameOf(prev), typeNameOf(cur))
		}
		if bsonutil.Compare(prev, cur) >= 0 {
			return mongoerr.Newf(mongoerr.Location40194,
				"The 'boundaries' option to $bucket must be sorted, but elements %d and %d are not in ascending order (%s is not less than %s).",
				i-1, i, bsonutil.Format(prev), bsonutil.Format(cur))
		}
	}
	return nil
}

func (b *bucketSpec) checkDefault() error {
	if !b.hasDefault {
		return nil
	}
	lo, hi := b.boundaries[0], b.boundaries[len(b.boundaries)-1]
	if bsonutil.Rank(b.def) == bsonutil.Rank(lo) && bsonutil.Compare(b.def, lo) >= 0 && bsonutil.Compare(b.def, hi) < 0 {
		return mongoerr.New(mongoerr.Location40199,
			"The $bucket 'default' field must be less than the lowest boundary or greater than or equal to the highest boundary.")
	}
	return nil
}

// groupSpec builds the equivalent $group specification.
func (b *bucketSpec) groupSpec() bson.D {
	branches := bson.A{}
	for i := 0; i+1 < len(b.boundaries); i++ {
		lo, hi := b.boundaries[i], b.boundaries[i+1]
		cond := bson.D{{Key: "$and", Value: bson.A{
			bson.D{{Key: "$gte", Value: bson.A{b.groupBy, bson.D{{Key: "$literal", Value: lo}}}}},
			bson.D{{Key: "$lt", Value: bson.A{b.groupBy, bson.D{{Key: "$literal", Value: hi}}}}},
		}}}
		branches = append(branches, bson.D{{Key: "case", Value: cond}, {Key: "then", Value: bson.D{{Key: "$literal", Value: lo}}}})
	}
	sw := bson.D{{Key: "branches", Value: branches}}
	if b.hasDefault {
		sw = append(sw, bson.E{Key: "default", Value: bson.D{{Key: "$literal", Value: b.def}}})
	}
	out := b.output
	if out == nil {
		out = bson.D{{Key: "count", Value: bson.D{{Key: "$sum", Value: int32(1)}}}}
	}
	return append(bson.D{{Key: "_id", Value: bson.D{{Key: "$switch", Value: sw}}}}, out...)
}
