package executor

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/aggregate"
	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/clock"
	"github.com/mayflydb/mayfly/internal/collation"
	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/docstore/docstoretest"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/query"
)

// newStore is an in-memory store with db.c holding docs.
func newStore(t *testing.T, docs ...bson.D) *docstore.Store {
	t.Helper()
	store := docstoretest.Open(t)
	c, err := store.CreateCollection("db", "c", docstore.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	for _, d := range docs {
		if err := c.Insert(d, docstore.WriteOptions{}); err != nil {
			t.Fatalf("insert %v: %v", d, err)
		}
	}
	return store
}

func newOp() *Op {
	ctx := context.Background()
	return &Op{
		Ctx:      ctx,
		CheckCtx: func(context.Context) error { return nil },
		Env:      noEnv{},
	}
}

// noEnv is the database of a pipeline that reads nothing else.
type noEnv struct{}

func (noEnv) Collection(string) (aggregate.Iterator, error) { return emptySource{}, nil }
func (noEnv) CollStats(bson.D) (bson.D, error)              { return nil, errors.New("no $collStats here") }
func (noEnv) Now() time.Time                                { return time.Now() }

func person(id int32, name string) bson.D {
	return bson.D{{Key: "_id", Value: id}, {Key: "name", Value: name}}
}

func mustFilter(t *testing.T, q bson.D) *query.Filter {
	t.Helper()
	f, err := Filter(q, nil, nil)
	if err != nil {
		t.Fatalf("filter %v: %v", q, err)
	}
	return f
}

// stageNames is the winningPlan's chain of stages, top first.
func stageNames(ex *Explained) []string {
	var out []string
	for st := ex.planner; st != nil; {
		name, _ := bsonutil.Field(st, "stage")
		out = append(out, name.(string))
		in, _ := bsonutil.Field(st, "inputStage")
		st, _ = in.(bson.D)
	}
	return out
}

// TestPlanFindLaysOutStagesAndRuns: each shape of find plans mongod's
// stages over the scan, and running it returns what those stages pass.
func TestPlanFindLaysOutStagesAndRuns(t *testing.T) {
	store := newStore(t, person(1, "c"), person(2, "a"), person(3, "b"), person(4, "d"))
	sortSpec := bson.D{{Key: "name", Value: int32(1)}}
	byName, err := query.NewSort(sortSpec)
	if err != nil {
		t.Fatal(err)
	}
	projSpec := bson.D{{Key: "name", Value: int32(1)}}
	project := func(d bson.D) (bson.D, error) { return d, nil }
	cases := []struct {
		name   string
		coll   string
		spec   FindSpec
		stages []string
		want   []int32 // the _ids returned, in order
	}{
		{"a scan", "c", FindSpec{}, []string{"COLLSCAN"}, []int32{1, 2, 3, 4}},
		{"skip and limit", "c", FindSpec{Skip: 1, Limit: 2}, []string{"LIMIT", "SKIP", "COLLSCAN"}, []int32{2, 3}},
		{"a top-k sort takes the limit", "c", FindSpec{Sort: byName, SortSpec: sortSpec, Skip: 1, Limit: 2}, []string{"SKIP", "SORT", "COLLSCAN"}, []int32{3, 1}},
		{"a projection on top", "c", FindSpec{Project: project, ProjSpec: projSpec, Limit: 1}, []string{"PROJECTION_SIMPLE", "LIMIT", "COLLSCAN"}, []int32{1}},
		{"no such collection", "missing", FindSpec{Limit: 1}, []string{"LIMIT", "EOF"}, nil},
	}
	e := New(store, clock.Real{})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec := tc.spec
			spec.Filter = mustFilter(t, nil)
			p, err := e.PlanFind(newOp(), store.Collection("db", tc.coll), &spec)
			if err != nil {
				t.Fatal(err)
			}
			if got := stageNames(p.Explained("db."+tc.coll, false)); !slices.Equal(got, tc.stages) {
				t.Fatalf("stages %v, want %v", got, tc.stages)
			}
			run, err := p.RunFind()
			if err != nil {
				t.Fatal(err)
			}
			defer run.Close()
			if got := ids(t, run); !slices.Equal(got, tc.want) {
				t.Fatalf("returned %v, want %v", got, tc.want)
			}
		})
	}
}

func ids(t *testing.T, src interface {
	Next() (bson.D, bool, error)
}) []int32 {
	t.Helper()
	var out []int32
	for n := 0; n < 100; n++ {
		d, ok, err := src.Next()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return out
		}
		id, _ := bsonutil.Field(d, "_id")
		out = append(out, id.(int32))
	}
	t.Fatal("source does not end")
	return nil
}

// TestCountAndDistinct: counts with and without a query, and distinct
// values under a case-insensitive collation and without one.
func TestCountAndDistinct(t *testing.T) {
	store := newStore(t, person(1, "Ann"), person(2, "ann"), person(3, "Bob"))
	e, op, c := New(store, clock.Real{}), newOp(), store.Collection("db", "c")
	for _, tc := range []struct {
		q    bson.D
		want int64
	}{{nil, 3}, {bson.D{{Key: "name", Value: "ann"}}, 1}, {bson.D{{Key: "_id", Value: bson.D{{Key: "$gt", Value: 1}}}}, 2}} {
		if n, err := e.Count(op, c, tc.q, nil, nil); err != nil || n != tc.want {
			t.Errorf("count %v: %d, %v; want %d", tc.q, n, err, tc.want)
		}
	}
	if n, err := e.Count(op, nil, nil, nil, nil); err != nil || n != 0 {
		t.Errorf("count of no collection: %d, %v", n, err)
	}
	caseless, err := collation.Parse(bson.D{{Key: "locale", Value: "en"}, {Key: "strength", Value: int32(2)}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		coll *collation.Collation
		want int
	}{{nil, 3}, {caseless, 2}} {
		vals, err := e.Distinct(op, c, "name", nil, nil, tc.coll)
		if err != nil || len(vals) != tc.want {
			t.Errorf("distinct under %v: %v, %v; want %d values", tc.coll, vals, err, tc.want)
		}
	}
}

// TestResolveView: a view on a view resolves to the base collection with
// both pipelines in order; a cycle ends at mongod's depth limit.
func TestResolveView(t *testing.T) {
	store := newStore(t)
	create := func(name, on string, stage bson.D) {
		opts := bson.D{{Key: "viewOn", Value: on}, {Key: "pipeline", Value: bson.A{stage}}}
		if _, err := store.CreateCollection("db", name, docstore.CreateOptions{Raw: opts}); err != nil {
			t.Fatalf("create %s: %v", name, err)
		}
	}
	skip, limit := bson.D{{Key: "$skip", Value: int32(1)}}, bson.D{{Key: "$limit", Value: int32(1)}}
	create("v1", "c", skip)
	create("v2", "v1", limit)
	e := New(store, clock.Real{})
	v, err := e.ResolveView("db", "v2")
	if err != nil || v == nil || v.Base != "c" || len(v.Pipeline) != 2 || bsonutil.Compare(v.Pipeline[0], skip) != 0 {
		t.Fatalf("v2 resolves to %+v, %v", v, err)
	}
	if v, err := e.ResolveView("db", "c"); v != nil || err != nil {
		t.Fatalf("a collection resolves to %+v, %v", v, err)
	}
	create("loop1", "loop2", skip)
	create("loop2", "loop1", skip)
	if _, err := e.ResolveView("db", "loop1"); mongoerr.As(err).Code != mongoerr.ViewDepthLimitExceeded {
		t.Fatalf("a cycle: %v", err)
	}
}

// TestSortCheck: a blocking sort fails past the memory limit unless disk
// use is allowed, and stops with the operation's interruption.
func TestSortCheck(t *testing.T) {
	stopped := errors.New("stopped")
	cases := []struct {
		name      string
		held      int64
		allowDisk bool
		check     error
		want      mongoerr.Code
	}{
		{"under the limit", SortMemoryLimit, false, nil, 0},
		{"over the limit", SortMemoryLimit + 1, false, nil, mongoerr.QueryExceededMemoryLimitNoDiskUseAllowed},
		{"over, disk allowed", SortMemoryLimit + 1, true, nil, 0},
	}
	for _, tc := range cases {
		err := SortCheck(func() error { return tc.check }, tc.allowDisk)(tc.held)
		if (tc.want == 0) != (err == nil) || (err != nil && mongoerr.As(err).Code != tc.want) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
	if err := SortCheck(func() error { return stopped }, true)(0); !errors.Is(err, stopped) {
		t.Errorf("interrupted: %v", err)
	}
}
