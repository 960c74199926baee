package router

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/wireclient"
)

// getParameter takes mongod's three forms on the router, from the
// router's own table, and setParameter refuses its read-only parameters.
func TestRouterParameters(t *testing.T) {
	fc := startFakeCluster(t)
	all := fc.run("admin", bson.D{{Key: "getParameter", Value: "*"}})
	if v, _ := bsonutil.Field(all, "logicalSessionTimeoutMinutes"); v != int32(30) || wireclient.ReplyCode(all) != 0 {
		t.Fatalf(`getParameter "*": %v`, all)
	}
	named := fc.run("admin", bson.D{{Key: "getParameter", Value: 1}, {Key: "featureCompatibilityVersion", Value: 1}})
	if _, ok := bsonutil.Field(named, "featureCompatibilityVersion"); !ok || hasField(named, "logicalSessionTimeoutMinutes") {
		t.Fatalf("getParameter by name: %v", named)
	}
	details := fc.run("admin", bson.D{{Key: "getParameter", Value: bson.D{{Key: "allParameters", Value: true}, {Key: "showDetails", Value: true}}}})
	v, _ := bsonutil.Field(details, "logicalSessionTimeoutMinutes")
	if settable, _ := bsonutil.Field(bsonutil.ToD(v), "settableAtRuntime"); settable != false {
		t.Fatalf("getParameter with details: %v", details)
	}
	for _, cmd := range []bson.D{
		{{Key: "getParameter", Value: 1}, {Key: "noSuchParameter", Value: 1}},
		{{Key: "setParameter", Value: 1}, {Key: "logicalSessionTimeoutMinutes", Value: 5}},
	} {
		if code := wireclient.ReplyCode(fc.run("admin", cmd)); code != 72 {
			t.Errorf("%v: code %d, want 72 InvalidOptions", cmd, code)
		}
	}
}

func hasField(d bson.D, key string) bool {
	_, ok := bsonutil.Field(d, key)
	return ok
}
