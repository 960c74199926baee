package update

import (
	"strings"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"go.mongodb.org/mongo-driver/v2/bson"
)

func parseReplacement(u bson.D, arrayFilters []bson.D) (*Update, error) {
	// MongoDB still parses the filters, then ignores them: only operator
	// updates check that every filter is used.
	if _, err := parseArrayFilters(arrayFilters, nil); err != nil {
		return nil, err
	}
	if u == nil {
		u = bson.D{}
	}
	return &Update{replacement: u, source: u}, nil
}

// applyReplacement is MongoDB's ObjectReplaceExecutor: the replacement's
// fields replace the document's, the original _id is kept (first) when the
// replacement has none, and an _id it does have must equal the original.
func (u *Update) applyReplacement(doc bson.D, ctx Context) (bson.D, bool, error) {
	if err := checkReplacement(u.replacement); err != nil {
		return nil, false, err
	}
	out := u.replacementFor(doc, ctx)
	if err := checkIDKept(doc, out); err != nil {
		return nil, false, err
	}
	if identicalDocs(doc, out) {
		return doc, false, nil
	}
	return out, true, nil
}

func (u *Update) replacementFor(doc bson.D, ctx Context) bson.D {
	out := make(bson.D, 0, len(u.replacement)+1)
	if _, hasID := bsonutil.Field(u.replacement, "_id"); !hasID {
		if id, ok := bsonutil.Field(doc, "_id"); ok {
			out = append(out, bson.E{Key: "_id", Value: id})
		}
	}
	a := &applier{ctx: ctx}
	for _, e := range u.replacement {
		if ts, ok := e.Value.(bson.Timestamp); ok && e.Key != "_id" && ts == (bson.Timestamp{}) && !ctx.KeepEmptyTimestamps {
			// MongoDB fills zero timestamps in top-level fields with the time.
			e.Value = a.timestamp()
		}
		out = append(out, e)
	}
	if ctx.IsInsert {
		out = idFirst(out)
	}
	return out
}

// checkReplacement is MongoDB's storage validation of a replacement.
func checkReplacement(r bson.D) error {
	for i, e := range r {
		if e.Key == "_id" {
			if err := checkIDValue(e.Value); err != nil {
				return err
			}
			continue
		}
		if strings.HasPrefix(e.Key, "$") && !dbRefField(r, i) {
			return errDollarField(e.Key, e.Key)
		}
		if err := checkDepth(e.Value, 1); err != nil {
			return err
		}
	}
	return nil
}

// dbRefField allows the $ref, $id, $db fields of a DBRef, in that order.
func dbRefField(d bson.D, i int) bool {
	switch d[i].Key {
	case "$ref":
		return i+1 < len(d) && d[i+1].Key == "$id"
	case "$id":
		return i > 0 && d[i-1].Key == "$ref"
	case "$db":
		return i > 0 && d[i-1].Key == "$id"
	}
	return false
}

func checkIDKept(before, after bson.D) error {
	old, hadID := bsonutil.Field(before, "_id")
	now, hasID := bsonutil.Field(after, "_id")
	if !hadID || !hasID || compareValues(old, now) == 0 {
		return nil
	}
	return errf(mongoerr.ImmutableField,
		"After applying the update, the (immutable) field '_id' was found to have been altered to %s",
		formatElem("_id", now))
}

// checkID validates the _id of a document about to be inserted.
func checkID(d bson.D) error {
	if id, ok := bsonutil.Field(d, "_id"); ok {
		return checkIDValue(id)
	}
	return nil
}

func checkIDValue(v any) error {
	switch v.(type) {
	case bson.Regex, bson.A, []any, bson.Undefined:
		return errf(mongoerr.InvalidIDField, "The '_id' value cannot be of type %s", typeName(v))
	}
	if kindOf(v) == kindDoc {
		for _, e := range docOf(v) {
			if strings.HasPrefix(e.Key, "$") {
				return errf(mongoerr.DollarPrefixedFieldName, "_id fields may not contain "+
					"'$'-prefixed fields: %s is not valid for storage.", e.Key)
			}
		}
	}
	return nil
}
