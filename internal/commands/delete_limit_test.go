package commands

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// TestDeleteLimitAsMongod: a delete statement's limit is read as mongod
// reads it (a double; no number counts as 0): 0 and 1 run, anything else
// fails the whole command with 9 before any statement runs, even one
// before it in the batch.
func TestDeleteLimitAsMongod(t *testing.T) {
	for _, tc := range []struct {
		limit   any
		deleted int
		msg     string
	}{
		{int32(1), 1, ""}, {int64(0), 2, ""}, {1.0, 1, ""}, {"x", 2, ""}, {nil, 2, ""},
		{int32(100), 0, "The limit field in delete objects must be 0 or 1. Got 100"},
		{0.5, 0, "The limit field in delete objects must be 0 or 1. Got 0.5"},
		{int64(-1), 0, "The limit field in delete objects must be 0 or 1. Got -1"},
		{1234567.0, 0, "The limit field in delete objects must be 0 or 1. Got 1.23457e+06"},
	} {
		h, c := newTestHandler(t)
		runOn(h, c, "test", bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{
			bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "_id", Value: 2}}, bson.D{{Key: "_id", Value: 3}, {Key: "keep", Value: true}},
		}}})
		reply := runOn(h, c, "test", bson.D{{Key: "delete", Value: "c"}, {Key: "deletes", Value: bson.A{
			bson.D{{Key: "q", Value: bson.D{{Key: "keep", Value: true}}}, {Key: "limit", Value: int32(1)}},
			bson.D{{Key: "q", Value: bson.D{{Key: "keep", Value: bson.D{{Key: "$exists", Value: false}}}}}, {Key: "limit", Value: tc.limit}},
		}}})
		count := runOn(h, c, "test", bson.D{{Key: "count", Value: "c"}})
		n, _ := bsonutil.Field(count, "n")
		if tc.msg != "" {
			if replyCode(reply) != int32(mongoerr.FailedToParse) || errmsgOf(reply) != tc.msg || bsonutil.ToFloat(n) != 3 {
				t.Errorf("limit %v: %v, %v left; want (9) %s, nothing deleted", tc.limit, reply, n, tc.msg)
			}
			continue
		}
		if replyCode(reply) != 0 || bsonutil.ToFloat(n) != float64(3-1-tc.deleted) {
			t.Errorf("limit %v: %v, %v left; want %d deleted besides the first statement's", tc.limit, reply, n, tc.deleted)
		}
	}
}
