package shardkey

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// errArrayInKey is mongod's answer to a document whose shard key path
// holds or crosses an array.
func errArrayInKey() *mongoerr.Error {
	return mongoerr.New(mongoerr.ShardKeyNotFound, "Shard key cannot contain array values or array descendants.")
}

// Extract returns doc's shard key value as mongod's extractShardKeyFromDoc
// builds it: one field per pattern field, named by its path, holding the
// value found there (null when the path is missing, as since 4.4) or, for
// a hashed field, the int64 hash of that value. An array on the path is
// refused with ShardKeyNotFound.
func (p *Pattern) Extract(doc bson.D) (bson.D, error) {
	key := make(bson.D, 0, len(p.fields))
	for _, f := range p.fields {
		v, err := valueAt(doc, f.Path)
		if err != nil {
			return nil, err
		}
		if f.Hashed {
			h, err := Hash(v)
			if err != nil {
				return nil, err
			}
			v = h
		}
		key = append(key, bson.E{Key: f.Path, Value: v})
	}
	return key, nil
}

// HashOf returns the hash of doc's value for the hashed field of a
// single-hashed pattern: the number the routing table places doc by.
func (p *Pattern) HashOf(doc bson.D) (int64, error) {
	path, ok := p.HashedField()
	if !ok {
		return 0, mongoerr.Newf(mongoerr.BadValue, "shard key %s has no hashed field", p)
	}
	v, err := valueAt(doc, path)
	if err != nil {
		return 0, err
	}
	return Hash(v)
}

// valueAt walks a dotted path through embedded documents as mongod's
// getFieldDottedOrArray does: an array met on the way (or at the end) is
// an error, and a path that ends early — a missing field, or a scalar
// where a document was needed — yields null.
func valueAt(doc bson.D, path string) (any, error) {
	var cur any = doc
	for part := range strings.SplitSeq(path, ".") {
		d, ok := cur.(bson.D)
		if !ok {
			return nil, nil
		}
		next, found := bsonutil.Field(d, part)
		if !found {
			return nil, nil
		}
		switch next.(type) {
		case bson.A, []any:
			return nil, errArrayInKey()
		}
		cur = next
	}
	return cur, nil
}
