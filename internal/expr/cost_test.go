package expr

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/fuzzlimit"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// costBudget is CPU time: far above what each case below costs now (tens
// of milliseconds) and far below what it cost when a field was found by
// scanning, or $map built every value before checking (tens of seconds).
const costBudget = time.Second

// wideFields builds n pairs ["<i>", i] as $arrayToObject reads them.
func wideFields(n int) bson.A {
	a := make(bson.A, n)
	for i := range a {
		a[i] = bson.A{"f" + strconv.Itoa(i), int32(i)}
	}
	return a
}

// TestMergingManyFieldsIsLinear covers every user of MergeInto with
// documents of 50 000 fields.
func TestMergingManyFieldsIsLinear(t *testing.T) {
	wide := bson.D{{Key: "$arrayToObject", Value: bson.A{bson.D{{Key: "$literal", Value: wideFields(50000)}}}}}
	for name, e := range map[string]any{
		"$arrayToObject": wide,
		"$mergeObjects":  bson.D{{Key: "$mergeObjects", Value: bson.A{wide, wide}}},
		"$setField":      bson.D{{Key: "$setField", Value: bson.D{{Key: "field", Value: "zz"}, {Key: "input", Value: wide}, {Key: "value", Value: 1}}}},
	} {
		start := fuzzlimit.ProcessCPU()
		v, err := mustCompile(t, e).Eval(bson.D{}, nil)
		spent := fuzzlimit.ProcessCPU() - start
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if d, ok := v.(bson.D); !ok || len(d) < 50000 {
			t.Fatalf("%s: got %T of %d fields", name, v, len(asDocument(v)))
		}
		if spent > costBudget {
			t.Fatalf("%s: spent %v of CPU, budget %v", name, spent, costBudget)
		}
	}
}

func TestMergeIntoKeepsFirstPositionAndLastValue(t *testing.T) {
	for _, n := range []int{1, mergeScanMax, mergeScanMax + 1, 100} {
		src := bson.D{}
		for i := range n {
			src = append(src, bson.E{Key: strconv.Itoa(i % 5), Value: int32(i)})
		}
		got := MergeInto(bson.D{{Key: "3", Value: "x"}, {Key: "y", Value: "y"}}, src)
		want := bson.D{{Key: "3", Value: "x"}, {Key: "y", Value: "y"}}
		for i := range n {
			k := strconv.Itoa(i % 5)
			if j := indexOf(want, k); j >= 0 {
				want[j].Value = int32(i)
			} else {
				want = append(want, bson.E{Key: k, Value: int32(i)})
			}
		}
		if !equalDocs(got, want) {
			t.Fatalf("n=%d: got %v, want %v", n, got, want)
		}
	}
}

func indexOf(d bson.D, k string) int {
	for i, e := range d {
		if e.Key == k {
			return i
		}
	}
	return -1
}

func equalDocs(a, b bson.D) bool {
	ra, _ := bson.Marshal(a)
	rb, _ := bson.Marshal(b)
	return string(ra) == string(rb)
}

// TestMapStopsAtTheLargestArray: a body building a 100 kB string for each
// of 100 000 elements used to build 10 GB of them; the result passes the
// largest document after 170.
func TestMapStopsAtTheLargestArray(t *testing.T) {
	tenKB := bson.D{{Key: "$concat", Value: bson.A{strings.Repeat("x", 10000)}}}
	hundredKB := bson.A{}
	for range 10 {
		hundredKB = append(hundredKB, "$$x")
	}
	e := mustCompile(t, bson.D{{Key: "$map", Value: bson.D{
		{Key: "input", Value: bson.D{{Key: "$range", Value: bson.A{0, 100000}}}},
		{Key: "in", Value: bson.D{{Key: "$let", Value: bson.D{
			{Key: "vars", Value: bson.D{{Key: "x", Value: tenKB}}},
			{Key: "in", Value: bson.D{{Key: "$concat", Value: hundredKB}}},
		}}}},
	}}})
	start := fuzzlimit.ProcessCPU()
	_, err := e.Eval(bson.D{}, nil)
	spent := fuzzlimit.ProcessCPU() - start
	if codeOf(err) != mongoerr.BSONObjectTooLarge {
		t.Fatalf("got %v, want BSONObjectTooLarge", err)
	}
	if spent > costBudget {
		t.Fatalf("spent %v of CPU, budget %v", spent, costBudget)
	}
}
