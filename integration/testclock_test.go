package integration

import (
	"bytes"
	"context"
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
	wantCode(t, err, 72, "unrecognized parameter [mayflyClockOffsetSeconds], use help:true to see options ; mayflyClockOffsetSeconds needs --setParameter enableTestCommands=1 at start")
}

// TestClockSetBackDuringAwait: a getMore that waits for a change stream's
// next event, or for a tailable cursor's next document, ends after its
// wait (a second without maxTimeMS, which would also set a deadline)
// however the test clock moves meanwhile. Measured against the clock, the
// wait went on for as long as the clock was set back.
func TestClockSetBackDuringAwait(t *testing.T) {
	s := startServer(t, testClockConfig())
	c := connect(t, s)
	ctx := ctxT(t)
	// The cursors' client has no timeout, which the driver would send as
	// maxTimeMS, a deadline of its own.
	plain, err := mongo.Connect(options.Client().ApplyURI(s.uri))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = plain.Disconnect(context.Background()) }()
	db := plain.Database("test")
	if err := db.CreateCollection(ctx, "log", options.CreateCollection().SetCapped(true).SetSizeInBytes(4096)); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Collection("log").InsertOne(ctx, bson.D{{Key: "_id", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	stream := cursorOf(t, db, bson.D{{Key: "aggregate", Value: "events"}, {Key: "pipeline", Value: bson.A{
		bson.D{{Key: "$changeStream", Value: bson.D{}}},
		bson.D{{Key: "$match", Value: bson.D{{Key: "operationType", Value: "delete"}}}},
	}}, {Key: "cursor", Value: bson.D{}}})
	tail := cursorOf(t, db, bson.D{{Key: "find", Value: "log"}, {Key: "tailable", Value: true}, {Key: "awaitData", Value: true}})
	for _, cur := range []struct {
		coll string
		id   int64
	}{{"events", stream}, {"log", tail}} {
		setClockOffset(t, c, 3600)
		done := make(chan error, 1)
		go func() {
			done <- db.RunCommand(context.Background(), bson.D{{Key: "getMore", Value: cur.id}, {Key: "collection", Value: cur.coll}}).Err()
		}()
		time.Sleep(100 * time.Millisecond)
		setClockOffset(t, c, 0) // an hour back
		// An event the stream's $match drops wakes its wait.
		if _, err := db.Collection("events").InsertOne(ctx, bson.D{}); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("getMore on %s: %v", cur.coll, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("getMore on %s, which waits a second, still waits 10 s after the clock went back\n%s", cur.coll, serverStacks())
		}
	}
}

// cursorOf runs a command that opens a cursor and returns its id.
func cursorOf(t *testing.T, db *mongo.Database, cmd bson.D) int64 {
	t.Helper()
	cur := field(t, runCmd(t, db, cmd), "cursor").(bson.D)
	id := field(t, cur, "id").(int64)
	if id == 0 {
		t.Fatalf("%s opened no cursor", cmd[0].Key)
	}
	return id
}

// TestClockMovesNeitherDurationsNorSessions: moving the test clock is a
// way to make documents expire, not time passing for the server's own
// bookkeeping. The command that moves it must not be counted as having
// taken the jump (opLatencies), and a logical session used just before
// must not be swept as if unused for the jump.
func TestClockMovesNeitherDurationsNorSessions(t *testing.T) {
	s := startServer(t, testClockConfig())
	c := connect(t, s)
	ctx := ctxT(t)
	before := commandLatencyMicros(t, c)
	sess, err := c.StartSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.EndSession(ctx)
	mustDo(t, func() error {
		return c.Database("admin").RunCommand(mongo.NewSessionContext(ctx, sess), bson.D{{Key: "ping", Value: 1}}).Err()
	})
	setClockOffset(t, c, 7200)
	setClockOffset(t, c, 0)
	setClockOffset(t, c, 7200)
	if took := commandLatencyMicros(t, c) - before; took > 60_000_000 {
		t.Errorf("opLatencies.commands grew by %d µs over a ping and three setParameters: the clock's jumps were counted as time taken", took)
	}
	cur, err := c.Database("admin").Aggregate(ctx, bson.A{bson.D{{Key: "$listLocalSessions", Value: bson.D{}}}})
	if err != nil {
		t.Fatal(err)
	}
	var listed []struct {
		ID struct {
			ID bson.Binary `bson:"id"`
		} `bson:"_id"`
	}
	if err := cur.All(ctx, &listed); err != nil {
		t.Fatal(err)
	}
	_, want := sess.ID().Lookup("id").Binary()
	for _, l := range listed {
		if bytes.Equal(l.ID.ID.Data, want) {
			return
		}
	}
	t.Errorf("the session used before the clock moved two hours is gone from $listLocalSessions (%d listed)", len(listed))
}

func commandLatencyMicros(t *testing.T, c *mongo.Client) int64 {
	t.Helper()
	var st struct {
		OpLatencies struct {
			Commands struct {
				Latency int64 `bson:"latency"`
			} `bson:"commands"`
		} `bson:"opLatencies"`
	}
	if err := c.Database("admin").RunCommand(ctxT(t), bson.D{{Key: "serverStatus", Value: 1}}).Decode(&st); err != nil {
		t.Fatal(err)
	}
	return st.OpLatencies.Commands.Latency
}
