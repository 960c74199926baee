// Package catalog describes collections and their indexes: the metadata
// Mayfly persists beside the data, and the rules that decide whether an index
// specification is valid (including MongoDB's TTL rules).
//
// It is pure: nothing here touches storage.
package catalog

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
)

// IDIndexName is the name of the index every collection has on _id.
const IDIndexName = "_id_"

// MaxIndexes is MongoDB's limit of indexes per collection, _id_ included.
const MaxIndexes = 64

// Field is one component of an index key.
type Field struct {
	Path string `bson:"path"`
	Desc bool   `bson:"desc"`
	// Hashed: the index stores mongod's hash64 of the field's value
	// ({path: "hashed"}), not the value.
	Hashed bool `bson:"hashed,omitempty"`
}

// Index is a persisted index definition.
type Index struct {
	ID     uint32  `bson:"id"`
	Name   string  `bson:"name"`
	Fields []Field `bson:"fields"`
	Unique bool    `bson:"unique"`
	// PrepareUnique (collMod's, or createIndexes') refuses new duplicate
	// keys while keeping the ones the index holds: the step before
	// collMod makes the index unique.
	PrepareUnique bool `bson:"prepareUnique,omitempty"`
	Sparse        bool `bson:"sparse"`
	Hidden        bool `bson:"hidden"`
	// Partial is the partialFilterExpression, nil when absent.
	Partial bson.D `bson:"partial,omitempty"`
	// TTL is set when the index has expireAfterSeconds; ExpireAfter is then
	// the (truncated) number of seconds.
	TTL         bool  `bson:"ttl"`
	ExpireAfter int64 `bson:"expireAfter"`
	// WarnBefore is expiryWarningSeconds (0: none): change streams get an
	// "expiring" event that long before each document expires.
	WarnBefore int64 `bson:"warnBefore,omitempty"`
	// RefreshOnRead (a TTL index only) makes a read that returns a
	// document set the indexed date to the server's now (docstore's
	// refresh.go).
	RefreshOnRead bool `bson:"refreshOnRead,omitempty"`
	// LRUDocs and LRUBytes are the lruLimit option's documents and bytes
	// (0: no limit): a write past either evicts the documents with the
	// lowest values of this index's field (docstore's lru.go).
	// ExpireElements (a TTL index on a path through an array of
	// subdocuments) expires the array's elements, not the document.
	ExpireElements bool  `bson:"expireElements,omitempty"`
	LRUDocs        int64 `bson:"lruDocs,omitempty"`
	LRUBytes       int64 `bson:"lruBytes,omitempty"`
	// Spec is the specification as listIndexes shows it, in stored order.
	Spec bson.D `bson:"spec"`
	// Ready is false while the index is being built; an index that is not
	// ready after a restart is dropped.
	Ready bool `bson:"ready"`
	// BuildUUID names the build of an index that is not ready (the
	// bytes of a UUID), as listIndexes' includeBuildUUIDs shows it on
	// every member; nil once the index is ready.
	BuildUUID []byte `bson:"buildUUID,omitempty"`
	// MultiKeyTracked is set on indexes whose MultiKeyPaths are kept up
	// to date; MultiKeyPaths holds, per key field, the path prefixes where
	// a document held an array (see multikey.go).
	MultiKeyTracked bool       `bson:"multiKeyTracked,omitempty"`
	MultiKeyPaths   [][]string `bson:"multiKeyPaths,omitempty"`
	// Collation is the index's non-simple collation, in full, as
	// listIndexes shows it; nil for simple.
	Collation bson.D `bson:"collation,omitempty"`
	// CollatedKeys: the index stores the collation's keys of its strings,
	// as mongod's do, so that it orders and holds unique strings under the
	// collation. Indexes created before it existed store the strings
	// themselves (binary order) and are never unique.
	CollatedKeys bool `bson:"collatedKeys,omitempty"`
}

// HasLRU reports whether the index carries an lruLimit.
func (ix *Index) HasLRU() bool { return ix.LRUDocs > 0 || ix.LRUBytes > 0 }

// IsHashed reports whether one of ix's fields is hashed.
func (ix *Index) IsHashed() bool {
	for _, f := range ix.Fields {
		if f.Hashed {
			return true
		}
	}
	return false
}

// RefusesDuplicates reports whether a write may not add a key that
// another document holds: a unique index, or one prepared to become one.
func (ix *Index) RefusesDuplicates() bool { return ix.Unique || ix.PrepareUnique }

// IsID reports whether ix is the _id index.
func (ix *Index) IsID() bool { return ix.Name == IDIndexName }

// KeyPattern returns the key document of the index spec.
func (ix *Index) KeyPattern() bson.D {
	if v, ok := bsonutil.Field(ix.Spec, "key"); ok {
		if d, ok := v.(bson.D); ok {
			return d
		}
	}
	return nil
}

// Collection is a persisted collection definition.
type Collection struct {
	DB   string `bson:"db"`
	Name string `bson:"name"`
	// ID prefixes every key of the collection's documents and indexes; IDs
	// are never reused, so a dropped collection's leftovers cannot leak into
	// a new one.
	ID   uint64      `bson:"id"`
	UUID bson.Binary `bson:"uuid"`
	// Options are the create options as listCollections shows them.
	Options     bson.D  `bson:"options"`
	Capped      bool    `bson:"capped"`
	CappedSize  int64   `bson:"cappedSize"`
	CappedMax   int64   `bson:"cappedMax"`
	Indexes     []Index `bson:"indexes"`
	NextIndexID uint32  `bson:"nextIndexId"`
	// Clustered is set for a collection created with clusteredIndex
	// (its spec is in Options). Every collection stores its documents
	// by _id; a clustered one also answers as mongod's does (no separate
	// _id index, expireAfterSeconds).
	Clustered bool `bson:"clustered,omitempty"`
	// ClusteredTTL is set when a clustered collection has
	// expireAfterSeconds (ClusteredExpireAfter): a document whose _id is
	// a date expires that long after it (see ClusteredTTLIndex).
	ClusteredTTL         bool  `bson:"clusteredTTL,omitempty"`
	ClusteredExpireAfter int64 `bson:"clusteredExpireAfter,omitempty"`
}

// Namespace returns "db.name".
func (c *Collection) Namespace() string { return c.DB + "." + c.Name }

// Index returns the index with the given name.
func (c *Collection) Index(name string) *Index {
	for i := range c.Indexes {
		if c.Indexes[i].Name == name {
			return &c.Indexes[i]
		}
	}
	return nil
}

// Clone returns a deep-enough copy to modify the index list safely.
func (c *Collection) Clone() *Collection {
	n := *c
	n.Indexes = append([]Index(nil), c.Indexes...)
	return &n
}
