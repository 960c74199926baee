package docstore

import (
	"slices"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/catalog"
)

// DuplicateKeyError is the error of a write that would give doc the key
// another document has in the unique index on exactly paths (the _id
// index for _id alone, or when there is no such index): mongod's E11000
// with keyPattern and keyValue. $merge's whenMatched: fail answers it,
// being an insert on mongod.
func (c *Collection) DuplicateKeyError(paths []string, doc bson.D) error {
	indexes := c.state.Load().indexes
	for _, ix := range indexes[1:] {
		if ix.def.Unique && onFields(ix.def.Fields, paths) {
			return c.dupKeyError(ix, doc)
		}
	}
	return c.dupKeyError(indexes[0], doc)
}

// onFields reports whether fields are exactly paths, in any order.
func onFields(fields []catalog.Field, paths []string) bool {
	if len(fields) != len(paths) {
		return false
	}
	for _, f := range fields {
		if !slices.Contains(paths, f.Path) {
			return false
		}
	}
	return true
}
