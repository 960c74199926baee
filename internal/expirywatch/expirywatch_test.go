package expirywatch

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/mayflydb/mayfly/internal/clock"
	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/storage"
	"github.com/mayflydb/mayfly/internal/storage/pebblestore"
	"go.mongodb.org/mongo-driver/v2/bson"
)

type fixedClock struct {
	clock.Real
	now time.Time
}

func (c *fixedClock) Now() time.Time { return c.now }

func TestQuantileIsTheBucketBoundOrTheLargest(t *testing.T) {
	h := newHistogram()
	for range 98 {
		h.observe(0.002) // (1ms, 2.5ms]
	}
	h.observe(0.3)  // (250ms, 500ms]
	h.observe(7200) // above every bound
	if q := h.Quantile(0.5); q != 0.0025 {
		t.Fatalf("p50 %v", q)
	}
	if q := h.Quantile(0.99); q != 0.5 {
		t.Fatalf("p99 %v", q)
	}
	if q := h.Quantile(1); q != 7200 {
		t.Fatalf("p100 is the largest observation, not the last bound: %v", q)
	}
}

func TestDeletedFeedsSeriesLatenessAndSummary(t *testing.T) {
	eng, err := pebblestore.Open(pebblestore.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	clk := &fixedClock{now: time.Unix(1_000_000, 0)}
	store, err := docstore.Open(eng, docstore.Options{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	w := New(store, clk, slog.New(slog.NewTextHandler(&logs, nil)))
	at := clk.now.Add(summaryEvery + time.Second)
	w.Deleted("d.c", "at_1", []int64{at.Add(-2 * time.Millisecond).UnixNano(), at.Add(-3 * time.Second).UnixNano()}, at)
	iw := w.indexes[Key{"d.c", "at_1"}]
	if iw.deleted != 2 || iw.lateness.Total != 2 || iw.lateness.Max != 3 {
		t.Fatalf("index watch %+v", iw)
	}
	p := iw.point(at)
	if p.Deleted != 2 || p.MaxLateSec != 3 {
		t.Fatalf("series point %+v", p)
	}
	w.summaries.Wait() // written off the monitor's goroutine
	line := logs.String()
	if !strings.Contains(line, "TTL monitor deleting") || !strings.Contains(line, "deleted=2") ||
		!strings.Contains(line, "latenessP99=5s") || !strings.Contains(line, "backlog=0") {
		t.Fatalf("summary line: %s", line)
	}
}

// steppingEngine counts the steps of its iterators.
type steppingEngine struct {
	storage.Engine
	steps int
}

func (e *steppingEngine) NewIter(lower, upper []byte) (storage.Iterator, error) {
	it, err := e.Engine.NewIter(lower, upper)
	if err != nil {
		return nil, err
	}
	return &steppingIter{Iterator: it, eng: e}, nil
}

type steppingIter struct {
	storage.Iterator
	eng *steppingEngine
}

func (it *steppingIter) Next() bool {
	it.eng.steps++
	return it.Iterator.Next()
}

// steppedWatch is a Watch over one TTL index, at_1 of d.c, whose engine
// counts the index entries its iterators step over: overdue entries
// expired a minute ago, and ahead entries due from 3 s on, one a second.
func steppedWatch(t *testing.T, logger *slog.Logger, overdue, ahead int) (*Watch, *steppingEngine, *fixedClock) {
	t.Helper()
	base, err := pebblestore.Open(pebblestore.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = base.Close() })
	eng := &steppingEngine{Engine: base}
	clk := &fixedClock{now: time.Unix(1_000_000, 0)}
	store, c := ttlCollection(t, eng, clk, "c", "at", 0)
	for i := range overdue + ahead {
		at := clk.now.Add(time.Duration(i-overdue)*time.Second - time.Minute)
		if i >= overdue {
			at = clk.now.Add(time.Duration(i) * time.Second)
		}
		d, err := docstore.PrepareInsert(bson.D{{Key: "_id", Value: i}, {Key: "at", Value: bson.NewDateTimeFromTime(at)}})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Insert(d, docstore.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	eng.steps = 0
	return New(store, clk, logger), eng, clk
}

// The summary line is written while the monitor deletes, on every member
// of a replica set: it must read the backlog, not the hour ahead that the
// metrics show, which can be every live document, nor the touched
// documents' stale entries before the next expiry, which the metrics'
// next expiry reads past.
func TestSummaryReadsOnlyTheBacklog(t *testing.T) {
	const overdue, ahead, touched = 3, 500, 8
	var logs bytes.Buffer
	w, eng, clk := steppedWatch(t, slog.New(slog.NewTextHandler(&logs, nil)), overdue, ahead)
	c := w.store.Collection("d", "c")
	for i := overdue; i < overdue+touched; i++ { // the first ahead: stale at +i.5 s, moved to +3000 s
		for _, at := range []time.Duration{time.Duration(i)*time.Second + 500*time.Millisecond, 3000 * time.Second} {
			_, err := c.Modify(i, docstore.WriteOptions{}, func(bson.D) (docstore.Change, error) {
				return docstore.Change{Kind: docstore.Replace, Doc: bson.D{{Key: "_id", Value: i}, {Key: "at", Value: bson.NewDateTimeFromTime(clk.now.Add(at))}}}, nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	eng.steps = 0
	w.Deleted("d.c", "at_1", []int64{clk.now.UnixNano()}, clk.now.Add(summaryEvery))
	w.summaries.Wait()
	if !strings.Contains(logs.String(), fmt.Sprintf("backlog=%d", overdue)) {
		t.Fatalf("summary line: %s", logs.String())
	}
	if eng.steps > overdue+1 {
		t.Fatalf("the summary stepped over %d index entries; want the %d overdue and the next at most", eng.steps, overdue)
	}
	// The metrics' view still reads the hour ahead.
	views, err := w.Views()
	if err != nil || len(views) != 1 {
		t.Fatalf("views %v, %v", views, err)
	}
	var upcoming int64
	for _, n := range views[0].Upcoming {
		upcoming += n
	}
	if views[0].Overdue != overdue || upcoming != ahead {
		t.Fatalf("view: %d overdue, %d upcoming; want %d and %d", views[0].Overdue, upcoming, overdue, ahead)
	}
}

// The hour ahead is read at most once a minute, whatever the scrapes and
// dashboard refreshes ask: in a session store it is every live session.
// Between reads a view still counts the overdue entries afresh.
func TestForecastIsReadOnceAMinute(t *testing.T) {
	const overdue, ahead = 3, 500
	w, eng, clk := steppedWatch(t, slog.New(slog.NewTextHandler(io.Discard, nil)), overdue, ahead)
	read := func(wantUpcoming int64, wantAt time.Time, maxSteps int) View {
		t.Helper()
		eng.steps = 0
		views, err := w.Views()
		if err != nil || len(views) != 1 {
			t.Fatalf("views %v, %v", views, err)
		}
		v := views[0]
		var upcoming int64
		for _, n := range v.Upcoming {
			upcoming += n
		}
		if upcoming != wantUpcoming || !v.UpcomingAt.Equal(wantAt) || eng.steps > maxSteps {
			t.Fatalf("at %v: %d upcoming read at %v in %d steps; want %d read at %v in at most %d",
				clk.now, upcoming, v.UpcomingAt, eng.steps, wantUpcoming, wantAt, maxSteps)
		}
		return v
	}
	start := clk.now
	read(ahead, start, overdue+ahead+1)
	for range 20 { // a dashboard refreshing every 2 s for 40 s
		clk.now = clk.now.Add(2 * time.Second)
		due := int(clk.now.Sub(start)/time.Second) - 2 // the ahead entries due by now
		if v := read(ahead, start, overdue+max(due, 0)+1); v.Overdue != int64(overdue+max(due, 0)) {
			t.Fatalf("at %v: %d overdue, want %d", clk.now, v.Overdue, overdue+max(due, 0))
		}
	}
	clk.now = start.Add(forecastTTL)
	read(ahead-(60-2), clk.now, overdue+ahead+1)
}
