package diag

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/docstore"
)

// KeyRange is dataSize's [Min, Max) over Pattern's fields; an empty bound
// is open.
type KeyRange struct {
	Pattern  bson.D
	Min, Max bson.D
}

// Measure adds up the documents of c whose key lies in the range; the
// error is the scan's, ctx's end among them.
func (k KeyRange) Measure(ctx context.Context, c *docstore.Collection) (size, n int64, err error) {
	it := c.Scan(nil, nil).WithContext(ctx)
	defer it.Close()
	for {
		doc, ok, err := it.Next()
		if err != nil {
			return 0, 0, err
		}
		if !ok {
			return size, n, nil
		}
		if k.contains(doc) {
			raw, _ := bson.Marshal(doc)
			size += int64(len(raw))
			n++
		}
	}
}

func (k KeyRange) contains(doc bson.D) bool {
	key := bson.D{}
	for _, f := range k.Pattern {
		v, _ := bsonutil.LookupPath(doc, f.Key)
		key = append(key, bson.E{Key: f.Key, Value: v})
	}
	return (len(k.Min) == 0 || compareKey(key, k.Min) >= 0) && (len(k.Max) == 0 || compareKey(key, k.Max) < 0)
}

// compareKey compares key values in order, ignoring field names, as
// mongod compares a key with min and max.
func compareKey(key, bound bson.D) int {
	for i := range min(len(key), len(bound)) {
		if c := bsonutil.Compare(key[i].Value, bound[i].Value); c != 0 {
			return c
		}
	}
	return 0
}
