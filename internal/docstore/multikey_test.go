package docstore

import (
	"context"
	"math/rand/v2"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// withoutArrays replaces array values by one of their elements.
func withoutArrays(d bson.D) bson.D {
	for i, e := range d {
		if a, ok := e.Value.(bson.A); ok {
			d[i].Value = a[0]
		}
	}
	return d
}

// withSecondRange sometimes adds the other side of a range on a, so that
// two-sided bounds are exercised.
func withSecondRange(rng *rand.Rand, f bson.D) bson.D {
	if rng.IntN(2) == 0 {
		return f
	}
	ops := []string{"$gt", "$gte", "$lt", "$lte"}
	return append(f, bson.E{Key: "a", Value: bson.D{{Key: ops[rng.IntN(4)], Value: int32(rng.IntN(10))}}})
}

// On indexes that hold no arrays the planner intersects ranges, combines
// $in points with the fields after them and serves sorts over bounded
// fields; every such plan must still return what a collection scan
// returns, in the promised order.
func TestNonMultikeyPlansAgreeWithCollectionScan(t *testing.T) {
	c := planColl(t,
		ixSpec("a_1", bson.D{{Key: "a", Value: 1}}),
		ixSpec("b_-1_a_1", bson.D{{Key: "b", Value: -1}, {Key: "a", Value: 1}}),
		ixSpec("c_1", bson.D{{Key: "c", Value: 1}}, bson.E{Key: "sparse", Value: true}))
	rng := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 300; i++ {
		insert(t, c, withoutArrays(randomDoc(rng, i)))
	}
	for _, ix := range c.state.Load().indexes {
		if ix.def.IsMultiKey() {
			t.Fatalf("index %s multikey without arrays", ix.def.Name)
		}
	}
	kinds := map[string]int{}
	for i := 0; i < 400; i++ {
		filter, sortSpec := withSecondRange(rng, randomFilter(rng)), randomSort(rng)
		kinds[checkAgainstCollScan(t, c, filter, sortSpec)]++
	}
	for _, k := range []string{"a_1", "b_-1_a_1", "c_1", "sorted"} {
		if kinds[k] < 5 {
			t.Fatalf("too few plans of kind %s: %v", k, kinds)
		}
	}
	insert(t, c, bson.D{{Key: "_id", Value: int32(1000)}, {Key: "a", Value: bson.A{int32(1), int32(9)}}})
	if ix := c.state.Load().indexes[1]; !ix.def.IsMultiKey() || ix.def.MultiKeyPaths[0][0] != "a" {
		t.Fatalf("an array must make a_1 multikey: %+v", ix.def)
	}
}

// validate catches an index whose multikey paths miss a document's arrays.
func TestValidateChecksMultikeyPaths(t *testing.T) {
	c := planColl(t, ixSpec("a_1", bson.D{{Key: "a", Value: 1}}))
	insert(t, c, bson.D{{Key: "_id", Value: int32(1)}, {Key: "a", Value: bson.A{int32(1), int32(2)}}})
	res, err := c.Validate(context.Background())
	if err != nil || !res.Valid() {
		t.Fatalf("valid collection: %+v %v", res, err)
	}
	lost := c.meta().Clone()
	lost.Indexes[1].MultiKeyPaths = nil
	c.publishMeta(lost)
	res, err = c.Validate(context.Background())
	if err != nil || res.Valid() {
		t.Fatalf("lost multikey paths not reported: %+v %v", res, err)
	}
}
