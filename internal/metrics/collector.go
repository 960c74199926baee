// Package metrics serves Mayfly's HTTP listener (--http-addr): Prometheus
// metrics at /metrics, and the expiry dashboard at / with its data at
// /api/expiry. Every figure is read, when asked, from the same sources
// serverStatus uses, so the two agree.
package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/mayflydb/mayfly/internal/expirywatch"
	"github.com/mayflydb/mayfly/internal/opstats"
	"github.com/mayflydb/mayfly/internal/server"
	"github.com/mayflydb/mayfly/internal/storage"
)

// Sources are where the figures come from.
type Sources struct {
	Ops     *opstats.Stats
	Server  func() server.Stats
	Storage func() storage.Metrics
	Expiry  *expirywatch.Watch
	// TTLPasses is the monitor's pass count.
	TTLPasses func() int64
}

// collector turns Sources into Prometheus metrics at each scrape.
type collector struct {
	src Sources
	d   descs
}

type descs struct {
	commands, failures, duration                            *prometheus.Desc
	connections, connCreated, connRejected                  *prometheus.Desc
	netBytes, requests                                      *prometheus.Desc
	storageGauges, storageCounters                          map[string]*prometheus.Desc
	ttlLive, ttlOverdue, ttlOldest, ttlDeleted, ttlLateness *prometheus.Desc
	ttlNext, ttlPasses, ttlUpcoming                         *prometheus.Desc
}

func newDesc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc("mayfly_"+name, help, labels, nil)
}

func newCollector(src Sources) *collector {
	ttl := []string{"namespace", "index"}
	d := descs{
		commands:     newDesc("commands_total", "Commands run, by name.", "command"),
		failures:     newDesc("command_failures_total", "Commands that answered an error, by name.", "command"),
		duration:     newDesc("command_duration_seconds", "Time to run a command, by name.", "command"),
		connections:  newDesc("connections", "Client connections open now."),
		connCreated:  newDesc("connections_created_total", "Client connections accepted since start."),
		connRejected: newDesc("connections_rejected_total", "Client connections refused for the connection limit."),
		netBytes:     newDesc("network_bytes_total", "Bytes received and sent on client connections.", "direction"),
		requests:     newDesc("network_requests_total", "Requests received."),
		ttlLive:      newDesc("ttl_live_documents", "Documents of the TTL index's collection not past their expiry.", ttl...),
		ttlOverdue:   newDesc("ttl_overdue_documents", "Documents past their expiry not yet deleted (hidden from reads with exact expiry).", ttl...),
		ttlOldest:    newDesc("ttl_oldest_overdue_age_seconds", "How long ago the oldest overdue document expired; 0 when none is overdue.", ttl...),
		ttlDeleted:   newDesc("ttl_deleted_documents_total", "Documents the TTL monitor deleted; its rate is deletions per second.", ttl...),
		ttlLateness:  newDesc("ttl_deletion_lateness_seconds", "Time from a document's expiry to its deletion.", ttl...),
		ttlNext:      newDesc("ttl_next_expiry_timestamp_seconds", "Unix time of the next document's expiry; absent when nothing is due.", ttl...),
		ttlUpcoming:  newDesc("ttl_expiring_next_hour_documents", "Documents that will expire within the next hour, read at most once a minute.", ttl...),
		ttlPasses:    newDesc("ttl_monitor_passes_total", "Passes of the TTL monitor."),
		storageGauges: map[string]*prometheus.Desc{
			"disk_bytes":         newDesc("storage_disk_bytes", "Bytes of the storage engine's files on disk."),
			"memtable_bytes":     newDesc("storage_memtable_bytes", "Bytes in the storage engine's memtables."),
			"block_cache_bytes":  newDesc("storage_block_cache_bytes", "Bytes in the storage engine's block cache."),
			"compaction_debt":    newDesc("storage_compaction_debt_bytes", "Bytes the storage engine must compact to reach a stable shape."),
			"read_amplification": newDesc("storage_read_amplification", "Sorted runs a read may visit."),
			"l0_files":           newDesc("storage_l0_files", "Files in the storage engine's level 0."),
			"wal_bytes":          newDesc("storage_wal_bytes", "Bytes of the write-ahead log on disk."),
			"resident_bytes":     newDesc("resident_cache_bytes", "Bytes held by the resident cache in front of the storage engine."),
			"resident_max_bytes": newDesc("resident_cache_max_bytes", "The resident cache's bound (--cacheSizeMB)."),
			"resident_pending":   newDesc("resident_cache_pending_documents", "Documents the resident cache holds ahead of storage (--write-behind)."),
		},
		storageCounters: map[string]*prometheus.Desc{
			"block_cache_hits":   newDesc("storage_block_cache_hits_total", "Block cache hits."),
			"block_cache_misses": newDesc("storage_block_cache_misses_total", "Block cache misses."),
			"compactions":        newDesc("storage_compactions_total", "Compactions run."),
			"flushes":            newDesc("storage_flushes_total", "Memtable flushes."),
			"write_stalls":       newDesc("storage_write_stalls_total", "Times the storage engine stalled writes."),
			"resident_hits":      newDesc("resident_cache_hits_total", "Reads the resident cache served."),
			"resident_misses":    newDesc("resident_cache_misses_total", "Reads of cacheable keys the resident cache did not hold."),
			"resident_evictions": newDesc("resident_cache_evictions_total", "Entries evicted to keep the resident cache within its bound."),
			"resident_expired":   newDesc("resident_cache_expired_evictions_total", "Entries evicted from the resident cache because their document expired."),
			"resident_warm_ups":  newDesc("resident_cache_warm_ups_total", "Warm-ups of an index into the resident cache ended."),
			"resident_warmed":    newDesc("resident_cache_warmed_ranges_total", "Equality ranges warm-ups kept in the resident cache."),
		},
	}
	return &collector{src: src, d: d}
}

// Describe sends every descriptor without reading a source: registering
// the collector at start would otherwise read each TTL index's hour ahead
// (expirywatch.Watch.Views).
func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	d := c.d
	for _, desc := range []*prometheus.Desc{
		d.commands, d.failures, d.duration, d.connections, d.connCreated, d.connRejected, d.netBytes, d.requests,
		d.ttlLive, d.ttlOverdue, d.ttlOldest, d.ttlDeleted, d.ttlLateness, d.ttlNext, d.ttlPasses, d.ttlUpcoming,
	} {
		ch <- desc
	}
	for _, m := range []map[string]*prometheus.Desc{d.storageGauges, d.storageCounters} {
		for _, desc := range m {
			ch <- desc
		}
	}
}

// Collect implements prometheus.Collector.
func (c *collector) Collect(ch chan<- prometheus.Metric) {
	c.collectCommands(ch)
	c.collectServer(ch)
	c.collectStorage(ch)
	c.collectTTL(ch)
}

func (c *collector) collectCommands(ch chan<- prometheus.Metric) {
	for name, cmd := range c.src.Ops.Commands() {
		h := cmd.Latency
		ch <- prometheus.MustNewConstMetric(c.d.commands, prometheus.CounterValue, float64(h.Total), name)
		ch <- prometheus.MustNewConstMetric(c.d.failures, prometheus.CounterValue, float64(cmd.Failed), name)
		ch <- prometheus.MustNewConstHistogram(c.d.duration, h.Total, h.Sum.Seconds(), cumulative(h.Counts, opstats.LatencyBuckets), name)
	}
}

// cumulative turns per-bucket counts into Prometheus' cumulative ones.
func cumulative(counts []uint64, bounds []float64) map[float64]uint64 {
	out := make(map[float64]uint64, len(bounds))
	var sum uint64
	for i, b := range bounds {
		if i < len(counts) {
			sum += counts[i]
		}
		out[b] = sum
	}
	return out
}

func (c *collector) collectServer(ch chan<- prometheus.Metric) {
	if c.src.Server == nil {
		return
	}
	s := c.src.Server()
	ch <- prometheus.MustNewConstMetric(c.d.connections, prometheus.GaugeValue, float64(s.Current))
	ch <- prometheus.MustNewConstMetric(c.d.connCreated, prometheus.CounterValue, float64(s.TotalCreated))
	ch <- prometheus.MustNewConstMetric(c.d.connRejected, prometheus.CounterValue, float64(s.Rejected))
	ch <- prometheus.MustNewConstMetric(c.d.netBytes, prometheus.CounterValue, float64(s.BytesIn), "in")
	ch <- prometheus.MustNewConstMetric(c.d.netBytes, prometheus.CounterValue, float64(s.BytesOut), "out")
	ch <- prometheus.MustNewConstMetric(c.d.requests, prometheus.CounterValue, float64(s.Requests))
}

func (c *collector) collectStorage(ch chan<- prometheus.Metric) {
	if c.src.Storage == nil {
		return
	}
	m := c.src.Storage()
	gauges := map[string]int64{
		"disk_bytes": m.DiskBytes, "memtable_bytes": m.MemTableBytes, "block_cache_bytes": m.BlockCacheBytes,
		"compaction_debt": m.CompactionDebt, "read_amplification": m.ReadAmplification, "l0_files": m.L0Files,
		"wal_bytes": m.WALBytes, "resident_bytes": m.ResidentBytes, "resident_max_bytes": m.ResidentMaxBytes,
		"resident_pending": m.ResidentPending,
	}
	for k, v := range gauges {
		ch <- prometheus.MustNewConstMetric(c.d.storageGauges[k], prometheus.GaugeValue, float64(v))
	}
	counters := map[string]int64{
		"block_cache_hits": m.BlockCacheHits, "block_cache_misses": m.BlockCacheMisses,
		"compactions": m.Compactions, "flushes": m.Flushes, "write_stalls": m.WriteStalls,
		"resident_hits": m.ResidentHits, "resident_misses": m.ResidentMisses,
		"resident_evictions": m.ResidentEvictions, "resident_expired": m.ResidentExpiredEvictions,
		"resident_warm_ups": m.ResidentWarmUps, "resident_warmed": m.ResidentWarmed,
	}
	for k, v := range counters {
		ch <- prometheus.MustNewConstMetric(c.d.storageCounters[k], prometheus.CounterValue, float64(v))
	}
}

func (c *collector) collectTTL(ch chan<- prometheus.Metric) {
	if c.src.TTLPasses != nil {
		ch <- prometheus.MustNewConstMetric(c.d.ttlPasses, prometheus.CounterValue, float64(c.src.TTLPasses()))
	}
	if c.src.Expiry == nil {
		return
	}
	views, err := c.src.Expiry.Views()
	if err != nil {
		// Reported by promhttp as a failed metric; the rest is served.
		ch <- prometheus.NewInvalidMetric(c.d.ttlOverdue, err)
		return
	}
	for _, v := range views {
		l := []string{v.NS, v.Index}
		ch <- prometheus.MustNewConstMetric(c.d.ttlLive, prometheus.GaugeValue, float64(v.Live), l...)
		ch <- prometheus.MustNewConstMetric(c.d.ttlOverdue, prometheus.GaugeValue, float64(v.Overdue), l...)
		age := 0.0
		if !v.OldestOverdue.IsZero() {
			age = v.At.Sub(v.OldestOverdue).Seconds()
		}
		ch <- prometheus.MustNewConstMetric(c.d.ttlOldest, prometheus.GaugeValue, age, l...)
		ch <- prometheus.MustNewConstMetric(c.d.ttlDeleted, prometheus.CounterValue, float64(v.Deleted), l...)
		ch <- prometheus.MustNewConstHistogram(c.d.ttlLateness, v.Lateness.Total, v.Lateness.Sum,
			cumulative(v.Lateness.Counts, expirywatch.LatenessBuckets), l...)
		ch <- prometheus.MustNewConstMetric(c.d.ttlUpcoming, prometheus.GaugeValue, float64(upcomingLive(v)), l...)
		if !v.Next.IsZero() {
			ch <- prometheus.MustNewConstMetric(c.d.ttlNext, prometheus.GaugeValue, float64(v.Next.UnixMilli())/1000, l...)
		}
	}
}

// upcomingLive sums the forecast of v, at most its live documents: the
// forecast is up to a minute older than the count, and a document deleted
// on a server that does not hold touches back leaves its stale entries to
// the monitor, counted until they fall due.
func upcomingLive(v expirywatch.View) int64 {
	var n int64
	for _, k := range v.Upcoming {
		n += k
	}
	return min(n, v.Live)
}
