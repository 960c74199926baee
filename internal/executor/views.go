package executor

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/catalog"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// Views are read-only collections defined by a pipeline over another
// collection or view. A view is a catalog entry whose options hold viewOn
// and pipeline; it stores no documents. Reads through it run the view's
// pipeline (and those of the views it stands on) over the base
// collection, followed by what the read asks for.

// MaxViewDepth is mongod's limit on views defined on views.
const MaxViewDepth = 20

// View is a resolved view: the base collection and the whole pipeline.
type View struct {
	Base     string
	Pipeline bson.A
	// Collation is the view's default collation spec, nil for simple.
	Collation bson.D
}

// IsView reports whether the catalog entry m is a view.
func IsView(m *catalog.Collection) bool {
	_, ok := bsonutil.Field(m.Options, "viewOn")
	return ok
}

// ResolveView returns the view db.name stands for, nil for a collection
// or nothing.
func (e *Executor) ResolveView(db, name string) (*View, error) {
	var v *View
	for depth := 0; ; depth++ {
		c := e.store.Collection(db, name)
		if c == nil || !IsView(c.Meta()) {
			return v, nil
		}
		if depth >= MaxViewDepth {
			return nil, mongoerr.Newf(mongoerr.ViewDepthLimitExceeded, "View depth too deep or view cycle detected; maximum depth is %d", MaxViewDepth)
		}
		on, _ := bsonutil.Field(c.Meta().Options, "viewOn")
		stages, _ := bsonutil.Field(c.Meta().Options, "pipeline")
		a, _ := stages.(bson.A)
		if v == nil {
			v = &View{Collation: ViewCollation(c.Meta())}
		}
		v.Pipeline = append(append(bson.A{}, a...), v.Pipeline...)
		name, _ = on.(string)
		v.Base = name
	}
}

// ViewCollation is a view's collation option, nil for none.
func ViewCollation(m *catalog.Collection) bson.D {
	v, _ := bsonutil.Field(m.Options, "collation")
	d, _ := v.(bson.D)
	return d
}

// FindStages turns a find on a view (or on a collection read as an
// aggregate) into the stages after the view's: filter, then s's sort,
// skip, limit and projection.
func FindStages(filter bson.D, s *FindSpec) bson.A {
	out := bson.A{}
	if len(filter) > 0 {
		out = append(out, bson.D{{Key: "$match", Value: filter}})
	}
	if len(s.SortSpec) > 0 {
		out = append(out, bson.D{{Key: "$sort", Value: s.SortSpec}})
	}
	if s.Skip > 0 {
		out = append(out, bson.D{{Key: "$skip", Value: s.Skip}})
	}
	if s.Limit > 0 {
		out = append(out, bson.D{{Key: "$limit", Value: s.Limit}})
	}
	if len(s.ProjSpec) > 0 {
		out = append(out, bson.D{{Key: "$project", Value: s.ProjSpec}})
	}
	return out
}
