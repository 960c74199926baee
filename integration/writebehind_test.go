package integration

import (
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"
)

// startBehind starts the binary with --write-behind of an hour: no touch
// reaches its document by the timer while the test runs.
func startBehind(t *testing.T, bin, dir, addr string) *process {
	t.Helper()
	cmd := exec.Command(bin, "--addr", addr, "--dbpath", dir, "--log-level", "warn", "--write-behind", "1h")
	return startCmd(t, cmd, addr)
}

// TestWriteBehindKill9KeepsJournaledTouches: with touches written
// behind, every journaled touch survives kill -9 (the restarted server
// writes documents at once, and replays the patches at open); reads by
// _id, by an index and by a collection scan see each touch before the
// kill; a document touched to expire in a second is deleted by the
// monitor, while held back, and does not come back after the restart.
func TestWriteBehindKill9KeepsJournaledTouches(t *testing.T) {
	bin := buildBinary(t)
	dir := t.TempDir()
	addr := freePort(t)
	p := startBehind(t, bin, dir, addr)
	ctx := ctxT(t)
	db := p.client(t).Database("d")
	coll := db.Collection("sessions", options.Collection().SetWriteConcern(writeconcern.Journaled()))
	createTTL(t, db, "sessions", "at", 3600)
	if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "tok", Value: 1}}}); err != nil {
		t.Fatal(err)
	}
	const n = 200
	now := time.Now().Truncate(time.Millisecond)
	for i := range n {
		doc := bson.D{{Key: "_id", Value: i}, {Key: "tok", Value: fmt.Sprintf("t%03d", i)}, {Key: "at", Value: bson.NewDateTimeFromTime(now)}, {Key: "pad", Value: strings.Repeat("x", 100)}}
		if _, err := coll.InsertOne(ctx, doc); err != nil {
			t.Fatal(err)
		}
	}
	want := map[int]time.Time{0: now}
	for round := range 3 {
		for i := 1; i < n; i++ {
			at := now.Add(time.Duration(round*n+i) * time.Millisecond)
			if _, err := coll.UpdateOne(ctx, bson.D{{Key: "tok", Value: fmt.Sprintf("t%03d", i)}}, bson.D{{Key: "$set", Value: bson.D{{Key: "at", Value: bson.NewDateTimeFromTime(at)}}}}); err != nil {
				t.Fatal(err)
			}
			want[i] = at
		}
	}
	var status struct {
		Cache struct {
			Pending int64 `bson:"pendingDocuments"`
		} `bson:"mayflyCache"`
	}
	if err := db.RunCommand(ctx, bson.D{{Key: "serverStatus", Value: 1}}).Decode(&status); err != nil {
		t.Fatal(err)
	}
	if status.Cache.Pending < n/2 {
		t.Fatalf("%d documents held back after %d touches: the touches went to storage", status.Cache.Pending, 3*(n-1))
	}
	checkDates(t, coll, want, "before the kill")

	// Touched to expire a second from now: the monitor deletes it held back.
	expiring := time.Now().Add(-3599 * time.Second)
	if _, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: 0}}, bson.D{{Key: "$set", Value: bson.D{{Key: "at", Value: bson.NewDateTimeFromTime(expiring)}}}}); err != nil {
		t.Fatal(err)
	}
	delete(want, 0)
	deadline := time.Now().Add(15 * time.Second)
	for {
		left, err := coll.CountDocuments(ctx, bson.D{{Key: "_id", Value: 0}})
		if err != nil {
			t.Fatal(err)
		}
		if left == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the document touched to expire was not deleted")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_, _ = p.cmd.Process.Wait()

	p2 := startBinary(t, bin, dir, addr)
	checkDates(t, p2.client(t).Database("d").Collection("sessions"), want, "after kill -9")
}

// checkDates reads every document by _id, by its token and by a
// collection scan, and compares each one's date with want's (a document
// absent from want must be gone).
func checkDates(t *testing.T, coll *mongo.Collection, want map[int]time.Time, when string) {
	t.Helper()
	ctx := ctxT(t)
	type doc struct {
		ID  int       `bson:"_id"`
		Tok string    `bson:"tok"`
		At  time.Time `bson:"at"`
	}
	cur, err := coll.Find(ctx, bson.D{}, options.Find().SetHint(bson.D{{Key: "$natural", Value: 1}}))
	if err != nil {
		t.Fatal(err)
	}
	var scanned []doc
	if err := cur.All(ctx, &scanned); err != nil {
		t.Fatal(err)
	}
	if len(scanned) != len(want) {
		t.Fatalf("%s: a scan found %d documents, want %d", when, len(scanned), len(want))
	}
	for _, d := range scanned {
		if !d.At.Equal(want[d.ID]) {
			t.Fatalf("%s: a scan read document %d dated %v, want %v", when, d.ID, d.At, want[d.ID])
		}
	}
	for id, at := range want {
		for _, filter := range []bson.D{{{Key: "_id", Value: id}}, {{Key: "tok", Value: fmt.Sprintf("t%03d", id)}}} {
			var d doc
			if err := coll.FindOne(ctx, filter).Decode(&d); err != nil {
				t.Fatalf("%s: %v: %v", when, filter, err)
			}
			if !d.At.Equal(at) {
				t.Fatalf("%s: %v read dated %v, want %v", when, filter, d.At, at)
			}
		}
	}
}
