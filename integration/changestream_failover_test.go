package integration

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestChangeStreamResumesAcrossPrimaryKill9 watches a collection of a
// three-member set while a client inserts documents in order, and kills
// the primary with SIGKILL halfway. The driver resumes the stream on the
// new primary from its last token, by itself: every insert appears once,
// in order, none lost and none repeated.
func TestChangeStreamResumesAcrossPrimaryKill9(t *testing.T) {
	rs := startReplSet(t, 3)
	c := rs.client(options.Client().SetRetryWrites(true))
	coll := c.Database("shop").Collection("orders")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cs, err := coll.Watch(ctx, mongo.Pipeline{}, options.ChangeStream().SetMaxAwaitTime(500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close(ctx)
	const n = 200
	written := make(chan error, 1)
	go func() { written <- insertInOrder(ctx, rs, coll, n) }()

	seen := make([]bool, n)
	next := 0
	for next < n {
		if !cs.Next(ctx) {
			t.Fatalf("stream ended after %d events: %v", next, cs.Err())
		}
		var ev struct {
			OperationType string `bson:"operationType"`
			DocumentKey   struct {
				ID int32 `bson:"_id"`
			} `bson:"documentKey"`
		}
		if err := cs.Decode(&ev); err != nil {
			t.Fatal(err)
		}
		id := ev.DocumentKey.ID
		if ev.OperationType != "insert" || id < 0 || int(id) >= n || seen[id] {
			t.Fatalf("event %d: %s of %d (repeated: %v)", next, ev.OperationType, id, id >= 0 && int(id) < n && seen[id])
		}
		if int(id) != next {
			t.Fatalf("event %d is the insert of %d: one was lost", next, id)
		}
		seen[id] = true
		next++
	}
	if err := <-written; err != nil {
		t.Fatal(err)
	}
	if cs.TryNext(ctx) {
		t.Fatalf("an event after the last insert: %v", cs.Current)
	}
}

// insertInOrder inserts _id 0..n-1 one after the other, killing the
// primary after the first half; an insert that fails while the set elects
// a new primary is tried again (a duplicate key then means it had been
// applied).
func insertInOrder(ctx context.Context, rs *replSet, coll *mongo.Collection, n int) error {
	for i := 0; i < n; i++ {
		if i == n/2 {
			p, err := findPrimary(rs.addrs, 10*time.Second)
			if err != nil {
				return err
			}
			rs.kill9(p)
		}
		for {
			_, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: int32(i)}})
			if err == nil || mongo.IsDuplicateKeyError(err) {
				break
			}
			if ctx.Err() != nil {
				return errors.Join(err, ctx.Err())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return nil
}

// findPrimary is waitPrimary for a goroutine other than the test's: it
// returns an error instead of failing the test.
func findPrimary(addrs []string, timeout time.Duration) (int, error) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		for i, a := range addrs {
			if isPrimary(a) {
				return i, nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return -1, errors.New("no primary")
}
