package integration

import (
	"context"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/readpref"

	"github.com/mayflydb/mayfly/internal/app"
)

// TestRefreshOnReadSessionIdleAndAbsolute is a session store with an idle
// timeout kept by reads alone (refreshOnRead) and an absolute lifetime:
// a session read every 1000 s lives until its 3600 s are up, one left
// alone goes after 1800 s. The test clock moves time; a change stream
// sees each refresh as a plain update of lastSeen.
func TestRefreshOnReadSessionIdleAndAbsolute(t *testing.T) {
	s := startServer(t, app.Config{SetParameters: map[string]string{"enableTestCommands": "1", "ttlMonitorSleepSecs": "1"}})
	c := connect(t, s)
	ctx := ctxT(t)
	sessions := c.Database("app").Collection("sessions")
	_, err := sessions.Indexes().CreateMany(ctx, []mongo.IndexModel{
		{Keys: bson.D{{Key: "lastSeen", Value: 1}}, Options: options.Index().SetName("idle").SetExpireAfterSeconds(1800)},
		{Keys: bson.D{{Key: "createdAt", Value: 1}}, Options: options.Index().SetName("absolute").SetExpireAfterSeconds(3600)},
	})
	if err != nil {
		t.Fatal(err)
	}
	// collMod turns the option on, as for an index built before it.
	var mod bson.M
	mustDo(t, func() error {
		return c.Database("app").RunCommand(ctx, bson.D{{Key: "collMod", Value: "sessions"}, {Key: "index", Value: bson.D{{Key: "name", Value: "idle"}, {Key: "refreshOnRead", Value: true}}}}).Decode(&mod)
	})
	if mod["refreshOnRead_old"] != false || mod["refreshOnRead_new"] != true {
		t.Fatalf("collMod: %v", mod)
	}
	// Expiries (deletes) interleave with the refreshes; watch the rest.
	notDeletes := mongo.Pipeline{{{Key: "$match", Value: bson.D{{Key: "operationType", Value: bson.D{{Key: "$ne", Value: "delete"}}}}}}}
	cs, err := sessions.Watch(ctx, notDeletes)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close(ctx)
	now := time.Now()
	for _, id := range []string{"busy", "idle"} {
		mustDo(t, func() error {
			_, err := sessions.InsertOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "lastSeen", Value: now}, {Key: "createdAt", Value: now}})
			return err
		})
		nextEvent(t, cs)
	}
	for _, offset := range []int{1000, 2000, 3000} {
		setClockOffset(t, c, offset)
		var got bson.M
		if err := sessions.FindOne(ctx, bson.D{{Key: "_id", Value: "busy"}}).Decode(&got); err != nil {
			t.Fatalf("+%d s: the session read every 1000 s is gone: %v", offset, err)
		}
		seen := got["lastSeen"].(bson.DateTime).Time()
		if d := seen.Sub(now.Add(time.Duration(offset) * time.Second)); d < -2*time.Second || d > 2*time.Second {
			t.Fatalf("+%d s: findOne returned lastSeen %v, not the server's now", offset, seen)
		}
		ev := nextEvent(t, cs)
		upd := asM(asM(ev["updateDescription"])["updatedFields"])
		if ev["operationType"] != "update" || len(upd) != 1 || upd["lastSeen"] == nil {
			t.Fatalf("+%d s: refresh event %v, want an update of lastSeen", offset, ev)
		}
		n, err := sessions.CountDocuments(ctx, bson.D{{Key: "_id", Value: "idle"}})
		if want := int64(0); offset > 1800 && (err != nil || n != want) {
			t.Fatalf("+%d s: the idle session is still there (%d, %v)", offset, n, err)
		}
	}
	setClockOffset(t, c, 3600)
	if err := sessions.FindOne(ctx, bson.D{{Key: "_id", Value: "busy"}}).Err(); err != mongo.ErrNoDocuments {
		t.Fatalf("+3600 s: the absolute lifetime is up, findOne: %v", err)
	}
	if n := statusMetric(t, c, "ttl", "refreshedOnRead"); n != 3 {
		t.Fatalf("serverStatus metrics.ttl.refreshedOnRead = %d, want 3", n)
	}
}

// statusMetric reads serverStatus's metrics.<section>.<name> as a number.
func statusMetric(t *testing.T, c *mongo.Client, section, name string) int64 {
	t.Helper()
	raw, err := c.Database("admin").RunCommand(ctxT(t), bson.D{{Key: "serverStatus", Value: 1}}).Raw()
	if err != nil {
		t.Fatal(err)
	}
	v, err := raw.LookupErr("metrics", section, name)
	if err != nil {
		t.Fatalf("serverStatus metrics.%s.%s: %v", section, name, err)
	}
	n, ok := v.AsInt64OK()
	if !ok {
		t.Fatalf("serverStatus metrics.%s.%s is %v, not a number", section, name, v)
	}
	return n
}

func setClockOffset(t *testing.T, c *mongo.Client, secs int) {
	t.Helper()
	mustDo(t, func() error {
		return c.Database("admin").RunCommand(ctxT(t), bson.D{{Key: "setParameter", Value: 1}, {Key: "mayflyClockOffsetSeconds", Value: secs}}).Err()
	})
}

// TestRefreshOnReadReplicaSet: only the primary refreshes, through the
// replicated write path; a read on a secondary leaves the date alone.
func TestRefreshOnReadReplicaSet(t *testing.T) {
	rs := startReplSet(t, 3)
	ctx := ctxT(t)
	db := rs.client().Database("app")
	coll := db.Collection("sessions")
	// The driver's index options know no refreshOnRead: the command does.
	mustDo(t, func() error {
		return db.RunCommand(ctx, bson.D{{Key: "createIndexes", Value: "sessions"}, {Key: "indexes", Value: bson.A{bson.D{
			{Key: "key", Value: bson.D{{Key: "lastSeen", Value: 1}}}, {Key: "name", Value: "idle"},
			{Key: "expireAfterSeconds", Value: 60}, {Key: "refreshOnRead", Value: true}}}}}).Err()
	})
	stale := time.Now().Add(-20 * time.Second).Truncate(time.Millisecond)
	mustDo(t, func() error {
		_, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: "s"}, {Key: "lastSeen", Value: stale}})
		return err
	})
	primary := rs.waitPrimary(-1, 10*time.Second)
	secondary := (primary + 1) % 3
	sc := rs.direct(secondary).Database("app").Collection("sessions", options.Collection().SetReadPreference(readpref.SecondaryPreferred()))
	waitLastSeen(t, sc, func(d time.Time) bool { return d.Equal(stale) })
	if got := readLastSeen(t, sc); !got.Equal(stale) {
		t.Fatalf("a read on a secondary returned lastSeen %v, want the stored %v", got, stale)
	}
	if got := readLastSeen(t, sc); !got.Equal(stale) {
		t.Fatalf("a secondary's read refreshed lastSeen to %v", got)
	}
	if got := readLastSeen(t, coll); !got.After(stale.Add(15 * time.Second)) {
		t.Fatalf("a read on the primary returned lastSeen %v, not refreshed", got)
	}
	// The refresh is a replicated write: every member applies it.
	for i := range rs.addrs {
		mc := rs.direct(i).Database("app").Collection("sessions", options.Collection().SetReadPreference(readpref.SecondaryPreferred()))
		waitLastSeen(t, mc, func(d time.Time) bool { return d.After(stale.Add(15 * time.Second)) })
	}
}

func readLastSeen(t *testing.T, coll *mongo.Collection) time.Time {
	t.Helper()
	var d struct {
		LastSeen time.Time `bson:"lastSeen"`
	}
	if err := coll.FindOne(ctxT(t), bson.D{{Key: "_id", Value: "s"}}).Decode(&d); err != nil {
		t.Fatal(err)
	}
	return d.LastSeen
}

// waitLastSeen waits until a read (counted, so refreshing nothing) finds
// a lastSeen that ok accepts.
func waitLastSeen(t *testing.T, coll *mongo.Collection, ok func(time.Time) bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		cur, err := coll.Aggregate(context.Background(), bson.A{bson.D{{Key: "$project", Value: bson.D{{Key: "lastSeen", Value: 1}}}}})
		if err != nil {
			t.Fatal(err)
		}
		var docs []struct {
			LastSeen time.Time `bson:"lastSeen"`
		}
		if err := cur.All(context.Background(), &docs); err != nil {
			t.Fatal(err)
		}
		if len(docs) == 1 && ok(docs[0].LastSeen) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("lastSeen never reached the expected value")
}
