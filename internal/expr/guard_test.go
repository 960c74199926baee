package expr

import (
	"context"
	"strings"
	"sync/atomic"
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
// takes milliseconds, and a few seconds on a loaded machine. The bound
// sits between the two, far from both.
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
	if took > time.Minute {
		t.Fatalf("took %v: quadratic again", took)
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

// swappedCtx is a context whose current context a test replaces, as a
// cursor's is replaced by each getMore's.
type swappedCtx struct {
	context.Context
	cur *atomic.Pointer[context.Context]
}

func (s swappedCtx) Done() <-chan struct{} { return (*s.cur.Load()).Done() }
func (s swappedCtx) Err() error            { return (*s.cur.Load()).Err() }

// stepsUntilStopped steps g until it reports the end (its flag is set by
// a goroutine context.AfterFunc starts, so not at once), for up to 10 s.
func stepsUntilStopped(t *testing.T, g *Guard) error {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if err := g.Step(); err != nil {
			return err
		}
		if time.Now().After(deadline) {
			t.Fatal("the guard never saw its context end")
		}
		time.Sleep(time.Millisecond)
	}
}

// TestGuardFollowsSwappedContext: a cursor's Guard outlives the command
// that opened it; once a getMore's live context is in place it runs
// again, and stops when that one ends.
func TestGuardFollowsSwappedContext(t *testing.T) {
	first, endFirst := context.WithCancel(context.Background())
	var cur atomic.Pointer[context.Context]
	cur.Store(&first)
	g := NewGuard(swappedCtx{Context: context.Background(), cur: &cur})
	if err := g.Step(); err != nil {
		t.Fatalf("while the opening command runs: %v", err)
	}
	endFirst()
	if err := stepsUntilStopped(t, g); codeOf(err) != mongoerr.Interrupted {
		t.Fatalf("after the opening command ended: %v", err)
	}
	getMore, endGetMore := context.WithTimeout(context.Background(), time.Hour)
	defer endGetMore()
	cur.Store(&getMore)
	for range 3 {
		if err := g.Step(); err != nil {
			t.Fatalf("in the getMore: %v", err)
		}
	}
	endGetMore()
	if err := stepsUntilStopped(t, g); codeOf(err) != mongoerr.Interrupted {
		t.Fatalf("after the getMore ended: %v", err)
	}
}

// waitCounter counts the calls that register with a context (Done,
// AfterFunc), which is what arming the guard's flag costs.
type waitCounter struct {
	context.Context
	waits atomic.Int32
}

func (w *waitCounter) Done() <-chan struct{} { w.waits.Add(1); return w.Context.Done() }

// The first steps ask the context itself, so a short operation never
// registers with it, and stop at once when it ends; the step that ends
// them arms the flag, and later steps stop by the flag.
func TestGuardDirectStepsThenFlag(t *testing.T) {
	for _, endAt := range []int{1, directSteps - 1, directSteps + 5} {
		ctx, end := context.WithCancel(context.Background())
		w := &waitCounter{Context: ctx}
		g := NewGuard(w)
		for i := 1; i < endAt; i++ {
			if err := g.Step(); err != nil {
				t.Fatalf("end at %d: step %d before the end: %v", endAt, i, err)
			}
		}
		armed := w.waits.Load()
		if endAt <= directSteps && armed != 0 {
			t.Errorf("end at %d: %d registrations within the direct steps", endAt, armed)
		}
		if endAt > directSteps && armed == 0 {
			t.Errorf("end at %d: the flag was never armed", endAt)
		}
		end()
		if endAt > directSteps {
			// The flag is set by AfterFunc's func, which runs in its own
			// goroutine: a step after the end stops once it has run.
			if err := stepsUntilStopped(t, g); codeOf(err) != mongoerr.Interrupted {
				t.Errorf("end at %d: armed guard after the end: %v", endAt, err)
			}
			continue
		}
		if err := g.Step(); codeOf(err) != mongoerr.Interrupted {
			t.Errorf("end at %d: the first step after the end: %v, want Interrupted at once", endAt, err)
		}
	}
}
