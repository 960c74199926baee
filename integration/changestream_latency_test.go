package integration

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/mayflydb/mayfly/internal/app"
)

// TestChangeStreamDeliveryLatency measures how long after its commit
// (the event's wallTime) an event reaches a waiting stream, on an idle
// server and on one busy with writers on another collection, and holds
// the p99 to 250 ms, the lateness target of expiry events.
func TestChangeStreamDeliveryLatency(t *testing.T) {
	c := connect(t, startServer(t, app.Config{}))
	db := c.Database("lat")
	idleP50, idleP99 := deliveryLatency(t, db.Collection("idle"), 200)
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			busy := db.Collection("busy")
			for ctx.Err() == nil {
				_, _ = busy.InsertOne(ctx, bson.D{{Key: "pad", Value: "x"}})
			}
		}()
	}
	busyP50, busyP99 := deliveryLatency(t, db.Collection("watched"), 200)
	stop()
	wg.Wait()
	t.Logf("delivery from commit: idle p50 %v p99 %v; busy (4 writers) p50 %v p99 %v", idleP50, idleP99, busyP50, busyP99)
	if idleP99 > 250*time.Millisecond || busyP99 > 250*time.Millisecond {
		t.Fatalf("p99 delivery over 250 ms: idle %v busy %v", idleP99, busyP99)
	}
}

// deliveryLatency inserts n documents a few milliseconds apart into
// coll while a stream waits for them, and returns the p50 and p99 of
// receipt time minus wallTime.
func deliveryLatency(t *testing.T, coll *mongo.Collection, n int) (time.Duration, time.Duration) {
	t.Helper()
	ctx := ctxT(t)
	cs, err := coll.Watch(ctx, mongo.Pipeline{}, options.ChangeStream().SetMaxAwaitTime(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close(ctx)
	go func() {
		for i := 0; i < n; i++ {
			if _, err := coll.InsertOne(context.Background(), bson.D{{Key: "_id", Value: i}}); err != nil {
				return
			}
			time.Sleep(3 * time.Millisecond)
		}
	}()
	late := make([]time.Duration, 0, n)
	for len(late) < n {
		if !cs.Next(ctx) {
			t.Fatalf("stream: %v", cs.Err())
		}
		got := time.Now()
		wall, _ := cs.Current.Lookup("wallTime").DateTimeOK()
		late = append(late, got.Sub(time.UnixMilli(wall)))
	}
	slices.Sort(late)
	return late[n/2], late[n*99/100]
}

// BenchmarkSessionsWithStreams runs a session workload (insert a
// session, touch it twice, end it) from 4 clients with no stream open and
// with ten streams on the collection, alternating rounds of 700 ms, and
// reports the rate with streams over the rate without (the target
// is 0.9). The streams' client runs in this process, so on a small
// machine it competes with the server for the cores.
func BenchmarkSessionsWithStreams(b *testing.B) {
	s := startServer(b, app.Config{})
	sessions := connect(b, s).Database("app").Collection("sessions")
	// The streams' client is another application's: its own connections.
	watched := connect(b, s).Database("app").Collection("sessions")
	var without, with int
	for i := 0; i < b.N; i++ {
		a, w := sessionOpsWithStreams(b, sessions, watched, 0), sessionOpsWithStreams(b, sessions, watched, 10)
		without, with = without+a, with+w
	}
	b.ReportMetric(float64(without)/(0.7*float64(b.N)), "ops/s-no-streams")
	b.ReportMetric(float64(with)/(0.7*float64(b.N)), "ops/s-10-streams")
	b.ReportMetric(float64(with)/float64(without), "ratio")
}

// sessionOpsWithStreams runs the session workload from 4 clients for 700 ms with
// streams change streams draining the collection, and returns the
// operations done.
func sessionOpsWithStreams(t testing.TB, sessions, watched *mongo.Collection, streams int) int {
	t.Helper()
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var drain sync.WaitGroup
	for i := 0; i < streams; i++ {
		cs, err := watched.Watch(context.Background(), mongo.Pipeline{})
		if err != nil {
			t.Fatal(err)
		}
		drain.Add(1)
		go func() {
			defer drain.Done()
			for cs.Next(ctx) {
			}
			_ = cs.Close(context.Background())
		}()
	}
	var mu sync.Mutex
	ops := 0
	var work sync.WaitGroup
	deadline := time.Now().Add(700 * time.Millisecond)
	for w := 0; w < 4; w++ {
		work.Add(1)
		go func() {
			defer work.Done()
			n := 0
			for time.Now().Before(deadline) {
				id := bson.NewObjectID()
				_, _ = sessions.InsertOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "at", Value: time.Now()}})
				_, _ = sessions.UpdateByID(ctx, id, bson.D{{Key: "$set", Value: bson.D{{Key: "at", Value: time.Now()}}}})
				_, _ = sessions.UpdateByID(ctx, id, bson.D{{Key: "$set", Value: bson.D{{Key: "at", Value: time.Now()}}}})
				_, _ = sessions.DeleteOne(ctx, bson.D{{Key: "_id", Value: id}})
				n += 4
			}
			mu.Lock()
			ops += n
			mu.Unlock()
		}()
	}
	work.Wait()
	stop()
	drain.Wait()
	return ops
}
