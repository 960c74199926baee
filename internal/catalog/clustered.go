package catalog

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
)

// ClusteredIndexOption and ExpireAfterOption are the create and collMod
// options of a clustered collection, as listCollections shows them.
const (
	ClusteredIndexOption = "clusteredIndex"
	ExpireAfterOption    = "expireAfterSeconds"
)

// ClusteredTTLIndex is the definition TTL expiry uses for a clustered
// collection with expireAfterSeconds: a TTL "index" on _id whose entries
// are the document keys themselves (the _id index has no entries of its
// own). It is never in Indexes; docstore builds it from the collection.
func (c *Collection) ClusteredTTLIndex() *Index {
	if !c.ClusteredTTL {
		return nil
	}
	return &Index{
		Name:        IDIndexName,
		Fields:      []Field{{Path: "_id"}},
		Unique:      true,
		TTL:         true,
		ExpireAfter: c.ClusteredExpireAfter,
		Ready:       true,
	}
}

// ClusteredSpec is the clusteredIndex option as listCollections shows it
// ({v, key, name, unique}); nil for a collection that is not clustered.
func (c *Collection) ClusteredSpec() bson.D {
	if !c.Clustered {
		return nil
	}
	if v, ok := bsonutil.Field(c.Options, ClusteredIndexOption); ok {
		if d, ok := v.(bson.D); ok {
			return d
		}
	}
	return nil
}

// SetClusteredExpiry sets (secs ≥ 0) or removes (secs < 0) the
// collection's expireAfterSeconds, in the catalog fields and in the
// options listCollections shows, which keep their order.
func (c *Collection) SetClusteredExpiry(secs int64) {
	c.ClusteredTTL, c.ClusteredExpireAfter = secs >= 0, max(secs, 0)
	out := make(bson.D, 0, len(c.Options)+1)
	set := false
	for _, e := range c.Options {
		if e.Key != ExpireAfterOption {
			out = append(out, e)
			continue
		}
		if secs >= 0 {
			out = append(out, bson.E{Key: ExpireAfterOption, Value: secs})
			set = true
		}
	}
	if secs >= 0 && !set {
		out = append(out, bson.E{Key: ExpireAfterOption, Value: secs})
	}
	c.Options = out
}
