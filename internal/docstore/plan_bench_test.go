package docstore

import (
	"flag"
	"fmt"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/catalog"
	"github.com/mayflydb/mayfly/internal/clock"
	"github.com/mayflydb/mayfly/internal/keyenc"
	"github.com/mayflydb/mayfly/internal/query"
	"github.com/mayflydb/mayfly/internal/storage/pebblestore"
)

// Sizes of the large-collection checks. The defaults keep the normal
// suite quick; the figures in the design note come from
//
//	go test ./internal/docstore/ -run TestFindByIndexOnLargeCollection -mayfly.bigdocs=1000000
//	go test ./internal/docstore/ -run '^$' -bench BenchmarkFindByIndexVsCollScan -mayfly.benchdocs=1000000
var (
	bigDocs   = flag.Int("mayfly.bigdocs", 20000, "documents in TestFindByIndexOnLargeCollection")
	benchDocs = flag.Int("mayfly.benchdocs", 100000, "documents in BenchmarkFindByIndexVsCollScan")
)

// tokenColl holds n small documents {_id: i, token: "tok-<i>", n: i % 100}
// with an index on token, written through the normal write path in
// batches of 1000 documents.
func tokenColl(tb testing.TB, n int) *Collection {
	tb.Helper()
	eng, err := pebblestore.Open(pebblestore.Options{InMemory: true})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = eng.Close() })
	s, err := Open(eng, Options{Clock: clock.NewManual(t0)})
	if err != nil {
		tb.Fatal(err)
	}
	c, err := s.CreateCollection("db", "tokens", CreateOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	ix, err := catalog.ParseIndexSpec(ixSpec("token_1", bson.D{{Key: "token", Value: 1}}))
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := c.CreateIndexes([]*catalog.Index{ix}); err != nil {
		tb.Fatal(err)
	}
	for start := 0; start < n; start += 1000 {
		loadBatch(tb, c, start, min(start+1000, n))
	}
	return c
}

func tokenDoc(i int) bson.D {
	return bson.D{{Key: "_id", Value: int64(i)}, {Key: "token", Value: token(i)}, {Key: "n", Value: int32(i % 100)}}
}

func token(i int) string { return fmt.Sprintf("tok-%08d", i) }

func loadBatch(tb testing.TB, c *Collection, from, to int) {
	t := c.newTx(nil) // a bulk load with no concurrent writers needs no locks
	for i := from; i < to; i++ {
		doc := tokenDoc(i)
		raw, err := bson.Marshal(doc)
		if err != nil {
			tb.Fatal(err)
		}
		d := &stored{idEnc: keyenc.AppendValue(nil, doc[0].Value), raw: raw, doc: doc}
		if err := t.putDoc(d, nil); err != nil {
			tb.Fatal(err)
		}
	}
	if err := t.commit(WriteOptions{}); err != nil {
		tb.Fatal(err)
	}
}

// findToken runs a find by token and returns the scan's counters.
func findToken(tb testing.TB, c *Collection, tok string, hint any) ScanStats {
	tb.Helper()
	f, err := query.NewFilter(bson.D{{Key: "token", Value: tok}})
	if err != nil {
		tb.Fatal(err)
	}
	p, err := c.Plan(Query{Filter: f, Hint: hint})
	if err != nil {
		tb.Fatal(err)
	}
	it := c.Scan(p, f)
	defer it.Close()
	n := 0
	for {
		_, ok, err := it.Next()
		if err != nil {
			tb.Fatal(err)
		}
		if !ok {
			break
		}
		n++
	}
	if n != 1 {
		tb.Fatalf("find %s returned %d documents", tok, n)
	}
	return it.Stats
}

func TestFindByIndexOnLargeCollection(t *testing.T) {
	n := *bigDocs
	c := tokenColl(t, n)
	if c.Count() != int64(n) {
		t.Fatalf("loaded %d documents, want %d", c.Count(), n)
	}
	for _, i := range []int{0, n / 2, n - 1} {
		st := findToken(t, c, token(i), nil)
		if st.KeysExamined != 1 || st.DocsExamined != 1 {
			t.Fatalf("find by token on %d documents examined %d keys and %d documents", n, st.KeysExamined, st.DocsExamined)
		}
	}
	t.Logf("%d documents: a find by an indexed field examined 1 key and 1 document", n)
}

// BenchmarkFindByIndexVsCollScan times one find by an indexed field with
// the index and with a collection scan ({$natural: 1} hint).
func BenchmarkFindByIndexVsCollScan(b *testing.B) {
	n := *benchDocs
	c := tokenColl(b, n)
	for _, bc := range []struct {
		name string
		hint any
	}{{"index", nil}, {"collscan", bson.D{{Key: "$natural", Value: 1}}}} {
		b.Run(fmt.Sprintf("%s/docs=%d", bc.name, n), func(b *testing.B) {
			var keys, docs int64
			for i := 0; i < b.N; i++ {
				st := findToken(b, c, token((i*7919)%n), bc.hint)
				keys, docs = keys+st.KeysExamined, docs+st.DocsExamined
			}
			b.ReportMetric(float64(keys)/float64(b.N), "keys/op")
			b.ReportMetric(float64(docs)/float64(b.N), "docs/op")
		})
	}
}
