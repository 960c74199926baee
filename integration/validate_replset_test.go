package integration

import (
	"context"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestReplicaSetValidateWhileApplying runs validate on every member of a
// three-member set, over and over, while the set applies what changes
// the collection's counts: the primary's TTL deletions (applied on every
// member, their counts published after) and a client's inserts and
// deletes (a secondary publishes their counts after its apply). Every
// validate must find the collection valid: a member's counts and its
// storage agree as of the snapshot validate reads, never one without
// the other.
func TestReplicaSetValidateWhileApplying(t *testing.T) {
	rs := startReplSet(t, 3)
	p := rs.waitPrimary(-1, 20*time.Second)
	ctx := context.Background()
	coll := rs.direct(p).Database("v").Collection("s")
	if _, err := coll.Indexes().CreateMany(ctx, []mongo.IndexModel{
		{Keys: bson.D{{Key: "at", Value: 1}}, Options: options.Index().SetExpireAfterSeconds(0)},
		{Keys: bson.D{{Key: "tok", Value: 1}}},
	}); err != nil {
		t.Fatal(err)
	}
	const docs = 60000
	// The documents expire over 3 s from 12 s on: loading them takes
	// about half that here.
	first := time.Now().Add(12 * time.Second)
	for b := 0; b < docs; b += 1000 {
		batch := make([]any, 0, 1000)
		for i := b; i < b+1000; i++ {
			at := first.Add(time.Duration(i) * 50 * time.Microsecond)
			batch = append(batch, bson.D{{Key: "_id", Value: i}, {Key: "tok", Value: i % 997}, {Key: "at", Value: at}})
		}
		if _, err := coll.InsertMany(ctx, batch); err != nil {
			t.Fatal(err)
		}
	}
	if time.Now().After(first) {
		t.Fatalf("loading took until %v, past the first expiry", time.Since(first))
	}
	end := first.Add(4 * time.Second)
	var wg sync.WaitGroup
	wg.Go(func() { churn(t, coll, end) })
	for i := range rs.addrs {
		c := rs.direct(i)
		wg.Go(func() { validateUntil(t, c, i, first, end) })
	}
	wg.Wait()
}

// churn inserts and deletes documents that never expire until end.
func churn(t *testing.T, coll *mongo.Collection, end time.Time) {
	ctx := context.Background()
	for i := 0; time.Now().Before(end); i++ {
		id := bson.D{{Key: "_id", Value: "c" + string(rune('a'+i%26))}}
		if _, err := coll.InsertOne(ctx, append(id, bson.E{Key: "tok", Value: i})); err != nil {
			t.Errorf("insert: %v", err)
			return
		}
		if _, err := coll.DeleteOne(ctx, id); err != nil {
			t.Errorf("delete: %v", err)
			return
		}
	}
}

// validateUntil validates the collection on member i from the first
// expiry until end, and fails on any verdict but valid.
func validateUntil(t *testing.T, c *mongo.Client, i int, first, end time.Time) {
	time.Sleep(time.Until(first))
	runs := 0
	for ; time.Now().Before(end); runs++ {
		var res struct {
			Valid    bool     `bson:"valid"`
			Errors   []string `bson:"errors"`
			NRecords int64    `bson:"nrecords"`
		}
		if err := c.Database("v").RunCommand(context.Background(), bson.D{{Key: "validate", Value: "s"}}).Decode(&res); err != nil {
			t.Errorf("member %d: validate: %v", i, err)
			return
		}
		if !res.Valid {
			t.Errorf("member %d: validate found %d records invalid: %v", i, res.NRecords, res.Errors)
			return
		}
	}
	if runs < 3 {
		t.Errorf("member %d ran %d validates while the set applied, want at least 3", i, runs)
	}
	t.Logf("member %d: %d validates, all valid", i, runs)
}
