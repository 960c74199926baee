package writeops

import (
	"context"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/catalog"
	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/docstore/docstoretest"
	"github.com/mayflydb/mayfly/internal/query"
)

// TestOrphansAreNeverWritten: under a shard's ownership filter, every
// write that finds its documents through an index's candidates
// (docstore.CandidateIDs, which yields orphans too) changes only the
// documents the shard owns, one statement at a time or all at once.
func TestOrphansAreNeverWritten(t *testing.T) {
	const docs, owned = 40, 20
	toB, err := ParseModifier(bson.D{{Key: "$set", Value: bson.D{{Key: "tok", Value: "b"}}}}, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	rows := []struct {
		name  string
		multi bool
		write func(op Op, store *docstore.Store, c *docstore.Collection, f *query.Filter) (int64, error)
	}{
		{"updateOne", false, func(op Op, store *docstore.Store, _ *docstore.Collection, f *query.Filter) (int64, error) {
			res, err := op.Update(store, "db", "c", &Update{Filter: f, Mod: toB}, docstore.WriteOptions{}, nil)
			return res.Matched, err
		}},
		{"updateMany", true, func(op Op, store *docstore.Store, _ *docstore.Collection, f *query.Filter) (int64, error) {
			res, err := op.Update(store, "db", "c", &Update{Filter: f, Mod: toB, Multi: true}, docstore.WriteOptions{}, nil)
			return res.Matched, err
		}},
		{"deleteOne", false, func(op Op, _ *docstore.Store, c *docstore.Collection, f *query.Filter) (int64, error) {
			return op.Delete(c, f, 1, nil, docstore.WriteOptions{})
		}},
		{"deleteMany", true, func(op Op, _ *docstore.Store, c *docstore.Collection, f *query.Filter) (int64, error) {
			return op.Delete(c, f, 0, nil, docstore.WriteOptions{})
		}},
	}
	evenOwned := func(doc bson.D) bool { return doc[0].Value.(int32)%2 == 0 }
	op := Op{Ctx: docstore.WithOwnership(context.Background(), evenOwned), CheckCtx: func(context.Context) error { return nil }, Now: time.Now}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			store, c, f := storeWithOrphans(t, docs)
			n := int64(0)
			for range owned + 1 { // a statement at a time: one more than owned finds nothing
				got, err := row.write(op, store, c, f)
				if err != nil {
					t.Fatal(err)
				}
				n += got
				if row.multi {
					break
				}
			}
			if n != owned {
				t.Fatalf("%s wrote %d documents, want the %d owned", row.name, n, owned)
			}
			left := untouched(t, c, f)
			if len(left) != docs-owned {
				t.Fatalf("%d documents left untouched, want the %d orphans", len(left), docs-owned)
			}
			for _, d := range left {
				if evenOwned(d) {
					t.Fatalf("owned document %v left untouched", d)
				}
			}
		})
	}
}

// storeWithOrphans is a collection of n documents {_id: i, tok: "a"}
// indexed by tok, and the filter on tok that the index answers exactly.
func storeWithOrphans(t *testing.T, n int) (*docstore.Store, *docstore.Collection, *query.Filter) {
	t.Helper()
	store := docstoretest.Open(t)
	c, _, err := store.GetOrCreate("db", "c")
	if err != nil {
		t.Fatal(err)
	}
	ix, err := catalog.ParseIndexSpec(bson.D{{Key: "key", Value: bson.D{{Key: "tok", Value: 1}}}, {Key: "name", Value: "tok_1"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateIndexes([]*catalog.Index{ix}); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if err := InsertOne(c, bson.D{{Key: "_id", Value: int32(i)}, {Key: "tok", Value: "a"}}, docstore.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	f, err := query.NewFilter(bson.D{{Key: "tok", Value: "a"}})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := c.PlanQuery(f, nil)
	if err != nil {
		t.Fatal(err)
	}
	if it, ok := c.CandidateIDs(plan, f); !ok {
		t.Fatal("the filter does not take the candidates' path")
	} else {
		_ = it.Close()
	}
	return store, c, f
}

// untouched is every document f still matches, read without the filter.
func untouched(t *testing.T, c *docstore.Collection, f *query.Filter) []bson.D {
	t.Helper()
	it := c.Scan(nil, f)
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
		out = append(out, d)
	}
}
