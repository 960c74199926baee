package integration

import (
	"bytes"
	"net"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"
)

// lockedBuffer collects a child's output while it runs.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestHostileConnectionFloodKeepsDescriptors: with 256 file descriptors,
// a flood of 400 connections gets at most 204 (80%), the rest are closed,
// and the storage engine still has descriptors: journaled writes, an index
// build and reads work during and after the flood, and nothing logs
// "too many open files".
func TestHostileConnectionFloodKeepsDescriptors(t *testing.T) {
	bin := buildBinary(t)
	addr := freePort(t)
	logs := &lockedBuffer{}
	cmd := exec.Command("sh", "-c", `ulimit -n 256 && exec "$0" "$@"`, bin, "--addr", addr, "--dbpath", t.TempDir())
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _, _ = cmd.Process.Wait() })
	c := quickClient(t, addr, 10*time.Second)
	coll := c.Database("test").Collection("c", options.Collection().SetWriteConcern(writeconcern.Journaled()))
	if _, err := coll.InsertOne(ctxT(t), bson.D{{Key: "_id", Value: -1}}); err != nil {
		t.Fatal(err)
	}
	var flood []net.Conn
	served := 0
	for range 400 {
		nc, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			continue
		}
		flood = append(flood, nc)
		if rawPing(t, nc) {
			served++
		}
	}
	defer func() {
		for _, nc := range flood {
			nc.Close()
		}
	}()
	t.Logf("flood: %d of 400 connections served", served)
	if served > 204 || served < 150 {
		t.Fatalf("%d flood connections served; the limit is 204 less the client's own", served)
	}
	for i := range 200 {
		if _, err := coll.InsertOne(ctxT(t), bson.D{{Key: "_id", Value: i}, {Key: "pad", Value: strings.Repeat("x", 1000)}}); err != nil {
			t.Fatalf("journaled insert during the flood: %v", err)
		}
	}
	if _, err := coll.Indexes().CreateOne(ctxT(t), mongo.IndexModel{Keys: bson.D{{Key: "pad", Value: 1}}}); err != nil {
		t.Fatalf("index build during the flood: %v", err)
	}
	if n, err := coll.CountDocuments(ctxT(t), bson.D{}); err != nil || n != 201 {
		t.Fatalf("count during the flood: %d, %v", n, err)
	}
	if strings.Contains(logs.String(), "too many open files") {
		t.Fatalf("the server ran out of descriptors:\n%s", logs.String())
	}
}
