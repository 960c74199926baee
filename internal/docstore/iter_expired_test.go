package docstore

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/catalog"
)

// expiredScanCase is one kind of index an index scan can run on in a
// collection whose documents expire.
type expiredScanCase struct {
	name   string
	setup  func(t *testing.T, c *Collection) // indexes and documents
	filter bson.D
	hint   string
	// examined is how many documents the scan reads: expired documents
	// skipped by their entry's date are not read.
	examined int64
}

// offsets are the documents' dates, seconds after t0; at t0+100 s under
// a 60 s TTL the first three have expired.
var offsets = []int{0, 10, 20, 50, 60, 70}

func secs(s int) bson.DateTime { return date(t0.Add(time.Duration(s) * time.Second)) }

// datedDocs inserts a document per offset, its date at t and at u, u
// shifted by uShift seconds.
func datedDocs(t *testing.T, c *Collection, uShift int) {
	for i, s := range offsets {
		insert(t, c, bson.D{{Key: "_id", Value: i + 1}, {Key: "kind", Value: "s"}, {Key: "t", Value: secs(s)}, {Key: "u", Value: secs(s + uShift)}})
	}
}

func ttlSpec(name string, key bson.D, secs int, opts ...bson.E) bson.D {
	return ixSpec(name, key, append([]bson.E{{Key: "expireAfterSeconds", Value: secs}}, opts...)...)
}

var upToT = bson.D{{Key: "t", Value: bson.D{{Key: "$lte", Value: secs(1000)}}}}
var upToU = bson.D{{Key: "u", Value: bson.D{{Key: "$lte", Value: secs(1000)}}}}

func expiredScanCases() []expiredScanCase {
	plain := func(key bson.D) func(*testing.T, *Collection) {
		return func(t *testing.T, c *Collection) {
			mustIndex(t, c, ttlSpec("t_1", key, 60))
			datedDocs(t, c, 0)
		}
	}
	return []expiredScanCase{
		{name: "ascending TTL index", setup: plain(bson.D{{Key: "t", Value: 1}}), filter: upToT, hint: "t_1", examined: 3},
		{name: "descending TTL index", setup: plain(bson.D{{Key: "t", Value: -1}}), filter: upToT, hint: "t_1", examined: 3},
		{name: "partial TTL index", setup: func(t *testing.T, c *Collection) {
			mustIndex(t, c, ttlSpec("t_1", bson.D{{Key: "t", Value: 1}}, 60, bson.E{Key: "partialFilterExpression", Value: bson.D{{Key: "kind", Value: "s"}}}))
			datedDocs(t, c, 0)
			insert(t, c, bson.D{{Key: "_id", Value: 7}, {Key: "kind", Value: "x"}, {Key: "t", Value: secs(0)}}) // outside: never expires
		}, filter: append(bson.D{{Key: "kind", Value: "s"}}, upToT...), hint: "t_1", examined: 3},
		{name: "multikey TTL index", setup: func(t *testing.T, c *Collection) {
			mustIndex(t, c, ttlSpec("t_1", bson.D{{Key: "t", Value: 1}}, 60))
			datedDocs(t, c, 0)
			// Expired by its earliest date: its later entry reads it, and
			// the read hides it.
			insert(t, c, bson.D{{Key: "_id", Value: 7}, {Key: "t", Value: bson.A{secs(0), secs(90)}}})
			insert(t, c, bson.D{{Key: "_id", Value: 8}, {Key: "t", Value: bson.A{secs(80), secs(90)}}})
		}, filter: upToT, hint: "t_1", examined: 5},
		{name: "touched documents' loose entries", setup: func(t *testing.T, c *Collection) {
			plain(bson.D{{Key: "t", Value: 1}})(t, c)
			writeField(t, c, 1, "t", secs(5))  // still expired
			writeField(t, c, 2, "t", secs(45)) // alive again
			writeField(t, c, 4, "t", secs(80))
		}, filter: upToT, hint: "t_1", examined: 4},
		{name: "expireElements index", setup: func(t *testing.T, c *Collection) {
			mustIndex(t, c, ttlSpec("items", bson.D{{Key: "items.t", Value: 1}}, 60, bson.E{Key: "expireElements", Value: true}))
			for i, s := range offsets {
				insert(t, c, bson.D{{Key: "_id", Value: i + 1}, {Key: "items", Value: bson.A{bson.D{{Key: "t", Value: secs(s)}}, bson.D{{Key: "t", Value: secs(s + 30)}}}}})
			}
		}, filter: bson.D{{Key: "items.t", Value: bson.D{{Key: "$lte", Value: secs(1000)}}}}, hint: "items", examined: 6},
		{name: "plain index in a TTL collection", setup: func(t *testing.T, c *Collection) {
			mustIndex(t, c, ttlSpec("t_1", bson.D{{Key: "t", Value: 1}}, 60))
			mustIndex(t, c, ixSpec("u_1", bson.D{{Key: "u", Value: 1}}))
			datedDocs(t, c, -1000) // old dates on an index that expires nothing
		}, filter: upToU, hint: "u_1", examined: 6},
		{name: "second TTL index expiring later", setup: func(t *testing.T, c *Collection) {
			mustIndex(t, c, ttlSpec("t_1", bson.D{{Key: "t", Value: 1}}, 60))
			mustIndex(t, c, ttlSpec("u_1", bson.D{{Key: "u", Value: 1}}, 3600))
			datedDocs(t, c, 0)
		}, filter: upToU, hint: "u_1", examined: 6},
		{name: "expireAfterSeconds raised by collMod", setup: func(t *testing.T, c *Collection) {
			plain(bson.D{{Key: "t", Value: 1}})(t, c)
			if err := c.ModifyIndex("t_1", func(ix *catalog.Index) error { ix.ExpireAfter = 3600; return nil }); err != nil {
				t.Fatal(err)
			}
		}, filter: upToT, hint: "t_1", examined: 6},
		{name: "exact expiry off", setup: func(t *testing.T, c *Collection) {
			plain(bson.D{{Key: "t", Value: 1}})(t, c)
			c.store.SetExactExpiry(false)
		}, filter: upToT, hint: "t_1", examined: 6},
	}
}

// An index scan over expired documents returns what a collection scan
// returns, and skips an expired document by its entry's date, without
// reading it, only on an index that expires whole documents.
func TestIndexScanSkipsExpiredEntries(t *testing.T) {
	for _, tc := range expiredScanCases() {
		t.Run(tc.name, func(t *testing.T) {
			s, clk := openStore(t)
			c, err := s.CreateCollection("db", "c", CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			tc.setup(t, c)
			clk.Set(t0.Add(100 * time.Second))
			f := mustFilter(t, tc.filter)
			p := mustPlan(t, c, Query{Filter: f, Hint: tc.hint})
			if p.Kind != IndexScan || p.Index.Name != tc.hint {
				t.Fatalf("plan %v on %v, want a scan of %s", p.Kind, p.Index, tc.hint)
			}
			got, st := run(t, c, p, f)
			want, _ := run(t, c, mustPlan(t, c, Query{Filter: f, Hint: bson.D{{Key: "$natural", Value: 1}}}), f)
			if g, w := idsOf(got), idsOf(want); !slices.Equal(g, w) {
				t.Fatalf("index scan returned %v, collection scan %v", g, w)
			}
			if st.DocsExamined != tc.examined {
				t.Fatalf("index scan examined %d documents, want %d (stats %+v)", st.DocsExamined, tc.examined, st)
			}
		})
	}
}

func idsOf(docs []bson.D) []string {
	ids := make([]string, 0, len(docs))
	for _, d := range docs {
		ids = append(ids, fmt.Sprint(d[0].Value))
	}
	slices.Sort(ids)
	return ids
}
