package integration

import (
	"errors"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/mayflydb/mayfly/internal/app"
)

// TestStableAPIStrictClient: a Go driver declaring Stable API version 1,
// strict, connects, writes and reads as it would against mongod, and a
// command outside version 1 answers APIStrictError (323).
func TestStableAPIStrictClient(t *testing.T) {
	s := startServer(t, app.Config{})
	api := options.ServerAPI(options.ServerAPIVersion1).SetStrict(true).SetDeprecationErrors(true)
	c, err := mongo.Connect(options.Client().ApplyURI(s.uri).SetServerAPIOptions(api))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Disconnect(ctxT(t))
	coll := c.Database("test").Collection("c")
	if _, err := coll.InsertOne(ctxT(t), bson.D{{Key: "_id", Value: 1}}); err != nil {
		t.Fatalf("insert under strict API: %v", err)
	}
	if n, err := coll.CountDocuments(ctxT(t), bson.D{}); err != nil || n != 1 {
		t.Fatalf("count under strict API: %d, %v", n, err)
	}
	err = c.Database("admin").RunCommand(ctxT(t), bson.D{{Key: "buildInfo", Value: 1}}).Err()
	var ce mongo.CommandError
	if !errors.As(err, &ce) || ce.Code != 323 || ce.Name != "APIStrictError" {
		t.Fatalf("buildInfo under strict API: %v, want APIStrictError (323)", err)
	}
}
