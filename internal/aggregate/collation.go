package aggregate

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// Under a non-simple collation $match and $sort compare strings through
// the collation's keys. Stages that compare or build strings in other ways
// ($group keys, expressions, $lookup) do not apply it yet, so a pipeline
// with them is refused rather than answered in binary order. What remains
// covers what drivers send for countDocuments and plain filtered, sorted,
// paged reads.

// checkCollatedStage refuses a stage that would ignore the collation.
func checkCollatedStage(spec bson.E) error {
	switch spec.Key {
	case "$match", "$sort", "$skip", "$limit", "$count":
		return nil
	case "$project", "$unset":
		if plainProjection(spec.Value) {
			return nil
		}
	case "$group":
		if constantGroup(spec.Value) {
			return nil
		}
	}
	return mongoerr.Newf(mongoerr.BadValue, "a non-simple collation is not supported by Mayfly for the %s stage", spec.Key)
}

// plainProjection: only inclusions and exclusions, nothing computed.
func plainProjection(v any) bool {
	switch x := v.(type) {
	case string:
		return true
	case bson.A:
		return true
	case bson.D:
		for _, e := range x {
			if _, isBool := e.Value.(bool); !isBool && !bsonutil.IsNumber(e.Value) {
				return false
			}
		}
		return true
	}
	return false
}

// constantGroup: one group (a constant _id) counted or summed over
// numbers, as countDocuments builds it.
func constantGroup(v any) bool {
	d, ok := v.(bson.D)
	if !ok {
		return false
	}
	for _, e := range d {
		if e.Key == "_id" {
			if s, isStr := e.Value.(string); isStr && strings.HasPrefix(s, "$") {
				return false
			}
			if _, isDoc := e.Value.(bson.D); isDoc {
				return false
			}
			continue
		}
		acc, isDoc := e.Value.(bson.D)
		if !isDoc || len(acc) != 1 || (acc[0].Key != "$sum" && acc[0].Key != "$count") {
			return false
		}
	}
	return true
}
