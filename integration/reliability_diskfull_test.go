package integration

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"

	"github.com/mayflydb/mayfly/internal/app"
	"github.com/mayflydb/mayfly/internal/storage/pebblestore/faultfs"
)

// outOfDiskSpace is MongoDB's OutOfDiskSpace code; refusedMsg is the part
// of the message that tells the client what is going on.
const (
	outOfDiskSpace  = 14031
	queryPlanKilled = 175
	refusedMsg      = "out of disk space: writes are refused until space is freed and the storage recovers"
)

// TestReliabilityDiskFull: with the disk full, writes fail with
// OutOfDiskSpace while reads keep working on every connection; once space
// returns the server takes writes again on its own, every acknowledged
// document is there and counts and validate agree with the documents.
func TestReliabilityDiskFull(t *testing.T) {
	full := &faultfs.DiskFull{}
	logs := &logRecorder{}
	srv := startServer(t, app.Config{
		DataDir: t.TempDir(), FS: faultfs.Wrap(vfs.Default, full),
		RecoverInterval: 20 * time.Millisecond, Logger: slog.New(logs),
	})
	db := connect(t, srv).Database("test")
	coll := db.Collection("docs", options.Collection().SetWriteConcern(writeconcern.Journaled()))
	ctx := ctxT(t)
	if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "k", Value: 1}}}); err != nil {
		t.Fatal(err)
	}
	acked := map[int32]bool{}
	insertAcked(t, coll, acked, 0, 200)
	// A cursor left open across the failure and the recovery.
	cur, err := coll.Find(ctx, bson.D{}, options.Find().SetBatchSize(10))
	if err != nil {
		t.Fatal(err)
	}
	defer cur.Close(context.Background())

	full.Set(true)
	writesRefused(t, db, coll, 1000)
	readsWork(t, srv, coll, acked)
	if !logs.has(slog.LevelError, "storage failure") {
		t.Error("no error logged for the storage failure")
	}
	// Let the server try to recover (and fail) before space returns.
	waitLogged(t, logs, slog.LevelError, "storage recovery attempt failed")
	writesRefused(t, db, coll, 1100)

	full.Set(false)
	waitForWrites(t, coll, acked)
	insertAcked(t, coll, acked, 3000, 20)
	if _, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$set", Value: bson.D{{Key: "k", Value: -1}}}}); err != nil {
		t.Fatalf("update after recovery: %v", err)
	}
	n := readsWork(t, srv, coll, acked)
	countsAgree(t, db, n)
	for cur.Next(ctx) {
	}
	wantCode(t, cur.Err(), queryPlanKilled, "storage engine reopened")
	if !logs.has(slog.LevelWarn, "storage recovered") {
		t.Error("no warning logged for the recovery")
	}
}

// insertAcked inserts n documents from _id first with j: true and records
// the acknowledged ones.
func insertAcked(t *testing.T, coll *mongo.Collection, acked map[int32]bool, first, n int32) {
	t.Helper()
	for id := first; id < first+n; id++ {
		if _, err := coll.InsertOne(ctxT(t), bson.D{{Key: "_id", Value: id}, {Key: "k", Value: id}, {Key: "pad", Value: strings.Repeat("x", 200)}}); err != nil {
			t.Fatalf("insert %d: %v", id, err)
		}
		acked[id] = true
	}
}

// writesRefused checks that inserts (journaled or not, with new _ids from
// id), updates and deletes fail with OutOfDiskSpace while the disk is full.
func writesRefused(t *testing.T, db *mongo.Database, coll *mongo.Collection, id int32) {
	t.Helper()
	ctx := ctxT(t)
	_, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "k", Value: id}})
	wantCode(t, err, outOfDiskSpace, refusedMsg)
	_, err = db.Collection("docs").InsertOne(ctx, bson.D{{Key: "_id", Value: id + 1}, {Key: "k", Value: id + 1}})
	wantCode(t, err, outOfDiskSpace, refusedMsg)
	_, err = coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: 2}}, bson.D{{Key: "$set", Value: bson.D{{Key: "k", Value: -2}}}})
	wantCode(t, err, outOfDiskSpace, refusedMsg)
	_, err = coll.DeleteOne(ctx, bson.D{{Key: "_id", Value: 3}})
	wantCode(t, err, outOfDiskSpace, refusedMsg)
}

// readsWork checks that every acknowledged document is found, on this
// connection and on a fresh one, and returns how many documents there are.
func readsWork(t *testing.T, srv *testServer, coll *mongo.Collection, acked map[int32]bool) int {
	t.Helper()
	pingFresh(t, srv.app.Addr().String())
	other := connect(t, srv).Database("test").Collection("docs")
	n := 0
	for _, c := range []*mongo.Collection{coll, other} {
		n = foundAll(t, c, acked)
	}
	return n
}

func foundAll(t *testing.T, coll *mongo.Collection, acked map[int32]bool) int {
	t.Helper()
	cur, err := coll.Find(ctxT(t), bson.D{})
	if err != nil {
		t.Fatalf("find: %v", err)
	}
	var docs []struct {
		ID int32 `bson:"_id"`
	}
	if err := cur.All(ctxT(t), &docs); err != nil {
		t.Fatalf("find: %v", err)
	}
	seen := map[int32]bool{}
	for _, d := range docs {
		seen[d.ID] = true
	}
	for id := range acked {
		if !seen[id] {
			t.Fatalf("acknowledged document %d missing (%d found)", id, len(docs))
		}
	}
	return len(docs)
}

// waitForWrites polls with inserts until one succeeds once space is back;
// until then each must fail with OutOfDiskSpace.
func waitForWrites(t *testing.T, coll *mongo.Collection, acked map[int32]bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for id := int32(2000); ; id++ {
		_, err := coll.InsertOne(ctxT(t), bson.D{{Key: "_id", Value: id}, {Key: "k", Value: id}})
		if err == nil {
			acked[id] = true
			return
		}
		wantCode(t, err, outOfDiskSpace, refusedMsg)
		if time.Now().After(deadline) {
			t.Fatalf("writes still refused 15s after space returned: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// countsAgree waits for the counts the server keeps (count without a
// query, $collStats) to match the n documents a scan finds (they are
// rebuilt after the reopen), and for validate to be clean.
func countsAgree(t *testing.T, db *mongo.Database, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		fast, stats := fastCount(t, db), storedCount(t, db.Collection("docs"))
		if fast == int64(n) && stats == int64(n) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("count %d, $collStats count %d; the collection holds %d documents", fast, stats, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got, err := db.Collection("docs").CountDocuments(ctxT(t), bson.D{}); err != nil || got != int64(n) {
		t.Fatalf("countDocuments = %d, %v; want %d", got, err, n)
	}
	res := runCmd(t, db, bson.D{{Key: "validate", Value: "docs"}, {Key: "full", Value: true}})
	if field(t, res, "valid") != true || field(t, res, "nrecords") != int32(n) {
		t.Fatalf("validate after recovery: %v", res)
	}
}

func fastCount(t *testing.T, db *mongo.Database) int64 {
	t.Helper()
	switch v := field(t, runCmd(t, db, bson.D{{Key: "count", Value: "docs"}}), "n").(type) {
	case int32:
		return int64(v)
	case int64:
		return v
	default:
		t.Fatalf("count: n is %T", v)
		return 0
	}
}

func waitLogged(t *testing.T, logs *logRecorder, level slog.Level, msg string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !logs.has(level, msg) {
		if time.Now().After(deadline) {
			t.Fatalf("nothing logged at %v containing %q", level, msg)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// logRecorder is a slog handler that keeps each record's level and message.
type logRecorder struct {
	mu   sync.Mutex
	msgs []slog.Record
}

func (l *logRecorder) Enabled(context.Context, slog.Level) bool { return true }

func (l *logRecorder) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.msgs = append(l.msgs, r)
	return nil
}

func (l *logRecorder) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logRecorder) WithGroup(string) slog.Handler      { return l }

// has reports whether a record at level has a message containing msg.
func (l *logRecorder) has(level slog.Level, msg string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range l.msgs {
		if r.Level == level && strings.Contains(r.Message, msg) {
			return true
		}
	}
	return false
}
