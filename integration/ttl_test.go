package integration

import (
	"math"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

func createTTL(t *testing.T, db *mongo.Database, coll, field string, secs any) {
	t.Helper()
	runCmd(t, db, bson.D{{Key: "createIndexes", Value: coll}, {Key: "indexes", Value: bson.A{
		bson.D{{Key: "key", Value: bson.D{{Key: field, Value: 1}}}, {Key: "name", Value: field + "_1"}, {Key: "expireAfterSeconds", Value: secs}},
	}}})
}

func ttlDeleted(t *testing.T, db *mongo.Database) int64 {
	ss := runCmd(t, db.Client().Database("admin"), bson.D{{Key: "serverStatus", Value: 1}})
	ttl := field(t, field(t, ss, "metrics").(bson.D), "ttl").(bson.D)
	return field(t, ttl, "deletedDocuments").(int64)
}

func TestExpiredDocumentsAreInvisibleThenDeleted(t *testing.T) {
	db := newDB(t)
	c := db.Collection("tokenLog")
	ctx := ctxT(t)
	createTTL(t, db, "tokenLog", "accessTime", 1)
	now := time.Now()
	if _, err := c.InsertMany(ctx, []any{
		bson.D{{Key: "token", Value: 100}, {Key: "accessTime", Value: now.Add(-2 * time.Second)}},
		bson.D{{Key: "token", Value: 101}, {Key: "accessTime", Value: now.Add(time.Hour)}},
		bson.D{{Key: "token", Value: 102}, {Key: "accessTime", Value: "not a date"}},
	}); err != nil {
		t.Fatal(err)
	}
	n, err := c.CountDocuments(ctx, bson.D{})
	if err != nil || n != 2 {
		t.Fatalf("an expired document is never counted: %d %v", n, err)
	}
	if err := c.FindOne(ctx, bson.D{{Key: "token", Value: 100}}).Err(); err != mongo.ErrNoDocuments {
		t.Fatalf("an expired document is never returned: %v", err)
	}
	r, err := c.UpdateOne(ctx, bson.D{{Key: "token", Value: 100}}, bson.D{{Key: "$set", Value: bson.D{{Key: "x", Value: 1}}}})
	if err != nil || r.MatchedCount != 0 {
		t.Fatalf("an expired document is never updated: %+v %v", r, err)
	}
	deadline := time.Now().Add(3 * time.Second)
	for ttlDeleted(t, db) < 1 {
		if time.Now().After(deadline) {
			t.Fatal("the monitor did not delete the expired document within 3s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if n, _ := c.CountDocuments(ctx, bson.D{}); n != 2 {
		t.Fatalf("only the expired document goes: %d left", n)
	}
}

func TestLRUTouchKeepsDocumentsAlive(t *testing.T) {
	db := newDB(t)
	c := db.Collection("sessions")
	ctx := ctxT(t)
	createTTL(t, db, "sessions", "accessTime", 1)
	for _, tok := range []string{"kept", "dropped"} {
		if _, err := c.InsertOne(ctx, bson.D{{Key: "token", Value: tok}, {Key: "accessTime", Value: time.Now()}}); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 8; i++ {
		time.Sleep(250 * time.Millisecond)
		if _, err := c.UpdateOne(ctx, bson.D{{Key: "token", Value: "kept"}}, bson.D{{Key: "$set", Value: bson.D{{Key: "accessTime", Value: time.Now()}}}}); err != nil {
			t.Fatal(err)
		}
	}
	var left []bson.M
	cur, err := c.Find(ctx, bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	if err := cur.All(ctx, &left); err != nil {
		t.Fatal(err)
	}
	if len(left) != 1 || left[0]["token"] != "kept" {
		t.Fatalf("after 2s: %v", left)
	}
}

func TestExpireAtClockTime(t *testing.T) {
	db := newDB(t)
	c := db.Collection("events")
	ctx := ctxT(t)
	createTTL(t, db, "events", "expireAt", 0)
	past := time.Date(2013, 7, 22, 14, 0, 0, 0, time.UTC)
	if _, err := c.InsertMany(ctx, []any{
		bson.D{{Key: "expireAt", Value: past}, {Key: "logEvent", Value: 2}},
		bson.D{{Key: "expireAt", Value: time.Now().Add(time.Hour)}, {Key: "logEvent", Value: 3}},
		bson.D{{Key: "expireAt", Value: bson.A{time.Now().Add(time.Hour), past}}, {Key: "logEvent", Value: 4}},
	}); err != nil {
		t.Fatal(err)
	}
	if n, _ := c.CountDocuments(ctx, bson.D{}); n != 1 {
		t.Fatalf("past expireAt (also as the earliest array element) is expired: %d visible", n)
	}
}

func TestTTLIndexValidation(t *testing.T) {
	db := newDB(t)
	index := func(key bson.D, secs any) bson.D {
		return bson.D{{Key: "createIndexes", Value: "v"}, {Key: "indexes", Value: bson.A{
			bson.D{{Key: "key", Value: key}, {Key: "name", Value: "ix"}, {Key: "expireAfterSeconds", Value: secs}},
		}}}
	}
	w := bson.D{{Key: "w", Value: 1}}
	cases := []struct {
		name string
		cmd  bson.D
		code int32
		msg  string
	}{
		{"NaN", index(w, math.NaN()), 67, "TTL index 'expireAfterSeconds' option must not be NaN"},
		{"negative", index(w, -1), 67, "TTL index 'expireAfterSeconds' option cannot be less than 0"},
		{"2^31", index(w, int64(1)<<31), 67, "TTL index 'expireAfterSeconds' must be within the range of a 32-bit integer"},
		{"string", index(w, "1"), 67, "TTL index 'expireAfterSeconds' option must be numeric, but received a type of 'string"},
		{"null", index(w, nil), 67, "must be numeric, but received a type of 'null"},
		{"compound", index(bson.D{{Key: "w", Value: 1}, {Key: "a", Value: 1}}, 10), 67, "TTL indexes are single-field indexes, compound indexes do not support TTL."},
		{"_id", index(bson.D{{Key: "_id", Value: 1}}, 10), 197, "The field 'expireAfterSeconds' is not valid for an _id index specification."},
		{"unknown option", bson.D{{Key: "createIndexes", Value: "v"}, {Key: "indexes", Value: bson.A{bson.D{{Key: "key", Value: w}, {Key: "name", Value: "ix"}, {Key: "expires", Value: 0}}}}}, 197, "The field 'expires' is not valid for an index specification."},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ce := cmdErr(t, db, tc.cmd)
			if ce.Code != tc.code || !contains(ce.Message, tc.msg) {
				t.Fatalf("got %d %q, want %d containing %q", ce.Code, ce.Message, tc.code, tc.msg)
			}
		})
	}
	createTTL(t, db, "v", "t", 3600)
	ce := cmdErr(t, db, index(bson.D{{Key: "t", Value: 1}}, 60))
	if ce.Code != 85 && ce.Code != 86 {
		t.Fatalf("changing expireAfterSeconds through createIndexes: %v", ce)
	}
}

func TestCollModTTL(t *testing.T) {
	db := newDB(t)
	createTTL(t, db, "m", "lastAccess", 3600)
	reply := runCmd(t, db, bson.D{{Key: "collMod", Value: "m"}, {Key: "index", Value: bson.D{{Key: "keyPattern", Value: bson.D{{Key: "lastAccess", Value: 1}}}, {Key: "expireAfterSeconds", Value: 60}}}})
	if field(t, reply, "expireAfterSeconds_old") != int64(3600) || field(t, reply, "expireAfterSeconds_new") != int64(60) {
		t.Fatalf("collMod reply: %v", reply)
	}
	runCmd(t, db, bson.D{{Key: "createIndexes", Value: "m"}, {Key: "indexes", Value: bson.A{bson.D{{Key: "key", Value: bson.D{{Key: "plain", Value: 1}}}, {Key: "name", Value: "plain_1"}}}}})
	reply = runCmd(t, db, bson.D{{Key: "collMod", Value: "m"}, {Key: "index", Value: bson.D{{Key: "name", Value: "plain_1"}, {Key: "expireAfterSeconds", Value: 10}}}})
	if len(reply) != 2 || field(t, reply, "expireAfterSeconds_new") != int64(10) {
		t.Fatalf("converting to TTL reports only _new: %v", reply)
	}
	specs, err := db.Collection("m").Indexes().ListSpecifications(ctxT(t))
	if err != nil || specs[1].ExpireAfterSeconds == nil || *specs[1].ExpireAfterSeconds != 60 {
		t.Fatalf("listIndexes shows the new value: %+v %v", specs, err)
	}
	errs := []struct {
		index bson.D
		code  int32
		msg   string
	}{
		{bson.D{{Key: "name", Value: "x"}, {Key: "keyPattern", Value: bson.D{{Key: "a", Value: 1}}}, {Key: "expireAfterSeconds", Value: 1}}, 72, "Cannot specify both key pattern and name."},
		{bson.D{{Key: "expireAfterSeconds", Value: 1}}, 72, "Must specify either index name or key pattern."},
		{bson.D{{Key: "name", Value: "plain_1"}}, 72, "no expireAfterSeconds, hidden, unique, or prepareUnique field"},
		{bson.D{{Key: "name", Value: "nope"}, {Key: "expireAfterSeconds", Value: 1}}, 27, "cannot find index nope for ns test.m"},
		{bson.D{{Key: "name", Value: "_id_"}, {Key: "expireAfterSeconds", Value: 1}}, 72, "the _id field does not support TTL indexes"},
		{bson.D{{Key: "name", Value: "plain_1"}, {Key: "expireAfterSeconds", Value: -1}}, 72, "TTL index 'expireAfterSeconds' option cannot be less than 0"},
	}
	for _, e := range errs {
		ce := cmdErr(t, db, bson.D{{Key: "collMod", Value: "m"}, {Key: "index", Value: e.index}})
		if ce.Code != e.code || !contains(ce.Message, e.msg) {
			t.Fatalf("collMod %v: got %d %q", e.index, ce.Code, ce.Message)
		}
	}
}

func TestLaggingExpiryParameter(t *testing.T) {
	db := newDB(t)
	admin := db.Client().Database("admin")
	runCmd(t, admin, bson.D{{Key: "setParameter", Value: 1}, {Key: "ttlMonitorEnabled", Value: false}})
	runCmd(t, admin, bson.D{{Key: "setParameter", Value: 1}, {Key: "mayflyExactExpiry", Value: false}})
	createTTL(t, db, "lag", "t", 0)
	c := db.Collection("lag")
	ctx := ctxT(t)
	if _, err := c.InsertOne(ctx, bson.D{{Key: "t", Value: time.Now().Add(-time.Minute)}}); err != nil {
		t.Fatal(err)
	}
	if n, _ := c.CountDocuments(ctx, bson.D{}); n != 1 {
		t.Fatalf("with exact expiry off, an expired but undeleted document is visible, as in MongoDB: %d", n)
	}
	runCmd(t, admin, bson.D{{Key: "setParameter", Value: 1}, {Key: "mayflyExactExpiry", Value: true}})
	if n, _ := c.CountDocuments(ctx, bson.D{}); n != 0 {
		t.Fatalf("with exact expiry on it is hidden: %d", n)
	}
}
