package integration

import (
	"context"
	"syscall"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/mayflydb/mayfly/internal/app"
	"github.com/mayflydb/mayfly/internal/wire"
)

func heavyAggregate() bson.D {
	return bson.D{{Key: "aggregate", Value: "one"}, {Key: "pipeline", Value: heavyPipeline()}, {Key: "cursor", Value: bson.D{}}}
}

func seedOne(t *testing.T, db *mongo.Database) {
	t.Helper()
	if _, err := db.Collection("one").InsertOne(ctxT(t), bson.D{{Key: "_id", Value: 1}}); err != nil {
		t.Fatal(err)
	}
}

// runningAggregate returns the opid of the heavy aggregate while it runs,
// waiting up to 5 s for it to appear in currentOp.
func runningAggregate(t *testing.T, admin *mongo.Database) (int32, bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		ops := runCmd(t, admin, bson.D{{Key: "currentOp", Value: 1}, {Key: "ns", Value: "test.one"}})
		if inprog := field(t, ops, "inprog").(bson.A); len(inprog) > 0 {
			return field(t, inprog[0].(bson.D), "opid").(int32), true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return 0, false
}

func waitGone(t *testing.T, admin *mongo.Database, within time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for time.Since(start) < within {
		ops := runCmd(t, admin, bson.D{{Key: "currentOp", Value: 1}, {Key: "ns", Value: "test.one"}})
		if len(field(t, ops, "inprog").(bson.A)) == 0 {
			return time.Since(start)
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("the operation still runs %v later", within)
	return 0
}

// TestHostileKillOp: killOp with currentOp's opid stops a running
// aggregate, which answers 11601 Interrupted.
func TestHostileKillOp(t *testing.T) {
	c := connect(t, startServer(t, app.Config{}))
	db, admin := c.Database("test"), c.Database("admin")
	seedOne(t, db)
	done := make(chan error, 1)
	go func() { done <- db.RunCommand(context.Background(), heavyAggregate()).Err() }()
	opid, ok := runningAggregate(t, admin)
	if !ok {
		t.Fatal("the aggregate never showed in currentOp")
	}
	reply := runCmd(t, admin, bson.D{{Key: "killOp", Value: 1}, {Key: "op", Value: opid}})
	if field(t, reply, "info") != "attempting to kill op" {
		t.Fatalf("killOp: %v", reply)
	}
	start := time.Now()
	select {
	case err := <-done:
		wantCode(t, err, 11601, "operation was interrupted")
		t.Logf("killed aggregate answered %v after killOp", time.Since(start))
	case <-time.After(2 * time.Second):
		t.Fatal("the aggregate still runs 2s after killOp")
	}
	waitGone(t, admin, time.Second)
	wantCode(t, db.RunCommand(ctxT(t), bson.D{{Key: "killOp", Value: 1}, {Key: "op", Value: 1}}).Err(), 13, "killOp may only be run against the admin database.")
}

// TestHostileDisconnectCancels: an operation whose client closes the
// connection stops (before: it ran its 16 s to the end).
func TestHostileDisconnectCancels(t *testing.T) {
	srv := startServer(t, app.Config{})
	c := connect(t, srv)
	db, admin := c.Database("test"), c.Database("admin")
	seedOne(t, db)
	nc := dialRaw(t, srv.app.Addr().String())
	cmd := append(heavyAggregate(), bson.E{Key: "$db", Value: "test"})
	if _, err := nc.Write(wire.AppendMsg(nil, 1, 0, 0, docBytes(t, cmd))); err != nil {
		t.Fatal(err)
	}
	if _, ok := runningAggregate(t, admin); !ok {
		t.Fatal("the aggregate never showed in currentOp")
	}
	time.Sleep(200 * time.Millisecond) // past the server's watch delay
	nc.Close()
	t.Logf("operation gone %v after its client disconnected", waitGone(t, admin, 2*time.Second))
}

// TestHostileSigtermStopsOperations: SIGTERM interrupts a running
// operation (11600 to its client) and the server exits 0 at once instead
// of waiting it out.
func TestHostileSigtermStopsOperations(t *testing.T) {
	bin := buildBinary(t)
	p, err := startMayfly(t, bin, t.TempDir(), freePort(t))
	if err != nil {
		t.Fatal(err)
	}
	c := quickClient(t, p.addr, 30*time.Second)
	seedOne(t, c.Database("test"))
	done := make(chan error, 1)
	go func() { done <- c.Database("test").RunCommand(context.Background(), heavyAggregate()).Err() }()
	if _, ok := runningAggregate(t, c.Database("admin")); !ok {
		t.Fatal("the aggregate never showed in currentOp")
	}
	sigtermExits(t, p)
	// 11600 InterruptedAtShutdown, or the connection closing under it.
	if err := <-done; err == nil {
		t.Fatal("the running aggregate completed")
	} else {
		t.Logf("the running aggregate got: %v", err)
	}
}

// sigtermExits sends SIGTERM and requires exit status 0 within 3 s.
func sigtermExits(t *testing.T, p *process) {
	t.Helper()
	start := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no exit within 10s of SIGTERM")
	}
	took := time.Since(start)
	t.Logf("SIGTERM to exit 0: %v", took.Round(time.Millisecond))
	if took > 3*time.Second {
		t.Fatalf("shutdown took %v", took)
	}
}
