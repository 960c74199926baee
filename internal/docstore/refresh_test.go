package docstore

import (
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/clock"
)

// sessionColl has an idle timeout (lastSeen, 1800 s, refreshOnRead) and an
// absolute lifetime (createdAt, 3600 s).
func sessionColl(t *testing.T) (*Collection, *clock.Manual) {
	s, clk := openStore(t)
	c, err := s.CreateCollection("db", "sessions", CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mustIndex(t, c, bson.D{{Key: "key", Value: bson.D{{Key: "lastSeen", Value: 1}}}, {Key: "name", Value: "idle"}, {Key: "expireAfterSeconds", Value: 1800}, {Key: "refreshOnRead", Value: true}})
	mustIndex(t, c, bson.D{{Key: "key", Value: bson.D{{Key: "createdAt", Value: 1}}}, {Key: "name", Value: "absolute"}, {Key: "expireAfterSeconds", Value: 3600}})
	return c, clk
}

// readAll reads every live document as a find does, refreshing each.
func readAll(t *testing.T, c *Collection) []bson.D {
	t.Helper()
	it := c.Scan(nil, nil)
	defer it.Close()
	var out []bson.D
	for {
		d, ok, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return out
		}
		if d, err = c.RefreshOnRead(d); err != nil {
			t.Fatal(err)
		}
		out = append(out, d)
	}
}

func storedDate(t *testing.T, c *Collection, id any, field string) bson.DateTime {
	t.Helper()
	it := c.Scan(nil, nil)
	defer it.Close()
	for {
		d, ok, err := it.Next()
		if err != nil || !ok {
			t.Fatalf("document %v not found (err %v)", id, err)
		}
		if got, _ := lookupID(d); got == id {
			v, _ := bsonutil.Field(d, field)
			return v.(bson.DateTime)
		}
	}
}

func TestRefreshOnReadIsThrottled(t *testing.T) {
	c, clk := sessionColl(t)
	insert(t, c, bson.D{{Key: "_id", Value: "s1"}, {Key: "lastSeen", Value: date(t0)}, {Key: "createdAt", Value: date(t0)}})
	// Within a tenth of 1800 s, a read writes nothing.
	clk.Advance(180 * time.Second)
	docs := readAll(t, c)
	if got := storedDate(t, c, "s1", "lastSeen"); got != date(t0) || c.store.RefreshedOnRead() != 0 {
		t.Fatalf("a read 180 s after the last refresh wrote lastSeen %v (%d refreshes)", got.Time(), c.store.RefreshedOnRead())
	}
	if v, _ := bsonutil.Field(docs[0], "lastSeen"); v != date(t0) {
		t.Fatalf("returned lastSeen %v, want the stored %v", v, date(t0))
	}
	// Past it, the read sets lastSeen to now and returns what it stored.
	clk.Advance(time.Millisecond)
	docs = readAll(t, c)
	now := date(clk.Now())
	if got := storedDate(t, c, "s1", "lastSeen"); got != now || c.store.RefreshedOnRead() != 1 {
		t.Fatalf("stored lastSeen %v, want %v (%d refreshes)", got.Time(), now.Time(), c.store.RefreshedOnRead())
	}
	if v, _ := bsonutil.Field(docs[0], "lastSeen"); v != now {
		t.Fatalf("returned lastSeen %v, want %v", v, now)
	}
	if v, _ := bsonutil.Field(docs[0], "createdAt"); v != date(t0) {
		t.Fatalf("createdAt changed to %v: only refreshOnRead indexes are refreshed", v)
	}
}

func TestIdleAndAbsoluteLifetimeWhicheverComesFirst(t *testing.T) {
	c, clk := sessionColl(t)
	insert(t, c, bson.D{{Key: "_id", Value: "busy"}, {Key: "lastSeen", Value: date(t0)}, {Key: "createdAt", Value: date(t0)}})
	insert(t, c, bson.D{{Key: "_id", Value: "idle"}, {Key: "lastSeen", Value: date(t0)}, {Key: "createdAt", Value: date(t0)}})
	// "busy" is read every 1000 s; "idle" never after its first read.
	for elapsed := 1000; elapsed < 3600; elapsed += 1000 {
		clk.Set(t0.Add(time.Duration(elapsed) * time.Second))
		it := c.Scan(nil, nil)
		for {
			d, ok, err := it.Next()
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				break
			}
			if id, _ := lookupID(d); id == "busy" {
				if _, err := c.RefreshOnRead(d); err != nil {
					t.Fatal(err)
				}
			}
		}
		it.Close()
		ids := liveIDs(t, c)
		wantIdle := elapsed < 1800
		if ids["idle"] != wantIdle || !ids["busy"] {
			t.Fatalf("at +%d s live %v, want busy and idle=%v", elapsed, ids, wantIdle)
		}
	}
	// The idle timeout keeps "busy" alive, the absolute lifetime ends it.
	clk.Set(t0.Add(3600 * time.Second))
	if ids := liveIDs(t, c); len(ids) != 0 {
		t.Fatalf("at +3600 s live %v, want none: createdAt's 3600 s are up", ids)
	}
}

func liveIDs(t *testing.T, c *Collection) map[any]bool {
	t.Helper()
	it := c.Scan(nil, nil)
	defer it.Close()
	ids := map[any]bool{}
	for {
		d, ok, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return ids
		}
		id, _ := lookupID(d)
		ids[id] = true
	}
}

func TestRefreshOnlyWhereOneDateDecides(t *testing.T) {
	s, clk := openStore(t)
	c, err := s.CreateCollection("db", "r", CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mustIndex(t, c, bson.D{{Key: "key", Value: bson.D{{Key: "meta.seen", Value: 1}}}, {Key: "name", Value: "seen"}, {Key: "expireAfterSeconds", Value: 100}, {Key: "refreshOnRead", Value: true},
		{Key: "partialFilterExpression", Value: bson.D{{Key: "kind", Value: "session"}}}})
	old := date(t0.Add(-50 * time.Second))
	docs := []bson.D{
		{{Key: "_id", Value: "nested"}, {Key: "kind", Value: "session"}, {Key: "meta", Value: bson.D{{Key: "seen", Value: old}, {Key: "x", Value: 1}}}},
		{{Key: "_id", Value: "array"}, {Key: "kind", Value: "session"}, {Key: "meta", Value: bson.A{bson.D{{Key: "seen", Value: old}}}}},
		{{Key: "_id", Value: "other"}, {Key: "kind", Value: "page"}, {Key: "meta", Value: bson.D{{Key: "seen", Value: old}}}},
		{{Key: "_id", Value: "string"}, {Key: "kind", Value: "session"}, {Key: "meta", Value: bson.D{{Key: "seen", Value: "yesterday"}}}},
	}
	for _, d := range docs {
		insert(t, c, d)
	}
	for _, d := range docs {
		if _, err := c.RefreshOnRead(d); err != nil {
			t.Fatal(err)
		}
	}
	if n := s.RefreshedOnRead(); n != 1 {
		t.Fatalf("%d refreshes, want 1 (the nested date only)", n)
	}
	got, _ := c.Refreshed(docs[0], clk.Now())
	meta, _ := bsonutil.Field(got, "meta")
	if x, _ := bsonutil.Field(meta.(bson.D), "x"); x != 1 {
		t.Fatalf("refresh lost a sibling field: %v", meta)
	}
	if seen, _ := bsonutil.Field(docs[0][2].Value.(bson.D), "seen"); seen != old {
		t.Fatal("Refreshed modified the caller's document")
	}
}

func TestRefreshLeavesAnExpiredDocumentAlone(t *testing.T) {
	c, clk := sessionColl(t)
	doc := bson.D{{Key: "_id", Value: "s"}, {Key: "lastSeen", Value: date(t0)}, {Key: "createdAt", Value: date(t0)}}
	insert(t, c, doc)
	// Read just before expiry, refreshed just after: the document is gone.
	clk.Set(t0.Add(1800 * time.Second))
	if _, err := c.RefreshOnRead(doc); err != nil {
		t.Fatal(err)
	}
	if n := c.store.RefreshedOnRead(); n != 0 || len(liveIDs(t, c)) != 0 {
		t.Fatalf("an expired document was refreshed back to life (%d refreshes)", n)
	}
}

func TestCollectionWithoutRefreshIndexPaysNothing(t *testing.T) {
	c, clk := ttlColl(t, "t", 60)
	doc := bson.D{{Key: "_id", Value: 1}, {Key: "t", Value: date(t0)}}
	insert(t, c, doc)
	clk.Advance(50 * time.Second)
	if c.RefreshesOnRead() {
		t.Fatal("RefreshesOnRead without a refreshOnRead index")
	}
	if _, changed := c.Refreshed(doc, clk.Now()); changed {
		t.Fatal("a plain TTL index was refreshed")
	}
}
