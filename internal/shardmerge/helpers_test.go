package shardmerge

import (
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/aggregate"
	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/query"
)

// sliceStream is a shard's result stream held in memory.
type sliceStream struct {
	docs   []bson.D
	closed bool
}

func (s *sliceStream) Next() (bson.D, bool, error) {
	if len(s.docs) == 0 {
		return nil, false, nil
	}
	d := s.docs[0]
	s.docs = s.docs[1:]
	return d, true, nil
}

func (s *sliceStream) Close() error { s.closed = true; return nil }

func streamsOf(parts [][]bson.D) []aggregate.Iterator {
	out := make([]aggregate.Iterator, len(parts))
	for i, p := range parts {
		out[i] = &sliceStream{docs: p}
	}
	return out
}

func drainAll(t testing.TB, it aggregate.Iterator) []bson.D {
	t.Helper()
	defer it.Close()
	var out []bson.D
	for {
		d, ok, err := it.Next()
		if err != nil {
			t.Fatalf("draining: %v", err)
		}
		if !ok {
			return out
		}
		out = append(out, d)
	}
}

// testEnv is the pipeline's environment: no other collections, a fixed
// clock.
type testEnv struct{}

func (testEnv) Collection(string) (aggregate.Iterator, error) { return &sliceStream{}, nil }
func (testEnv) CollStats(bson.D) (bson.D, error)              { return bson.D{}, nil }
func (testEnv) Now() time.Time                                { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }

// runPipeline runs stages over docs in process.
func runPipeline(t testing.TB, stages []bson.D, docs []bson.D, opt aggregate.Options) []bson.D {
	t.Helper()
	return runPipelineOver(t, stages, &sliceStream{docs: docs}, opt)
}

func runPipelineOver(t testing.TB, stages []bson.D, in aggregate.Iterator, opt aggregate.Options) []bson.D {
	t.Helper()
	arr := make(bson.A, len(stages))
	for i, s := range stages {
		arr[i] = s
	}
	p, err := aggregate.Parse(arr, opt)
	if err != nil {
		t.Fatalf("parsing %s: %v", bsonutil.Format(arr), err)
	}
	out, err := p.Run(in, testEnv{})
	if err != nil {
		t.Fatalf("running %s: %v", bsonutil.Format(arr), err)
	}
	return drainAll(t, out)
}

// runFind is the reference find over docs: filter, stable sort, skip,
// limit, projection, as one server answers it.
func runFind(t testing.TB, cmd bson.D, docs []bson.D, coll query.Collator) []bson.D {
	t.Helper()
	args, err := readFindArgs(cmd)
	if err != nil {
		t.Fatal(err)
	}
	filter, err := query.NewFilter(args.filter)
	if err != nil {
		t.Fatalf("filter %s: %v", bsonutil.Format(args.filter), err)
	}
	var out []bson.D
	for _, d := range docs {
		if filter.Match(d) {
			out = append(out, d)
		}
	}
	if len(args.sort) > 0 {
		s, err := query.NewSort(args.sort)
		if err != nil {
			t.Fatal(err)
		}
		if coll != nil {
			s = s.WithCollation(coll)
		}
		s.Sort(out)
	}
	out = out[min(int(args.skip), len(out)):]
	if args.limit > 0 {
		out = out[:min(int(args.limit), len(out))]
	}
	return projectAll(t, args.projection, filter, out)
}

func projectAll(t testing.TB, spec bson.D, filter *query.Filter, docs []bson.D) []bson.D {
	t.Helper()
	if len(spec) == 0 {
		return docs
	}
	p, err := query.NewProjection(spec)
	if err != nil {
		t.Fatalf("projection %s: %v", bsonutil.Format(spec), err)
	}
	out := make([]bson.D, len(docs))
	for i, d := range docs {
		_, pos := filter.MatchPositional(d)
		if out[i], err = p.Apply(d, pos); err != nil {
			t.Fatalf("projecting %s: %v", bsonutil.Format(d), err)
		}
	}
	return out
}

// sameDocs compares two results: in order, or as multisets when
// unordered. Doubles may differ in their last bits (sums taken in
// another order).
func sameDocs(got, want []bson.D, ordered bool) error {
	if len(got) != len(want) {
		return fmt.Errorf("%d documents, want %d", len(got), len(want))
	}
	if !ordered {
		got, want = canonicalOrder(got), canonicalOrder(want)
	}
	for i := range got {
		if !closeValues(got[i], want[i]) {
			return fmt.Errorf("document %d is %s, want %s", i, bsonutil.Format(got[i]), bsonutil.Format(want[i]))
		}
	}
	return nil
}

func canonicalOrder(docs []bson.D) []bson.D {
	out := slices.Clone(docs)
	slices.SortStableFunc(out, func(a, b bson.D) int { return bsonutil.Compare(a, b) })
	return out
}

// closeValues is equality of BSON values, field names, order and types
// included, with doubles equal within a relative 1e-9.
func closeValues(a, b any) bool {
	switch x := a.(type) {
	case bson.D:
		y, ok := b.(bson.D)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if x[i].Key != y[i].Key || !closeValues(x[i].Value, y[i].Value) {
				return false
			}
		}
		return true
	case bson.A:
		y, ok := b.(bson.A)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !closeValues(x[i], y[i]) {
				return false
			}
		}
		return true
	case float64:
		y, ok := b.(float64)
		return ok && (x == y || math.Abs(x-y) <= 1e-9*math.Max(1, math.Max(math.Abs(x), math.Abs(y))))
	}
	return fmt.Sprintf("%T", a) == fmt.Sprintf("%T", b) && bsonutil.Compare(a, b) == 0
}

// ejson parses relaxed extended JSON into a document.
func ejson(t testing.TB, s string) bson.D {
	t.Helper()
	var d bson.D
	if err := bson.UnmarshalExtJSON([]byte(s), false, &d); err != nil {
		t.Fatalf("bad test JSON %s: %v", s, err)
	}
	return d
}

// stagesOf parses a JSON array of stages.
func stagesOf(t testing.TB, s string) []bson.D {
	t.Helper()
	arr, _ := ejson(t, `{"p": `+s+`}`)[0].Value.(bson.A)
	out := make([]bson.D, len(arr))
	for i, st := range arr {
		out[i] = st.(bson.D)
	}
	return out
}
