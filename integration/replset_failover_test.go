package integration

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/readpref"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"
)

// failoverLoad is what the clients did while members were killed.
type failoverLoad struct {
	mu       sync.Mutex
	inserted map[string]bool // acknowledged inserts
	unknown  map[string]bool // inserts whose outcome an error left unknown
	incAcked map[string]int  // acknowledged $inc per counter
	incErrs  map[string]int
	lastTTL  atomic.Int64 // unix nanos of the latest expiry written
	expired  atomic.Int64 // expired documents some member returned
	reads    atomic.Int64
}

func newFailoverLoad() *failoverLoad {
	return &failoverLoad{inserted: map[string]bool{}, unknown: map[string]bool{}, incAcked: map[string]int{}, incErrs: map[string]int{}}
}

// TestReplicaSetFailoverUnderLoad kills the primary with SIGKILL again and
// again while clients do retryable inserts and $inc updates through the
// seed list and readers on every member read expiring documents. Every
// acknowledged write must survive, every $inc count once, writes resume
// within 3 s of each kill, no member may return an expired document, and
// the members end with equal dbHash and a clean validate.
// MAYFLY_RS_KILLS sets the number of kills (default 10).
func TestReplicaSetFailoverUnderLoad(t *testing.T) {
	kills := 10
	if v, err := strconv.Atoi(os.Getenv("MAYFLY_RS_KILLS")); err == nil && v > 0 {
		kills = v
	}
	rs := startReplSet(t, 3)
	wc := writeconcern.Majority()
	seen, acks := &primarySightings{}, newAckedWrites()
	cl := rs.client(options.Client().SetWriteConcern(wc).SetRetryWrites(true).SetServerMonitor(seen.monitor()).SetMonitor(acks.monitor()))
	db := cl.Database("test")
	if _, err := db.Collection("ttl").Indexes().CreateOne(ctxT(t), mongo.IndexModel{Keys: bson.D{{Key: "at", Value: 1}}, Options: options.Index().SetExpireAfterSeconds(0)}); err != nil {
		t.Fatal(err)
	}
	load := newFailoverLoad()
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for w := 0; w < 3; w++ {
		wg.Add(2)
		go func() { defer wg.Done(); insertWorker(ctx, db.Collection("docs"), w, load) }()
		go func() { defer wg.Done(); incWorker(ctx, db.Collection("counters"), fmt.Sprintf("c%d", w), load) }()
	}
	wg.Add(1)
	go func() { defer wg.Done(); ttlWriter(ctx, db.Collection("ttl"), load) }()
	for i := range rs.addrs {
		wg.Add(1)
		go func() { defer wg.Done(); expiryReader(ctx, rs.addrs[i], load) }()
	}
	watch := newStageWatch(t, rs)
	var resume []time.Duration
	for k := 0; k < kills; k++ {
		time.Sleep(1500 * time.Millisecond)
		p := rs.waitPrimary(-1, 15*time.Second)
		term := watch.term(p)
		killed := time.Now()
		rs.kill9(p)
		stages := watch.follow(p, term, killed, 15*time.Second)
		ack := acks.waitNext(t, rs.addrs[p], killed, 15*time.Second)
		resume = append(resume, ack)
		t.Logf("kill %d: %s", k+1, stages.report(seen.firstPrimaryAfter(rs.addrs[p], killed), ack))
		rs.start(p)
	}
	time.Sleep(time.Second)
	stop()
	wg.Wait()
	slices.Sort(resume)
	t.Logf("%d kills: writes resumed after p50 %v, max %v; %d inserts acknowledged, %d unknown; %d expiry reads",
		kills, resume[len(resume)/2].Round(time.Millisecond), resume[len(resume)-1].Round(time.Millisecond), len(load.inserted), len(load.unknown), load.reads.Load())
	if worst := resume[len(resume)-1]; worst > 3*time.Second {
		t.Errorf("writes resumed %v after a kill, want at most 3s", worst)
	}
	if n := load.expired.Load(); n > 0 {
		t.Errorf("members returned %d expired documents", n)
	}
	verifyFailover(t, rs, load)
}

func insertWorker(ctx context.Context, coll *mongo.Collection, w int, load *failoverLoad) {
	for i := 0; ctx.Err() == nil; i++ {
		id := fmt.Sprintf("w%d-%d", w, i)
		opCtx, cancel := context.WithTimeout(ctx, 20*time.Second)
		_, err := coll.InsertOne(opCtx, bson.D{{Key: "_id", Value: id}})
		cancel()
		load.mu.Lock()
		if err == nil {
			load.inserted[id] = true
		} else {
			load.unknown[id] = true
		}
		load.mu.Unlock()
	}
}

func incWorker(ctx context.Context, coll *mongo.Collection, id string, load *failoverLoad) {
	for ctx.Err() == nil {
		opCtx, cancel := context.WithTimeout(ctx, 20*time.Second)
		_, err := coll.UpdateOne(opCtx, bson.D{{Key: "_id", Value: id}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}}, options.UpdateOne().SetUpsert(true))
		cancel()
		load.mu.Lock()
		if err == nil {
			load.incAcked[id]++
		} else {
			load.incErrs[id]++
		}
		load.mu.Unlock()
	}
}

// ttlWriter inserts documents expiring 0.2–2 s after their insert.
func ttlWriter(ctx context.Context, coll *mongo.Collection, load *failoverLoad) {
	for i := 0; ctx.Err() == nil; i++ {
		at := time.Now().Add(time.Duration(200+i%1800) * time.Millisecond)
		if n := at.UnixNano(); n > load.lastTTL.Load() {
			load.lastTTL.Store(n) // the one writer: the expiries it draws are not in order
		}
		opCtx, cancel := context.WithTimeout(ctx, 20*time.Second)
		_, _ = coll.InsertOne(opCtx, bson.D{{Key: "at", Value: at}})
		cancel()
		time.Sleep(5 * time.Millisecond)
	}
}

// expiryReader reads the TTL collection on one member, with whatever read
// preference lets it, and counts documents that had expired before the
// read was sent.
func expiryReader(ctx context.Context, addr string, load *failoverLoad) {
	for ctx.Err() == nil {
		c, err := mongo.Connect(options.Client().ApplyURI("mongodb://" + addr + "/?directConnection=true").SetTimeout(2 * time.Second))
		if err != nil {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		readExpiring(ctx, c.Database("test").Collection("ttl", options.Collection().SetReadPreference(readpref.SecondaryPreferred())), load)
		_ = c.Disconnect(context.Background())
	}
}

func readExpiring(ctx context.Context, coll *mongo.Collection, load *failoverLoad) {
	for ctx.Err() == nil {
		sent := time.Now()
		cur, err := coll.Find(ctx, bson.D{})
		if err != nil {
			time.Sleep(50 * time.Millisecond)
			return
		}
		var docs []struct {
			At time.Time `bson:"at"`
		}
		if err := cur.All(ctx, &docs); err != nil {
			return
		}
		load.reads.Add(1)
		for _, d := range docs {
			if !d.At.After(sent) {
				load.expired.Add(1)
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func verifyFailover(t *testing.T, rs *replSet, load *failoverLoad) {
	t.Helper()
	cl := rs.client()
	db := cl.Database("test")
	ctx := ctxT(t)
	cur, err := db.Collection("docs").Find(ctx, bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	var docs []struct {
		ID string `bson:"_id"`
	}
	if err := cur.All(ctx, &docs); err != nil {
		t.Fatal(err)
	}
	present := map[string]bool{}
	for _, d := range docs {
		present[d.ID] = true
	}
	for id := range load.inserted {
		if !present[id] {
			t.Errorf("acknowledged insert %s is gone", id)
		}
	}
	for id := range present {
		if !load.inserted[id] && !load.unknown[id] {
			t.Errorf("document %s was never inserted", id)
		}
	}
	for id, acked := range load.incAcked {
		var c struct{ N int }
		if err := db.Collection("counters").FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&c); err != nil {
			t.Fatal(err)
		}
		if c.N < acked || c.N > acked+load.incErrs[id] {
			t.Errorf("counter %s is %d: %d $inc acknowledged, %d failed", id, c.N, acked, load.incErrs[id])
		}
	}
	waitExpiredGone(t, db.Collection("ttl"), time.Unix(0, load.lastTTL.Load()))
	for _, coll := range []string{"docs", "counters", "ttl"} {
		verifyValidate(t, db, coll, -1)
	}
	rs.waitSameHash("test", 20*time.Second)
}

// waitExpiredGone checks that every document of the TTL collection is
// physically deleted soon after the last one expired: the primary elected
// after the last kill deletes promptly, not at a monitor's next minute.
// The bound is the 250 ms plus room for this shared machine's
// noise and for the set's state after ten kills in fifteen seconds: a
// deletion commits once a follower has it, and the followers restarted
// last may still be catching up (on a CI machine running other tests,
// 30 documents were still there 1.5 s on, once in many runs; quiet, the
// last went 0.05–0.8 s after the last expiry, as seen by this check,
// which starts after the writes are verified).
func waitExpiredGone(t *testing.T, coll *mongo.Collection, lastExpiry time.Time) {
	t.Helper()
	deadline := lastExpiry.Add(3 * time.Second)
	for {
		n := storedDocs(t, coll)
		if n == 0 {
			t.Logf("every expired document physically gone %v after the last expiry", time.Since(lastExpiry).Round(time.Millisecond))
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d expired documents still stored %v after the last expiry", n, time.Since(lastExpiry).Round(time.Millisecond))
		}
		time.Sleep(20 * time.Millisecond)
	}
}
