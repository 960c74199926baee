package aggregate

import (
	"fmt"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
)

// tickingEnv is a fakeEnv whose clock moves a second each time it is read.
type tickingEnv struct{ fakeEnv }

func (e *tickingEnv) Now() time.Time {
	e.now = e.now.Add(time.Second)
	return e.now
}

// TestNowIsOneInstantPerRun: $$NOW is read once per run, whichever stage
// first evaluates an expression, and a sub-pipeline ($facet, $lookup)
// sees the same instant as the stages around it.
func TestNowIsOneInstantPerRun(t *testing.T) {
	pipeline := arr(t, `[
		{"$limit": 1},
		{"$addFields": {"a": "$$NOW"}},
		{"$lookup": {"from": "orders", "as": "o", "pipeline": [{"$limit": 1}, {"$project": {"_id": 0, "c": "$$NOW"}}]}},
		{"$facet": {"f": [{"$project": {"_id": 0, "b": "$$NOW"}}]}},
		{"$project": {"b": {"$first": "$f.b"}, "same": {"$eq": ["$$NOW", {"$first": "$f.b"}]}}}
	]`)
	p, err := Parse(pipeline, Options{})
	if err != nil {
		t.Fatal(err)
	}
	env := &tickingEnv{fakeEnv{colls: map[string][]bson.D{"orders": docs(t, `[{"_id": 1}]`)}, now: testNow}}
	it, err := p.Run(&sliceIter{docs: docs(t, `[{"_id": 1}]`)}, env)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	d, ok, err := it.Next()
	if err != nil || !ok {
		t.Fatalf("no result: %v", err)
	}
	want := bson.NewDateTimeFromTime(testNow.Add(time.Second))
	if got := lookupValue(d, "b"); got != want {
		t.Fatalf("$$NOW in $facet = %v, want %v (the run's one instant)", got, want)
	}
	if got := lookupValue(d, "same"); got != true {
		t.Fatalf("$$NOW differs between stages: %v", d)
	}
	p2, err := Parse(pipeline[:3], Options{})
	if err != nil {
		t.Fatal(err)
	}
	it2, err := p2.Run(&sliceIter{docs: docs(t, `[{"_id": 1}]`)}, env)
	if err != nil {
		t.Fatal(err)
	}
	defer it2.Close()
	d, _, err = it2.Next()
	if err != nil {
		t.Fatal(err)
	}
	a := lookupValue(d, "a")
	c := lookupValue(lookupValue(d, "o").(bson.A)[0].(bson.D), "c")
	if a != c || a != bson.NewDateTimeFromTime(testNow.Add(2*time.Second)) {
		t.Fatalf("$addFields saw %v, $lookup's pipeline %v: want one instant, the run's", a, c)
	}
}

func lookupValue(d bson.D, key string) any {
	v, _ := bsonutil.Lookup(d, key)
	return v
}

// TestStageCountersPastTheRoom: an Execution keeps the counters of its
// first smallPipeline stages in its own allocation and allocates the
// rest; every stage counts what it takes and passes on either way, for
// pipelines shorter than, as long as, and longer than that room, parsed
// and composed.
func TestStageCountersPastTheRoom(t *testing.T) {
	const docsIn = 10
	input := make([]bson.D, docsIn)
	for i := range input {
		input[i] = bson.D{{Key: "_id", Value: int32(i)}}
	}
	for n := 1; n <= smallPipeline+2; n++ {
		stages := make(bson.A, n)
		steps := make([]Step, n)
		for i := range stages {
			stages[i] = bson.D{{Key: "$skip", Value: int32(1)}}
			steps[i] = SkipStep("SKIP", bson.D{{Key: "skipAmount", Value: int64(1)}}, 1)
		}
		parsed, err := Parse(stages, Options{})
		if err != nil {
			t.Fatal(err)
		}
		for kind, p := range map[string]*Pipeline{"parsed": parsed, "composed": Compose(Options{}, steps...)} {
			t.Run(fmt.Sprintf("%s %d stages", kind, n), func(t *testing.T) {
				ex, err := p.Start(&sliceIter{docs: input}, &fakeEnv{now: testNow})
				if err != nil {
					t.Fatal(err)
				}
				defer ex.Close()
				got := 0
				for {
					_, ok, err := ex.Next()
					if err != nil {
						t.Fatal(err)
					}
					if !ok {
						break
					}
					got++
				}
				if got != docsIn-n {
					t.Fatalf("%d documents out, want %d", got, docsIn-n)
				}
				runs := ex.Stages()
				if len(runs) != n {
					t.Fatalf("%d stage records, want %d", len(runs), n)
				}
				for i, r := range runs {
					if r.In != int64(docsIn-i) || r.Out != int64(docsIn-1-i) {
						t.Errorf("stage %d counted in %d, out %d; want %d, %d", i, r.In, r.Out, docsIn-i, docsIn-1-i)
					}
				}
				if ex.InputRead() != docsIn || ex.Returned() != int64(docsIn-n) {
					t.Errorf("input read %d, returned %d; want %d, %d", ex.InputRead(), ex.Returned(), docsIn, docsIn-n)
				}
			})
		}
	}
}
