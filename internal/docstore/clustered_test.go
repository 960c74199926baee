package docstore

import (
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/clock"
	"github.com/mayflydb/mayfly/internal/storage/pebblestore"
)

func clusteredColl(t *testing.T, secs int64) (*Collection, *Store) {
	t.Helper()
	s, _ := openStore(t)
	c, err := s.CreateCollection("db", "cl", CreateOptions{Clustered: true, ClusteredTTL: secs >= 0, ExpireAfter: max(secs, 0)})
	if err != nil {
		t.Fatal(err)
	}
	return c, s
}

func TestClusteredTTLExpiresDateIDsOnly(t *testing.T) {
	c, _ := clusteredColl(t, 60)
	cases := []struct {
		name    string
		id      any
		expired bool
	}{
		{"date _id past expireAfterSeconds", date(t0.Add(-61 * time.Second)), true},
		{"boundary is inclusive", date(t0.Add(-60 * time.Second)), true},
		{"date _id within the window", date(t0.Add(-59 * time.Second)), false},
		{"before 1970", date(time.Date(1960, 1, 1, 0, 0, 0, 0, time.UTC)), true},
		// mongod's monitor scans the cluster key's date range only.
		{"ObjectId of an old time", bson.NewObjectIDFromTimestamp(t0.Add(-time.Hour)), false},
		{"number", int64(0), false},
		{"string", "2012-08-02T17:47:15Z", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := c.Expired(bson.D{{Key: "_id", Value: tc.id}}, t0); got != tc.expired {
				t.Fatalf("Expired = %v, want %v", got, tc.expired)
			}
		})
	}
	if c.Expired(bson.D{{Key: "_id", Value: 1}, {Key: "at", Value: date(t0.Add(-time.Hour))}}, t0) {
		t.Fatal("only _id decides a clustered collection's expiry")
	}
}

func TestClusteredTTLHidesAndMonitorDeletes(t *testing.T) {
	s, clk := openStore(t)
	c, err := s.CreateCollection("db", "cl", CreateOptions{Clustered: true, ClusteredTTL: true, ExpireAfter: 30})
	if err != nil {
		t.Fatal(err)
	}
	// A secondary index: the pass deletes its entries with the documents.
	mustIndex(t, c, bson.D{{Key: "key", Value: bson.D{{Key: "i", Value: 1}}}, {Key: "name", Value: "i_1"}})
	for i := 0; i < 10; i++ {
		insert(t, c, bson.D{{Key: "_id", Value: date(t0.Add(time.Duration(i) * time.Second))}, {Key: "i", Value: i}})
	}
	insert(t, c, bson.D{{Key: "_id", Value: bson.NewObjectIDFromTimestamp(t0.Add(-time.Hour))}})
	insert(t, c, bson.D{{Key: "_id", Value: "key"}})
	at, ok, err := c.NextExpiry()
	if err != nil || !ok || !at.Equal(t0.Add(30*time.Second)) {
		t.Fatalf("NextExpiry = %v %v %v, want the earliest date _id's expiry", at, ok, err)
	}
	clk.Set(t0.Add(34 * time.Second)) // dates t0..t0+4s have expired
	if n := visible(t, c); n != 7 {
		t.Fatalf("%d documents visible, want 5 date _ids and the two others", n)
	}
	pass := c.BeginExpiry(c.TTLIndexes()[0], clk.Now())
	res, err := pass.Next(3)
	if err != nil || res.Deleted != 3 || !res.More || res.DeletedKeys != 6 {
		t.Fatalf("first batch %+v %v: want 3 documents (two keys each) and more", res, err)
	}
	res, err = pass.Next(100)
	if err != nil || res.Deleted != 2 || res.More || res.Read != 0 {
		t.Fatalf("second batch %+v %v: want the other 2, none read again", res, err)
	}
	if c.Count() != 7 {
		t.Fatalf("%d stored, want 7", c.Count())
	}
	at, _, _ = c.NextExpiry()
	if !at.Equal(t0.Add(35 * time.Second)) {
		t.Fatalf("NextExpiry after the pass = %v", at)
	}
	// A document dated below the pass's progress mark is still found.
	insert(t, c, bson.D{{Key: "_id", Value: date(t0.Add(-time.Hour))}})
	at, _, _ = c.NextExpiry()
	if !at.Equal(t0.Add(-time.Hour + 30*time.Second)) {
		t.Fatalf("NextExpiry after an old insert = %v", at)
	}
	res, err = c.BeginExpiry(c.TTLIndexes()[0], clk.Now()).Next(100)
	if err != nil || res.Deleted != 1 {
		t.Fatalf("pass after the old insert %+v %v", res, err)
	}
	requireValid(t, c)
}

func TestClusteredExpiryOffAndOn(t *testing.T) {
	c, _ := clusteredColl(t, -1)
	old := bson.D{{Key: "_id", Value: date(t0.Add(-time.Hour))}}
	insert(t, c, old)
	if c.HasTTL() || c.Expired(old, t0) {
		t.Fatal("a clustered collection without expireAfterSeconds expires nothing")
	}
	if err := c.SetClusteredExpiry(10); err != nil {
		t.Fatal(err)
	}
	if !c.Expired(old, t0) || visible(t, c) != 0 {
		t.Fatal("expireAfterSeconds set by collMod applies at once")
	}
	if v, _ := lookupOpt(c.Meta().Options, "expireAfterSeconds"); v != int64(10) {
		t.Fatalf("options show expireAfterSeconds %v", v)
	}
	if err := c.SetClusteredExpiry(-1); err != nil {
		t.Fatal(err)
	}
	if c.HasTTL() || visible(t, c) != 1 {
		t.Fatal("turned off, the document is back")
	}
	if _, ok := lookupOpt(c.Meta().Options, "expireAfterSeconds"); ok {
		t.Fatal("options still show expireAfterSeconds")
	}
	plain, err := c.store.CreateCollection("db", "plain", CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := plain.SetClusteredExpiry(5); err == nil {
		t.Fatal("expireAfterSeconds on a collection that is not clustered")
	}
}

func lookupOpt(d bson.D, key string) (any, bool) {
	for _, e := range d {
		if e.Key == key {
			return e.Value, true
		}
	}
	return nil, false
}

func TestClusteredExpirySurvivesReopen(t *testing.T) {
	eng, err := pebblestore.Open(pebblestore.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eng.Close() })
	clk := clock.NewManual(t0)
	s, err := Open(eng, Options{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.CreateCollection("db", "cl", CreateOptions{Clustered: true, ClusteredTTL: true, ExpireAfter: 60})
	if err != nil {
		t.Fatal(err)
	}
	insert(t, c, bson.D{{Key: "_id", Value: date(t0.Add(-time.Hour))}})
	reopened, err := Open(eng, Options{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	rc := reopened.Collection("db", "cl")
	if rc == nil || !rc.IsClustered() || !rc.HasTTL() || visible(t, rc) != 0 {
		t.Fatal("the reopened store lost the clustered collection's expiry")
	}
	if at, ok, err := rc.NextExpiry(); err != nil || !ok || !at.Equal(t0.Add(-time.Hour+time.Minute)) {
		t.Fatalf("NextExpiry after reopen = %v %v %v", at, ok, err)
	}
}
