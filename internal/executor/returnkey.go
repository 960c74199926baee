package executor

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/catalog"
	"github.com/mayflydb/mayfly/internal/cursor"
)

// KeyIndex is the index whose keys the plan's scan reads (the _id index
// for a point read by _id), nil for a collection scan.
func (p *Plan) KeyIndex() *catalog.Index {
	if p.plan == nil {
		return nil
	}
	return p.plan.Index
}

// WithIndexKeys turns each document src yields into its key in ix, as
// find's returnKey does: {path: value} per key field, and an empty
// document when the plan read no index (ix nil). The record id goes too,
// as mongod's returnKey stage drops it.
func WithIndexKeys(src cursor.Source, ix *catalog.Index) cursor.Source {
	return &indexKeySource{src: src, ix: ix}
}

type indexKeySource struct {
	src cursor.Source
	ix  *catalog.Index
}

func (s *indexKeySource) Next() (bson.D, bool, error) {
	d, ok, err := s.src.Next()
	if !ok || err != nil {
		return d, ok, err
	}
	return indexKey(d, s.ix), true, nil
}

func (s *indexKeySource) Close() error { return s.src.Close() }

// indexKey is doc's key in ix. Of a multikey path it gives the first
// value the index holds for it: which element matched is the scan's, not
// the document's, to know.
func indexKey(doc bson.D, ix *catalog.Index) bson.D {
	key := bson.D{}
	if ix == nil {
		return key
	}
	for _, f := range ix.Fields {
		var v any // a missing path is indexed as null
		if vals := bsonutil.PathValues(doc, f.Path); len(vals) > 0 {
			v = vals[0]
		}
		if a, ok := v.(bson.A); ok && len(a) > 0 {
			v = a[0]
		}
		key = append(key, bson.E{Key: f.Path, Value: v})
	}
	return key
}
