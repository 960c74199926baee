package ddl

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/catalog"
	"github.com/mayflydb/mayfly/internal/collation"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/timeseries"
)

// IndexSpecs parses createIndexes' index specs, giving those that name
// no collation the collection's default (dflt, nil for none), as mongod
// does, and checks them as one request.
func IndexSpecs(specs []bson.D, dflt *collation.Collation) ([]*catalog.Index, error) {
	ixs := make([]*catalog.Index, 0, len(specs))
	for _, s := range specs {
		if _, ok := bsonutil.Field(s, "collation"); !ok && dflt != nil {
			s = append(append(bson.D{}, s...), bson.E{Key: "collation", Value: dflt.Spec()})
		}
		ix, err := catalog.ParseIndexSpec(s)
		if err != nil {
			return nil, err
		}
		ixs = append(ixs, ix)
	}
	return ixs, catalog.CheckRequest(ixs)
}

// IndexesByKey are the indexes a client sees (not a time-series
// collection's internal one) whose key pattern is key.
func IndexesByKey(meta *catalog.Collection, key bson.D) []*catalog.Index {
	var found []*catalog.Index
	for i := range meta.Indexes {
		if timeseries.Visible(&meta.Indexes[i]) && bsonutil.Compare(meta.Indexes[i].KeyPattern(), key) == 0 {
			found = append(found, &meta.Indexes[i])
		}
	}
	return found
}

// IndexesToDrop are the names of the indexes dropIndexes' index field
// (v) names: "*" (every index but _id), a name, a key pattern, or an
// array of names.
func IndexesToDrop(meta *catalog.Collection, v any) ([]string, error) {
	switch x := v.(type) {
	case string:
		return indexesByName(meta, x)
	case bson.A:
		var out []string
		for _, e := range x {
			s, ok := e.(string)
			if !ok {
				return nil, mongoerr.New(mongoerr.TypeMismatch, "dropIndexes: index names must be strings")
			}
			names, err := indexesByName(meta, s)
			if err != nil {
				return nil, err
			}
			out = append(out, names...)
		}
		return out, nil
	case bson.D:
		ix, err := indexToDropByKey(meta, x)
		if err != nil {
			return nil, err
		}
		if ix.IsID() {
			return nil, mongoerr.New(mongoerr.InvalidOptions, "cannot drop _id index")
		}
		return []string{ix.Name}, nil
	}
	return nil, mongoerr.WrongType("dropIndexes", "index", v, "[string, object, array]")
}

func indexesByName(meta *catalog.Collection, name string) ([]string, error) {
	if name == "*" {
		var out []string
		for _, ix := range meta.Indexes[1:] {
			if timeseries.Visible(&ix) {
				out = append(out, ix.Name)
			}
		}
		return out, nil
	}
	if name == catalog.IDIndexName {
		return nil, mongoerr.New(mongoerr.InvalidOptions, "cannot drop _id index")
	}
	if ix := meta.Index(name); ix == nil || !timeseries.Visible(ix) {
		return nil, mongoerr.Newf(mongoerr.IndexNotFound, "index not found with name [%s]", name)
	}
	return []string{name}, nil
}

func indexToDropByKey(meta *catalog.Collection, key bson.D) (*catalog.Index, error) {
	found := IndexesByKey(meta, key)
	switch len(found) {
	case 0:
		return nil, mongoerr.Newf(mongoerr.IndexNotFound, "can't find index with key: %s", bsonutil.Format(key))
	case 1:
		return found[0], nil
	}
	return nil, mongoerr.Newf(mongoerr.AmbiguousIndexKeyPattern, "%d indexes found for key: %s, identify by name instead. Conflicting indexes: %s, %s", len(found), bsonutil.Format(key), bsonutil.Format(found[0].Spec), bsonutil.Format(found[1].Spec))
}
