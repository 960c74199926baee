package integration

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/mayflydb/mayfly/internal/app"
)

// resources is a snapshot of what a leak would grow.
type resources struct {
	goroutines int
	fds        int
	heap       uint64
}

func snapshot(t *testing.T) resources {
	t.Helper()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	return resources{goroutines: runtime.NumGoroutine(), fds: len(ents), heap: ms.HeapAlloc}
}

func (r resources) String() string {
	return fmt.Sprintf("%d goroutines, %d fds, %.1f MiB heap", r.goroutines, r.fds, float64(r.heap)/(1<<20))
}

// The load test: 1 000 connections (one single-connection driver client
// each) doing mixed inserts, finds, updates and deletes for a bounded
// time against an in-process server; no errors; then goroutines, file
// descriptors and heap return near their baseline.
func TestReliabilityLoad1000Connections(t *testing.T) {
	clients, dur := 1000, 5*time.Second
	if testing.Short() {
		clients, dur = 200, 2*time.Second
	}
	s := startServer(t, app.Config{})
	base := snapshot(t)
	t.Logf("baseline: %v", base)
	var ops, errs atomic.Int64
	var firstErr atomic.Value
	conns := make([]*mongo.Client, clients)
	for i := range conns {
		c, err := mongo.Connect(options.Client().ApplyURI(s.uri).SetMaxPoolSize(1).SetMinPoolSize(1).SetTimeout(30 * time.Second))
		if err != nil {
			t.Fatal(err)
		}
		conns[i] = c
	}
	stop := time.Now().Add(dur)
	var wg sync.WaitGroup
	for i, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			coll := c.Database("load").Collection(fmt.Sprintf("c%d", i%16))
			for n := 0; time.Now().Before(stop); n++ {
				if err := mixedOp(coll, i, n); err != nil {
					errs.Add(1)
					firstErr.CompareAndSwap(nil, err)
				}
				ops.Add(1)
			}
		}()
	}
	wg.Wait()
	peak := snapshot(t)
	for _, c := range conns {
		_ = c.Disconnect(context.Background())
	}
	t.Logf("%d connections, %v: %d operations (%.0f/s), %d errors; at peak %v",
		clients, dur, ops.Load(), float64(ops.Load())/dur.Seconds(), errs.Load(), peak)
	if errs.Load() > 0 {
		t.Fatalf("%d operations failed; first: %v", errs.Load(), firstErr.Load())
	}
	after := waitForBaseline(t, base)
	t.Logf("after disconnect: %v", after)
}

// mixedOp runs one of insert, find, update, delete on the client's own
// documents, so operations never conflict and any error is a real one.
func mixedOp(coll *mongo.Collection, client, n int) error {
	ctx := context.Background()
	id := fmt.Sprintf("%d-%d", client, n/4)
	switch n % 4 {
	case 0:
		_, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "client", Value: client}, {Key: "v", Value: n}})
		return err
	case 1:
		var out bson.M
		return coll.FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&out)
	case 2:
		r, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: id}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "v", Value: 1}}}})
		if err == nil && r.MatchedCount != 1 {
			return fmt.Errorf("update %s matched %d", id, r.MatchedCount)
		}
		return err
	default:
		r, err := coll.DeleteOne(ctx, bson.D{{Key: "_id", Value: id}})
		if err == nil && r.DeletedCount != 1 {
			return fmt.Errorf("delete %s deleted %d", id, r.DeletedCount)
		}
		return err
	}
}

// waitForBaseline polls for up to 10 s until goroutines and fds are back
// within a small slack of base and the heap within 32 MiB of it.
func waitForBaseline(t *testing.T, base resources) resources {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		now := snapshot(t)
		ok := now.goroutines <= base.goroutines+10 && now.fds <= base.fds+5 && now.heap <= base.heap+32<<20
		if ok {
			return now
		}
		if time.Now().After(deadline) {
			t.Fatalf("resources did not return to baseline: now %v, baseline %v", now, base)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
