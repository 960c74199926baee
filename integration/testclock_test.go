package integration

import (
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/mayflydb/mayfly/internal/app"
)

// TestTestClockMovesExpiry is an application's test suite checking expiry
// without sleeping: with enableTestCommands, mayflyClockOffsetSeconds
// moves the server's clock ahead, and documents expire by it.
func TestTestClockMovesExpiry(t *testing.T) {
	s := startServer(t, app.Config{SetParameters: map[string]string{"enableTestCommands": "1", "ttlMonitorSleepSecs": "1"}})
	c := connect(t, s)
	ctx := ctxT(t)
	coll := c.Database("test").Collection("sessions")
	if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "lastSeen", Value: 1}}, Options: options.Index().SetExpireAfterSeconds(1800)}); err != nil {
		t.Fatal(err)
	}
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: "s1"}, {Key: "lastSeen", Value: time.Now()}}); err != nil {
		t.Fatal(err)
	}
	admin := c.Database("admin")
	if err := admin.RunCommand(ctx, bson.D{{Key: "setParameter", Value: 1}, {Key: "mayflyClockOffsetSeconds", Value: 3600}}).Err(); err != nil {
		t.Fatalf("setParameter mayflyClockOffsetSeconds: %v", err)
	}
	if n, err := coll.CountDocuments(ctx, bson.D{}); err != nil || n != 0 {
		t.Fatalf("an hour later by the test clock the session is still there (%d, %v)", n, err)
	}
	var now struct {
		Now time.Time `bson:"now"`
	}
	cur, err := c.Database("test").Aggregate(ctx, bson.A{bson.D{{Key: "$documents", Value: bson.A{bson.D{}}}}, bson.D{{Key: "$project", Value: bson.D{{Key: "now", Value: "$$NOW"}}}}})
	if err != nil || !cur.Next(ctx) {
		t.Fatalf("$$NOW: %v", err)
	}
	if err := cur.Decode(&now); err != nil || now.Now.Before(time.Now().Add(59*time.Minute)) {
		t.Fatalf("$$NOW is %v (%v), not an hour ahead", now.Now, err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for storedDocs(t, coll) != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the TTL monitor did not delete by the test clock")
		}
		time.Sleep(20 * time.Millisecond)
	}
	var gp struct {
		Offset int32 `bson:"mayflyClockOffsetSeconds"`
	}
	if err := admin.RunCommand(ctx, bson.D{{Key: "getParameter", Value: 1}, {Key: "mayflyClockOffsetSeconds", Value: 1}}).Decode(&gp); err != nil || gp.Offset != 3600 {
		t.Fatalf("getParameter: %v %v", gp, err)
	}

	plain := connect(t, startServer(t, app.Config{}))
	err = plain.Database("admin").RunCommand(ctx, bson.D{{Key: "setParameter", Value: 1}, {Key: "mayflyClockOffsetSeconds", Value: 10}}).Err()
	wantCode(t, err, 72, "unrecognized parameter")
}
