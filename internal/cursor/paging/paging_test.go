package paging

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/clock"
	"github.com/mayflydb/mayfly/internal/cursor"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

func docs(n int) []bson.D {
	out := make([]bson.D, n)
	for i := range out {
		out[i] = bson.D{{Key: "_id", Value: int32(i)}}
	}
	return out
}

// endless is a scan's shape: it learns that it has ended only by reading
// on, so a cursor over it stays open after a full batch.
type endless struct{ left int }

func (s *endless) Next() (bson.D, bool, error) {
	if s.left == 0 {
		return nil, false, nil
	}
	s.left--
	return bson.D{{Key: "n", Value: int32(s.left)}}, true, nil
}

func (s *endless) Close() error { return nil }

// tailing is a tailable source whose documents come later: each Next
// past its end counts, and the one given by arriveAfter returns a
// document.
type tailing struct {
	reads, arriveAfter int
	await              bool
}

func (s *tailing) Next() (bson.D, bool, error) {
	s.reads++
	if s.arriveAfter > 0 && s.reads == s.arriveAfter {
		return bson.D{{Key: "new", Value: true}}, true, nil
	}
	return nil, false, nil
}

func (s *tailing) Close() error { return nil }
func (s *tailing) Awaits() bool { return s.await }

// TestStaysOpenAfterAFullBatch: for every kind of source a cursor pages,
// whether the cursor stays open after a first batch of two, as mongod
// decides it: memory and a reached limit know their end, a scan does
// not, a tailable cursor stays open even when empty.
func TestStaysOpenAfterAFullBatch(t *testing.T) {
	cases := []struct {
		name string
		src  cursor.Source
		open bool
	}{
		{"slice with more left", Slice(docs(3)...), true},
		{"slice at its end", Slice(docs(2)...), false},
		{"limit reached", Limit(&endless{left: 5}, 2), false},
		{"limit not reached", Limit(&endless{left: 5}, 3), true},
		{"scan with more left", &endless{left: 2}, true},
		{"scan that ended inside the batch", &endless{left: 1}, false},
		{"empty tailable", &tailing{}, true},
		{"projected tailable", Project(&tailing{}, func(d bson.D) (bson.D, error) { return d, nil }), true},
		{"interruptible slice at its end", Interruptible(Slice(docs(1)...), func() error { return nil }), false},
	}
	for _, tc := range cases {
		p := New(tc.src, Live{})
		if _, err := p.Fill(2); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := p.StaysOpen(); got != tc.open {
			t.Errorf("%s: stays open %v, want %v", tc.name, got, tc.open)
		}
	}
}

// TestFillKeepsTheReplyUnderItsLimit: a batch stops before the document
// that would take the reply past 16 MiB, and the next batch starts with
// it.
func TestFillKeepsTheReplyUnderItsLimit(t *testing.T) {
	big := strings.Repeat("x", 7<<20)
	var in []bson.D
	for i := range 3 {
		in = append(in, bson.D{{Key: "_id", Value: int32(i)}, {Key: "s", Value: big}})
	}
	p := New(Slice(in...), Live{})
	first, err := p.Fill(-1)
	if err != nil || len(first) != 2 {
		t.Fatalf("first batch: %d documents, %v", len(first), err)
	}
	if !p.StaysOpen() {
		t.Fatal("closed with a document pending")
	}
	next, err := p.Fill(-1)
	if err != nil || len(next) != 1 || next[0].(bson.Raw).Lookup("_id").Int32() != 2 {
		t.Fatalf("next batch: %v, %v", len(next), err)
	}
}

// TestEncodeResultRefusesATooLargeDocument: mongod's BSONObjectTooLarge,
// with the size and the first element.
func TestEncodeResultRefusesATooLargeDocument(t *testing.T) {
	_, err := EncodeResult(bson.D{{Key: "s", Value: strings.Repeat("y", MaxResultBytes)}})
	e := mongoerr.As(err)
	if err == nil || e.Code != mongoerr.BSONObjectTooLarge || !strings.Contains(e.Msg, "First element: s: ") {
		t.Fatalf("error %v", err)
	}
}

func realWait(ctx context.Context, d time.Duration) *Wait {
	return &Wait{Ctx: ctx, Clock: clock.Real{}, For: d, Waiting: func() func() { return func() {} }}
}

// TestMoreAwaitsNewDocuments: an awaitData getMore that finds nothing
// polls until a document comes; without awaitData, after its wait, or
// once its command ends it answers an empty batch.
func TestMoreAwaitsNewDocuments(t *testing.T) {
	arriving := &tailing{arriveAfter: 4, await: true}
	got, err := New(arriving, Live{}).More(realWait(context.Background(), time.Minute), 10)
	if err != nil || len(got) != 1 {
		t.Fatalf("awaitData: %d documents, %v", len(got), err)
	}
	noAwait := &tailing{arriveAfter: 4}
	if got, _ := New(noAwait, Live{}).More(realWait(context.Background(), time.Minute), 10); len(got) != 0 || noAwait.reads != 1 {
		t.Fatalf("without awaitData: %d documents after %d reads", len(got), noAwait.reads)
	}
	start := time.Now()
	if got, _ := New(&tailing{await: true}, Live{}).More(realWait(context.Background(), 30*time.Millisecond), 10); len(got) != 0 {
		t.Fatalf("after the wait: %d documents", len(got))
	}
	if took := time.Since(start); took < 30*time.Millisecond || took > 30*time.Second {
		t.Fatalf("waited %v for a 30ms wait", took)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if got, _ := New(&tailing{await: true}, Live{}).More(realWait(ctx, time.Minute), 10); len(got) != 0 {
		t.Fatalf("ended command: %d documents", len(got))
	}
}

// TestAwaitTime: maxTimeMS when positive, else a second, and never past
// the command's deadline.
func TestAwaitTime(t *testing.T) {
	bg := context.Background()
	if got := AwaitTime(bg, 0); got != time.Second {
		t.Fatalf("default %v", got)
	}
	if got := AwaitTime(bg, 250); got != 250*time.Millisecond {
		t.Fatalf("maxTimeMS 250: %v", got)
	}
	ctx, cancel := context.WithTimeout(bg, 100*time.Millisecond)
	defer cancel()
	if got := AwaitTime(ctx, 5000); got > 100*time.Millisecond {
		t.Fatalf("past the deadline: %v", got)
	}
}

// TestReturnsDocuments: only a pipeline led by $match whose every stage
// passes documents on returns its collection's documents.
func TestReturnsDocuments(t *testing.T) {
	stage := func(name string) bson.D { return bson.D{{Key: name, Value: bson.D{}}} }
	for name := range documentStages {
		if name != "$match" && !ReturnsDocuments(bson.A{stage("$match"), stage(name)}) {
			t.Errorf("$match then %s", name)
		}
	}
	for _, stages := range []bson.A{{}, {stage("$project")}, {stage("$match"), stage("$group")}, {stage("$match"), stage("$count")}} {
		if ReturnsDocuments(stages) {
			t.Errorf("%v returns documents", stages)
		}
	}
}
