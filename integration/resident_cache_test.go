package integration

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/readpref"
)

// TestResidentCacheSecondaryReadsAfterTouch: a secondary's resident
// cache does not take in the primary's inserts it applies (it holds
// fewer items than were inserted, the primary at least as many); once it holds
// sessions (read twice by token) it sees every touch, delete and expiry
// the primary makes: its cache is kept by the apply path.
func TestResidentCacheSecondaryReadsAfterTouch(t *testing.T) {
	rs := startReplSet(t, 3)
	ctx := ctxT(t)
	primary := rs.waitPrimary(-1, 10*time.Second)
	coll := rs.client().Database("app").Collection("sessions")
	_, err := coll.Indexes().CreateMany(ctx, []mongo.IndexModel{
		{Keys: bson.D{{Key: "token", Value: 1}}, Options: options.Index().SetUnique(true)},
		{Keys: bson.D{{Key: "lastAccess", Value: 1}}, Options: options.Index().SetExpireAfterSeconds(3600)},
	})
	if err != nil {
		t.Fatal(err)
	}
	const sessions = 20
	start := time.Now().Truncate(time.Millisecond)
	for i := range sessions {
		doc := bson.D{{Key: "token", Value: fmt.Sprintf("tok%02d", i)}, {Key: "lastAccess", Value: start}}
		if _, err := coll.InsertOne(ctx, doc); err != nil {
			t.Fatal(err)
		}
	}
	sec := rs.direct((primary + 1) % 3)
	// A secondary applies the primary's writes without filling its cache
	// with them (what its readers read comes in on their first read).
	rs.waitSameHash("app", 10*time.Second)
	if p, s := cacheStatus(t, rs.direct(primary)).Items, cacheStatus(t, sec).Items; p < sessions || s >= sessions {
		t.Fatalf("after %d inserts the primary's cache holds %d items and the secondary's %d; want the primary's to hold them and not the secondary's", sessions, p, s)
	}
	sc := sec.Database("app").Collection("sessions", options.Collection().SetReadPreference(readpref.SecondaryPreferred()))
	for i := range sessions {
		waitSession(t, sc, i, func(d time.Time, found bool) bool { return found && d.Equal(start) })
		waitSession(t, sc, i, func(d time.Time, found bool) bool { return found && d.Equal(start) })
	}
	hits := cacheHits(t, sec)
	if hits == 0 {
		t.Fatal("the secondary's cache served none of the repeated reads")
	}
	touched := start.Add(time.Minute)
	for i := range sessions - 1 {
		filter := bson.D{{Key: "token", Value: fmt.Sprintf("tok%02d", i)}}
		if _, err := coll.UpdateOne(ctx, filter, bson.D{{Key: "$set", Value: bson.D{{Key: "lastAccess", Value: touched}}}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := coll.DeleteOne(ctx, bson.D{{Key: "token", Value: fmt.Sprintf("tok%02d", sessions-1)}}); err != nil {
		t.Fatal(err)
	}
	for i := range sessions - 1 {
		waitSession(t, sc, i, func(d time.Time, found bool) bool { return found && d.Equal(touched) })
	}
	waitSession(t, sc, sessions-1, func(_ time.Time, found bool) bool { return !found })
	if after := cacheHits(t, sec); after <= hits {
		t.Fatalf("the secondary's cache served no read after the touches (hits %d, then %d)", hits, after)
	}
}

// waitSession reads session i by token until ok accepts what it finds,
// for at most 10 s: a cache the apply path left stale never converges.
func waitSession(t *testing.T, coll *mongo.Collection, i int, ok func(d time.Time, found bool) bool) {
	t.Helper()
	filter := bson.D{{Key: "token", Value: fmt.Sprintf("tok%02d", i)}}
	var last string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		var d struct {
			LastAccess time.Time `bson:"lastAccess"`
		}
		err := coll.FindOne(context.Background(), filter).Decode(&d)
		if err != nil && err != mongo.ErrNoDocuments {
			t.Fatal(err)
		}
		if ok(d.LastAccess, err == nil) {
			return
		}
		last = fmt.Sprintf("found %v, lastAccess %v", err == nil, d.LastAccess)
	}
	t.Fatalf("session %d on the secondary: %s after 10 s", i, last)
}

// cacheHits is serverStatus.mayflyCache.hits of the member c reaches.
func cacheHits(t *testing.T, c *mongo.Client) int64 { return cacheStatus(t, c).Hits }

// TestResidentCacheWarmsAnIndexAfterARestart: after a restart every
// session is cold; one lookup by token that finds its session warms the
// token index (not unique, as the expire-least-recently-used pattern
// creates it), and the other sessions' first lookups then find their
// token in the cache, and their documents as storage has them.
func TestResidentCacheWarmsAnIndexAfterARestart(t *testing.T) {
	bin := buildBinary(t)
	dir, addr := t.TempDir(), freePort(t)
	p := startBinary(t, bin, dir, addr)
	ctx := ctxT(t)
	coll := p.client(t).Database("app").Collection("sessions")
	if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "token", Value: 1}}}); err != nil {
		t.Fatal(err)
	}
	const sessions = 2000
	docs := make([]any, sessions)
	for i := range docs {
		docs[i] = bson.D{{Key: "token", Value: fmt.Sprintf("tok%05d", i)}, {Key: "n", Value: i}}
	}
	if _, err := coll.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	_, _ = p.cmd.Process.Wait()
	p = startBinary(t, bin, dir, addr)
	client := p.client(t)
	coll = client.Database("app").Collection("sessions")
	findSession(t, coll, 0)
	for deadline := time.Now().Add(20 * time.Second); cacheStatus(t, client).WarmUps == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("a lookup that found a cold session warmed no index")
		}
	}
	before := cacheStatus(t, client)
	for i := 1; i < sessions; i++ {
		findSession(t, coll, i)
	}
	// Each lookup still reads its document for the first time: one miss
	// each, where a cold token range made it two.
	after := cacheStatus(t, client)
	if after.WarmedRanges < sessions-1 || after.Misses-before.Misses > sessions-1 {
		t.Fatalf("warm-up kept %d ranges; the %d first lookups after it missed %d times, want at most once each (its document)",
			after.WarmedRanges, sessions-1, after.Misses-before.Misses)
	}
	newTokensReadNothing(t, client, coll, sessions)
}

// newTokensReadNothing: after the warm-up made the token index's value
// filter, a login's insert leaves its token's lookup in the cache (the
// insert claims the new value; a claim is refused now and then when
// another write reaches the range's part of the cache first), and a
// lookup of a token never written reads nothing.
func newTokensReadNothing(t *testing.T, client *mongo.Client, coll *mongo.Collection, from int) {
	const logins = 500
	before := cacheStatus(t, client)
	if before.FilterBytes == 0 {
		t.Fatal("the warm-up made no value filter")
	}
	for i := from; i < from+logins; i++ {
		if _, err := coll.InsertOne(ctxT(t), bson.D{{Key: "token", Value: fmt.Sprintf("tok%05d", i)}, {Key: "n", Value: i}}); err != nil {
			t.Fatal(err)
		}
	}
	inserted := cacheStatus(t, client)
	for i := from; i < from+logins; i++ {
		findSession(t, coll, i)
	}
	after := cacheStatus(t, client)
	if claimed, missed := inserted.ClaimedRanges-before.ClaimedRanges, after.Misses-inserted.Misses; claimed < logins*4/5 || missed > logins/5 {
		t.Fatalf("%d logins: %d claimed their token; their first lookups missed %d times", logins, claimed, missed)
	}
	t.Logf("%d logins: %d claimed their token; their first lookups missed %d times", logins,
		inserted.ClaimedRanges-before.ClaimedRanges, after.Misses-inserted.Misses)
	for i := range logins {
		err := coll.FindOne(ctxT(t), bson.D{{Key: "token", Value: fmt.Sprintf("never%05d", i)}}).Err()
		if !errors.Is(err, mongo.ErrNoDocuments) {
			t.Fatalf("a token never written: %v", err)
		}
	}
	if missed := cacheStatus(t, client).Misses - after.Misses; missed > logins/100 {
		t.Fatalf("%d lookups of tokens never written missed %d times", logins, missed)
	}
}

// findSession finds session i by token and checks it is that session.
func findSession(t *testing.T, coll *mongo.Collection, i int) {
	t.Helper()
	var d struct {
		N int `bson:"n"`
	}
	if err := coll.FindOne(context.Background(), bson.D{{Key: "token", Value: fmt.Sprintf("tok%05d", i)}}).Decode(&d); err != nil || d.N != i {
		t.Fatalf("session %d: n %d, %v", i, d.N, err)
	}
}

type residentCacheStatus struct {
	Items         int64 `bson:"items"`
	Hits          int64 `bson:"hits"`
	Misses        int64 `bson:"misses"`
	WarmUps       int64 `bson:"warmUps"`
	WarmedRanges  int64 `bson:"warmedRanges"`
	FilterBytes   int64 `bson:"filterBytes"`
	ClaimedRanges int64 `bson:"claimedRanges"`
}

// cacheStatus is serverStatus.mayflyCache of the server c reaches.
func cacheStatus(t *testing.T, c *mongo.Client) residentCacheStatus {
	t.Helper()
	var st struct {
		Cache residentCacheStatus `bson:"mayflyCache"`
	}
	if err := c.Database("admin").RunCommand(ctxT(t), bson.D{{Key: "serverStatus", Value: 1}}).Decode(&st); err != nil {
		t.Fatal(err)
	}
	return st.Cache
}
