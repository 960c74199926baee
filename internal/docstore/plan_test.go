package docstore

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/query"
)

func planColl(t *testing.T, specs ...bson.D) *Collection {
	t.Helper()
	s, _ := openStore(t)
	c, err := s.CreateCollection("db", "plan", CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, spec := range specs {
		mustIndex(t, c, spec)
	}
	return c
}

func ixSpec(name string, key bson.D, opts ...bson.E) bson.D {
	return append(bson.D{{Key: "key", Value: key}, {Key: "name", Value: name}}, opts...)
}

func mustFilter(t *testing.T, f bson.D) *query.Filter {
	t.Helper()
	q, err := query.NewFilter(f)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

func mustPlan(t *testing.T, c *Collection, q Query) *Plan {
	t.Helper()
	p, err := c.Plan(q)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// run executes a plan and returns the documents and the scan's counters.
func run(t *testing.T, c *Collection, p *Plan, f *query.Filter) ([]bson.D, ScanStats) {
	t.Helper()
	it := c.Scan(p, f)
	defer it.Close()
	var out []bson.D
	for {
		d, ok, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return out, it.Stats
		}
		out = append(out, d)
	}
}

func boundsOf(p *Plan) string { return bsonutil.Format(p.BoundsDoc()) }

func TestPlanEqualityExaminesOneKeyAndOneDocument(t *testing.T) {
	c := planColl(t, ixSpec("token_1", bson.D{{Key: "token", Value: 1}}))
	for i := 0; i < 2000; i++ {
		insert(t, c, bson.D{{Key: "_id", Value: i}, {Key: "token", Value: fmt.Sprintf("t%05d", i)}})
	}
	f := mustFilter(t, bson.D{{Key: "token", Value: "t01234"}})
	p := mustPlan(t, c, Query{Filter: f})
	if p.Kind != IndexScan || p.Index.Name != "token_1" {
		t.Fatalf("plan %v on %v", p.Kind, p.Index)
	}
	docs, st := run(t, c, p, f)
	if len(docs) != 1 || st.KeysExamined != 1 || st.DocsExamined != 1 {
		t.Fatalf("returned %d, stats %+v", len(docs), st)
	}
	if got := boundsOf(p); got != `{ token: [ "["t01234", "t01234"]" ] }` {
		t.Fatalf("bounds %s", got)
	}
}

func TestPlanCompoundPrefixAndRange(t *testing.T) {
	c := planColl(t, ixSpec("a_1_b_-1", bson.D{{Key: "a", Value: 1}, {Key: "b", Value: -1}}))
	for i := 0; i < 100; i++ {
		insert(t, c, bson.D{{Key: "_id", Value: i}, {Key: "a", Value: i % 10}, {Key: "b", Value: i}})
	}
	f := mustFilter(t, bson.D{{Key: "a", Value: 3}, {Key: "b", Value: bson.D{{Key: "$gt", Value: 50}}}})
	p := mustPlan(t, c, Query{Filter: f})
	docs, st := run(t, c, p, f)
	if p.Kind != IndexScan || len(docs) != 5 || st.KeysExamined != 5 {
		t.Fatalf("plan %v returned %d stats %+v", p.Kind, len(docs), st)
	}
	if got := boundsOf(p); got != `{ a: [ "[3, 3]" ], b: [ "[inf.0, 50)" ] }` {
		t.Fatalf("bounds %s", got)
	}
	// b alone is not a prefix of the index.
	if p := mustPlan(t, c, Query{Filter: mustFilter(t, bson.D{{Key: "b", Value: 5}})}); p.Kind != CollScan {
		t.Fatalf("non-prefix predicate used %v", p.Kind)
	}
	// An equality prefix alone bounds the first field and leaves b whole.
	p = mustPlan(t, c, Query{Filter: mustFilter(t, bson.D{{Key: "a", Value: 3}})})
	if got := boundsOf(p); got != `{ a: [ "[3, 3]" ], b: [ "[MaxKey, MinKey]" ] }` {
		t.Fatalf("bounds %s", got)
	}
}

func TestPlanInPointsAndIDLookup(t *testing.T) {
	c := planColl(t, ixSpec("a_-1", bson.D{{Key: "a", Value: -1}}))
	for i := 0; i < 50; i++ {
		insert(t, c, bson.D{{Key: "_id", Value: i}, {Key: "a", Value: i}})
	}
	f := mustFilter(t, bson.D{{Key: "a", Value: bson.D{{Key: "$in", Value: bson.A{7, 3, 40, 3}}}}})
	p := mustPlan(t, c, Query{Filter: f})
	docs, st := run(t, c, p, f)
	if len(docs) != 3 || st.KeysExamined != 3 || st.Seeks != 3 {
		t.Fatalf("returned %d, stats %+v", len(docs), st)
	}
	if got := boundsOf(p); got != `{ a: [ "[40, 40]", "[7, 7]", "[3, 3]" ] }` {
		t.Fatalf("bounds %s", got)
	}
	f = mustFilter(t, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: bson.A{9, 2, 99}}}}})
	p = mustPlan(t, c, Query{Filter: f, Sort: bson.D{{Key: "_id", Value: -1}}})
	docs, st = run(t, c, p, f)
	if p.Kind != IDLookup || !p.SortProvided || len(docs) != 2 || docs[0][0].Value != int32(9) || st.KeysExamined != 3 {
		t.Fatalf("id lookup %+v docs %v stats %+v", p, docs, st)
	}
}

func TestPlanIndexProvidesSort(t *testing.T) {
	c := planColl(t, ixSpec("a_1", bson.D{{Key: "a", Value: 1}}), ixSpec("u_1_v_1", bson.D{{Key: "u", Value: 1}, {Key: "v", Value: 1}}))
	insert(t, c, bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: 5}, {Key: "u", Value: 1}, {Key: "v", Value: 3}})
	insert(t, c, bson.D{{Key: "_id", Value: 2}, {Key: "a", Value: bson.A{1, 10}}, {Key: "u", Value: 1}, {Key: "v", Value: 1}})
	insert(t, c, bson.D{{Key: "_id", Value: 3}, {Key: "a", Value: 7}, {Key: "u", Value: 2}, {Key: "v", Value: 0}})
	insert(t, c, bson.D{{Key: "_id", Value: 4}, {Key: "u", Value: 1}, {Key: "v", Value: 2}})
	cases := []struct {
		name    string
		filter  bson.D
		sort    bson.D
		sorted  bool
		reverse bool
		want    []int32
	}{
		{"ascending, multikey document at its smallest element", nil, bson.D{{Key: "a", Value: 1}}, true, false, []int32{4, 2, 1, 3}},
		{"descending reads backwards, multikey at its largest", nil, bson.D{{Key: "a", Value: -1}}, true, true, []int32{2, 3, 1, 4}},
		{"pinned prefix then sort field", bson.D{{Key: "u", Value: 1}}, bson.D{{Key: "v", Value: 1}}, true, false, []int32{2, 4, 1}},
		{"range on the sort field needs a blocking sort", bson.D{{Key: "a", Value: bson.D{{Key: "$gte", Value: 5}}}}, bson.D{{Key: "a", Value: 1}}, false, false, nil},
		{"sort on a non-prefix field", nil, bson.D{{Key: "v", Value: 1}}, false, false, nil},
		{"_id order", nil, bson.D{{Key: "_id", Value: -1}}, true, true, []int32{4, 3, 2, 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := mustFilter(t, tc.filter)
			p := mustPlan(t, c, Query{Filter: f, Sort: tc.sort})
			if p.SortProvided != tc.sorted || p.Reverse != tc.reverse {
				t.Fatalf("sorted %v reverse %v, want %v %v (plan %v %v)", p.SortProvided, p.Reverse, tc.sorted, tc.reverse, p.Kind, p.Index)
			}
			if tc.want == nil {
				return
			}
			docs, _ := run(t, c, p, f)
			if got := ids(docs); !slices.Equal(got, tc.want) {
				t.Fatalf("order %v, want %v", got, tc.want)
			}
		})
	}
}

func ids(docs []bson.D) []int32 {
	out := make([]int32, 0, len(docs))
	for _, d := range docs {
		id, _ := lookupID(d)
		out = append(out, id.(int32))
	}
	return out
}

func TestPlanHints(t *testing.T) {
	c := planColl(t,
		ixSpec("a_1", bson.D{{Key: "a", Value: 1}}),
		ixSpec("b_1", bson.D{{Key: "b", Value: 1}}, bson.E{Key: "hidden", Value: true}))
	f := mustFilter(t, bson.D{{Key: "a", Value: 1}})
	cases := []struct {
		name string
		hint any
		kind PlanKind
		ix   string
		rev  bool
	}{
		{"by name", "a_1", IndexScan, "a_1", false},
		{"by key pattern", bson.D{{Key: "a", Value: 1}}, IndexScan, "a_1", false},
		{"$natural backwards", bson.D{{Key: "$natural", Value: -1}}, CollScan, "", true},
		{"the _id index", "_id_", IndexScan, "_id_", false},
	}
	for _, tc := range cases {
		p := mustPlan(t, c, Query{Filter: f, Hint: tc.hint})
		if p.Kind != tc.kind || p.Reverse != tc.rev || (tc.ix != "" && p.Index.Name != tc.ix) {
			t.Fatalf("%s: %v %v rev %v", tc.name, p.Kind, p.Index, p.Reverse)
		}
	}
	for _, bad := range []any{"nope", "b_1", bson.D{{Key: "c", Value: 1}}} {
		_, err := c.Plan(Query{Filter: f, Hint: bad})
		if me := mongoerr.As(err); err == nil || me.Code != mongoerr.BadValue {
			t.Fatalf("hint %v: %v", bad, err)
		}
	}
	if p := mustPlan(t, c, Query{Filter: mustFilter(t, bson.D{{Key: "b", Value: 1}})}); p.Kind != CollScan {
		t.Fatalf("a hidden index is not planned: %v", p.Kind)
	}
}

func TestPlanSparseAndPartialIndexes(t *testing.T) {
	c := planColl(t,
		ixSpec("s_1", bson.D{{Key: "s", Value: 1}}, bson.E{Key: "sparse", Value: true}),
		ixSpec("p_1", bson.D{{Key: "p", Value: 1}}, bson.E{Key: "partialFilterExpression", Value: bson.D{{Key: "p", Value: bson.D{{Key: "$gt", Value: 10}}}}}))
	cases := []struct {
		filter bson.D
		ix     string
	}{
		{bson.D{{Key: "s", Value: 5}}, "s_1"},
		{bson.D{{Key: "s", Value: nil}}, ""},
		{bson.D{{Key: "p", Value: 20}}, "p_1"},
		{bson.D{{Key: "p", Value: bson.D{{Key: "$gte", Value: 11}}}}, "p_1"},
		{bson.D{{Key: "p", Value: 5}}, ""},
		{bson.D{{Key: "p", Value: bson.D{{Key: "$gte", Value: 10}}}}, ""},
	}
	for _, tc := range cases {
		p := mustPlan(t, c, Query{Filter: mustFilter(t, tc.filter)})
		got := ""
		if p.Kind == IndexScan {
			got = p.Index.Name
		}
		if got != tc.ix {
			t.Fatalf("%v planned on %q, want %q", tc.filter, got, tc.ix)
		}
	}
	if p := mustPlan(t, c, Query{Sort: bson.D{{Key: "s", Value: 1}}}); p.Kind != CollScan {
		t.Fatal("a sparse index must not serve a sort alone")
	}
}

func TestPlanIDRangeScansDocuments(t *testing.T) {
	c := planColl(t)
	for i := 0; i < 100; i++ {
		insert(t, c, bson.D{{Key: "_id", Value: i}})
	}
	f := mustFilter(t, bson.D{{Key: "_id", Value: bson.D{{Key: "$gte", Value: 90}}}})
	p := mustPlan(t, c, Query{Filter: f})
	docs, st := run(t, c, p, f)
	if p.Kind != IndexScan || p.Index.Name != "_id_" || len(docs) != 10 || st.KeysExamined != 10 || st.DocsExamined != 10 {
		t.Fatalf("plan %v %v returned %d stats %+v", p.Kind, p.Index, len(docs), st)
	}
}

// TestPlansAgreeWithCollectionScan is a property test: for random
// documents (with arrays, missing fields and mixed types) and random
// filters and sorts, every plan the planner picks returns the same
// documents as a collection scan, and when it claims to provide the sort,
// in the sort's order.
func TestPlansAgreeWithCollectionScan(t *testing.T) {
	c := planColl(t,
		ixSpec("a_1", bson.D{{Key: "a", Value: 1}}),
		ixSpec("b_-1_a_1", bson.D{{Key: "b", Value: -1}, {Key: "a", Value: 1}}),
		ixSpec("c_1", bson.D{{Key: "c", Value: 1}}, bson.E{Key: "sparse", Value: true}))
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 300; i++ {
		insert(t, c, randomDoc(rng, i))
	}
	kinds := map[string]int{}
	for i := 0; i < 400; i++ {
		filter, sortSpec := randomFilter(rng), randomSort(rng)
		kinds[checkAgainstCollScan(t, c, filter, sortSpec)]++
	}
	// The property means something only if the interesting plans ran.
	for _, k := range []string{"a_1", "b_-1_a_1", "c_1", "_id_", "sorted"} {
		if kinds[k] < 5 {
			t.Fatalf("too few plans of kind %s: %v", k, kinds)
		}
	}
}

func randomValue(rng *rand.Rand) any {
	switch rng.IntN(7) {
	case 0:
		return nil
	case 1:
		return fmt.Sprintf("s%d", rng.IntN(5))
	case 2:
		return bson.A{int32(rng.IntN(10)), int32(rng.IntN(10))}
	case 3:
		return float64(rng.IntN(10)) + 0.5
	}
	return int32(rng.IntN(10))
}

func randomDoc(rng *rand.Rand, id int) bson.D {
	d := bson.D{{Key: "_id", Value: int32(id)}}
	for _, f := range []string{"a", "b", "c"} {
		if rng.IntN(5) > 0 {
			v := randomValue(rng)
			if f == "b" {
				if _, isArr := v.(bson.A); isArr {
					v = int32(rng.IntN(10)) // one array per compound key
				}
			}
			d = append(d, bson.E{Key: f, Value: v})
		}
	}
	return d
}

func randomFilter(rng *rand.Rand) bson.D {
	var f bson.D
	for _, path := range []string{"a", "b", "c", "_id"} {
		if rng.IntN(2) == 0 || (path == "_id" && rng.IntN(2) == 0) {
			continue
		}
		ops := []string{"$eq", "$gt", "$gte", "$lt", "$lte", "$in"}
		op := ops[rng.IntN(len(ops))]
		v := randomValue(rng)
		if _, isArr := v.(bson.A); isArr && op != "$in" {
			v = int32(3)
		}
		switch {
		case path == "_id" && op == "$in":
			v = bson.A{int32(rng.IntN(300)), int32(rng.IntN(300))}
		case path == "_id":
			v = int32(rng.IntN(300))
		case op == "$in":
			v = bson.A{int32(rng.IntN(10)), fmt.Sprintf("s%d", rng.IntN(5)), int32(rng.IntN(10))}
		}
		f = append(f, bson.E{Key: path, Value: bson.D{{Key: op, Value: v}}})
	}
	return f
}

func randomSort(rng *rand.Rand) bson.D {
	dir := func() int32 { return int32(1 - 2*rng.IntN(2)) }
	switch rng.IntN(5) {
	case 0:
		return bson.D{{Key: "a", Value: dir()}}
	case 1:
		return bson.D{{Key: "b", Value: dir()}, {Key: "a", Value: dir()}}
	case 2:
		return bson.D{{Key: "_id", Value: dir()}}
	case 3:
		return bson.D{{Key: "c", Value: dir()}}
	}
	return nil
}

// checkAgainstCollScan returns the index the plan used ("sorted" when it
// also provided a sort).
func checkAgainstCollScan(t *testing.T, c *Collection, filter, sortSpec bson.D) string {
	t.Helper()
	f := mustFilter(t, filter)
	p := mustPlan(t, c, Query{Filter: f, Sort: sortSpec})
	got, _ := run(t, c, p, f)
	want, _ := run(t, c, &Plan{Kind: CollScan}, f)
	if !sameIDs(got, want) {
		t.Fatalf("filter %v sort %v plan %v %v: got %v, want %v", filter, sortSpec, p.Kind, p.Index, ids(got), ids(want))
	}
	if sortSpec == nil || !p.SortProvided {
		return planLabel(p)
	}
	s, err := query.NewSort(sortSpec)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < len(got); i++ {
		if s.Compare(got[i-1], got[i]) > 0 {
			t.Fatalf("filter %v sort %v plan %v %v claims order but yields %v", filter, sortSpec, p.Kind, p.Index, ids(got))
		}
	}
	return "sorted"
}

func planLabel(p *Plan) string {
	if p.Kind == CollScan {
		return "collscan"
	}
	return p.Index.Name
}

func sameIDs(a, b []bson.D) bool {
	x, y := ids(a), ids(b)
	slices.Sort(x)
	slices.Sort(y)
	return slices.Equal(x, y)
}
