package router

import (
	"io"
	"log/slog"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/wireclient"
)

// Without test commands configureFailPoint is no command; with them
// failCommand fails the named command as the router's own error, and a
// retryable write's retryable error carries RetryableWriteError.
func TestRouterFailCommand(t *testing.T) {
	fc := startFakeCluster(t)
	set := bson.D{{Key: "configureFailPoint", Value: "failCommand"}, {Key: "mode", Value: bson.D{{Key: "times", Value: 1}}},
		{Key: "data", Value: bson.D{{Key: "failCommands", Value: bson.A{"insert"}}, {Key: "errorCode", Value: 91}}}}
	if code := wireclient.ReplyCode(fc.run("admin", set)); code != 59 {
		t.Fatalf("configureFailPoint without test commands: code %d, want 59", code)
	}
	r, err := New(Config{ConfigDB: "cfg/" + fc.sets[0].addr, Version: "8.0.0", Host: "router:2", TestCommands: true,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	fc.router = r
	if reply := fc.run("admin", set); wireclient.ReplyCode(reply) != 0 {
		t.Fatalf("configureFailPoint: %v", reply)
	}
	insert := bson.D{{Key: "insert", Value: "plain"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: 1}}}},
		{Key: "lsid", Value: bson.D{{Key: "id", Value: bson.Binary{Subtype: 4, Data: make([]byte, 16)}}}}, {Key: "txnNumber", Value: int64(1)}}
	reply := fc.run("db", insert)
	labels, _ := bsonutil.Field(reply, "errorLabels")
	if wireclient.ReplyCode(reply) != 91 || len(bsonutil.ToA(labels)) != 1 || bsonutil.ToA(labels)[0] != "RetryableWriteError" {
		t.Fatalf("the failed insert: %v, want 91 with RetryableWriteError", reply)
	}
	if reply := fc.run("db", insert); wireclient.ReplyCode(reply) != 0 {
		t.Fatalf("the fail point fired more than its one time: %v", reply)
	}
}
