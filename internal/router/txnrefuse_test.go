package router

import (
	"sort"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/wireclient"
)

// Every command the router answers is refused when it would start or
// continue a multi-document transaction, and so are the commands that end
// one: a statement passed on would leave its shards an open transaction
// that nobody commits.
func TestEveryCommandRefusesTransactions(t *testing.T) {
	fc := startFakeCluster(t)
	var names []string
	for name := range commandTable() {
		names = append(names, name)
	}
	for name := range authCommandTable() {
		names = append(names, name)
	}
	sort.Strings(names)
	names = append(names, "commitTransaction", "abortTransaction")
	for _, name := range names {
		for _, field := range []bson.E{{Key: "startTransaction", Value: true}, {Key: "autocommit", Value: false}} {
			body := bson.D{{Key: name, Value: "coll"}, {Key: "lsid", Value: bson.D{{Key: "id", Value: bson.Binary{Subtype: 4, Data: make([]byte, 16)}}}},
				{Key: "txnNumber", Value: int64(1)}, field}
			if code := wireclient.ReplyCode(fc.run("db", body)); code != 263 {
				t.Errorf("%s with %s: code %d, want 263", name, field.Key, code)
			}
		}
	}
}
