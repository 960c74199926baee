package integration

import (
	"slices"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/mayflydb/mayfly/internal/app"
)

// TestChangeStreamExpiryWarnings: a TTL index with expiryWarningSeconds
// sends an "expiring" event that long before each document expires,
// measured on the server's test clock; a document touched past the
// window or deleted is not warned of.
func TestChangeStreamExpiryWarnings(t *testing.T) {
	s := startServer(t, app.Config{SetParameters: map[string]string{"enableTestCommands": "1"}})
	c := connect(t, s)
	db := c.Database("shop")
	ctx := ctxT(t)
	carts := db.Collection("carts")
	// expiryWarningSeconds is Mayfly's: the driver passes it through
	// createIndexes as it is.
	runCmd(t, db, bson.D{{Key: "createIndexes", Value: "carts"}, {Key: "indexes", Value: bson.A{bson.D{
		{Key: "key", Value: bson.D{{Key: "touched", Value: 1}}}, {Key: "name", Value: "idle"},
		{Key: "expireAfterSeconds", Value: 3600}, {Key: "expiryWarningSeconds", Value: 600},
	}}}})
	time.Sleep(200 * time.Millisecond) // the first warning pass opens the window
	now := time.Now()
	for _, id := range []string{"a", "b", "c"} {
		mustDo(t, func() error {
			_, err := carts.InsertOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "touched", Value: bson.NewDateTimeFromTime(now)}})
			return err
		})
	}
	expiring := mongo.Pipeline{{{Key: "$match", Value: bson.D{{Key: "operationType", Value: "expiring"}}}}}
	cs, err := carts.Watch(ctx, expiring, options.ChangeStream().SetMaxAwaitTime(300*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close(ctx)
	// b is touched two hours on, c is deleted; only a is warned of.
	mustDo(t, func() error {
		_, err := carts.UpdateByID(ctx, "b", bson.D{{Key: "$set", Value: bson.D{{Key: "touched", Value: bson.NewDateTimeFromTime(now.Add(2 * time.Hour))}}}})
		return err
	})
	mustDo(t, func() error { _, err := carts.DeleteOne(ctx, bson.D{{Key: "_id", Value: "c"}}); return err })
	// 50 minutes on: a expires in 10 minutes, its warning is due.
	mustDo(t, func() error {
		return c.Database("admin").RunCommand(ctx, bson.D{{Key: "setParameter", Value: 1}, {Key: "mayflyClockOffsetSeconds", Value: 3001}}).Err()
	})
	ev := nextEvent(t, cs)
	if asM(ev["documentKey"])["_id"] != "a" {
		t.Fatalf("warning for %v", ev)
	}
	w := asM(ev["expiring"])
	if w["index"] != "idle" || w["expireAfterSeconds"] != int64(3600) || w["expiresAt"] != bson.NewDateTimeFromTime(now.Add(time.Hour)) {
		t.Fatalf("expiring = %v", w)
	}
	if ns := asM(ev["ns"]); ns["db"] != "shop" || ns["coll"] != "carts" {
		t.Fatalf("ns = %v", ns)
	}
	for i := 0; i < 2; i++ {
		if cs.TryNext(ctx) {
			t.Fatalf("a second warning: %v", cs.Current)
		}
	}
}

// TestChangeStreamExpiryWarningsOnTime: 2 000 documents warned of one
// second before they expire, over one second; each warning's wallTime
// minus its due time (expiresAt − expiryWarningSeconds) stays within
// 250 ms at p99, and every warning comes before its document's expiry.
func TestChangeStreamExpiryWarningsOnTime(t *testing.T) {
	s := startServer(t, app.Config{TTLSleepSecs: 1})
	db := connect(t, s).Database("app")
	ctx := ctxT(t)
	runCmd(t, db, bson.D{{Key: "createIndexes", Value: "sessions"}, {Key: "indexes", Value: bson.A{bson.D{
		{Key: "key", Value: bson.D{{Key: "at", Value: 1}}}, {Key: "name", Value: "at_1"},
		{Key: "expireAfterSeconds", Value: 2}, {Key: "expiryWarningSeconds", Value: 1},
	}}}})
	sessions := db.Collection("sessions")
	cs, err := sessions.Watch(ctx, mongo.Pipeline{{{Key: "$match", Value: bson.D{{Key: "operationType", Value: bson.D{{Key: "$in", Value: bson.A{"expiring", "delete"}}}}}}}})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close(ctx)
	const n = 2000
	base := time.Now().Add(-500 * time.Millisecond) // warnings due 0.5 s to 1.5 s from now
	docs := make([]any, n)
	for i := range docs {
		docs[i] = bson.D{{Key: "_id", Value: int32(i)}, {Key: "at", Value: bson.NewDateTimeFromTime(base.Add(time.Duration(i) * time.Second / n))}}
	}
	mustDo(t, func() error { _, err := sessions.InsertMany(ctx, docs); return err })
	late := make([]time.Duration, 0, n)
	warned := map[int32]bool{}
	for len(late) < n {
		ev := nextEvent(t, cs)
		if ev["operationType"] == "delete" {
			// A TTL deletion's documentKey is decoded from the key
			// encoding: the number, as an int64 (docs/design/0012).
			id := int32(asM(ev["documentKey"])["_id"].(int64))
			if !warned[id] {
				t.Fatalf("document %d expired before its warning", id)
			}
			continue
		}
		id := asM(ev["documentKey"])["_id"].(int32)
		if warned[id] {
			t.Fatalf("document %d warned twice", id)
		}
		warned[id] = true
		due := asM(ev["expiring"])["expiresAt"].(bson.DateTime).Time().Add(-time.Second)
		late = append(late, ev["wallTime"].(bson.DateTime).Time().Sub(due))
	}
	slices.Sort(late)
	p50, p99 := late[n/2], late[n*99/100]
	t.Logf("expiry warnings: %d, wallTime - due p50 %v p99 %v", n, p50, p99)
	if late[0] < 0 || p99 > 250*time.Millisecond {
		t.Fatalf("warnings early or late: first %v p99 %v", late[0], p99)
	}
}

// TestChangeStreamExpiryWarningsAcrossFailover: a warning that falls due
// while the set has no primary (the primary killed with kill -9) is sent
// by the new primary, late, from the mark the old one replicated; a
// stream resumed from before the kill receives it once.
func TestChangeStreamExpiryWarningsAcrossFailover(t *testing.T) {
	rs := startReplSet(t, 3)
	c := rs.client()
	ctx := ctxT(t)
	db := c.Database("shop")
	carts := db.Collection("carts")
	runCmd(t, db, bson.D{{Key: "createIndexes", Value: "carts"}, {Key: "indexes", Value: bson.A{bson.D{
		{Key: "key", Value: bson.D{{Key: "touched", Value: 1}}}, {Key: "name", Value: "idle"},
		{Key: "expireAfterSeconds", Value: 60}, {Key: "expiryWarningSeconds", Value: 30},
	}}}})
	time.Sleep(1500 * time.Millisecond) // the window opens; its mark is stored and replicated
	expiring := mongo.Pipeline{{{Key: "$match", Value: bson.D{{Key: "operationType", Value: "expiring"}}}}}
	cs, err := carts.Watch(ctx, expiring, options.ChangeStream().SetMaxAwaitTime(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if cs.TryNext(ctx) {
		t.Fatalf("a warning before any document: %v", cs.Current)
	}
	token := cs.ResumeToken()
	cs.Close(ctx)
	primary := rs.waitPrimary(-1, 15*time.Second)
	// Due 300 ms from now: after the kill, before a new primary.
	touched := time.Now().Add(-29700 * time.Millisecond)
	mustDo(t, func() error {
		_, err := carts.InsertOne(ctx, bson.D{{Key: "_id", Value: "late"}, {Key: "touched", Value: bson.NewDateTimeFromTime(touched)}})
		return err
	})
	rs.kill9(primary)
	killed := time.Now()
	rs.waitPrimary(primary, 20*time.Second)
	t.Logf("killed %s after the insert's date, a new primary %s after the kill", killed.Sub(touched.Add(29700*time.Millisecond)), time.Since(killed))
	resumed, err := carts.Watch(ctx, expiring, options.ChangeStream().SetResumeAfter(token).SetMaxAwaitTime(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer resumed.Close(ctx)
	ev := nextEvent(t, resumed)
	w := asM(ev["expiring"])
	if asM(ev["documentKey"])["_id"] != "late" || w["expiresAt"] != bson.NewDateTimeFromTime(touched.Add(time.Minute)) {
		t.Fatalf("warning %v", ev)
	}
	due := touched.Add(30 * time.Second)
	sent := ev["wallTime"].(bson.DateTime).Time()
	t.Logf("due %s, sent %s after (the set had no primary)", due.Format(time.RFC3339Nano), sent.Sub(due))
	for range 3 {
		if resumed.TryNext(ctx) {
			t.Fatalf("a second warning: %v", resumed.Current)
		}
	}
}

// TestChangeStreamExpiryWarningOfAShortLivedDocument: a document written
// to expire sooner than expiryWarningSeconds is warned of by its insert,
// right after the insert event, and a touch that moves its expiry, still
// inside the window, warns again with the new time.
func TestChangeStreamExpiryWarningOfAShortLivedDocument(t *testing.T) {
	s := startServer(t, app.Config{})
	db := connect(t, s).Database("shop")
	ctx := ctxT(t)
	runCmd(t, db, bson.D{{Key: "createIndexes", Value: "carts"}, {Key: "indexes", Value: bson.A{bson.D{
		{Key: "key", Value: bson.D{{Key: "touched", Value: 1}}}, {Key: "name", Value: "idle"},
		{Key: "expireAfterSeconds", Value: 600}, {Key: "expiryWarningSeconds", Value: 300},
	}}}})
	time.Sleep(200 * time.Millisecond) // the first warning pass opens the window
	carts := db.Collection("carts")
	cs, err := carts.Watch(ctx, mongo.Pipeline{}, options.ChangeStream().SetMaxAwaitTime(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close(ctx)
	touched := time.Now().Add(-590 * time.Second) // expires in 10 s
	mustDo(t, func() error {
		_, err := carts.InsertOne(ctx, bson.D{{Key: "_id", Value: "quick"}, {Key: "touched", Value: bson.NewDateTimeFromTime(touched)}})
		return err
	})
	wantOp(t, nextEvent(t, cs), "insert")
	ev := nextEvent(t, cs)
	wantOp(t, ev, "expiring")
	if at := asM(ev["expiring"])["expiresAt"]; at != bson.NewDateTimeFromTime(touched.Add(10*time.Minute)) {
		t.Fatalf("expiresAt %v", at)
	}
	mustDo(t, func() error {
		_, err := carts.UpdateByID(ctx, "quick", bson.D{{Key: "$set", Value: bson.D{{Key: "touched", Value: bson.NewDateTimeFromTime(touched.Add(20 * time.Second))}}}})
		return err
	})
	wantOp(t, nextEvent(t, cs), "update")
	ev = nextEvent(t, cs)
	if ev["operationType"] != "expiring" || asM(ev["expiring"])["expiresAt"] != bson.NewDateTimeFromTime(touched.Add(10*time.Minute+20*time.Second)) {
		t.Fatalf("after the touch: %v", ev)
	}
	mustDo(t, func() error {
		_, err := carts.UpdateByID(ctx, "quick", bson.D{{Key: "$set", Value: bson.D{{Key: "items", Value: 3}}}})
		return err
	})
	wantOp(t, nextEvent(t, cs), "update")
	if cs.TryNext(ctx) {
		t.Fatalf("a warning for a write that left the expiry: %v", cs.Current)
	}
}
