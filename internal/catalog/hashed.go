package catalog

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// HashedKey is the key pattern value of a hashed index field.
const HashedKey = "hashed"

// checkHashedFields allows one hashed field per key pattern, as mongod
// (compound hashed indexes since 4.4).
func checkHashedFields(key bson.D, fields []Field) error {
	n := 0
	for _, f := range fields {
		if f.Hashed {
			n++
		}
	}
	if n > 1 {
		return mongoerr.Newf(mongoerr.Location31303, "A maximum of one index field is allowed to be hashed but found %d for 'key' %s", n, bsonutil.Format(key))
	}
	return nil
}

// checkHashedOptions refuses the options a hashed index cannot keep: a
// hash cannot tell equal values from colliding ones, so it cannot be
// unique (mongod's 16764); and a TTL index reads dates from its keys,
// which a hash loses. mongod accepts a hashed TTL index whose monitor
// then never finds a date; Mayfly, whose promise is expiry, refuses it.
func checkHashedOptions(ix *Index, spec bson.D) error {
	if !ix.IsHashed() {
		return nil
	}
	if ix.Unique {
		return mongoerr.New(mongoerr.Location16764, "Currently hashed indexes cannot guarantee uniqueness. Use a regular index.")
	}
	if ix.TTL || ix.HasLRU() || ix.ExpireElements {
		return mongoerr.Newf(mongoerr.CannotCreateIndex, "Error in specification %s :: caused by :: a hashed index cannot expire or evict documents: it stores hashes, not dates; use a separate index for expireAfterSeconds", bsonutil.Format(spec))
	}
	return nil
}
