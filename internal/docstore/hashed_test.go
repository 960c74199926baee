package docstore

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/catalog"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/shardkey"
)

func hashedSpec(field string) bson.D {
	return ixSpec(field+"_hashed", bson.D{{Key: field, Value: "hashed"}})
}

func mustHash(t *testing.T, v any) int64 {
	t.Helper()
	h, err := shardkey.Hash(v)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// An equality on the hashed field reads one hash's entries: the bounds
// are that hash, and a value colliding with it by truncation (3.1 hashes
// as 3) is read but not returned.
func TestHashedIndexEqualityReadsOneHash(t *testing.T) {
	c := planColl(t, hashedSpec("a"))
	for i := 0; i < 400; i++ {
		insert(t, c, bson.D{{Key: "_id", Value: i}, {Key: "a", Value: int32(i % 40)}})
	}
	insert(t, c, bson.D{{Key: "_id", Value: 1000}, {Key: "a", Value: 3.1}})
	f := mustFilter(t, bson.D{{Key: "a", Value: int32(3)}})
	p := mustPlan(t, c, Query{Filter: f})
	if p.Kind != IndexScan || p.Index.Name != "a_hashed" {
		t.Fatalf("plan %v on %v, want an index scan of a_hashed", p.Kind, p.Index)
	}
	h := mustHash(t, int32(3))
	if want := fmt.Sprintf("{ a: [ \"[%d, %d]\" ] }", h, h); boundsOf(p) != want {
		t.Fatalf("bounds %s, want %s", boundsOf(p), want)
	}
	docs, stats := run(t, c, p, f)
	if len(docs) != 10 || stats.KeysExamined != 11 {
		t.Fatalf("%d documents after %d keys, want 10 after 11 (3.1 shares 3's hash)", len(docs), stats.KeysExamined)
	}
	if got := bsonFormatKeyPattern(p); got != `{ a: "hashed" }` {
		t.Fatalf("explain keyPattern %s", got)
	}
}

func bsonFormatKeyPattern(p *Plan) string { return bsonutil.Format(p.Index.KeyPattern()) }

// The hashed index answers equality and $in exactly as a collection scan
// does, over values of every kind that hash alike or not (numbers of
// three types, strings, documents, null and missing), and never claims a
// sort or bounds a range.
func TestHashedIndexAgreesWithCollectionScan(t *testing.T) {
	c := planColl(t, hashedSpec("a"), ixSpec("b_1_a_hashed", bson.D{{Key: "b", Value: 1}, {Key: "a", Value: "hashed"}}))
	rng := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 300; i++ {
		d := bson.D{{Key: "_id", Value: int32(i)}, {Key: "b", Value: int32(rng.IntN(4))}}
		if v := hashedValue(rng); v != nil {
			d = append(d, bson.E{Key: "a", Value: v})
		}
		insert(t, c, d)
	}
	kinds := map[string]int{}
	for i := 0; i < 300; i++ {
		filter := bson.D{{Key: "a", Value: hashedValue(rng)}}
		switch rng.IntN(4) {
		case 0:
			filter = bson.D{{Key: "a", Value: bson.D{{Key: "$in", Value: bson.A{hashedValue(rng), hashedValue(rng)}}}}}
		case 1:
			filter = append(filter, bson.E{Key: "b", Value: int32(rng.IntN(4))})
		case 2:
			filter = bson.D{{Key: "a", Value: bson.D{{Key: "$gte", Value: int32(rng.IntN(5))}}}}
		}
		sortSpec := bson.D{{Key: "a", Value: int32(1)}}
		if rng.IntN(2) == 0 {
			sortSpec = nil
		}
		kinds[checkAgainstCollScan(t, c, filter, sortSpec)]++
	}
	if kinds["a_hashed"] < 20 || kinds["b_1_a_hashed"] < 5 || kinds["sorted"] > 0 {
		t.Fatalf("plans %v: want both hashed indexes used, and no sort claimed", kinds)
	}
}

func hashedValue(rng *rand.Rand) any {
	n := rng.IntN(5)
	switch rng.IntN(7) {
	case 0:
		return nil
	case 1:
		return float64(n)
	case 2:
		return int64(n)
	case 3:
		return float64(n) + 0.5
	case 4:
		return fmt.Sprintf("s%d", n)
	case 5:
		return bson.D{{Key: "x", Value: int32(n)}}
	}
	return int32(n)
}

// Arrays are refused on every field of a hashed index, with the path up
// to the array; the refused write leaves nothing behind.
func TestHashedIndexRefusesArrays(t *testing.T) {
	c := planColl(t, ixSpec("a.b_hashed_c_1", bson.D{{Key: "a.b", Value: "hashed"}, {Key: "c", Value: int32(1)}}))
	for _, tc := range []struct {
		doc  bson.D
		path string
	}{
		{bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: bson.A{bson.D{{Key: "b", Value: 1}}}}}, "a"},
		{bson.D{{Key: "_id", Value: 2}, {Key: "a", Value: bson.D{{Key: "b", Value: bson.A{1}}}}}, "a.b"},
		{bson.D{{Key: "_id", Value: 3}, {Key: "c", Value: bson.A{}}}, "c"},
	} {
		d, err := PrepareInsert(tc.doc)
		if err != nil {
			t.Fatal(err)
		}
		err = c.Insert(d, WriteOptions{})
		want := "Error: hashed indexes do not currently support array values. Found array at path: " + tc.path
		if e := mongoerr.As(err); e == nil || e.Code != mongoerr.Location16766 || e.Msg != want {
			t.Fatalf("insert %v: %v, want 16766 %q", tc.doc, err, want)
		}
	}
	insert(t, c, bson.D{{Key: "_id", Value: 4}, {Key: "a", Value: int32(5)}})
	if n := indexEntries(t, c); n != 1 {
		t.Fatalf("%d index entries, want 1 (a scalar where a document was needed hashes as null)", n)
	}
}

// The specifications mongod refuses for a hashed index, with its codes.
func TestHashedIndexSpecRefusals(t *testing.T) {
	for _, tc := range []struct {
		spec bson.D
		code mongoerr.Code
	}{
		{ixSpec("u", bson.D{{Key: "a", Value: "hashed"}}, bson.E{Key: "unique", Value: true}), mongoerr.Location16764},
		{ixSpec("two", bson.D{{Key: "a", Value: "hashed"}, {Key: "b", Value: "hashed"}}), mongoerr.Location31303},
		{ixSpec("ttl", bson.D{{Key: "a", Value: "hashed"}}, bson.E{Key: "expireAfterSeconds", Value: int32(5)}), mongoerr.CannotCreateIndex},
		{ixSpec("plugin", bson.D{{Key: "a", Value: "hash"}}), mongoerr.CannotCreateIndex},
	} {
		_, err := catalog.ParseIndexSpec(tc.spec)
		if e := mongoerr.As(err); e == nil || e.Code != tc.code {
			t.Fatalf("spec %v: %v, want code %d", tc.spec, err, tc.code)
		}
	}
	ix, err := catalog.ParseIndexSpec(ixSpec("a_hashed", bson.D{{Key: "a", Value: "hashed"}}, bson.E{Key: "sparse", Value: true}))
	if err != nil || !ix.IsHashed() || !ix.Sparse {
		t.Fatalf("sparse hashed index: %v %v", ix, err)
	}
}
