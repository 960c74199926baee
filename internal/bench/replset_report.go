package bench

import "fmt"

// The replica set's targets (issue: failover ≤ 3 s, replicated majority
// inserts ≥ 0.5 of standalone j:true, deletion lateness on a secondary
// ≤ 250 ms).
const (
	tFailover     = "replica set: kill -9 of the primary to next acknowledged write, max (ms)"
	tMajority     = "replica set: w:majority inserts / standalone j:true, 64 clients"
	tSecLateness  = "replica set: expiry lateness to deletion on a secondary, p99 (ms)"
	tPrimLateness = "replica set: expiry lateness to deletion on the primary, p99 (ms)"
)

func replSetTargetDefs() []targetDef {
	return []targetDef{
		{tFailover, "≤ 3000", atMost(3000), failoverMax},
		{tMajority, "≥ 0.5", atLeast(0.5), majorityRatio},
		{tPrimLateness, "≤ 250", atMost(250), replLateness(func(r *ReplSetResult) Lateness { return r.StormPrimary })},
		{tSecLateness, "≤ 250", atMost(250), replLateness(func(r *ReplSetResult) Lateness { return r.StormSecondary })},
	}
}

func failoverMax(m *ModeReport) (float64, string, bool) {
	r := m.ReplSet
	if r == nil || len(r.FailoverMs) == 0 {
		return 0, "", false
	}
	return r.FailoverMaxMs, fmt.Sprintf("p50 %s ms over %d kills", fmtMs(r.FailoverP50Ms), len(r.FailoverMs)), true
}

func majorityRatio(m *ModeReport) (float64, string, bool) {
	r := m.ReplSet
	if r == nil || r.Majority == nil || m.Durable == nil {
		return 0, "", false
	}
	j := m.Durable.find(r.Majority.Clients, true)
	if j == nil || j.OpsPerSec == 0 {
		return 0, "", false
	}
	return r.Majority.OpsPerSec / j.OpsPerSec, fmt.Sprintf("%s / %s inserts/s", fmtN(r.Majority.OpsPerSec), fmtN(j.OpsPerSec)), true
}

func replLateness(pick func(*ReplSetResult) Lateness) func(*ModeReport) (float64, string, bool) {
	return func(m *ModeReport) (float64, string, bool) {
		r := m.ReplSet
		if r == nil || r.StormDocs == 0 {
			return 0, "", false
		}
		l := pick(r)
		note := fmt.Sprintf("%s docs; replication lag p99 %s ms", fmtN(float64(r.StormDocs)), fmtMs(r.LagP99Ms))
		if l.Deleted < int64(r.StormDocs) {
			note = fmt.Sprintf("%s%d of %d deleted", incomplete, l.Deleted, r.StormDocs)
			for _, left := range r.StormLeft {
				note += fmt.Sprintf("; %s after the storm: count %d, validate records %d", left.Member, left.Stored, left.Records)
			}
		}
		if r.StormElections > 0 {
			note += fmt.Sprintf("; %d elections during the storm", r.StormElections)
		}
		return l.Upper.P99Ms, note, true
	}
}

func replSetRows(rep *Report) []row {
	t := func(name string) row {
		return row{label: "**" + name + "**", phase: PhaseReplSet, cell: targetCell(rep, name)}
	}
	return []row{t(tFailover), t(tMajority), t(tPrimLateness), t(tSecLateness)}
}

// The previous build, measured beside this one (-baseline-bin) in
// alternating rounds (baseline.go): a change must not cost the standalone
// server more than 5 %.
const (
	tBaseSessions = "standalone sessions ops/s, this build / previous build"
	tBaseCPU      = "standalone server CPU per session operation, previous build / this build"
	tBaseStorm    = "standalone storm lateness p99, previous build / this build"
	tBaseBurst    = "standalone burst expirations/s, this build / previous build"
	tBaseMajority = "replica set w:majority inserts/s, this build / previous build"
	tBaseRSStorm  = "replica set storm lateness p99 on a secondary, previous build / this build"
)

func baselineTargetDefs() []targetDef {
	return []targetDef{
		{tBaseSessions, "≥ 0.95", atLeast(0.95), baselineSessions(opsPerSec, false, "/s")},
		{tBaseCPU, "≥ 0.95", atLeast(0.95), baselineSessions(cpuPerOp, true, " µs")},
		{tBaseStorm, "≥ 0.95", atLeast(0.95), baselineStorm},
		{tBaseBurst, "≥ 0.95", atLeast(0.95), baselineBurst},
		{tBaseMajority, "≥ 0.95", atLeast(0.95), baselineMajority},
		{tBaseRSStorm, "≥ 0.95", atLeast(0.95), baselineReplStorm},
	}
}

func baselineSessions(f func(*SessionsResult) float64, lowerBetter bool, unit string) func(*ModeReport) (float64, string, bool) {
	return func(m *ModeReport) (float64, string, bool) {
		if m.Baseline == nil {
			return 0, "", false
		}
		return roundsRatio(m.Baseline.Sessions, sessionsOnBaseline, f, lowerBetter, unit)
	}
}

func baselineMajority(m *ModeReport) (float64, string, bool) {
	if m.Baseline == nil {
		return 0, "", false
	}
	return roundsRatio(m.Baseline.ReplSets, replSetOnBaseline, func(r *ReplSetResult) float64 {
		if r.Majority == nil {
			return 0
		}
		return r.Majority.OpsPerSec
	}, false, "/s")
}

func baselineReplStorm(m *ModeReport) (float64, string, bool) {
	if m.Baseline == nil {
		return 0, "", false
	}
	return roundsRatio(m.Baseline.ReplSets, replSetOnBaseline, func(r *ReplSetResult) float64 {
		return r.StormSecondary.Upper.P99Ms
	}, true, " ms")
}

func baselineStorm(m *ModeReport) (float64, string, bool) {
	if m.Baseline == nil {
		return 0, "", false
	}
	return roundsRatio(m.Baseline.Storms, expiryOnBaseline, func(r *ExpiryResult) float64 {
		return r.Lateness.Upper.P99Ms
	}, true, " ms")
}

func baselineBurst(m *ModeReport) (float64, string, bool) {
	if m.Baseline == nil {
		return 0, "", false
	}
	return roundsRatio(m.Baseline.Bursts, expiryOnBaseline, func(r *ExpiryResult) float64 {
		return r.SteadyPerSec
	}, false, "/s")
}

func baselineRows(rep *Report) []row {
	t := func(name, phase string) row {
		return row{label: "**" + name + "**", phase: phase, cell: targetCell(rep, name)}
	}
	return []row{t(tBaseSessions, PhaseSessions), t(tBaseCPU, PhaseSessions), t(tBaseStorm, PhaseExpiry), t(tBaseBurst, PhaseExpiry),
		t(tBaseMajority, PhaseReplSet), t(tBaseRSStorm, PhaseReplSet),
		{"previous build: lateness p50 / p99 without → with CPU-bound neighbours", PhaseExpiry, baselineNeighbourCell}}
}

// baselineNeighbourCell is neighbourCell for the previous build.
func baselineNeighbourCell(m *ModeReport) string {
	var prev *ExpiryResult
	if m.Baseline != nil {
		for _, e := range m.Baseline.Storms {
			if e.Server == nameBaseline {
				prev = e
				break
			}
		}
	}
	return neighbourCell(&ModeReport{Expiry: prev, NeighbourExpiry: m.BaselineNeighbourExpiry})
}
