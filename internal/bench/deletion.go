package bench

import (
	"context"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// ttlSample is one reading of serverStatus().metrics.ttl.deletedDocuments
// and catchUpBatches. The server read its counters somewhere between
// sent and recv.
type ttlSample struct {
	sent, recv time.Time
	deleted    int64
	catchUps   int64 // 0 from a server that does not count them
}

// readDeleted asks the server how many documents its TTL monitor deleted.
func readDeleted(ctx context.Context, db *mongo.Database) (ttlSample, error) {
	s := ttlSample{sent: time.Now()}
	raw, err := db.RunCommand(ctx, bson.D{{Key: "serverStatus", Value: 1}}).Raw()
	s.recv = time.Now()
	if err != nil {
		return s, fmt.Errorf("serverStatus: %w", err)
	}
	v, err := raw.LookupErr("metrics", "ttl", "deletedDocuments")
	if err != nil {
		return s, fmt.Errorf("serverStatus: metrics.ttl.deletedDocuments: %w", err)
	}
	n, ok := v.AsInt64OK()
	if !ok {
		return s, fmt.Errorf("serverStatus: metrics.ttl.deletedDocuments is %s", v.Type)
	}
	s.deleted = n
	if v, err := raw.LookupErr("metrics", "ttl", "catchUpBatches"); err == nil {
		s.catchUps, _ = v.AsInt64OK()
	}
	return s, nil
}

// pollDeleted samples the deletion counter every `every` from `from` until
// want more documents than the first sample have been deleted, or until
// `until`.
func pollDeleted(ctx context.Context, db *mongo.Database, every time.Duration, from, until time.Time, want int64) ([]ttlSample, error) {
	if err := sleepUntil(ctx, from); err != nil {
		return nil, err
	}
	var out []ttlSample
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		s, err := readDeleted(ctx, db)
		if err != nil {
			return out, err
		}
		out = append(out, s)
		if s.deleted-out[0].deleted >= want || s.recv.After(until) {
			return out, nil
		}
		select {
		case <-ctx.Done():
			return out, ctx.Err()
		case <-tick.C:
		}
	}
}

// Lateness is how long after its expiry each storm document was deleted,
// bracketed by what the sampling can tell.
type Lateness struct {
	Deleted int64 `json:"deleted"`
	// Upper bounds the lateness: a document counted deleted in a sample
	// was deleted before that sample's reply arrived.
	Upper Summary `json:"upper"`
	// Lower bounds it: it was deleted after the previous sample was sent.
	Lower Summary `json:"lower"`
	// GapMs is the width of the bracket (reply to the previous request).
	GapP50Ms float64 `json:"gap_p50_ms"`
	GapMaxMs float64 `json:"gap_max_ms"`
	// First and last are when the first and the last document were seen
	// deleted; PerSec is the deletions over that span.
	First  time.Time `json:"first"`
	Last   time.Time `json:"last"`
	PerSec float64   `json:"per_sec"`
}

// deletionLateness attributes the counter's increments to documents in
// expiry order (the order in which the monitor walks a TTL index, and so
// deletes) and measures each one's lateness against the schedule.
func deletionLateness(samples []ttlSample, s schedule) Lateness {
	var h latenessHists
	res := h.attribute(samples, s.n, s.expiry)
	return h.summarize(res)
}

// latenessHists collects the lateness bounds and sampling gaps of one or
// more servers' deletions, so that several shards' documents give one
// percentile.
type latenessHists struct{ up, lo, gaps Histogram }

// attribute adds the lateness of n documents deleted in expiry order,
// the k-th expiring at expiry(k), as samples counted them; it returns
// the deletions counted and when the first and last were seen.
func (h *latenessHists) attribute(samples []ttlSample, n int, expiry func(k int) time.Time) Lateness {
	return attributeDeletions(samples, n, expiry, &h.gaps, func(_ int, upper, lower time.Duration) {
		h.up.Add(upper)
		h.lo.Add(lower)
	})
}

// attributeDeletions attributes the samples' deletions to n documents in
// expiry order, the k-th expiring at expiry(k), and calls each with the
// bounds of each deleted document's lateness: it was deleted before the
// reply of the sample that first counted it, and after the previous
// sample was sent. Each interval between samples goes into gaps.
func attributeDeletions(samples []ttlSample, n int, expiry func(k int) time.Time, gaps *Histogram,
	each func(k int, upper, lower time.Duration)) Lateness {
	var res Lateness
	if len(samples) == 0 {
		return res
	}
	base := samples[0].deleted
	done := 0
	for j := 1; j < len(samples); j++ {
		prev, cur := samples[j-1], samples[j]
		gaps.Add(cur.recv.Sub(prev.sent))
		upTo := int(min(cur.deleted-base, int64(n)))
		if upTo <= done {
			continue
		}
		if done == 0 {
			res.First = cur.recv
		}
		res.Last = cur.recv
		for k := done; k < upTo; k++ {
			e := expiry(k)
			each(k, cur.recv.Sub(e), prev.sent.Sub(e))
		}
		done = upTo
	}
	res.Deleted = int64(done)
	return res
}

func (h *latenessHists) merge(o *latenessHists) {
	h.up.Merge(&o.up)
	h.lo.Merge(&o.lo)
	h.gaps.Merge(&o.gaps)
}

// count notes one more deletion, first or last seen at seen.
func (l *Lateness) count(seen time.Time) {
	if l.Deleted == 0 || seen.Before(l.First) {
		l.First = seen
	}
	if seen.After(l.Last) {
		l.Last = seen
	}
	l.Deleted++
}

// summarize fills res's percentiles and rate from the histograms.
func (h *latenessHists) summarize(res Lateness) Lateness {
	res.Upper, res.Lower = h.up.Summarize(), h.lo.Summarize()
	res.GapP50Ms, res.GapMaxMs = ms(h.gaps.Quantile(0.5)), ms(h.gaps.Max())
	if span := res.Last.Sub(res.First); span > 0 {
		res.PerSec = float64(res.Deleted) / span.Seconds()
	}
	return res
}

// steadyRate is the deletion rate while a backlog remained: from the first
// sample that saw a deletion to the last one that still saw documents
// left, so neither the wait for the first pass nor the tail of the drain
// counts. Once the server keeps up there is no backlog to measure, so it
// is meaningful for a burst, where everything expires at once.
func steadyRate(samples []ttlSample, n int64) float64 {
	if len(samples) == 0 {
		return 0
	}
	base := samples[0].deleted
	var first, last *ttlSample
	for i := range samples {
		d := samples[i].deleted - base
		if d > 0 && first == nil {
			first = &samples[i]
		}
		if d > 0 && d < n {
			last = &samples[i]
		}
	}
	if first == nil || last == nil || last == first {
		return 0
	}
	return float64(last.deleted-first.deleted) / last.recv.Sub(first.recv).Seconds()
}
