package aggregate

import (
	"errors"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/query"
)

func TestStartCountsEachStage(t *testing.T) {
	in := docs(t, `[{"a": 3}, {"a": 1}, {"a": 2}, {"a": 5}, {"a": 4}]`)
	p, err := Parse(arr(t, `[{"$match": {"a": {"$gt": 1}}}, {"$sort": {"a": -1}}, {"$skip": 1}, {"$limit": 2}]`), Options{})
	if err != nil {
		t.Fatal(err)
	}
	run, err := p.Start(&sliceIter{docs: in}, &fakeEnv{now: testNow})
	if err != nil {
		t.Fatal(err)
	}
	var got []any
	for {
		d, ok, err := run.Next()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		got = append(got, d[0].Value)
	}
	if len(got) != 2 || got[0] != int32(4) || got[1] != int32(3) {
		t.Fatalf("output %v", got)
	}
	want := []struct {
		name    string
		in, out int64
	}{{"$match", 5, 4}, {"$sort", 4, 3}, {"$skip", 3, 2}, {"$limit", 2, 2}}
	st := run.Stages()
	for i, w := range want {
		if st[i].Name != w.name || st[i].In != w.in || st[i].Out != w.out {
			t.Fatalf("stage %d: %s in %d out %d, want %+v", i, st[i].Name, st[i].In, st[i].Out, w)
		}
	}
	// The $sort keeps only skip+limit documents and says what it sorted.
	if st[1].Exec[0].Key != "totalDataSizeSortedBytesEstimate" || st[1].Exec[0].Value.(int64) <= 0 {
		t.Fatalf("$sort exec %v", st[1].Exec)
	}
	ex := st[1].Explain(true, 7)
	if ex[0].Key != "$sort" || ex[len(ex)-2].Key != "nReturned" || ex[len(ex)-2].Value != int64(3) || ex[len(ex)-1].Value != int64(7) {
		t.Fatalf("$sort explain %v", ex)
	}
	if run.InputRead() != 5 || run.Returned() != 2 {
		t.Fatalf("read %d returned %d", run.InputRead(), run.Returned())
	}
}

func TestComposeRunsFindSteps(t *testing.T) {
	in := docs(t, `[{"a": 3}, {"a": 1}, {"a": 2}]`)
	s, err := query.NewSort(bson.D{{Key: "a", Value: 1}})
	if err != nil {
		t.Fatal(err)
	}
	stop := errors.New("over the limit")
	var held int64
	check := func(n int64) error {
		held = n
		return nil
	}
	double := func(d bson.D) (bson.D, error) {
		return bson.D{{Key: "b", Value: d[0].Value.(int32) * 2}}, nil
	}
	p := Compose(Options{},
		SortStep("SORT", bson.D{{Key: "sortPattern", Value: bson.D{{Key: "a", Value: 1}}}}, s, 2, check, nil),
		SkipStep("SKIP", nil, 1),
		MapStep("PROJECTION_DEFAULT", nil, double))
	if got := p.Planned(); len(got) != 3 || got[0].Name != "SORT" || got[0].Out != 0 {
		t.Fatalf("planned %v", got)
	}
	run, err := p.Start(&sliceIter{docs: in}, &fakeEnv{now: testNow})
	if err != nil {
		t.Fatal(err)
	}
	d, ok, err := run.Next()
	if err != nil || !ok || d[0].Value != int32(4) {
		t.Fatalf("first %v %v %v", d, ok, err)
	}
	if _, ok, _ := run.Next(); ok {
		t.Fatal("top-2 sort then skip 1 returned more than one document")
	}
	st := run.Stages()
	if st[0].Out != 2 || st[0].In != 3 || st[0].Exec[0].Key != "totalDataSizeSorted" || held == 0 || st[2].Out != 1 || !st[2].EOF {
		t.Fatalf("stages %+v %+v %+v held %d", st[0], st[1], st[2], held)
	}
	// The check's error stops the sort.
	p = Compose(Options{}, SortStep("SORT", nil, s, 0, func(int64) error { return stop }, nil))
	if _, err := p.Start(&sliceIter{docs: in}, &fakeEnv{now: testNow}); !errors.Is(err, stop) {
		t.Fatalf("check error %v", err)
	}
}
