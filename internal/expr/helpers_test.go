package expr

import (
	"errors"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// ejson parses relaxed extended JSON into a document; tests write values
// that way because bson.D literals are unreadable in bulk.
func ejson(t testing.TB, s string) bson.D {
	t.Helper()
	var d bson.D
	if err := bson.UnmarshalExtJSON([]byte(s), false, &d); err != nil {
		t.Fatalf("bad test JSON %s: %v", s, err)
	}
	return d
}

// field returns the value of key k in the parsed document s.
func field(t testing.TB, s, k string) any {
	t.Helper()
	v, _ := bsonutil.Lookup(ejson(t, s), k)
	return v
}

// sameValue compares values strictly: same BSON type at every level, and
// equal by MongoDB's comparison.
func sameValue(a, b any) bool {
	if typeName(a) != typeName(b) {
		return false
	}
	if da, ok := a.(bson.D); ok {
		db := b.(bson.D)
		if len(da) != len(db) {
			return false
		}
		for i := range da {
			if da[i].Key != db[i].Key || !sameValue(da[i].Value, db[i].Value) {
				return false
			}
		}
		return true
	}
	if aa, ok := asArray(a); ok {
		ab, _ := asArray(b)
		if len(aa) != len(ab) {
			return false
		}
		for i := range aa {
			if !sameValue(aa[i], ab[i]) {
				return false
			}
		}
		return true
	}
	return compareValues(a, b) == 0
}

// errCode returns the MongoDB code of err, or 0.
func errCode(err error) mongoerr.Code {
	var me *mongoerr.Error
	if errors.As(err, &me) {
		return me.Code
	}
	return 0
}
