package aggregate

import (
	"errors"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// fakeEnv serves collections from memory and a fixed clock.
type fakeEnv struct {
	colls map[string][]bson.D
	now   time.Time
	opens int
}

func (e *fakeEnv) Collection(name string) (Iterator, error) {
	e.opens++
	return &sliceIter{docs: e.colls[name]}, nil
}

func (e *fakeEnv) CollStats(spec bson.D) (bson.D, error) {
	return bson.D{{Key: "ns", Value: "db.c"}, {Key: "spec", Value: spec}}, nil
}

func (e *fakeEnv) Now() time.Time { return e.now }

// testNow is the fake clock's time.
var testNow = time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)

// arr parses a relaxed extended JSON array, e.g. `[{"a": 1}]`.
func arr(t testing.TB, s string) bson.A {
	t.Helper()
	var d bson.D
	if err := bson.UnmarshalExtJSON([]byte(`{"x": `+s+`}`), false, &d); err != nil {
		t.Fatalf("bad test JSON %s: %v", s, err)
	}
	return d[0].Value.(bson.A)
}

func docs(t testing.TB, s string) []bson.D {
	t.Helper()
	var out []bson.D
	for _, x := range arr(t, s) {
		out = append(out, x.(bson.D))
	}
	return out
}

// runPipeline parses and runs pipeline over input; foreign holds the
// other collections.
func runPipeline(t testing.TB, input []bson.D, pipeline bson.A, opt Options, foreign map[string][]bson.D) ([]bson.D, error) {
	t.Helper()
	p, err := Parse(pipeline, opt)
	if err != nil {
		return nil, err
	}
	it, err := p.Run(&sliceIter{docs: input}, &fakeEnv{colls: foreign, now: testNow})
	if err != nil {
		return nil, err
	}
	defer it.Close()
	var out []bson.D
	for {
		d, ok, err := it.Next()
		if err != nil || !ok {
			return out, err
		}
		out = append(out, d)
	}
}

// sameDocs compares strictly: same fields, order and BSON types.
func sameDocs(a, b []bson.D) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !sameValue(a[i], b[i]) {
			return false
		}
	}
	return true
}

func sameValue(a, b any) bool {
	if bsonutil.TypeName(a) != bsonutil.TypeName(b) {
		return false
	}
	switch x := a.(type) {
	case bson.D:
		y := b.(bson.D)
		if len(x) != len(y) {
			return false
		}
		for i := range x {
			if x[i].Key != y[i].Key || !sameValue(x[i].Value, y[i].Value) {
				return false
			}
		}
		return true
	case bson.A:
		y := b.(bson.A)
		if len(x) != len(y) {
			return false
		}
		for i := range x {
			if !sameValue(x[i], y[i]) {
				return false
			}
		}
		return true
	}
	return bsonutil.Equal(a, b)
}

func errCode(err error) mongoerr.Code {
	var me *mongoerr.Error
	if errors.As(err, &me) {
		return me.Code
	}
	return 0
}
