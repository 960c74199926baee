package bench

import (
	"fmt"
	"slices"
	"strings"
)

// TargetResult is one target checked in one mode.
type TargetResult struct {
	Name     string  `json:"name"`
	Goal     string  `json:"goal"`
	Mode     string  `json:"mode"`
	Measured bool    `json:"measured"`
	Value    float64 `json:"value"`
	Met      bool    `json:"met"`
	Note     string  `json:"note,omitempty"`
}

// targetDef is one of the targets: how to read its figure from a
// mode's report and whether the figure meets it.
type targetDef struct {
	name, goal string
	met        func(v float64) bool
	// value returns the figure, a note, and false if it was not measured.
	value func(m *ModeReport) (float64, string, bool)
}

// incomplete marks a note whose figure cannot meet its target whatever
// its value (documents that were never deleted).
const incomplete = "INCOMPLETE: "

func atLeast(x float64) func(float64) bool { return func(v float64) bool { return v >= x } }
func atMost(x float64) func(float64) bool  { return func(v float64) bool { return v <= x } }

// sessionsRatio is a/b of two targets' session figures, via f.
func sessionsRatio(a, b string, f func(*SessionsResult) float64) func(*ModeReport) (float64, string, bool) {
	return func(m *ModeReport) (float64, string, bool) {
		ra, rb := m.Sessions[a], m.Sessions[b]
		if ra == nil || rb == nil || f(rb) == 0 {
			return 0, "", false
		}
		return f(ra) / f(rb), "", true
	}
}

func opsPerSec(r *SessionsResult) float64 { return r.OpsPerSec }
func cpuPerOp(r *SessionsResult) float64  { return r.ServerCPUPerOpUs }
func p99(r *SessionsResult) float64       { return r.Latency.P99Ms }

// Target names, also the table's row labels.
const (
	tMayflyNull  = "sessions ops/s, Mayfly / null server"
	tMayflyRedis = "sessions ops/s, Mayfly / Redis"
	tCPU         = "server CPU per session op, Mayfly / null server"
	tP99         = "sessions p99 latency, Mayfly / null server"
	tDurable     = "durable inserts/s, j:true / without j, 64 clients"
	tInvisible   = "expired documents returned by reads"
	tLateness    = "expiry lateness to deletion, p99 (ms)"
	tLatenessNb  = "expiry lateness to deletion with CPU-bound neighbours, p99 (ms)"
	tExpRate     = "expirations/s sustained under load (burst)"
	tStorm       = "sessions ops/s during burst / without"
	tRSS         = "RSS with the same live sessions, Mayfly / Redis"
	tAuth        = "sessions ops/s, Mayfly --auth / Mayfly"
)

func targetDefs() []targetDef {
	return append([]targetDef{
		{tMayflyNull, "≥ 0.6", atLeast(0.6), sessionsRatio(nameMayfly, nameNull, opsPerSec)},
		{tMayflyRedis, "≥ 0.6", atLeast(0.6), sessionsRatio(nameMayfly, nameRedis, opsPerSec)},
		{tCPU, "≤ 3", atMost(3), sessionsRatio(nameMayfly, nameNull, cpuPerOp)},
		{tP99, "≤ 2", atMost(2), sessionsRatio(nameMayfly, nameNull, p99)},
		{tDurable, "≥ 0.6", atLeast(0.6), durableRatio},
		{tInvisible, "= 0", func(v float64) bool { return v == 0 }, invisibility},
		{tLateness, "≤ 250", atMost(250), lateness},
		{tLatenessNb, "≤ 250", atMost(250), neighbourLateness},
		{tExpRate, "≥ 100,000", atLeast(100_000), expirationRate},
		{tStorm, "≥ 0.5", atLeast(0.5), stormRatio},
		{tRSS, "≤ 0.75", atMost(0.75), rssRatio},
		{tAuth, "≥ 0.95", atLeast(0.95), sessionsRatio(nameMayflyAuth, nameMayfly, opsPerSec)},
	}, slices.Concat(replSetTargetDefs(), baselineTargetDefs(), shardedTargetDefs(), migrationTargetDefs(), txnTargetDefs())...)
}

func durableRatio(m *ModeReport) (float64, string, bool) {
	j, nj := m.Durable.find(64, true), m.Durable.find(64, false)
	if j == nil || nj == nil || nj.OpsPerSec == 0 {
		return 0, "", false
	}
	return j.OpsPerSec / nj.OpsPerSec, "", true
}

func invisibility(m *ModeReport) (float64, string, bool) {
	e := m.Expiry
	if e == nil || e.Visibility.ExpiredReads == 0 {
		return 0, "", false
	}
	v := e.Visibility
	note := fmt.Sprintf("of %s reads; %d by range, slowest %s ms", fmtN(float64(v.ExpiredReads)), v.RangeReads, fmtMs(v.RangeReadMaxMs))
	if v.LiveMissing > 0 {
		note += fmt.Sprintf("; %d live documents missing (early deletion)", v.LiveMissing)
	}
	return float64(v.Violations), note, true
}

// lateness is the upper bound of the p99; documents never deleted make
// the target missed whatever the figure.
func lateness(m *ModeReport) (float64, string, bool) { return stormLateness(m.Expiry) }

// neighbourLateness is lateness with the CPU-bound neighbours running.
func neighbourLateness(m *ModeReport) (float64, string, bool) {
	v, note, ok := stormLateness(m.NeighbourExpiry)
	if ok && note == "" {
		note = fmt.Sprintf("%d neighbours", m.NeighbourExpiry.Neighbours)
	}
	return v, note, ok
}

func stormLateness(e *ExpiryResult) (float64, string, bool) {
	if e == nil {
		return 0, "", false
	}
	if !e.AllDeleted {
		return e.Lateness.Upper.P99Ms, fmt.Sprintf(incomplete+"%s of %s not deleted by the end of the drain; p99 of the deleted ones",
			fmtN(float64(int64(e.Docs)-e.Lateness.Deleted)), fmtN(float64(e.Docs))), true
	}
	return e.Lateness.Upper.P99Ms, "", true
}

// expirationRate is the burst's deletion rate while a backlog remained:
// the storm offers exactly 100 000 a second, so a server that keeps up
// with it shows no more than that and cannot show its capacity.
func expirationRate(m *ModeReport) (float64, string, bool) {
	e := m.Burst
	if e == nil || e.SteadyPerSec == 0 {
		return 0, "", false
	}
	return e.SteadyPerSec, fmt.Sprintf("%s expiring at once", fmtN(float64(e.Docs))), true
}

// stormRatio is the session workload during the burst (a storm of
// documents expiring at once) over its rate just before.
func stormRatio(m *ModeReport) (float64, string, bool) {
	e := m.Burst
	if e == nil || e.Baseline.OpsPerSec == 0 {
		return 0, "", false
	}
	return e.Storm.OpsPerSec / e.Baseline.OpsPerSec, "", true
}

func rssRatio(m *ModeReport) (float64, string, bool) {
	r := m.Memory
	if r == nil || r.RedisRSS == 0 || r.MayflyRSS == 0 {
		return 0, "", false
	}
	return float64(r.MayflyRSS) / float64(r.RedisRSS), "", true
}

// evaluate checks every target in every mode that ran.
func evaluate(rep *Report) []*TargetResult {
	var out []*TargetResult
	for _, d := range targetDefs() {
		for _, m := range rep.Modes {
			tr := &TargetResult{Name: d.name, Goal: d.goal, Mode: m.Mode}
			if m.Skipped == "" {
				tr.Value, tr.Note, tr.Measured = d.value(m)
				tr.Met = tr.Measured && d.met(tr.Value) && !strings.HasPrefix(tr.Note, incomplete)
			}
			out = append(out, tr)
		}
	}
	return out
}
