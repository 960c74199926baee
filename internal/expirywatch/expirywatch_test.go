package expirywatch

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/mayflydb/mayfly/internal/clock"
	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/storage/pebblestore"
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
