package catalog

import (
	"math"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
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

// ClusteredIndex is a clusteredIndex document as create gives it.
type ClusteredIndex struct {
	V      int64
	Key    bson.D
	Name   string
	Unique bool
}

// Validate applies mongod's checks of the clustered index spec and, when
// hasExpiry, of expireAfterSeconds (a 64-bit value here, unlike a TTL
// index's), in mongod's order; now bounds the expiry as mongod's clock does.
func (s *ClusteredIndex) Validate(secs int64, hasExpiry bool, now time.Time) error {
	if !s.Unique {
		return mongoerr.New(mongoerr.Location5979700, "The clusteredIndex option requires unique: true to be specified")
	}
	if len(s.Key) != 1 || s.Key[0].Key != "_id" || !bsonutil.IsNumber(s.Key[0].Value) || bsonutil.ToFloat(s.Key[0].Value) != 1 {
		return mongoerr.New(mongoerr.InvalidIndexSpecificationOption, "The clusteredIndex option is only supported for key: {_id: 1}")
	}
	if hasExpiry {
		if err := ValidateClusteredExpiry(secs, now); err != nil {
			return err
		}
	}
	if s.V != 2 {
		return mongoerr.Newf(mongoerr.Location5979704, "Invalid clusteredIndex specification %s; cannot create a clusteredIndex with v=%d", bsonutil.Format(s.Doc()), s.V)
	}
	return nil
}

// ValidateClusteredExpiry is mongod's range check of a clustered
// collection's expireAfterSeconds: not negative, and, in milliseconds,
// not beyond the time since the epoch.
func ValidateClusteredExpiry(secs int64, now time.Time) error {
	if secs < 0 {
		return mongoerr.New(mongoerr.InvalidOptions, "TTL index 'expireAfterSeconds' option cannot be less than 0")
	}
	if secs > math.MaxInt64/1000 || secs*1000 > now.UnixMilli() {
		return mongoerr.New(mongoerr.InvalidOptions, "TTL index 'expireAfterSeconds' option must be within an acceptable range, try a lower number")
	}
	return nil
}

// Doc is the spec as mongod keeps it and listCollections shows it: {v,
// key, name, unique}, the key as given, the name defaulting to _id_.
func (s *ClusteredIndex) Doc() bson.D {
	name := s.Name
	if name == "" {
		name = IDIndexName
	}
	return bson.D{
		{Key: "v", Value: int32(s.V)},
		{Key: "key", Value: s.Key},
		{Key: "name", Value: name},
		{Key: "unique", Value: true},
	}
}

// ClusteredIndexSpec is a clustered collection's _id index as listIndexes
// shows it: the clusteredIndex spec, the collection's collation, its
// expireAfterSeconds, and clustered: true.
func (c *Collection) ClusteredIndexSpec() bson.D {
	out := append(bson.D{}, c.ClusteredSpec()...)
	if coll, ok := bsonutil.Field(c.Options, "collation"); ok {
		out = append(out, bson.E{Key: "collation", Value: coll})
	}
	if c.ClusteredTTL {
		out = append(out, bson.E{Key: ExpireAfterOption, Value: c.ClusteredExpireAfter})
	}
	return append(out, bson.E{Key: "clustered", Value: true})
}

// WithoutClusteredIndex checks createIndexes' specs against a clustered
// collection's clustered index as mongod does: a spec on the cluster key
// ({_id: <number>}) is the clustered index, which exists already (left
// out; a different name is ignored), unless it asks for another v or
// unique: false; a spec with the clustered index's name on another key
// is refused.
func (c *Collection) WithoutClusteredIndex(ixs []*Index) ([]*Index, error) {
	if !c.Clustered {
		return ixs, nil
	}
	clustered := c.ClusteredSpec()
	name, _ := bsonutil.Field(clustered, "name")
	out := ixs[:0:0]
	for _, ix := range ixs {
		key := ix.KeyPattern()
		keysMatch := len(key) == 1 && key[0].Key == "_id" && bsonutil.IsNumber(key[0].Value)
		namesMatch := ix.Name == name
		switch {
		case !keysMatch && !namesMatch:
			out = append(out, ix)
			continue
		case !keysMatch:
			return nil, mongoerr.Newf(mongoerr.Location6100906, "Cannot create an index where the name matches the clusteredIndex but the key does not - indexSpec: %s, clusteredIndex: %s", bsonutil.Format(ix.Spec), bsonutil.Format(clustered))
		}
		if v, ok := bsonutil.Field(ix.Spec, "v"); ok && bsonutil.IsNumber(v) && bsonutil.ToFloat(v) != 2 {
			return nil, mongoerr.New(mongoerr.Location6100908, "Cannot create an index with the same key pattern as the collection's clusteredIndex but a different 'v' field")
		}
		if u, ok := bsonutil.Field(ix.Spec, "unique"); ok && u == false {
			return nil, mongoerr.New(mongoerr.Location6100909, "Cannot create an index with the same key pattern as the collection's clusteredIndex but a different 'unique' field")
		}
	}
	return out, nil
}

// RefuseDropClustered is dropIndexes' rule for a clustered collection:
// its clustered index (by name, by the cluster key's pattern, or in a
// list of names) cannot be dropped; "*" drops the others.
func (c *Collection) RefuseDropClustered(index any) error {
	if !c.Clustered {
		return nil
	}
	name, _ := bsonutil.Field(c.ClusteredSpec(), "name")
	hit := false
	switch x := index.(type) {
	case string:
		hit = x == name
	case bson.D:
		hit = len(x) == 1 && x[0].Key == "_id" && bsonutil.IsNumber(x[0].Value)
	case bson.A:
		for _, e := range x {
			hit = hit || e == name
		}
	}
	if hit {
		return mongoerr.New(mongoerr.Location5979800, "It is illegal to drop the clusteredIndex")
	}
	return nil
}
