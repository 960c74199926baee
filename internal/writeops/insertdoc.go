package writeops

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// PrepareInsert gives d its _id and checks what a stored document may
// hold.
func PrepareInsert(d bson.D) (bson.D, error) {
	doc, err := docstore.PrepareInsert(d)
	if err != nil {
		return nil, err
	}
	if err := checkStorableFields(doc); err != nil {
		return nil, err
	}
	if nestingDepth(doc) > maxStorageDepth {
		return nil, mongoerr.Newf(mongoerr.Overflow, "cannot insert document because it exceeds %d levels of nesting", maxStorageDepth)
	}
	return doc, nil
}

// InsertOne inserts d, once PrepareInsert has passed it.
func InsertOne(c *docstore.Collection, d bson.D, opt docstore.WriteOptions) error {
	doc, err := PrepareInsert(d)
	if err != nil {
		return err
	}
	return c.Insert(doc, opt)
}

// maxStorageDepth is MongoDB's nesting limit for stored documents: the wire
// limit (200) less room for the levels the server adds around a document.
const maxStorageDepth = 180

// nestingDepth counts the levels of non-empty documents and arrays in v,
// the document itself included; empty ones do not count, as in MongoDB.
// (The values of a document are walked in place: gathering them in a
// slice, as arrays already are, cost every insert an allocation.)
func nestingDepth(v any) int {
	deepest := 0
	switch x := v.(type) {
	case bson.D:
		if len(x) == 0 {
			return 0
		}
		for _, e := range x {
			deepest = max(deepest, nestingDepth(e.Value))
		}
	case bson.A:
		if len(x) == 0 {
			return 0
		}
		for _, c := range x {
			deepest = max(deepest, nestingDepth(c))
		}
	default:
		return 0
	}
	return 1 + deepest
}

// checkStorableFields applies MongoDB's (5.0+) rules for field names of
// a stored document: $-prefixed and dotted names are allowed, at the top
// level and below, except inside _id, which must not look like an
// operator document; and one _id only.
func checkStorableFields(doc bson.D) error {
	ids := 0
	for _, e := range doc {
		if e.Key == "_id" {
			ids++
		}
	}
	if ids > 1 {
		return mongoerr.New(mongoerr.BadValue, "can't have multiple _id fields in one document")
	}
	id, ok := bsonutil.Field(doc, "_id")
	if !ok {
		return nil
	}
	if d, isDoc := id.(bson.D); isDoc {
		for _, e := range d {
			if strings.HasPrefix(e.Key, "$") {
				return mongoerr.Newf(mongoerr.DollarPrefixedFieldName, "_id fields may not contain '$'-prefixed fields: %s is not valid for storage.", e.Key)
			}
		}
	}
	return nil
}
