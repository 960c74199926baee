package integration

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/mayflydb/mayfly/internal/wire"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// --max-conns through the real binary: the connection over the limit is
// closed at once, the others carry on, and a freed slot is reusable.
// The same binary checks --message-timeout and SIGTERM with a stalled
// client and idle pooled connections.
func TestReliabilityBinaryLimits(t *testing.T) {
	bin := buildBinary(t)
	dir := t.TempDir()
	p, err := startMayfly(t, bin, dir, freePort(t), "--max-conns", "3", "--message-timeout", "300ms")
	if err != nil {
		t.Fatal(err)
	}
	// startMayfly's readiness probe connected and closed; on a loaded
	// machine the server may not have counted it out yet.
	time.Sleep(300 * time.Millisecond)
	t.Run("max-conns", func(t *testing.T) { checkMaxConns(t, p.addr) })
	t.Run("message-timeout", func(t *testing.T) { checkMessageTimeout(t, p.addr) })
	t.Run("sigterm", func(t *testing.T) { checkSigterm(t, bin, dir, p) })
}

// rawPing sends a ping on nc and reports whether it got ok:1 back.
func rawPing(t *testing.T, nc net.Conn) bool {
	t.Helper()
	if _, err := nc.Write(wire.AppendMsg(nil, 7, 0, 0, docBytes(t, pingCmd()))); err != nil {
		return false
	}
	reply, err := readRawReply(nc, 5*time.Second)
	return err == nil && replyCode(t, reply) == 0
}

func dialRaw(t *testing.T, addr string) net.Conn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return nc
}

func checkMaxConns(t *testing.T, addr string) {
	var held []net.Conn
	for i := 0; i < 3; i++ {
		nc := dialRaw(t, addr)
		if !rawPing(t, nc) {
			t.Fatalf("connection %d of 3 refused", i+1)
		}
		held = append(held, nc)
	}
	over := dialRaw(t, addr)
	if _, err := readRawReply(over, 5*time.Second); !isClosed(err) {
		t.Fatalf("the 4th connection was not closed: %v", err)
	}
	for i, nc := range held {
		if !rawPing(t, nc) {
			t.Fatalf("connection %d stopped working after the refusal", i+1)
		}
	}
	held[0].Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		nc := dialRaw(t, addr)
		if rawPing(t, nc) {
			nc.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a freed connection slot was not reusable")
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, nc := range held[1:] {
		nc.Close()
	}
}

func checkMessageTimeout(t *testing.T, addr string) {
	var half net.Conn
	deadline := time.Now().Add(5 * time.Second)
	for half == nil {
		nc := dialRaw(t, addr)
		if rawPing(t, nc) { // wait for slots freed by the previous subtest
			half = nc
		} else if time.Now().After(deadline) {
			t.Fatal("no connection slot")
		}
	}
	req := wire.AppendMsg(nil, 9, 0, 0, docBytes(t, pingCmd()))
	if _, err := half.Write(req[:len(req)/2]); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := readRawReply(half, 5*time.Second); !isClosed(err) {
		t.Fatalf("a half-sent request was not dropped: %v", err)
	}
	if d := time.Since(start); d < 250*time.Millisecond || d > 3*time.Second {
		t.Fatalf("dropped after %v; --message-timeout is 300ms", d)
	}
	t.Logf("half-sent request dropped after %v", time.Since(start).Round(time.Millisecond))
	half.Close()
	other := dialRaw(t, addr)
	if !rawPing(t, other) {
		t.Fatal("the server stopped serving after the timeout")
	}
	other.Close()
}

// checkSigterm: with an idle pooled driver client and a client stalled
// mid-request, SIGTERM still exits 0 within a second or two (not the 30 s
// shutdown deadline), and a restart finds the acknowledged data.
func checkSigterm(t *testing.T, bin, dir string, p *process) {
	c := quickClient(t, p.addr, 5*time.Second)
	coll := c.Database("d").Collection("c")
	if _, err := coll.InsertOne(ctxT(t), bson.D{{Key: "_id", Value: "kept"}}); err != nil {
		t.Fatal(err)
	}
	stalled := dialRaw(t, p.addr)
	req := wire.AppendMsg(nil, 9, 0, 0, docBytes(t, pingCmd()))
	_, _ = stalled.Write(req[:10])
	sigtermExits(t, p)
	p2, err := startMayfly(t, bin, dir, p.addr)
	if err != nil {
		t.Fatal(err)
	}
	n, err := quickClient(t, p2.addr, 5*time.Second).Database("d").Collection("c").CountDocuments(ctxT(t), bson.D{{Key: "_id", Value: "kept"}})
	if err != nil || n != 1 {
		t.Fatalf("after a clean restart: %d, %v", n, err)
	}
}

// maxTimeMS: a scan over enough documents to outlast 1 ms fails with 50
// MaxTimeMSExpired, for find, count and aggregate alike.
func TestReliabilityMaxTimeMS(t *testing.T) {
	db := newDB(t)
	coll := db.Collection("big")
	docs := make([]any, 0, 1000)
	for batch := 0; batch < 50; batch++ {
		docs = docs[:0]
		for i := 0; i < 1000; i++ {
			docs = append(docs, bson.D{{Key: "n", Value: batch*1000 + i}, {Key: "s", Value: "some text to match against"}})
		}
		if _, err := coll.InsertMany(ctxT(t), docs); err != nil {
			t.Fatal(err)
		}
	}
	all := bson.D{{Key: "s", Value: bson.D{{Key: "$regex", Value: "text"}}}}
	cases := []struct {
		name string
		cmd  bson.D
	}{
		{"find with a blocking sort", bson.D{{Key: "find", Value: "big"}, {Key: "filter", Value: all},
			{Key: "sort", Value: bson.D{{Key: "n", Value: -1}}}, {Key: "maxTimeMS", Value: 1}}},
		{"count", bson.D{{Key: "count", Value: "big"}, {Key: "query", Value: all}, {Key: "maxTimeMS", Value: 1}}},
	}
	for _, tc := range cases {
		start := time.Now()
		err := db.RunCommand(ctxT(t), tc.cmd).Err()
		t.Logf("%s over 50 000 documents with maxTimeMS 1 → %v (%v)", tc.name, err, time.Since(start).Round(time.Millisecond))
		if serverCode(err) != 50 {
			t.Errorf("%s: want 50 MaxTimeMSExpired, got %v", tc.name, err)
		}
	}
	// Without the limit the same work completes.
	if err := db.RunCommand(ctxT(t), cases[1].cmd[:2]).Err(); err != nil {
		t.Fatal(err)
	}
	// A scan whose filter rejects every document still checks the deadline
	// between the documents it examines.
	miss := bson.D{{Key: "find", Value: "big"}, {Key: "filter", Value: bson.D{{Key: "s", Value: "nowhere"}}}, {Key: "maxTimeMS", Value: 1}}
	if err := db.RunCommand(ctxT(t), miss).Err(); serverCode(err) != 50 {
		t.Errorf("find matching nothing with maxTimeMS 1: want 50, got %v", err)
	}
	agg := bson.D{{Key: "aggregate", Value: "big"}, {Key: "pipeline", Value: bson.A{
		bson.D{{Key: "$group", Value: bson.D{{Key: "_id", Value: "$n"}}}}}},
		{Key: "cursor", Value: bson.D{}}, {Key: "maxTimeMS", Value: 1}}
	if err := db.RunCommand(ctxT(t), agg).Err(); serverCode(err) != 50 {
		t.Errorf("aggregate $group with maxTimeMS 1: want 50, got %v", err)
	}
}

// Blocking stages are bounded in memory (100 MiB, as MongoDB) and fail
// with 292 without allowDiskUse; the server carries on.
func TestReliabilityBlockingMemoryLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("stores 105 MiB")
	}
	db := newDB(t)
	coll := db.Collection("fat")
	blob := strings.Repeat("x", 1<<20)
	for i := 0; i < 105; i++ {
		if _, err := coll.InsertOne(ctxT(t), bson.D{{Key: "n", Value: i}, {Key: "blob", Value: blob}}); err != nil {
			t.Fatal(err)
		}
	}
	sortStage := bson.D{{Key: "$sort", Value: bson.D{{Key: "n", Value: -1}}}}
	group := bson.D{{Key: "$group", Value: bson.D{{Key: "_id", Value: nil}, {Key: "all", Value: bson.D{{Key: "$push", Value: "$blob"}}}}}}
	for name, pipeline := range map[string]mongo.Pipeline{"$sort": {sortStage}, "$group": {group}} {
		_, err := coll.Aggregate(ctxT(t), pipeline, options.Aggregate().SetAllowDiskUse(false))
		t.Logf("aggregate %s over 105 MiB, allowDiskUse false → %v", name, err)
		wantCode(t, err, 292, "")
	}
	_, err := coll.Find(ctxT(t), bson.D{}, options.Find().SetSort(bson.D{{Key: "n", Value: -1}}).SetAllowDiskUse(false))
	t.Logf("find sort over 105 MiB, allowDiskUse false → %v", err)
	wantCode(t, err, 292, "")
	if err := db.RunCommand(context.Background(), bson.D{{Key: "ping", Value: 1}}).Err(); err != nil {
		t.Fatal(err)
	}
}
