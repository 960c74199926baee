package docstore

import (
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/keyenc"
	"github.com/mayflydb/mayfly/internal/query"
)

func cartColl(t *testing.T) *Collection {
	s, _ := openStore(t)
	c, err := s.CreateCollection("db", "carts", CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mustIndex(t, c, bson.D{{Key: "key", Value: bson.D{{Key: "items.addedAt", Value: 1}}}, {Key: "name", Value: "lines"}, {Key: "expireAfterSeconds", Value: 60}, {Key: "expireElements", Value: true}})
	line := func(sku string, at time.Time) bson.D {
		return bson.D{{Key: "sku", Value: sku}, {Key: "addedAt", Value: date(at)}}
	}
	insert(t, c, bson.D{{Key: "_id", Value: "c1"}, {Key: "user", Value: "ann"}, {Key: "items", Value: bson.A{
		line("stale", t0.Add(-61*time.Second)), line("fresh", t0.Add(-10*time.Second)), "not a subdocument"}}})
	insert(t, c, bson.D{{Key: "_id", Value: "c2"}, {Key: "items", Value: bson.A{line("gone", t0.Add(-90*time.Second))}}})
	return c
}

func skus(t *testing.T, doc bson.D) []any {
	t.Helper()
	items, _ := bsonutil.Field(doc, "items")
	var out []any
	for _, el := range items.(bson.A) {
		if d, ok := el.(bson.D); ok {
			v, _ := bsonutil.Field(d, "sku")
			out = append(out, v)
		} else {
			out = append(out, el)
		}
	}
	return out
}

func TestExpiredElementsAreNeverRead(t *testing.T) {
	c := cartColl(t)
	it := c.Scan(nil, nil)
	defer it.Close()
	got := map[any][]any{}
	for {
		d, ok, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		id, _ := lookupID(d)
		got[id] = skus(t, d)
	}
	if len(got["c1"]) != 2 || got["c1"][0] != "fresh" || len(got["c2"]) != 0 {
		t.Fatalf("read %v: want c1 [fresh, not a subdocument] and c2 with no lines (the cart stays)", got)
	}
	f, err := query.NewFilter(bson.D{{Key: "items.sku", Value: "stale"}})
	if err != nil {
		t.Fatal(err)
	}
	if n := countMatching(t, c, f); n != 0 {
		t.Fatalf("a filter matched an expired element (%d documents)", n)
	}
	// An update sees the live elements only.
	_, err = c.Modify("c1", WriteOptions{}, func(doc bson.D) (Change, error) {
		if s := skus(t, doc); len(s) != 2 {
			t.Fatalf("Modify saw %v", s)
		}
		return Change{}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func countMatching(t *testing.T, c *Collection, f *query.Filter) int {
	t.Helper()
	return countPlan(t, c, nil, f)
}

func TestMonitorRemovesExpiredElements(t *testing.T) {
	c := cartColl(t)
	at, ok, err := c.NextExpiry()
	if err != nil || !ok || !at.Equal(t0.Add(-30*time.Second)) {
		t.Fatalf("NextExpiry = %v %v %v, want the gone line's expiry", at, ok, err)
	}
	res, err := c.BeginExpiry("lines", t0).Next(1000)
	if err != nil {
		t.Fatal(err)
	}
	if res.Trimmed != 2 || res.Deleted != 0 {
		t.Fatalf("pass trimmed %d, deleted %d: want 2 carts trimmed, none deleted", res.Trimmed, res.Deleted)
	}
	stored, err := c.loadLocked(keyenc.AppendValue(nil, "c1"))
	if err != nil || stored == nil {
		t.Fatal(err)
	}
	if s := skus(t, stored.doc); len(s) != 2 || s[0] != "fresh" {
		t.Fatalf("stored c1 lines %v", s)
	}
	if c.Count() != 2 {
		t.Fatalf("%d carts stored, want both", c.Count())
	}
	at, ok, _ = c.NextExpiry()
	if !ok || !at.Equal(t0.Add(50*time.Second)) {
		t.Fatalf("next expiry %v %v, want the fresh line's", at, ok)
	}
	requireValid(t, c)
}
