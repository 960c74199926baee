// Package expirywatch follows, per TTL index, whether expiry keeps its
// promise: the deletions the TTL monitor reports and how late each came,
// and, read from the indexes when asked, the documents past their expiry
// still stored and what falls due in the next hour. It feeds the
// Prometheus metrics, the dashboard and the monitor's summary log line.
package expirywatch

import (
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/mayflydb/mayfly/internal/clock"
	"github.com/mayflydb/mayfly/internal/docstore"
)

// LatenessBuckets are the upper bounds, in seconds, of the deletion
// lateness histogram: from a millisecond (Mayfly's aim) to an hour.
var LatenessBuckets = []float64{
	0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
	1, 2.5, 5, 10, 30, 60, 300, 900, 3600,
}

const (
	// SeriesStep and SeriesLen shape the recent history the dashboard
	// draws: ten minutes in five-second steps.
	SeriesStep = 5 * time.Second
	SeriesLen  = 120
	// UpcomingStep and UpcomingSteps shape the next hour's forecast.
	UpcomingStep  = time.Minute
	UpcomingSteps = 60
	// summaryEvery is how often the summary line is logged while the
	// monitor deletes.
	summaryEvery = 10 * time.Second
	// viewTTL is how long a read of the indexes serves repeated requests
	// (a scrape and a dashboard refresh at once).
	viewTTL = time.Second
	// forecastTTL is how long a read of the hour ahead serves views. That
	// read steps over every entry due within the hour, in a session store
	// every live session's: a million of them took 0.15–0.7 s of CPU, once
	// per scrape and per dashboard refresh. Its counts are per minute, so
	// a minute's age is within their step.
	forecastTTL = UpcomingStep
)

// Key names a TTL index.
type Key struct{ NS, Index string }

// Histogram counts lateness: Counts[i] holds observations at most
// LatenessBuckets[i] and above the bound before; the last, above all.
type Histogram struct {
	Counts []uint64
	Sum    float64 // seconds
	Max    float64 // seconds
	Total  uint64
}

func newHistogram() Histogram { return Histogram{Counts: make([]uint64, len(LatenessBuckets)+1)} }

func (h *Histogram) observe(secs float64) {
	h.Counts[sort.SearchFloat64s(LatenessBuckets, secs)]++
	h.Sum += secs
	h.Max = max(h.Max, secs)
	h.Total++
}

// Quantile is the upper bound of the bucket holding quantile q (the
// largest observation when it lies above every bound); 0 for an empty
// histogram.
func (h *Histogram) Quantile(q float64) float64 {
	if h.Total == 0 {
		return 0
	}
	rank := uint64(q*float64(h.Total) + 0.5)
	var seen uint64
	for i, n := range h.Counts {
		seen += n
		if seen >= max(rank, 1) && i < len(LatenessBuckets) {
			return LatenessBuckets[i]
		}
	}
	return h.Max
}

func (h Histogram) clone() Histogram {
	h.Counts = append([]uint64(nil), h.Counts...)
	return h
}

// Point is one step of the recent history.
type Point struct {
	Start      time.Time
	Deleted    int64
	MaxLateSec float64
}

type indexWatch struct {
	deleted  int64
	lateness Histogram
	series   [SeriesLen]Point // ring indexed by step number
}

func (iw *indexWatch) point(now time.Time) *Point {
	step := now.Truncate(SeriesStep)
	p := &iw.series[(step.UnixNano()/int64(SeriesStep))%SeriesLen]
	if !p.Start.Equal(step) {
		*p = Point{Start: step}
	}
	return p
}

// Watch is safe for concurrent use.
type Watch struct {
	clock  clock.Clock
	store  *docstore.Store
	logger *slog.Logger

	mu      sync.Mutex
	indexes map[Key]*indexWatch
	window  Histogram // lateness since the last summary line
	lastLog time.Time
	cached  []View
	cacheAt time.Time
	// forecasts are the last reads of each TTL index's hour ahead.
	forecasts map[Key]forecast
	// summaries counts summary lines being written (tests wait for them).
	summaries sync.WaitGroup
}

// New returns a Watch over store's TTL indexes.
func New(store *docstore.Store, clk clock.Clock, logger *slog.Logger) *Watch {
	return &Watch{
		clock: clk, store: store, logger: logger, indexes: map[Key]*indexWatch{}, forecasts: map[Key]forecast{},
		window: newHistogram(), lastLog: clk.Now(),
	}
}

// Deleted records a batch the TTL monitor committed at `at`: expiries
// holds each deleted document's expiry in unix nanoseconds.
func (w *Watch) Deleted(ns, index string, expiries []int64, at time.Time) {
	if len(expiries) == 0 {
		return
	}
	w.mu.Lock()
	iw := w.indexes[Key{ns, index}]
	if iw == nil {
		iw = &indexWatch{lateness: newHistogram()}
		w.indexes[Key{ns, index}] = iw
	}
	p := iw.point(at)
	for _, e := range expiries {
		late := max(float64(at.UnixNano()-e)/1e9, 0)
		iw.lateness.observe(late)
		w.window.observe(late)
		p.MaxLateSec = max(p.MaxLateSec, late)
	}
	iw.deleted += int64(len(expiries))
	p.Deleted += int64(len(expiries))
	if at.Sub(w.lastLog) < summaryEvery {
		w.mu.Unlock()
		return
	}
	window, since := w.window, at.Sub(w.lastLog)
	w.window, w.lastLog = newHistogram(), at
	w.mu.Unlock()
	// Off the monitor's goroutine: reading the backlog walks the TTL
	// indexes, which during a storm of a million documents took 0.6 s
	// and held every deletion back that long, once every summaryEvery.
	w.summaries.Add(1)
	go func() {
		defer w.summaries.Done()
		w.logSummary(window, since)
	}()
}

// logSummary writes the line an operator watches while the monitor
// deletes: how many went (window, over since), how late, and what is
// left overdue.
func (w *Watch) logSummary(window Histogram, since time.Duration) {
	backlog, err := w.backlog(w.clock.Now())
	if err != nil {
		w.logger.Warn("ttl: reading the backlog", "err", err)
	}
	w.logger.Info("TTL monitor deleting", "deleted", window.Total, "seconds", since.Round(time.Second).Seconds(),
		"latenessP99", time.Duration(window.Quantile(0.99)*float64(time.Second)).String(), "backlog", backlog)
}

// backlog counts the entries past their expiry still stored, over every
// TTL index, reading only those: the line is written while the monitor
// deletes, when the hour ahead that Views reads can hold every live
// document (a session store's), and each member of a replica set writes
// it.
func (w *Watch) backlog(now time.Time) (int64, error) {
	var n int64
	for _, c := range w.store.Collections() {
		for _, name := range c.TTLIndexes() {
			p, err := readProfile(c, name, now, UpcomingStep, 0, false)
			if err != nil {
				return n, err
			}
			n += p.Overdue
		}
	}
	return n, nil
}

// View is one TTL index as the metrics and the dashboard show it.
type View struct {
	NS, Index string
	// Live counts the collection's documents not past their expiry.
	Live int64
	// Overdue counts the entries past their expiry still stored, and
	// OldestOverdue is the earliest of those expiries (zero: none).
	Overdue       int64
	OldestOverdue time.Time
	// Next is the earliest expiry still ahead (zero: none).
	Next time.Time
	// Deleted counts the documents the monitor deleted since start.
	Deleted  int64
	Lateness Histogram
	// Upcoming counts the documents due in each minute of the hour after
	// UpcomingAt, at most a minute before At.
	Upcoming   []int64
	UpcomingAt time.Time
	// Series is the last ten minutes, oldest first.
	Series []Point
	// At is when the view was read.
	At time.Time
}

// Views reads every TTL index (at most once a second; repeated calls
// share a read), and its hour ahead at most once a minute.
func (w *Watch) Views() ([]View, error) {
	now := w.clock.Now()
	w.mu.Lock()
	if w.cached != nil && now.Sub(w.cacheAt) < viewTTL {
		defer w.mu.Unlock()
		return w.cached, nil
	}
	w.mu.Unlock()
	var out []View
	seen := map[Key]bool{}
	for _, c := range w.store.Collections() {
		for _, name := range c.TTLIndexes() {
			v, err := w.view(c, name, now)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
			seen[Key{v.NS, v.Index}] = true
		}
	}
	w.forgetForecasts(seen)
	sort.Slice(out, func(i, j int) bool {
		if out[i].NS != out[j].NS {
			return out[i].NS < out[j].NS
		}
		return out[i].Index < out[j].Index
	})
	w.mu.Lock()
	w.cached, w.cacheAt = out, now
	w.mu.Unlock()
	return out, nil
}

// forgetForecasts drops the forecasts of TTL indexes no longer seen.
func (w *Watch) forgetForecasts(seen map[Key]bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for k := range w.forecasts {
		if !seen[k] {
			delete(w.forecasts, k)
		}
	}
}

// forecast is a read of a TTL index's hour ahead.
type forecast struct {
	at       time.Time
	upcoming []int64
}

// view reads index's overdue entries, and its hour ahead when the last
// read of it is older than forecastTTL.
func (w *Watch) view(c *docstore.Collection, index string, now time.Time) (View, error) {
	key := Key{c.Namespace(), index}
	w.mu.Lock()
	f, ok := w.forecasts[key]
	w.mu.Unlock()
	steps := 0
	if !ok || now.Sub(f.at) >= forecastTTL || now.Before(f.at) {
		steps = UpcomingSteps
	}
	p, err := readProfile(c, index, now, UpcomingStep, steps, true)
	if err != nil {
		return View{}, err
	}
	if steps > 0 {
		f = forecast{at: now, upcoming: p.Upcoming}
	}
	v := View{
		NS: key.NS, Index: index, Live: max(c.Count()-p.Overdue, 0), Overdue: p.Overdue,
		OldestOverdue: p.OldestOverdue, Next: p.Next, Upcoming: f.upcoming, UpcomingAt: f.at, At: now, Lateness: newHistogram(),
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.forecasts[key] = f
	iw := w.indexes[Key{v.NS, index}]
	v.Series = make([]Point, SeriesLen)
	first := now.Truncate(SeriesStep).Add(-(SeriesLen - 1) * SeriesStep)
	for i := range v.Series {
		start := first.Add(time.Duration(i) * SeriesStep)
		v.Series[i] = Point{Start: start}
		if iw != nil {
			if p := iw.series[(start.UnixNano()/int64(SeriesStep))%SeriesLen]; p.Start.Equal(start) {
				v.Series[i] = p
			}
		}
	}
	if iw != nil {
		v.Deleted = iw.deleted
		v.Lateness = iw.lateness.clone()
	}
	return v, nil
}
