package expr

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/mongoerr"
)

func mustCompile(t *testing.T, v any) *Expr {
	t.Helper()
	e, err := Compile(v)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func codeOf(err error) mongoerr.Code {
	if err == nil {
		return 0
	}
	return mongoerr.As(err).Code
}

// TestRegexFindAllIsLinear: 200 000 matches over a 400 KB string used to
// count code points from the start for each match (minutes); linear, it
// takes milliseconds.
func TestRegexFindAllIsLinear(t *testing.T) {
	e := mustCompile(t, bson.D{{Key: "$regexFindAll", Value: bson.D{{Key: "input", Value: "$s"}, {Key: "regex", Value: "é"}}}})
	doc := bson.D{{Key: "s", Value: strings.Repeat("é", 200_000)}}
	start := time.Now()
	v, err := e.Eval(doc, nil)
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	a := v.(bson.A)
	last := a[len(a)-1].(bson.D)
	if len(a) != 200_000 || last[1].Value != int32(199_999) {
		t.Fatalf("%d matches, last %v", len(a), last)
	}
	t.Logf("200 000 matches in %v", took)
	if took > 2*time.Second {
		t.Fatalf("took %v", took)
	}
}

// TestBuiltValuesAreBounded: strings stop under 16 MiB (16493) and arrays
// at the largest document (10334), however they are built.
func TestBuiltValuesAreBounded(t *testing.T) {
	big := strings.Repeat("x", 9<<20)
	concat := mustCompile(t, bson.D{{Key: "$concat", Value: bson.A{"$s", "$s"}}})
	if _, err := concat.Eval(bson.D{{Key: "s", Value: big}}, nil); codeOf(err) != mongoerr.Location16493 {
		t.Errorf("$concat to 18 MiB: %v", err)
	}
	doubling := mustCompile(t, bson.D{{Key: "$reduce", Value: bson.D{
		{Key: "input", Value: bson.D{{Key: "$range", Value: bson.A{0, 40}}}},
		{Key: "initialValue", Value: bson.A{"x"}},
		{Key: "in", Value: bson.D{{Key: "$concatArrays", Value: bson.A{"$$value", "$$value"}}}},
	}}})
	if _, err := doubling.Eval(bson.D{}, nil); codeOf(err) != mongoerr.BSONObjectTooLarge {
		t.Errorf("$reduce doubling an array 40 times: %v", err)
	}
	findAll := mustCompile(t, bson.D{{Key: "$regexFindAll", Value: bson.D{{Key: "input", Value: "$s"}, {Key: "regex", Value: "x"}}}})
	if _, err := findAll.Eval(bson.D{{Key: "s", Value: big}}, nil); codeOf(err) != mongoerr.BSONObjectTooLarge {
		t.Errorf("$regexFindAll with 9M matches: %v", err)
	}
}

// TestGuardStopsLongLoops: a $reduce over a million elements stops soon
// after its context ends.
func TestGuardStopsLongLoops(t *testing.T) {
	// 400 million steps: seconds of work even on a fast idle machine, so
	// the bound below tells a guard that stopped from a loop that ran to
	// its end on a loaded one.
	inner := bson.D{{Key: "$reduce", Value: bson.D{
		{Key: "input", Value: bson.D{{Key: "$range", Value: bson.A{0, 50_000}}}},
		{Key: "initialValue", Value: 0},
		{Key: "in", Value: bson.D{{Key: "$add", Value: bson.A{"$$value", bson.D{{Key: "$sqrt", Value: "$$this"}}}}}},
	}}}
	e := mustCompile(t, bson.D{{Key: "$reduce", Value: bson.D{
		{Key: "input", Value: bson.D{{Key: "$range", Value: bson.A{0, 8_000}}}},
		{Key: "initialValue", Value: 0},
		{Key: "in", Value: bson.D{{Key: "$add", Value: bson.A{"$$value", inner}}}},
	}}})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := e.Eval(bson.D{}, WithGuard(nil, NewGuard(ctx)))
	if codeOf(err) != mongoerr.MaxTimeMSExpired {
		t.Fatalf("err = %v", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("stopped after %v", took)
	}
}
