package aggregate

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// memoryError is MongoDB's error for a blocking stage over its memory
// limit without allowDiskUse.
func memoryError(what string, limit int64) error {
	if what == "$sort" {
		return mongoerr.Newf(mongoerr.QueryExceededMemoryLimitNoDiskUseAllowed,
			"Sort exceeded memory limit of %d bytes, but did not opt in to external sorting.", limit)
	}
	return mongoerr.Newf(mongoerr.QueryExceededMemoryLimitNoDiskUseAllowed,
		"Exceeded memory limit for %s, but didn't allow external sort. Pass allowDiskUse:true to opt in.", what)
}

// approxSize estimates the memory a value holds, close to its BSON size;
// it only needs to be proportionate for memory limits.
func approxSize(v any) int64 {
	switch x := v.(type) {
	case bson.D:
		n := int64(5)
		for _, e := range x {
			n += int64(len(e.Key)) + 2 + approxSize(e.Value)
		}
		return n
	case bson.A:
		n := int64(5)
		for _, e := range x {
			n += 4 + approxSize(e)
		}
		return n
	case string:
		return int64(len(x)) + 5
	case bson.Binary:
		return int64(len(x.Data)) + 5
	case bson.Decimal128:
		return 16
	}
	return 8
}

// getPath reads a dotted path through embedded documents only (arrays are
// not traversed), as $unwind and field-setting stages address fields.
func getPath(d bson.D, path []string) (any, bool) {
	var cur any = d
	for _, k := range path {
		doc, ok := cur.(bson.D)
		if !ok {
			return nil, false
		}
		if cur, ok = field(doc, k); !ok {
			return nil, false
		}
	}
	return cur, true
}

func field(d bson.D, k string) (any, bool) {
	for _, e := range d {
		if e.Key == k {
			return e.Value, true
		}
	}
	return nil, false
}

// setPath returns d with the dotted path set to v, creating (or replacing
// non-document values with) embedded documents on the way.
func setPath(d bson.D, path []string, v any) bson.D {
	if len(path) == 1 {
		return bsonutil.WithField(d, path[0], v)
	}
	sub, _ := field(d, path[0])
	subDoc, _ := sub.(bson.D)
	return bsonutil.WithField(d, path[0], setPath(subDoc, path[1:], v))
}

func splitPath(p string) []string { return strings.Split(p, ".") }
