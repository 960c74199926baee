package bench

import (
	"math/bits"
	"time"
)

// subBits sets the histogram's precision: 2^subBits buckets per power of
// two, so a quantile is within about 3% of the true value.
const (
	subBits    = 5
	subBuckets = 1 << subBits
	numBuckets = (64 - subBits) << subBits
)

// Histogram counts durations in log-linear buckets. The zero value is
// ready to use; it is not safe for concurrent use (each worker keeps its
// own and they are merged).
type Histogram struct {
	counts [numBuckets]uint64
	n      uint64
	sum    time.Duration
	max    time.Duration
}

func bucketOf(ns int64) int {
	if ns < subBuckets {
		return int(max(ns, 0))
	}
	e := bits.Len64(uint64(ns)) - 1 - subBits
	m := ns >> e
	return (e+1)<<subBits + int(m-subBuckets)
}

func bucketLow(b int) int64 {
	if b < subBuckets {
		return int64(b)
	}
	e := b>>subBits - 1
	m := int64(b&(subBuckets-1)) + subBuckets
	return m << e
}

// Add records one duration; negative ones count as zero.
func (h *Histogram) Add(d time.Duration) {
	d = max(d, 0)
	h.counts[bucketOf(int64(d))]++
	h.n++
	h.sum += d
	h.max = max(h.max, d)
}

// Merge adds o's counts to h.
func (h *Histogram) Merge(o *Histogram) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
	h.sum += o.sum
	h.max = max(h.max, o.max)
}

// Count is the number of durations recorded.
func (h *Histogram) Count() uint64 { return h.n }

// Max is the largest duration recorded.
func (h *Histogram) Max() time.Duration { return h.max }

// Mean is the average duration, 0 when empty.
func (h *Histogram) Mean() time.Duration {
	if h.n == 0 {
		return 0
	}
	return h.sum / time.Duration(h.n)
}

// Quantile returns the q-quantile (0 < q ≤ 1) as the middle of its
// bucket, never above Max; 0 when empty.
func (h *Histogram) Quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := uint64(q * float64(h.n))
	rank = min(max(rank, 1), h.n)
	var seen uint64
	for b, c := range h.counts {
		seen += c
		if seen >= rank {
			lo := bucketLow(b)
			mid := lo + (bucketLow(b+1)-lo)/2
			return min(time.Duration(mid), h.max)
		}
	}
	return h.max
}

// Summary is a histogram's JSON form, in milliseconds.
type Summary struct {
	Count  uint64  `json:"count"`
	MeanMs float64 `json:"mean_ms"`
	P50Ms  float64 `json:"p50_ms"`
	P99Ms  float64 `json:"p99_ms"`
	MaxMs  float64 `json:"max_ms"`
}

// Summarize returns h's count, mean, p50, p99 and max.
func (h *Histogram) Summarize() Summary {
	return Summary{
		Count:  h.n,
		MeanMs: ms(h.Mean()),
		P50Ms:  ms(h.Quantile(0.50)),
		P99Ms:  ms(h.Quantile(0.99)),
		MaxMs:  ms(h.max),
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
