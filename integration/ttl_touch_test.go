package integration

import (
	"fmt"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/mayflydb/mayfly/internal/app"
)

// touchSessions is how many sessions of each kind the touch test keeps.
const touchSessions = 10

// TestTouchedSessionsExpireByTheirOwnDate: touches leave a session's old
// TTL entries behind (docs/design/0003, "Touches"). Kept sessions are
// touched through four dates and then to an hour ahead; idle ones are
// dated after every one of those entries. The test clock then moves a
// minute on, past all of them: the monitor must delete the idle sessions
// and no kept one (on every member of a replica set), and queries on the
// TTL field must not meet a kept session by an old date. Dated back, the
// kept sessions expire like the others: one change event per session,
// and every member's validate clean.
func TestTouchedSessionsExpireByTheirOwnDate(t *testing.T) {
	t.Run("standalone", func(t *testing.T) {
		s := startServer(t, app.Config{SetParameters: map[string]string{"enableTestCommands": "1", "ttlMonitorSleepSecs": "1"}})
		c := connect(t, s)
		clock := func() { setClockOffset(t, c, touchClockOffset) }
		runTouchedSessions(t, c.Database("test"), clock, func(want int64) { waitStoredCount(t, c.Database("test"), want) })
	})
	t.Run("replicaSet", func(t *testing.T) {
		rs := startReplSet(t, 3, "--setParameter", "enableTestCommands=1")
		clock := func() {
			for i := range rs.procs {
				setClockOffset(t, rs.direct(i), touchClockOffset)
			}
		}
		runTouchedSessions(t, rs.client().Database("test"), clock, func(want int64) { rs.wantStoredCount(t, "sessions", want) })
		for i := range rs.procs {
			validateDB(ctxT(t), t, rs.direct(i).Database("test"))
		}
	})
}

// touchClockOffset is how far the test clock moves: past every date the
// test writes but the kept sessions' hour.
const touchClockOffset = 60

// touchTTL is the sessions' expireAfterSeconds: long enough for the
// writes before the clock moves on a loaded machine.
const touchTTL = 20

func runTouchedSessions(t *testing.T, db *mongo.Database, moveClock func(), storedEverywhere func(want int64)) {
	ctx := ctxT(t)
	coll := db.Collection("sessions")
	runCmd(t, db, bson.D{{Key: "createIndexes", Value: "sessions"}, {Key: "indexes", Value: bson.A{
		bson.D{{Key: "key", Value: bson.D{{Key: "token", Value: 1}}}, {Key: "name", Value: "token_1"}},
		bson.D{{Key: "key", Value: bson.D{{Key: "lastActivity", Value: 1}}}, {Key: "name", Value: "lastActivity_1"}, {Key: "expireAfterSeconds", Value: touchTTL}},
	}}})
	stream, err := coll.Watch(ctx, mongo.Pipeline{{{Key: "$match", Value: bson.D{{Key: "operationType", Value: "delete"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = stream.Close(ctx) }()
	start := time.Now().Truncate(time.Millisecond)
	for i := range touchSessions {
		insertSession(t, coll, fmt.Sprintf("kept%02d", i), start)
		insertSession(t, coll, fmt.Sprintf("idle%02d", i), start.Add(time.Second))
	}
	for step := 1; step <= 4; step++ { // stale entries at start and +100..+300 ms
		touchKept(t, coll, start.Add(time.Duration(step)*100*time.Millisecond))
	}
	touchKept(t, coll, start.Add(time.Hour))
	wantKeptByRange(t, coll, start)

	moveClock()
	storedEverywhere(touchSessions) // the idle sessions gone, every entry before theirs judged
	// The monitor counts a batch's deletions once its commit returns, a
	// moment after the documents are gone.
	deadline := time.Now().Add(5 * time.Second)
	for ttlDeleted(t, db) < touchSessions && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := ttlDeleted(t, db); n != touchSessions {
		t.Fatalf("the monitor deleted %d documents, want the %d idle sessions", n, touchSessions)
	}
	touchKept(t, coll, start) // an earlier date, long past by the clock
	storedEverywhere(0)
	if n := countDeletes(t, stream, 2*touchSessions); n != 2*touchSessions {
		t.Fatalf("%d delete events, want %d", n, 2*touchSessions)
	}
}

func insertSession(t *testing.T, coll *mongo.Collection, token string, at time.Time) {
	t.Helper()
	if _, err := coll.InsertOne(ctxT(t), bson.D{{Key: "token", Value: token}, {Key: "kept", Value: token[:4] == "kept"}, {Key: "lastActivity", Value: at}}); err != nil {
		t.Fatal(err)
	}
}

// touchKept sets every kept session's lastActivity to at, one update each.
func touchKept(t *testing.T, coll *mongo.Collection, at time.Time) {
	t.Helper()
	for i := range touchSessions {
		filter := bson.D{{Key: "token", Value: fmt.Sprintf("kept%02d", i)}}
		r, err := coll.UpdateOne(ctxT(t), filter, bson.D{{Key: "$set", Value: bson.D{{Key: "lastActivity", Value: at}}}})
		if err != nil || r.MatchedCount != 1 {
			t.Fatalf("touch of kept%02d: %+v %v", i, r, err)
		}
	}
}

// wantKeptByRange checks scans of lastActivity_1: no kept session below
// its date, each once and in order above it.
func wantKeptByRange(t *testing.T, coll *mongo.Collection, start time.Time) {
	t.Helper()
	below := bson.D{{Key: "kept", Value: true}, {Key: "lastActivity", Value: bson.D{{Key: "$lt", Value: start.Add(time.Minute)}}}}
	if got := findTokens(t, coll, below); len(got) != 0 {
		t.Fatalf("kept sessions found by their old dates: %v", got)
	}
	all := bson.D{{Key: "kept", Value: true}, {Key: "lastActivity", Value: bson.D{{Key: "$gte", Value: start}}}}
	got := findTokens(t, coll, all)
	if len(got) != touchSessions {
		t.Fatalf("range over every date gave %v, want each of %d kept sessions once", got, touchSessions)
	}
	seen := map[string]bool{}
	for _, tok := range got {
		if seen[tok] {
			t.Fatalf("range over every date gave %s twice: %v", tok, got)
		}
		seen[tok] = true
	}
}

func findTokens(t *testing.T, coll *mongo.Collection, filter bson.D) []string {
	t.Helper()
	opts := options.Find().SetHint("lastActivity_1").SetSort(bson.D{{Key: "lastActivity", Value: 1}})
	cur, err := coll.Find(ctxT(t), filter, opts)
	if err != nil {
		t.Fatal(err)
	}
	var docs []struct {
		Token string `bson:"token"`
	}
	if err := cur.All(ctxT(t), &docs); err != nil {
		t.Fatal(err)
	}
	tokens := make([]string, len(docs))
	for i, d := range docs {
		tokens[i] = d.Token
	}
	return tokens
}

// waitStoredCount waits until the collection's stored count (its
// counters, expired documents included) is want, for at most 10 s.
func waitStoredCount(t *testing.T, db *mongo.Database, want int64) {
	t.Helper()
	stats := bson.A{bson.D{{Key: "$collStats", Value: bson.D{{Key: "count", Value: bson.D{}}}}}}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		var out []struct {
			Count int64 `bson:"count"`
		}
		cur, err := db.Collection("sessions").Aggregate(ctxT(t), stats)
		if err == nil {
			err = cur.All(ctxT(t), &out)
		}
		if err == nil && len(out) == 1 && out[0].Count == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("stored count %v (%v), want %d", out, err, want)
		}
	}
}

// countDeletes reads delete events until it has want, or 10 s passed,
// then for 300 ms more, and returns how many it read.
func countDeletes(t *testing.T, stream *mongo.ChangeStream, want int) int {
	t.Helper()
	n := 0
	ctx := ctxT(t)
	for deadline := time.Now().Add(10 * time.Second); n < want && time.Now().Before(deadline); {
		if stream.TryNext(ctx) {
			n++
		} else if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
	}
	for extra := time.Now().Add(300 * time.Millisecond); time.Now().Before(extra); {
		if stream.TryNext(ctx) {
			n++
		}
	}
	return n
}
