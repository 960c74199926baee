package writeops

import (
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/aggregate"
	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/expr"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/query"
	"github.com/mayflydb/mayfly/internal/update"
)

// Modifier is an update in any of its three forms: operators, a
// replacement document, or an aggregation pipeline.
type Modifier interface {
	// Apply returns doc updated and whether it changed; positional is
	// the array index the filter matched (-1: none), isInsert says that
	// doc is an upsert's seed.
	Apply(doc bson.D, positional int, isInsert bool, now time.Time) (bson.D, bool, error)
	// Replacement says that the update replaces the whole document.
	Replacement() bool
}

// OperatorModifier is an update of operators or a replacement document.
// It is one pointer, so that a Modifier holds it without an allocation.
type OperatorModifier struct {
	Update *update.Update
}

// Apply implements Modifier.
func (m OperatorModifier) Apply(doc bson.D, pos int, isInsert bool, now time.Time) (bson.D, bool, error) {
	return m.Update.Apply(doc, update.Context{Now: now, IsInsert: isInsert, Positional: pos})
}

// Replacement implements Modifier.
func (m OperatorModifier) Replacement() bool { return m.Update.IsReplacement() }

// KeepEmptyTimestamps is m with bypassEmptyTsReplacement: top-level
// Timestamp(0, 0) values are stored as given. It changes only an
// OperatorModifier; other modifiers are returned as they are.
func KeepEmptyTimestamps(m Modifier) Modifier {
	if om, ok := m.(OperatorModifier); ok {
		return keepingEmptyTs(om)
	}
	return m
}

// keepingEmptyTs is an OperatorModifier with bypassEmptyTsReplacement
// (KeepEmptyTimestamps).
type keepingEmptyTs OperatorModifier

// Apply implements Modifier.
func (m keepingEmptyTs) Apply(doc bson.D, pos int, isInsert bool, now time.Time) (bson.D, bool, error) {
	return m.Update.Apply(doc, update.Context{Now: now, IsInsert: isInsert, Positional: pos, KeepEmptyTimestamps: true})
}

// Replacement implements Modifier.
func (m keepingEmptyTs) Replacement() bool { return m.Update.IsReplacement() }

// PipelineModifier is a pipeline-style update.
type PipelineModifier struct {
	Pipeline *aggregate.Pipeline
	Guard    *expr.Guard // nil: the pipeline runs to its end
}

// Replacement implements Modifier: a pipeline's output is compared, not
// stored whole.
func (m PipelineModifier) Replacement() bool { return false }

// Apply implements Modifier: the pipeline runs over doc alone and may not
// change its _id.
func (m PipelineModifier) Apply(doc bson.D, _ int, _ bool, now time.Time) (bson.D, bool, error) {
	out, err := m.Pipeline.Run(aggregate.Docs(doc), aggregate.Standalone(now, m.Guard))
	if err != nil {
		return nil, false, err
	}
	defer out.Close()
	next, ok, err := out.Next()
	if err != nil || !ok {
		return nil, false, err
	}
	oldID, _ := bsonutil.Field(doc, "_id")
	newID, hasID := bsonutil.Field(next, "_id")
	if !hasID {
		next = append(bson.D{{Key: "_id", Value: oldID}}, next...)
	} else if !bsonutil.Equal(oldID, newID) {
		return nil, false, mongoerr.Newf(mongoerr.ImmutableField, "After applying the update, the (immutable) field '_id' was found to have been altered to _id: %s", bsonutil.Format(newID))
	}
	return next, bsonutil.Compare(doc, next) != 0, nil
}

// Guarded makes a pipeline-style m stop when g's operation ends; an
// operator update's work is bounded by its document.
func Guarded(m Modifier, g *expr.Guard) Modifier {
	if pm, ok := m.(PipelineModifier); ok {
		pm.Guard = g
		return pm
	}
	return m
}

// ParseModifier reads u: an operator document, a replacement, or a
// pipeline (array of stages), which compiles with the command's let and
// collation.
func ParseModifier(u any, arrayFilters []bson.D, let bson.D, coll query.Collator) (Modifier, error) {
	switch x := u.(type) {
	case bson.D:
		parsed, err := update.ParseCollated(x, arrayFilters, coll)
		if err != nil {
			return nil, err
		}
		return OperatorModifier{Update: parsed}, nil
	case bson.A:
		if len(arrayFilters) > 0 {
			return nil, mongoerr.New(mongoerr.FailedToParse, "arrayFilters may not be specified for pipeline-style updates")
		}
		p, err := aggregate.Parse(x, aggregate.Options{Let: let, Collation: coll})
		if err != nil {
			return nil, err
		}
		return PipelineModifier{Pipeline: p}, nil
	}
	return nil, mongoerr.Newf(mongoerr.FailedToParse, "Update argument must be either an object or an array")
}
