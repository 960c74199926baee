package bench

import "time"

// span is a half-open interval of wall-clock time.
type span struct{ from, to time.Time }

func (s span) contains(t time.Time) bool { return !t.Before(s.from) && t.Before(s.to) }

func (s span) seconds() float64 { return s.to.Sub(s.from).Seconds() }

// recorder times the operations that complete inside each of its spans
// (say, a baseline and a storm). Each worker owns one; they are merged
// when the workers are done.
type recorder struct {
	spans []span
	hists []Histogram
}

func newRecorder(spans ...span) *recorder {
	return &recorder{spans: spans, hists: make([]Histogram, len(spans))}
}

// add records an operation that completed at done after taking lat.
func (r *recorder) add(done time.Time, lat time.Duration) {
	for i, s := range r.spans {
		if s.contains(done) {
			r.hists[i].Add(lat)
		}
	}
}

func (r *recorder) merge(o *recorder) {
	for i := range r.hists {
		r.hists[i].Merge(&o.hists[i])
	}
}

// WindowResult is the throughput and latency inside one span.
type WindowResult struct {
	Seconds   float64 `json:"seconds"`
	OpsPerSec float64 `json:"ops_per_sec"`
	Latency   Summary `json:"latency"`
}

func (r *recorder) result(i int) WindowResult {
	s := r.spans[i].seconds()
	h := &r.hists[i]
	out := WindowResult{Seconds: s, Latency: h.Summarize()}
	if s > 0 {
		out.OpsPerSec = float64(h.Count()) / s
	}
	return out
}
